"""Judging against history: ``perfgate compare --history`` and ``pytest --perfgate`` learning from the history
compare the current run with the median of the base branch's recent runs, say which reference was used, and
say "insufficient data" for each series with too few runs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers.history import KERNEL_TIME, baseline_file, compare_json, history_url, record_runs, write_report  # noqa: F401  (the fixture)
from helpers.benchmark_suite import BENCH_OPTIONS

from perfgate.cli import main
from perfgate.history.reference import MIN_REFERENCE_RUNS, REFERENCE_COMMITS

pytest_plugins = ("pytester",)

HISTORY = (99000.0, 101000.0, 100000.0, 100500.0, 99500.0, 100000.0)  # median 100000


def test_the_current_run_is_judged_against_the_median_of_recent_runs(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'h.sqlite'}"
    record_runs(tmp_path, url, [{"gemm": v} for v in HISTORY])
    stale = baseline_file(tmp_path / "base.json", {"gemm": 90000.0})  # an old, faster snapshot
    current = baseline_file(tmp_path / "cur.json", {"gemm": 102000.0})
    assert main(["compare", str(stale), str(current)]) == 1  # +13% against the snapshot alone

    status, report = compare_json(tmp_path, str(stale), str(current), "--history", url)
    assert status == 0  # +2% against the median of the base branch's runs
    assert report["comparisons"][0]["baseline"] == "history: median of 6 runs of main since 2026-11-01"
    assert "reference: history: median of 6 runs of main since 2026-11-01 for 1 series" in report["notes"]
    assert report["results"]["baseline"] == [100000.0]

    status, report = compare_json(tmp_path, str(current), "--history", url)  # no baseline file at all
    assert status == 0 and report["results"]["baseline"] == [100000.0]
    slower = baseline_file(tmp_path / "slow.json", {"gemm": 110000.0})
    status, report = compare_json(tmp_path, str(slower), "--history", url)
    assert status == 1 and report["verdict"] == "fail"


def test_only_the_last_commits_count(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'h.sqlite'}"
    record_runs(tmp_path, url, [{"gemm": 200000.0}] * 8 + [{"gemm": 100000.0}] * REFERENCE_COMMITS)
    status, report = compare_json(tmp_path, str(baseline_file(tmp_path / "cur.json", {"gemm": 101000.0})),
                              "--history", url)
    assert status == 0 and report["results"]["baseline"] == [100000.0]
    assert report["comparisons"][0]["baseline"] == f"history: median of {REFERENCE_COMMITS} runs of main since " \
                                                   "2026-11-09"


def test_insufficient_data_is_said_per_series(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'h.sqlite'}"
    # gemm in every run, scan in the last 3 only
    record_runs(tmp_path, url, [{"gemm": v, **({"scan": 5000.0} if i >= 3 else {})} for i, v in enumerate(HISTORY)])
    base = baseline_file(tmp_path / "base.json", {"gemm": 90000.0, "scan": 10000.0})
    current = baseline_file(tmp_path / "cur.json", {"gemm": 102000.0, "scan": 10100.0})
    status, report = compare_json(tmp_path, str(base), str(current), "--history", url)
    assert status == 0
    assert f"history: scan {KERNEL_TIME}: insufficient data (3 of the last runs, {MIN_REFERENCE_RUNS} needed): " \
           f"judged against {base}" in report["notes"]
    assert report["comparisons"][0]["baseline"] == f"history: median of 6 runs of main since 2026-11-01; else {base}"
    by_kernel = dict(zip(report["launches"]["kernel"], report["results"]["baseline"]))
    assert by_kernel == {"gemm": 100000.0, "scan": 10000.0}  # scan keeps the file's value

    status, report = compare_json(tmp_path, str(current), "--history", url)  # no file: scan has no reference
    assert f"history: scan {KERNEL_TIME}: insufficient data (3 of the last runs, {MIN_REFERENCE_RUNS} needed): " \
           "no reference" in report["notes"]
    status_of = dict(zip(report["launches"]["kernel"], report["launches"]["status"]))
    assert status_of == {"gemm": "unchanged", "scan": "new"}

    status, report = compare_json(tmp_path, str(base), str(current), "--history", url, "--history-branch", "nope")
    assert "history: insufficient data: no run of branch 'nope' is recorded; judged against " \
           f"{base}" in report["notes"]
    assert status == 1  # the snapshot alone: gemm +13%


def test_no_reference_at_all_is_never_a_pass(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'h.sqlite'}"
    record_runs(tmp_path, url, [{"gemm": v} for v in HISTORY[:3]])  # too few runs
    current = baseline_file(tmp_path / "cur.json", {"gemm": 100_000.0})
    assert main(["compare", str(current), "--history", url]) == 2
    assert "nothing to compare: the history holds no reference for its launches on branch 'main'" in \
        capsys.readouterr().err


def test_compare_without_baseline_needs_history(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    current = baseline_file(tmp_path / "cur.json", {"gemm": 1.0})
    with pytest.raises(SystemExit) as info:
        main(["compare", str(current)])
    assert info.value.code == 2
    assert "BASELINE is required without --history" in capsys.readouterr().err


def test_a_history_that_holds_none_of_the_runs_series_does_not_claim_to_be_its_reference(tmp_path: Path) -> None:
    # The note read "reference: history: median of 6 runs of main ... for 0 series": as if the history had judged.
    url = f"sqlite:///{tmp_path / 'h.sqlite'}"
    record_runs(tmp_path, url, [{"gemm": v} for v in HISTORY])
    stale = baseline_file(tmp_path / "base.json", {"scan": 90000.0})
    current = baseline_file(tmp_path / "cur.json", {"scan": 91000.0})
    status, report = compare_json(tmp_path, str(stale), str(current), "--history", url)
    assert status == 0
    [note] = [n for n in report["notes"] if n.startswith("reference: ")]
    assert note == ("reference: history: median of 6 runs of main since 2026-11-01, for none of this run's series: all "
                    f"judged against {stale}")


def test_the_plugin_judges_each_test_against_the_history(suite: pytest.Pytester,  # noqa: F811
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    url = f"sqlite:///{suite.path / 'h.sqlite'}"
    for name in ("GITHUB_HEAD_REF", "GITHUB_EVENT_PATH"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("GITHUB_REF_NAME", "main")
    suite.runpytest("--perfgate", "--perfgate-update", *BENCH_OPTIONS).assert_outcomes(passed=2)
    monkeypatch.setenv("PARSE_N", "4800")  # main made test_parse 60% slower, on purpose: the snapshot is stale
    monkeypatch.setenv("GITHUB_SHA", "0" * 40)
    suite.runpytest("--perfgate", *BENCH_OPTIONS, "--perfgate-history", url).assert_outcomes(passed=1, failed=1)
    for index in range(1, MIN_REFERENCE_RUNS):  # the same session at further commits of main
        assert main(["history", "record", str(suite.path / "perfgate-report.json"), "--db", url, "--commit",
                     f"{index:040x}", "--branch", "main"]) == 0

    result = suite.runpytest("--perfgate", *BENCH_OPTIONS, "--perfgate-history", url, "--perfgate-history-thresholds")
    result.assert_outcomes(passed=2)  # judged against main's recent runs, not the stale snapshot
    report = json.loads((suite.path / "perfgate-report.json").read_text(encoding="utf-8"))
    assert any(note.startswith(f"reference: history: median of {MIN_REFERENCE_RUNS} runs of main since ")
               for note in report["notes"])
    assert all(c["baseline"].startswith("history: median of ") for c in report["comparisons"])
    metrics = report["metrics"]  # each test's series at its own learned threshold: identical runs, the floor
    assert ("time.min", "0.5%") in set(zip(metrics["metric"], metrics["threshold"]))


def test_the_reference_reads_the_same_on_both_engines(tmp_path: Path, history_url: str) -> None:  # noqa: F811
    from perfgate.history.db import open_history
    from perfgate.history.reference import load_reference

    record_runs(tmp_path, history_url, [{"gemm": v, "scan": 7.0} for v in HISTORY])
    record_runs(tmp_path, history_url, [{"gemm": 1.0}], branch="other")
    with open_history(history_url, create=False) as history:
        reference = load_reference(history, "main")
    assert reference.commits == 6 and reference.since.startswith("2026-11-01")
    assert reference.lookup(None, ("NVIDIA H100", "", "kernel", "gemm", "", KERNEL_TIME)) == (100000.0, 6)
    assert reference.lookup("tests/test_k.py::test_k", ("NVIDIA H100", "", "kernel", "scan", "", KERNEL_TIME)) == (7.0, 6)
    assert reference.lookup("another::test", ("NVIDIA H100", "", "kernel", "scan", "", KERNEL_TIME)) is None
