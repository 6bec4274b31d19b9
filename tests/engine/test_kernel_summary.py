"""``kernel_summary`` (the headline's counts, a grouped kernel counted once) against the per-launch definition
it replaced, on real reports: the H100 and H200 session reports, ``perfgate compare`` of generated ncu CSV
exports (the inputs of ``tests/benchmarks/scale.py``), and those reports with their launches' statuses
redrawn so that every group holds a mix (the sessions' groups are all unchanged)."""

from __future__ import annotations

import copy
import json
import lzma
import random
from collections import Counter
from pathlib import Path
from typing import Any, cast

import pytest
from helpers.common import REPO, run_cli
from helpers.csvgen import write_details_csv, write_raw_csv

from perfgate.report import Report, kernel_summary, listed_summary, load_report, validate_report
from perfgate.vocabulary import STATUS_RANK, Status

SESSIONS = sorted((REPO / "tests" / "data").glob("h*/sessions/*.json.xz"))


def per_launch_kernel_summary(report: Report) -> dict[str, int]:
    """The definition as first written: each grouped launch ranked as it is met."""
    summary = listed_summary(report)
    launches: Any = report["launches"]
    groups = launches.get("group") or []
    statuses = launches["status"]
    worst: dict[int, str] = {}
    for index, group in enumerate(groups):
        if group is None:
            continue
        summary[statuses[index]] -= 1
        status = statuses[index]
        held = worst.get(group)
        if held is None or _rank(status) < _rank(held):
            worst[group] = status
    for status in worst.values():
        summary[status] += 1
    return summary


def _rank(status: str) -> int:
    uncompared = status in (Status.NEW.value, Status.MISSING.value, Status.NO_DATA.value)
    return STATUS_RANK.get(status, 99) + (len(STATUS_RANK) if uncompared else 0)


def session(path: Path) -> Report:
    return validate_report(json.loads(lzma.decompress(path.read_bytes())), str(path))


def redrawn(report: Report, seed: int) -> Report:
    """``report`` with every launch's status drawn again (repeated launches of one kernel disagree), and its
    summary counted from them."""
    mixed: Any = copy.deepcopy(report)
    draw = random.Random(seed)
    statuses = [draw.choice([s.value for s in Status]) for _ in mixed["launches"]["status"]]
    mixed["launches"]["status"] = statuses
    mixed["summary"] = {s.value: 0 for s in Status} | dict(Counter(statuses))
    return cast(Report, mixed)


@pytest.mark.parametrize("path", SESSIONS, ids=lambda p: f"{p.parent.parent.name}-{p.name.split('.')[0]}")
def test_session_reports_count_as_before(path: Path) -> None:
    report = session(path)
    assert kernel_summary(report) == per_launch_kernel_summary(report)
    for seed in range(5):
        mixed = redrawn(report, seed)
        assert kernel_summary(mixed) == per_launch_kernel_summary(mixed)


def test_the_h200_sessions_have_grouped_kernels() -> None:
    """What makes the comparison above worth running: launches judged as one group."""
    grouped = [g for path in SESSIONS for g in session(path)["launches"].get("group") or [] if g is not None]
    assert len(grouped) >= 12


@pytest.mark.parametrize("page", ["raw", "details"])
def test_generated_compares_count_as_before(page: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    writer = write_raw_csv if page == "raw" else write_details_csv
    base, changed, rerun = (tmp_path / f"{name}.csv" for name in ("base", "changed", "rerun"))
    writer(base, 2_000, 20, seed=1, run=1)
    writer(changed, 2_000, 20, seed=2, scale=1.01)
    writer(rerun, 2_000, 20, seed=1, run=2)
    for current in (changed, rerun):
        status, _, err = run_cli(capsys, "compare", base, current, "--format", "json", "-o", tmp_path / "r.json")
        assert status in (0, 1), err
        report = load_report(tmp_path / "r.json")
        assert any(g is not None for g in report["launches"].get("group") or [])
        assert kernel_summary(report) == per_launch_kernel_summary(report)
        mixed = redrawn(report, 7)
        assert kernel_summary(mixed) == per_launch_kernel_summary(mixed)
