"""Large histories and reports for the history benchmarks (and docs/history.md's figures)::

    PYTHONPATH=. python tests/benchmarks/history_data.py --series 10000 --commits 200 --db sqlite:////tmp/h.sqlite
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Sequence

import numpy as np

from perfgate.history.db import History, open_history

METRICS = ("gpu__time_duration.sum", "dram__bytes_read.sum", "dram__bytes_write.sum", "smsp__inst_executed.sum",
           "lts__t_sectors.sum")
EXACT = {"smsp__inst_executed.sum"}


def fill_history(history: History, series: int, commits: int, seed: int = 26) -> None:
    """``series`` series (``len(METRICS)`` per kernel) over ``commits`` commits of main, one run each; one in
    twenty has a step at a random commit. Written straight into the tables: the benchmark measures reading."""
    rng = np.random.default_rng(seed)
    kernels = (series + len(METRICS) - 1) // len(METRICS)
    with history.transaction():
        history.executemany(
            "INSERT INTO perfgate_runs (id, run_key, commit_sha, branch, recorded_at, source, generator, settings) "
            "VALUES (?, ?, ?, 'main', ?, 'bench.json', 'perfgate 0.1.0', '{}')",
            [(c + 1, f"key{c}", f"{c:040x}", f"2026-01-01T{c // 3600:02d}:{c // 60 % 60:02d}:{c % 60:02d}.000000Z")
             for c in range(commits)])
        rows = [(k * len(METRICS) + m + 1, "NVIDIA H100", f"tests/test_{k % 50}.py::test_k", "kernel", f"kernel_{k}",
                 "", metric, "ns", "lower") for k in range(kernels) for m, metric in enumerate(METRICS)][:series]
        history.executemany("INSERT INTO perfgate_series (id, gpu, test, kind, kernel, region, metric, unit, "
                            "direction) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)", rows)
        for series_id, *facts in rows:
            values = _values(rng, facts[5] in EXACT, commits)
            history.executemany("INSERT INTO perfgate_points (series_id, run_id, n, value, low, high, samples) "
                                "VALUES (?, ?, 1, ?, ?, ?, NULL)",
                                [(series_id, c + 1, v, v, v) for c, v in enumerate(values.tolist())])


def add_commit(history: History, series: int, commit: int, seed: int = 27) -> None:
    """One more commit of main (index ``commit``, after ``fill_history``'s): a run with a point for every series,
    as CI records one commit at a time; each series keeps its level (the median of its values in the last 10
    commits ``fill_history`` wrote: no drift however many are added), noise redrawn."""
    rng = np.random.default_rng(seed + commit)
    recent: dict[int, list[float]] = {}
    for series_id, value in history.query(
            "SELECT series_id, value FROM perfgate_points WHERE run_id IN (SELECT id FROM perfgate_runs WHERE "
            "recorded_at < '2026-01-02' ORDER BY id DESC LIMIT 10)"):
        recent.setdefault(int(series_id), []).append(float(value))
    last = {series_id: float(np.median(values)) for series_id, values in recent.items()}
    exact = {int(row[0]) for row in history.query("SELECT id FROM perfgate_series WHERE metric IN "
                                                  f"({', '.join('?' * len(EXACT))})", sorted(EXACT))}
    with history.transaction():
        history.execute("INSERT INTO perfgate_runs (id, run_key, commit_sha, branch, recorded_at, source, generator, "
                        "settings) VALUES (?, ?, ?, 'main', ?, 'bench.json', 'perfgate 0.1.0', '{}')",
                        (commit + 1, f"key{commit}", f"{commit:040x}",
                         f"2026-01-02T{commit // 3600:02d}:{commit // 60 % 60:02d}:{commit % 60:02d}.000000Z"))
        rows = []
        for series_id, value in sorted(last.items()):
            value = round(value) if series_id in exact else value * (1 + rng.normal(0, 0.01))
            rows.append((series_id, commit + 1, 1, value, value, value))
        history.insert_rows("perfgate_points", ("series_id", "run_id", "n", "value", "low", "high"), rows)


def _values(rng: np.random.Generator, exact: bool, commits: int) -> np.ndarray:
    level = np.full(commits, float(rng.integers(1_000, 1_000_000)))
    if rng.random() < 0.05:
        level[int(rng.integers(10, commits - 10)):] *= 1 + rng.uniform(0.03, 0.2)
    return np.round(level) if exact else level * (1 + rng.normal(0, 0.01, commits))


def write_big_report(path: Path, launches: int, seed: int = 26) -> Path:
    """A perfgate report of ``launches`` kernel launches (a tenth of them repeats of the same kernel) with the
    default metrics' current values."""
    rng = np.random.default_rng(seed)
    kernels = [f"kernel_{i % (launches * 9 // 10)}" for i in range(launches)]
    launch_columns = {"kind": ["kernel"] * launches, "kernel": kernels, "demangled": [None] * launches,
                      "region": [None] * launches, "ordinal": list(range(launches)),
                      "status": ["unchanged"] * launches, "device": ["NVIDIA H100"] * launches,
                      "launch_change": [None] * launches, "test": [f"tests/test_{i % 50}.py::test_k" for i in
                                                                      range(launches)],
                      "path": [None] * launches, "line": [None] * launches}
    values = rng.uniform(1e3, 1e6, launches * len(METRICS)).tolist()
    results = {"launch": [i // len(METRICS) for i in range(len(values))],
               "metric": [i % len(METRICS) for i in range(len(values))], "baseline": values, "current": values,
               "change": [0.0] * len(values), "delta": [0.0] * len(values), "status": ["unchanged"] * len(values),
               "gated": [True] * len(values)}
    document = {"format": "perfgate-report", "version": 2, "generator": "perfgate 0.1.0", "verdict": "pass",
                "summary": {}, "comparisons": [], "launches": launch_columns,
                "metrics": {"metric": list(METRICS), "label": list(METRICS), "unit": ["ns"] * len(METRICS),
                            "threshold": ["5%"] * len(METRICS), "direction": ["lower"] * len(METRICS)},
                "results": results, "notes": []}
    path.write_text(json.dumps(document), encoding="utf-8")
    return path


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--series", type=int, default=10_000)
    parser.add_argument("--commits", type=int, default=200)
    parser.add_argument("--db", required=True)
    args = parser.parse_args(argv)
    with open_history(args.db) as history:
        fill_history(history, args.series, args.commits)
    return 0


if __name__ == "__main__":
    sys.exit(main())
