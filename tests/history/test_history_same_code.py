"""The history keeps each point's code_id and, where the same-code rule held a kernel's time, its changes as A/A
samples, on both engines; learned thresholds are sized by those samples. From a real comparison: our H100
vector_add rerun, compared with --code-identity."""

from __future__ import annotations

import json
import math

import numpy as np
from pathlib import Path

import pytest
from helpers.history import commit_of, history_url, record_reports  # noqa: F401  (the fixture)

from perfgate.cli import main
from perfgate.history.db import open_history
from perfgate.history.noise import learned_thresholds, same_code_threshold, series_thresholds
from perfgate.metrics import Threshold

REPO = Path(__file__).resolve().parents[2]
H100 = REPO / "tests" / "data" / "h100"
TIME = "gpu__time_duration.sum"


@pytest.fixture(scope="module")
def same_code_report(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The rerun's report: every kernel the same code as its baseline, the duration +0.6% held unchanged."""
    path = tmp_path_factory.mktemp("same-code") / "report.json"
    status = main(["compare", "--code-identity", str(H100 / "vector_add.ncu-rep"), str(H100 / "vector_add.rerun.ncu-rep"),
                   "--format", "json", "-o", str(path)])
    assert status == 0
    return path


def test_points_keep_their_code_and_the_a_a_samples_size_the_learned_threshold(history_url: str,  # noqa: F811
                                                                               same_code_report: Path) -> None:
    report = json.loads(same_code_report.read_text(encoding="utf-8"))
    code_id = report["launches"]["code_id"][report["launches"]["kind"].index("kernel")]
    for index in range(5):
        assert record_reports(history_url, same_code_report, index) == 0
    with open_history(history_url, create=False) as history:
        rows = history.query("SELECT s.kind, s.metric, p.code_id, p.same_code_changes FROM perfgate_points p "
                             "JOIN perfgate_series s ON s.id = p.series_id")
        kernel_time = [(code, changes) for kind, metric, code, changes in rows if kind == "kernel" and metric == TIME]
        assert len(kernel_time) == 5 and all(code == code_id for code, _ in kernel_time)
        changes = [json.loads(text) for _, text in kernel_time]
        assert all(len(c) == 1 and 0.005 < c[0] < 0.008 for c in changes)  # 78.88 µs → 79.39 µs
        counts = [changes for kind, metric, _, changes in rows if kind == "kernel" and metric != TIME
                  and "inst_executed" in metric]
        assert counts and all(c is None for c in counts)  # a counter is no A/A sample of time
        learned = learned_thresholds(history, "main", {TIME: Threshold(relative=0.05, absolute=2000.0)})
    threshold = series_thresholds(learned.series)[("vector_add", "vector_add", TIME)]
    expected = same_code_threshold(np.asarray([c[0] for c in changes]))
    assert threshold == Threshold(relative=min(math.ceil(expected * 1000) / 1000, 0.05), absolute=2000.0)
    assert any("learned from its A/A samples" in note for note in learned.notes), learned.notes


def test_a_run_without_code_records_none(history_url: str, tmp_path: Path) -> None:  # noqa: F811
    path = tmp_path / "plain.json"
    assert main(["compare", str(H100 / "vector_add.ncu-rep"), str(H100 / "vector_add.rerun.ncu-rep"), "--format",
                 "json", "-o", str(path)]) == 0
    assert record_reports(history_url, path, 0) == 0
    with open_history(history_url, create=False) as history:
        assert set(history.query("SELECT code_id, same_code_changes FROM perfgate_points")) == {(None, None)}


def test_history_changes_say_whether_the_code_changed_at_the_change_point(history_url: str,  # noqa: F811
                                                                         tmp_path: Path,
                                                                         capsys: pytest.CaptureFixture[str]) -> None:
    """Three kernels 50% slower from run 4: "gemm" with other code there, "copy" with the same code (the change is
    not its code), "plain" recorded without code."""
    from helpers.history import KERNEL_TIME, write_report

    for index in range(7):
        slow = index >= 4
        path = write_report(tmp_path / f"run{index}.json", {(k, KERNEL_TIME): [1500.0 if slow else 1000.0]
                                                            for k in ("copy", "gemm", "plain")})
        report = json.loads(path.read_text(encoding="utf-8"))
        report["launches"]["code_id"] = [{"copy": "c0de" * 16, "gemm": ("bbbb" if slow else "aaaa") * 16}.get(k)
                                         for k in report["launches"]["kernel"]]
        path.write_text(json.dumps(report), encoding="utf-8")
        assert record_reports(history_url, path, index) == 0
    capsys.readouterr()
    assert main(["history", "changes", "--db", history_url, "--format", "json"]) == 0
    changes = {c["kernel"]: c for c in json.loads(capsys.readouterr().out)}
    assert changes["gemm"]["code"] == {"before": "aaaa" * 16, "after": "bbbb" * 16, "changed": True}
    assert changes["copy"]["code"] == {"before": "c0de" * 16, "after": "c0de" * 16, "changed": False}
    assert changes["plain"]["code"] is None
    assert main(["history", "changes", "--db", history_url]) == 0
    text = capsys.readouterr().out
    assert f"  code changed: {'aaaa' * 3} -> {'bbbb' * 3}\n" in text
    assert f"  same code ({'c0de' * 3}) on both sides: not the kernel's code\n" in text
    assert len([line for line in text.splitlines() if line.startswith("  ")]) == 2  # none for "plain"
    assert main(["history", "changes", "--db", history_url, "--format", "md"]) == 0
    assert f"code changed: {'aaaa' * 3} " in capsys.readouterr().out  # the arrow escaped for Markdown
    assert main(["history", "dashboard", "--db", history_url, "-o", str(tmp_path / "site")]) == 0
    pages = "".join(page.read_text(encoding="utf-8") for page in (tmp_path / "site" / "kernels").iterdir())
    assert f'<span class="code">code changed: {"aaaa" * 3} -&gt; {"bbbb" * 3}</span>' in pages
