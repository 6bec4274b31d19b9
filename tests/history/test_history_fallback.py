"""``history_fallback`` (what ``perfgate init`` sets): the base branch's recorded runs judge only the tests without a
committed baseline; a committed baseline wins; a history nothing was recorded in yet is no error but a note that
says what to do, on both engines."""

from __future__ import annotations

import json

import pytest
from helpers.benchmark_suite import BENCH_OPTIONS, suite  # noqa: F401  (the fixture)
from helpers.history import history_url  # noqa: F401  (the fixture)

from perfgate.cli import main
from perfgate.history.reference import MIN_REFERENCE_RUNS


def _on(monkeypatch: pytest.MonkeyPatch, branch: str, sha: str) -> None:
    for name in ("GITHUB_HEAD_REF", "GITHUB_EVENT_PATH"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("GITHUB_REF_NAME", branch)
    monkeypatch.setenv("GITHUB_SHA", sha)


def test_committed_baselines_win_and_an_empty_history_says_what_to_do(
        suite: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, history_url: str) -> None:  # noqa: F811
    fallback = ("--perfgate", *BENCH_OPTIONS, "--perfgate-history", history_url, "--perfgate-history-fallback")
    _on(monkeypatch, "feature", "f" * 40)
    suite.runpytest(*fallback).assert_outcomes(passed=2)  # nothing recorded: new, not red, and not an error
    report = json.loads((suite.path / "perfgate-report.json").read_text(encoding="utf-8"))
    assert report["verdict"] == "not measured"
    assert any(n.startswith("not gated yet: main has 0 recorded runs") for n in report["notes"])

    _on(monkeypatch, "main", "0" * 40)  # main's runs, recorded
    suite.runpytest("--perfgate", *BENCH_OPTIONS, "--perfgate-history", history_url).assert_outcomes(passed=2)
    for index in range(1, MIN_REFERENCE_RUNS):
        assert main(["history", "record", str(suite.path / "perfgate-report.json"), "--db", history_url,
                     "--commit", f"{index:040x}", "--branch", "main"]) == 0

    _on(monkeypatch, "feature", "f" * 40)
    monkeypatch.setenv("PARSE_N", "4800")  # test_parse 60% slower than main's runs
    suite.runpytest(*fallback).assert_outcomes(passed=1, failed=1)  # no baseline: judged against main
    suite.runpytest("--perfgate", "--perfgate-update", *BENCH_OPTIONS, "test_bench.py::test_parse"
                    ).assert_outcomes(passed=1)  # the slower parse committed as its baseline
    suite.runpytest(*fallback).assert_outcomes(passed=2)  # the committed baseline wins
    suite.runpytest("--perfgate", *BENCH_OPTIONS, "--perfgate-history", history_url,
                    "--perfgate-history-thresholds").assert_outcomes(passed=1, failed=1)  # there, the history wins
