"""Shared by the history tests: synthetic perfgate reports and the two history engines.

PostgreSQL is real: ``.ci/run`` starts a throwaway cluster and exports ``PERFGATE_TEST_POSTGRES_URL``
(see ``.ci/postgres``). Without it the PostgreSQL tests skip locally and fail in CI.
"""

from __future__ import annotations

import json
import os
import uuid
from pathlib import Path
from typing import Any, Iterator, Mapping, Sequence

import pytest

from perfgate.cli import main

KERNEL_TIME = "gpu__time_duration.sum"
INSTRUCTIONS = "smsp__inst_executed.sum"


def write_report(path: Path, values: Mapping[tuple[str, str], Sequence[float]], device: str = "NVIDIA H100",
                 test: str = "tests/test_k.py::test_k", version: int = 2, status: str = "unchanged") -> Path:
    """A perfgate JSON report whose current side holds ``values``: (kernel, metric) -> one value per launch."""
    launches: dict[str, list[object]] = {name: [] for name in (
        "kind", "kernel", "demangled", "region", "ordinal", "status", "device", "launch_change", "test", "path",
        "line")}
    metrics = sorted({metric for _, metric in values})
    results: dict[str, list[object]] = {name: [] for name in (
        "launch", "metric", "baseline", "current", "change", "delta", "status", "gated")}
    for (kernel, metric), samples in sorted(values.items()):
        for ordinal, value in enumerate(samples):
            for name, item in (("kind", "kernel"), ("kernel", kernel), ("demangled", None), ("region", None),
                               ("ordinal", ordinal), ("status", status), ("device", device),
                               ("launch_change", None), ("test", test), ("path", None), ("line", None)):
                launches[name].append(item)
            for name, item in (("launch", len(launches["kind"]) - 1), ("metric", metrics.index(metric)),
                               ("baseline", value), ("current", value), ("change", 0.0), ("delta", 0.0),
                               ("status", status), ("gated", True)):
                results[name].append(item)
    document = {"format": "perfgate-report", "version": version, "generator": "perfgate 0.1.0",
                "verdict": "fail" if status == "regression" else "pass",
                "summary": {}, "comparisons": [{"baseline": "b", "current": "c", "baseline_devices": [device],
                                                "current_devices": [device], "test": test, "settings": {
                                                    "current": {"clock_control": "base", "replay_passes": 1}}}],
                "launches": launches,
                "metrics": {"metric": metrics, "label": metrics, "unit": ["ns" if m == KERNEL_TIME else "" for m in
                                                                         metrics],
                            "threshold": ["5%"] * len(metrics), "direction": ["lower"] * len(metrics)},
                "results": results, "notes": []}
    path.write_text(json.dumps(document), encoding="utf-8")
    return path


def postgres_server_url() -> str:
    """The throwaway server's URL; skip locally without one, fail in CI (where .ci/run starts one)."""
    url = os.environ.get("PERFGATE_TEST_POSTGRES_URL")
    if url:
        return url
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail("PERFGATE_TEST_POSTGRES_URL is not set: .ci/run starts a PostgreSQL cluster (.ci/postgres) for "
                    "the history tests")
    pytest.skip("no PostgreSQL server: set PERFGATE_TEST_POSTGRES_URL (source .ci/postgres starts one)")


def fresh_postgres_database() -> Iterator[str]:
    """A database of its own for one test on the throwaway server, dropped after it."""
    import psycopg

    server = postgres_server_url()
    name = f"perfgate_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(server, autocommit=True) as admin:
        admin.execute(f"CREATE DATABASE {name}")
    try:
        yield server.rsplit("/", 1)[0] + "/" + name
    finally:
        with psycopg.connect(server, autocommit=True) as admin:
            admin.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


@pytest.fixture(params=["sqlite", "postgresql"])
def history_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """A new, empty history on each engine."""
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'history.sqlite'}"
    else:
        yield from fresh_postgres_database()


def baseline_file(path: Path, values: dict[str, float]) -> Path:
    """A perfgate baseline (readable as either side of compare): kernel -> its duration in ns."""
    entries = [{"kind": "kernel", "name": kernel, "ordinal": 0,
                "metrics": {KERNEL_TIME: {"unit": "ns", "value": value}}} for kernel, value in sorted(values.items())]
    path.write_text(json.dumps({"format": "perfgate-baseline", "version": 1,
                                "device": {"name": "NVIDIA H100", "cc": "9.0"}, "entries": entries}),
                    encoding="utf-8")
    return path


