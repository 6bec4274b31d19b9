"""Runs perfgate's ``history changes`` and Apache Otava on the blind history set and prints the issue-35 table
(README.md: the protocol)::

    PYTHONPATH=. python tests/blind_history/run.py --otava-python /tmp/otava-venv/bin/python [--json]

The series are written into a throwaway SQLite history under /tmp (deleted afterwards), one branch per series
length, straight into its tables (as tests/benchmarks/history_data.py does: one run per commit, every series of
the branch a point in every run), then ``perfgate history changes --branch ... --format json`` reads each branch.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any, Sequence

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from generate import Series, generate, truth_document  # noqa: E402
from score import summary, table  # noqa: E402

from perfgate.history.db import open_history  # noqa: E402

START = datetime(2026, 1, 1, tzinfo=timezone.utc)
OTAVA_P_VALUES = (0.001, 0.0001)
OTAVA_WINDOW = 50


def _sha(length: int, commit: int) -> str:
    """A commit's hash that says its branch (the series length) and index in its first 12 characters."""
    return f"{length:04x}{commit:08x}" + "0" * 28


def _test(series: Series) -> str:
    return f"tests/test_blind.py::test_{series.name}"


def write_history(url: str, made: Sequence[Series]) -> list[int]:
    """Every series into the history at ``url``; returns the branches' lengths (branch ``len<N>``)."""
    lengths = sorted({len(s.values) for s in made})
    with open_history(url) as history, history.transaction():
        run_ids: dict[tuple[int, int], int] = {}
        runs = []
        for length in lengths:
            for commit in range(length):
                run_ids[length, commit] = len(runs) + 1
                when = (START + timedelta(minutes=len(runs))).strftime("%Y-%m-%dT%H:%M:%S.000000Z")
                runs.append((len(runs) + 1, f"blind-{length}-{commit}", _sha(length, commit), f"len{length}", when))
        history.executemany(
            "INSERT INTO perfgate_runs (id, run_key, commit_sha, branch, recorded_at, source, generator, settings) "
            "VALUES (?, ?, ?, ?, ?, 'blind.json', 'perfgate 0.1.0', '{}')", runs)
        rows = [(number + 1, "NVIDIA H100", _test(s), "kernel", "blind_kernel", "",
                 "smsp__inst_executed.sum" if s.exact else "gpu__time_duration.sum", "inst" if s.exact else "ns",
                 "lower") for number, s in enumerate(made)]
        history.executemany("INSERT INTO perfgate_series (id, gpu, test, kind, kernel, region, metric, unit, "
                            "direction) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)", rows)
        points = [(number + 1, run_ids[len(s.values), commit], 1, value, value, value)
                  for number, s in enumerate(made) for commit, value in enumerate(s.values.tolist())]
        history.insert_rows("perfgate_points", ("series_id", "run_id", "n", "value", "low", "high"), points)
    return lengths


def perfgate_changes(url: str, lengths: Sequence[int], made: Sequence[Series],
                     p_value: float | None) -> tuple[dict[str, list[int]], list[dict[str, Any]], float]:
    """perfgate's change points per series (the index of the first commit after each), its raw entries and the
    CPU seconds its processes took."""
    by_test = {_test(s): s for s in made}
    found: dict[str, list[int]] = {s.name: [] for s in made}
    entries: list[dict[str, Any]] = []
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    for length in lengths:
        command = [sys.executable, "-m", "perfgate", "history", "changes", "--db", url, "--branch", f"len{length}",
                   "--format", "json", *(["--p-value", str(p_value)] if p_value is not None else [])]
        done = subprocess.run(command, capture_output=True, text=True, check=False, env=os.environ.copy())
        if done.returncode != 0:
            raise SystemExit(f"perfgate history changes exited {done.returncode}: {done.stderr.strip()}")
        for entry in json.loads(done.stdout):
            entries.append(entry)
            if entry.get("awaiting"):
                continue
            if int(entry["commit"][:4], 16) != length:
                raise SystemExit(f"a change point at an unknown commit: {entry['commit']}")
            found[by_test[entry["test"]].name].append(int(entry["commit"][4:12], 16))
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return found, entries, (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)


def otava_changes(python: str, folder: Path, made: Sequence[Series], p_value: float) -> tuple[dict[str, list[int]],
                                                                                            str, float]:
    """Otava's change points per series (its own venv's Python runs otava_side.py), its version, CPU seconds."""
    series_file, out = folder / "series.json", folder / f"otava-{p_value}.json"
    series_file.write_text(json.dumps({s.name: s.values.tolist() for s in made}), encoding="utf-8")
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run([python, str(HERE / "otava_side.py"), str(series_file), str(out), "--p-value", str(p_value),
                    "--window", str(OTAVA_WINDOW)], check=True, env={"PATH": os.environ.get("PATH", "")})
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    document = json.loads(out.read_text(encoding="utf-8"))
    return document["found"], document["otava"], (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)


def check_truth(made: Sequence[Series]) -> list[dict[str, Any]]:
    """The committed truth.json, after checking the generator still makes exactly that set."""
    committed = json.loads((HERE / "truth.json").read_text(encoding="utf-8"))
    if committed != json.loads(json.dumps(truth_document(made))):
        raise SystemExit("the generated set is not the one truth.json records: the set must not change")
    series: list[dict[str, Any]] = committed["series"]
    return series


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--otava-python", help="the Python of a venv with apache-otava installed")
    parser.add_argument("--json", action="store_true", help="print every figure and per-series outcome as JSON")
    args = parser.parse_args(argv)
    made = generate()
    truths = check_truth(made)
    folder = Path(tempfile.mkdtemp(prefix="perfgate-blind-"))
    summaries: dict[str, dict[str, Any]] = {}
    raw: dict[str, Any] = {}
    try:
        url = f"sqlite:///{folder / 'history.sqlite'}"
        lengths = write_history(url, made)
        for label, p_value in (("perfgate (default)", None), ("perfgate p 0.001", 0.001)):
            found, entries, cpu = perfgate_changes(url, lengths, made, p_value)
            summaries[label] = summary(truths, found) | {"cpu_s": round(cpu, 2)}
            raw[label] = entries
        for p_value in OTAVA_P_VALUES if args.otava_python else ():
            found, version, cpu = otava_changes(args.otava_python, folder, made, p_value)
            summaries[f"Otava {version} p {p_value:g}"] = summary(truths, found) | {"cpu_s": round(cpu, 2)}
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    if args.json:
        print(json.dumps({"summaries": summaries, "perfgate_entries": raw}, indent=1))
    else:
        print(table(summaries))
        print("\nCPU seconds: " + ", ".join(f"{name} {s['cpu_s']}" for name, s in summaries.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
