"""pytest-benchmark results as perfgate input: real benchmark runs, --benchmark-json and .benchmarks/."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from helpers.benchmark_suite import UNEVEN_SUITE, run_virtual_benchmarks

from perfgate.cli import main
from perfgate.collect import read_table
from perfgate.compare import compare_tables, mann_whitney_p
from perfgate.report import launch_rows, result_rows

BENCH_SUITE = """
import os, time

def spin(n):
    total = 0
    for i in range(n):
        total += i * i
    return total

def test_fast(benchmark):
    benchmark(spin, 2000)

def test_tunable(benchmark):
    benchmark(spin, int(os.environ.get("SPIN", "2000")))
"""


def run_benchmarks(pytester: pytest.Pytester, out: Path, spin: int, save: bool = False) -> None:
    pytester.makepyfile(test_bench=BENCH_SUITE.replace('"2000"', f'"{spin}"'))
    # CPU time, not wall time: the suite runs beside other tests on a small CI machine.
    args = ["-p", "no:perfgate", "-p", "no:cacheprovider", "--benchmark-enable", f"--benchmark-json={out}",
            "--benchmark-min-rounds=30", "--benchmark-max-time=0.3", "--benchmark-save-data",
            "--benchmark-timer=time.process_time"]
    if save:
        args += ["--benchmark-autosave"]
    result = pytester.runpytest(*args)
    result.assert_outcomes(passed=2)


def test_reads_real_benchmark_json(pytester: pytest.Pytester) -> None:
    out = pytester.path / "bench.json"
    run_benchmarks(pytester, out, 2000)
    measurement = read_table(out)
    table = measurement.table.to_frame()
    assert set(table["kind"]) == {"benchmark"}
    assert set(table["kernel"]) == {"test_bench.py::test_fast", "test_bench.py::test_tunable"}
    assert {"time.median", "time.min", "time.mean", "time.stddev", "rounds"} <= set(table["metric"])
    assert (table.loc[table["metric"] == "time.median", "unit"] == "s").all()
    assert table["device"].iloc[0].startswith("CPU: ")
    samples = measurement.samples
    assert len(samples["test_bench.py::test_fast"]) >= 30


def test_reads_saved_runs(pytester: pytest.Pytester) -> None:
    run_benchmarks(pytester, pytester.path / "bench.json", 2000, save=True)
    [saved] = list((pytester.path / ".benchmarks").glob("*/*.json"))
    table = read_table(saved).table
    assert set(table["kernel"]) == {"test_bench.py::test_fast", "test_bench.py::test_tunable"}


def test_slower_benchmark_is_a_regression(pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str]) -> None:
    """A benchmark doing 3x the work fails the default 20% limit (and the significance test, raw timings
    being on both sides); an unchanged one next to it does not. Timings are real pytest-benchmark output
    of a virtual clock, so the machine's load cannot decide either way."""
    base, cur = pytester.path / "base.json", pytester.path / "cur.json"
    run_virtual_benchmarks(pytester, base, 2000)
    run_virtual_benchmarks(pytester, cur, 6000)  # 3x the work
    out = pytester.path / "report.json"
    status = main(["compare", str(base), str(cur), "--format", "json", "-o", str(out)])
    report = json.loads(out.read_text())
    statuses = {l["kernel"]: l["status"] for l in launch_rows(report)}
    assert status == 1
    assert statuses == {"test_bench.py::test_tunable": "regression", "test_bench.py::test_fast": "unchanged"}
    (slower,) = [r for r in result_rows(report) if r["kernel"] == "test_bench.py::test_tunable"
                 and r["metric"] == "time.min"]
    assert slower["threshold"] == "20%" and 1.9 < slower["change"] < 2.1  # +200%: 3x the virtual time
    assert len(read_table(cur).samples["test_bench.py::test_tunable"]) >= 30


def test_a_five_round_benchmark_six_times_slower_fails(pytester: pytest.Pytester,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    """pytest-benchmark's minimum of 5 rounds a side cannot reach p < 0.01 (its smallest p is 0.0122): a test 6x
    slower was unchanged, exit 0 (issue 35). Every current round slower than every baseline round by more than the
    20% limit fails it; the note says why the significance test could not decide."""
    base, cur = pytester.path / "base.json", pytester.path / "cur.json"
    run_virtual_benchmarks(pytester, base, 2000, rounds=5, suite=UNEVEN_SUITE)
    run_virtual_benchmarks(pytester, cur, 12000, rounds=5, suite=UNEVEN_SUITE)  # 6x the work
    assert len(read_table(cur).samples["test_bench.py::test_tunable"]) == 5
    out = pytester.path / "report.json"
    assert main(["compare", str(base), str(cur), "--format", "json", "-o", str(out)]) == 1
    report = json.loads(out.read_text())
    statuses = {row["kernel"]: row["status"] for row in launch_rows(report)}
    assert statuses == {"test_bench.py::test_tunable": "regression", "test_bench.py::test_fast": "unchanged"}
    assert any(note.startswith("test_bench.py::test_tunable: 5 and 5 rounds cannot reach the significance limit "
                               "p < 0.01 (the smallest p-value they allow is 0.0122)") for note in report["notes"])
    capsys.readouterr()


def test_a_seven_round_slowdown_with_one_baseline_round_slowed_by_load_is_not_passed(
        pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str]) -> None:
    """7 rounds a side could reach p < 0.01, but one baseline round slowed by load (above every current round)
    keeps a test 1.5x slower at p 0.03: it was unchanged, exit 0, with nothing said (a blind comparison set)."""
    base, cur = pytester.path / "base.json", pytester.path / "cur.json"
    run_virtual_benchmarks(pytester, base, 2000, rounds=7, suite=UNEVEN_SUITE)
    run_virtual_benchmarks(pytester, cur, 3000, rounds=7, suite=UNEVEN_SUITE)  # 1.5x the work
    document = json.loads(base.read_text())
    tunable = next(b for b in document["benchmarks"] if b["name"] == "test_tunable")
    tunable["stats"]["data"][-1] = 3 * max(tunable["stats"]["data"])  # another process took the CPU for a round
    tunable["stats"]["max"] = tunable["stats"]["data"][-1]
    base.write_text(json.dumps(document))
    out = pytester.path / "report.json"
    assert main(["compare", str(base), str(cur), "--format", "json", "-o", str(out)]) == 0
    report = json.loads(out.read_text())
    statuses = {row["kernel"]: row["status"] for row in launch_rows(report)}
    assert statuses["test_bench.py::test_tunable"] == "inconclusive"
    note = next(n for n in report["notes"] if n.startswith("test_bench.py::test_tunable: the median of its rounds"))
    assert "past its limit, but its rounds overlap (Mann-Whitney p 0.0" in note and "inconclusive, not passed" in note
    capsys.readouterr()