def commit_of(index: int) -> str:
    """Run ``index``'s commit: its short form (what the dashboard shows) tells runs apart."""
    return f"{index:04x}".ljust(40, "c")


def record_reports(url: str, reports: Path | Sequence[Path], index: int = 0, branch: str = "main") -> int:
    """``perfgate history record REPORTS`` as run ``index``: its commit (:func:`commit_of`) and a day of November
    2026 each. Returns the exit status."""
    paths = [reports] if isinstance(reports, Path) else list(reports)
    return main(["history", "record", *map(str, paths), "--db", url, "--commit", commit_of(index), "--branch", branch,
                 "--when", f"2026-11-{index + 1:02d}T00:00:00Z"])


def record_runs(tmp_path: Path, url: str, runs: Sequence[dict[str, float]], branch: str = "main") -> None:
    """``perfgate history record`` of one report per run (kernel -> its duration), as :func:`record_reports`."""
    for index, values in enumerate(runs):
        report = write_report(tmp_path / f"run{index}.json", {(k, KERNEL_TIME): [v] for k, v in values.items()})
        assert record_reports(url, report, index, branch) == 0


def compare_json(tmp_path: Path, *args: str) -> tuple[int, dict[str, Any]]:
    """``perfgate compare ARGS`` as JSON: its exit status and the report."""
    out = tmp_path / "compare.json"
    status = main(["compare", *args, "-o", str(out)])
    return status, json.loads(out.read_text(encoding="utf-8"))


def write_series(url: str, series: Sequence[Any], first: int = 0) -> None:
    """Each array of ``series`` as the duration of a kernel ``kernel_K`` of main, one run a commit, every series
    ending at the newest commit; written straight into the tables (a long history in a second). ``first``: write
    only the commits from this one on, into a history that holds the earlier ones (one more commit)."""
    from perfgate.history.db import open_history

    commits = max(len(values) for values in series)
    with open_history(url) as history, history.transaction():
        history.executemany(
            "INSERT INTO perfgate_runs (id, run_key, commit_sha, branch, recorded_at, source, generator, settings) "
            "VALUES (?, ?, ?, 'main', ?, 'series.json', 'perfgate test', '{}')",
            [(c + 1, f"key{c}", f"{c:040x}", f"2026-01-01T{c // 3600:02d}:{c // 60 % 60:02d}:{c % 60:02d}.000000Z")
             for c in range(first, commits)])
        if not first:
            history.executemany(
                "INSERT INTO perfgate_series (id, gpu, test, kind, kernel, region, metric, unit, direction) "
                "VALUES (?, 'NVIDIA H100', 'tests/test_s.py::test_s', 'kernel', ?, '', 'gpu__time_duration.sum', "
                "'ns', 'lower')", [(k + 1, f"kernel_{k}") for k in range(len(series))])
        history.executemany("INSERT INTO perfgate_points (series_id, run_id, n, value, low, high, samples) "
                            "VALUES (?, ?, 1, ?, ?, ?, NULL)",
                            [(k + 1, commits - len(values) + c + 1, v, v, v) for k, values in enumerate(series)
                             for c, v in enumerate(values.tolist()) if commits - len(values) + c >= first])


def record_commits(history: Any, values: Sequence[Any], commits: range, rerun: bool = False) -> None:
    """``values`` (one array a series ``kK`` of GPU ``H100``, an element a commit) at ``commits``, straight into an
    open history's tables; ``rerun``: the same commits recorded again, 1.5x slower, as runs of their own."""
    with history.transaction():
        if commits.start == 0:
            history.insert_rows("perfgate_series", ("id", "gpu", "test", "kind", "kernel", "region", "metric", "unit",
                                                    "direction"),
                                [(i + 1, "H100", "t", "kernel", f"k{i}", "", "time", "ns", "lower")
                                 for i in range(len(values))])
        for c in commits:
            run = c + 1 + (1000 if rerun else 0)
            history.execute("INSERT INTO perfgate_runs (id, run_key, commit_sha, branch, recorded_at, source, settings) "
                            "VALUES (?, ?, ?, 'main', ?, 's', '{}')",
                            (run, f"key{run}", f"{c:040x}", f"2026-01-01T00:{c // 60:02d}:{c % 60:02d}.{run:06d}Z"))
            history.insert_rows("perfgate_points", ("series_id", "run_id", "n", "value", "low", "high"),
                                [(i + 1, run, 1, float(v[c]) * (1.5 if rerun else 1.0), 0.0, 0.0)
                                 for i, v in enumerate(values)])
