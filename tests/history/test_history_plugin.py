"""``pytest --perfgate --perfgate-history URL`` and ``[tool.perfgate] history``: every session is recorded, for
real (pytest-benchmark tests on a virtual clock, see test_plugin_benchmark); learned thresholds are reported."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers.benchmark_suite import BENCH_OPTIONS

from perfgate.history.db import open_history

pytest_plugins = ("pytester",)


def _runs(url: str) -> list[tuple[str, str]]:
    with open_history(url, create=False) as history:
        return history.query("SELECT commit_sha, branch FROM perfgate_runs ORDER BY id")


def test_each_session_is_recorded(suite: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:  # noqa: F811
    url = f"sqlite:///{suite.path / 'h.sqlite'}"
    monkeypatch.setenv("GITHUB_SHA", "1" * 40)
    monkeypatch.setenv("GITHUB_REF_NAME", "main")
    for name in ("GITHUB_HEAD_REF", "GITHUB_EVENT_PATH"):
        monkeypatch.delenv(name, raising=False)
    suite.runpytest("--perfgate", "--perfgate-update", *BENCH_OPTIONS).assert_outcomes(passed=2)
    result = suite.runpytest("--perfgate", *BENCH_OPTIONS, "--perfgate-history", url)
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines([f"history: recorded * series at 111111111111 on main in {url}"])
    assert _runs(url) == [("1" * 40, "main")]
    with open_history(url, create=False) as history:
        assert {row[0] for row in history.query("SELECT metric FROM perfgate_series")} >= {"time.min"}

    (suite.path / "pyproject.toml").write_text('[tool.perfgate]\nhistory = "sqlite:///h.sqlite"\n'
                                               "history_thresholds = true\n", encoding="utf-8")
    monkeypatch.setenv("GITHUB_SHA", "2" * 40)
    result = suite.runpytest("--perfgate", *BENCH_OPTIONS)
    result.assert_outcomes(passed=2)
    assert _runs(url)[-1] == ("2" * 40, "main")
    report = (suite.path / "perfgate-report.md").read_text(encoding="utf-8")
    assert "insufficient data" in report and "fewer than 5 base-branch runs" in report


def test_an_unreachable_history_is_a_red_line_not_a_crash(suite: pytest.Pytester) -> None:  # noqa: F811
    suite.runpytest("--perfgate", "--perfgate-update", *BENCH_OPTIONS).assert_outcomes(passed=2)
    result = suite.runpytest("--perfgate", *BENCH_OPTIONS, "--perfgate-history", "postgresql://x@127.0.0.1:1/none")
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(["perfgate: cannot record the session in the history: *cannot connect*"])


def test_without_the_option_nothing_is_recorded(suite: pytest.Pytester) -> None:  # noqa: F811
    suite.runpytest("--perfgate", "--perfgate-update", *BENCH_OPTIONS).assert_outcomes(passed=2)
    suite.runpytest("--perfgate", *BENCH_OPTIONS).assert_outcomes(passed=2)
    assert not (suite.path / ".perfgate").exists() and not list(Path(suite.path).glob("*.sqlite"))