def test_baseline_from_benchmarks_keeps_samples(pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str]) -> None:
    out = pytester.path / "bench.json"
    run_benchmarks(pytester, out, 2000)
    assert main(["baseline", str(out), "-d", str(pytester.path / "baselines"), "--name", "bench"]) == 0
    [path] = (pytester.path / "baselines").glob("cpu-*/bench.json")
    document = json.loads(path.read_text())
    entry = document["entries"][0]
    assert entry["kind"] == "benchmark" and 3 <= len(entry["samples"]) <= 101
    assert main(["compare", str(path), str(out)]) == 0
    capsys.readouterr()


def test_mann_whitney() -> None:
    same = [1.0, 1.1, 0.9, 1.05, 0.95] * 4
    assert mann_whitney_p(same, same) > 0.5
    slower = [x * 1.6 for x in same]
    assert mann_whitney_p(same, slower) < 0.001
    assert mann_whitney_p([1.0], [2.0]) != mann_whitney_p([1.0], [2.0])  # NaN: too few samples


def test_not_benchmark_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "x.json"
    path.write_text(json.dumps({"benchmarks": [{"name": "a"}], "version": "5.0"}))
    assert main(["compare", str(path), str(path)]) == 2
    assert "stats" in capsys.readouterr().err


def test_benchmark_without_statistics_is_kept_as_no_data(tmp_path: Path) -> None:
    """A benchmark whose stats hold no number (an interrupted run) stays visible as one NaN row."""
    from perfgate.collect.benchmark_json import table_from_benchmark_json

    stats = {"min": 0.0012, "max": 0.0019, "mean": 0.0014, "stddev": 0.0001, "median": 0.0013, "iqr": 0.0002,
             "q1": 0.00125, "q3": 0.00145, "rounds": 30, "ops": 714.3, "data": [0.0012, 0.0013]}
    document = {"machine_info": {"cpu": {"brand_raw": "AMD EPYC 7B13"}}, "version": "5.1.0", "benchmarks": [
        {"group": None, "name": "test_fast", "fullname": "test_bench.py::test_fast", "stats": stats},
        {"group": None, "name": "test_tunable", "fullname": "test_bench.py::test_tunable", "stats": {"rounds": None}},
    ]}
    measurement = table_from_benchmark_json(document, tmp_path / "bench.json")
    table = measurement.table.to_frame()
    empty = table[table["kernel"] == "test_bench.py::test_tunable"]
    assert empty[["metric", "unit"]].values.tolist() == [["time.min", "s"]] and empty["value"].isna().all()
    assert len(table[table["kernel"] == "test_bench.py::test_fast"]) == 10
    assert set(table["device"]) == {"CPU: AMD EPYC 7B13"}
    assert measurement.samples == {"test_bench.py::test_fast": [0.0012, 0.0013]}


def test_a_side_without_raw_timings_says_the_significance_test_did_not_run(
        pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str]) -> None:
    base, cur = pytester.path / "base.json", pytester.path / "cur.json"
    run_benchmarks(pytester, base, 2000)
    document = json.loads(base.read_text())
    for bench in document["benchmarks"]:
        bench["stats"].pop("data", None)  # as pytest-benchmark writes it without --benchmark-save-data
    cur.write_text(json.dumps(document))
    out = pytester.path / "report.json"
    assert main(["compare", str(base), str(cur), "--format", "json", "-o", str(out)]) == 0
    notes = json.loads(out.read_text())["notes"]
    lacking = [n for n in notes if "no significance test" in n]
    assert len(lacking) == 2 and all("raw timings missing in the current run" in n for n in lacking)
    assert all("--benchmark-save-data" in n for n in lacking)


def test_a_baseline_of_recorded_medians_is_not_asked_for_raw_timings(pytester: pytest.Pytester) -> None:
    """The history's reference side is the median of recorded runs: there are no rounds to save for it, so the
    note says why the significance test did not run and advises nothing (the current run's timings are there)."""
    out = pytester.path / "run.json"
    run_benchmarks(pytester, out, 2000)
    current = read_table(out)
    names = frozenset(current.samples)
    medians = current._replace(samples={}, run_medians=names)
    notes = compare_tables(medians, current).notes
    said = [n for n in notes if "no significance test" in n]
    assert len(said) == len(names) == 2
    assert all("the baseline is the median of recorded runs" in n and "--benchmark-save-data" not in n for n in said)
    unsaved = [n for n in compare_tables(medians, current._replace(samples={})).notes if "no significance test" in n]
    assert len(unsaved) == 2 and all("missing in the current run; save them with pytest-benchmark's "
                                     "--benchmark-save-data" in n for n in unsaved)  # the current run could have
