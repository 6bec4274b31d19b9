"""``history changes`` and ``history dashboard`` read ``[tool.perfgate]``'s history and history_branch, say so in
one line when the branch has no runs (exit 2), and list a regression of the newest run that no change point
covers yet as awaiting confirmation, worded as the dashboard words it."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from helpers.history import KERNEL_TIME, commit_of, record_reports, write_report
from perfgate.cli import main
from perfgate.history.location import resolve_history_url

H100 = Path(__file__).resolve().parents[1] / "data" / "h100" / "default-metrics" / "sessions"


def _record(url: str, tmp_path: Path, values: list[float], branch: str = "main", status: str = "unchanged") -> None:
    for index, value in enumerate(values):
        report = write_report(tmp_path / f"{branch}{index}.json", {("gemm", KERNEL_TIME): [value]},
                              status=status if index == len(values) - 1 else "unchanged")
        assert record_reports(url, report, index, branch=branch) == 0


def test_the_history_is_the_given_one_else_the_environments_else_the_configured_one() -> None:
    env = {"PERFGATE_HISTORY": "sqlite:///env.sqlite"}
    assert resolve_history_url("sqlite:///given.sqlite", "sqlite:///conf.sqlite", env) == "sqlite:///given.sqlite"
    assert resolve_history_url(None, "sqlite:///conf.sqlite", env) == "sqlite:///env.sqlite"
    assert resolve_history_url("", "sqlite:///conf.sqlite", {}) == "sqlite:///conf.sqlite"
    assert resolve_history_url(None, "", {"PERFGATE_HISTORY": ""}) is None  # open_history's default file


def test_the_configured_history_and_branch_are_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    project = tmp_path / "project"
    (project / "sub").mkdir(parents=True)
    (project / "pyproject.toml").write_text('[tool.perfgate]\nhistory = "sqlite:///perf/h.sqlite"\n'
                                            'history_branch = "develop"\n', encoding="utf-8")
    url = f"sqlite:///{project / 'perf' / 'h.sqlite'}"
    _record(url, tmp_path, [100.0] * 10 + [120.0] * 10, branch="develop")
    monkeypatch.delenv("PERFGATE_HISTORY", raising=False)
    monkeypatch.chdir(project / "sub")  # the history's path is relative to the pyproject.toml's folder
    capsys.readouterr()
    assert main(["history", "changes", "--format", "json"]) == 0
    found = json.loads(capsys.readouterr().out)
    assert [(c["commit"], c["direction"], c["awaiting"]) for c in found] == [(commit_of(10), "regression", False)]
    monkeypatch.chdir(tmp_path)
    assert main(["history", "changes", "--config", str(project / "pyproject.toml"), "--format", "json"]) == 0
    assert len(json.loads(capsys.readouterr().out)) == 1
    assert main(["history", "dashboard", "--config", str(project / "pyproject.toml"), "-o", str(tmp_path / "s")]) == 0
    assert "perfgate history: develop" in (tmp_path / "s" / "index.html").read_text(encoding="utf-8")
    capsys.readouterr()
    # the command line wins over the configuration
    assert main(["history", "changes", "--config", str(project / "pyproject.toml"), "--branch", "main"]) == 2
    assert "branch 'main': has no runs in this history (branches with runs: develop;" in capsys.readouterr().err


@pytest.mark.parametrize("command", [["changes"], ["dashboard", "-o", "site"]])
def test_a_branch_with_no_runs_is_one_line_and_exit_2(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                      capsys: pytest.CaptureFixture[str], command: list[str]) -> None:
    url = f"sqlite:///{tmp_path / 'h.sqlite'}"
    _record(url, tmp_path, [100.0] * 3)
    monkeypatch.chdir(tmp_path)
    capsys.readouterr()
    assert main(["history", command[0], "--db", url, "--branch", "mian", *command[1:]]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err.count("\n") == 1
    assert "branch 'mian': has no runs in this history (branches with runs: main; pass --branch, or set " \
           "history_branch in [tool.perfgate])" in captured.err
    assert not (tmp_path / "site").exists()


def test_the_newest_run_s_regression_awaits_confirmation(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """perfgate's own H100 sessions, five gated runs then the deliberate 4.8x regression: the gate flagged it,
    no change point covers it yet, and every output says it awaits confirmation instead of "no change points"."""
    url = f"sqlite:///{tmp_path / 'h.sqlite'}"
    for index, name in enumerate(["gate1", "gate2", "gate3", "gate4", "gate5", "regression"]):
        assert record_reports(url, H100 / f"{name}.json.xz", index) == 0
    capsys.readouterr()
    assert main(["history", "changes", "--db", url]) == 0
    text = capsys.readouterr().out
    assert "no change points" not in text
    lines = [line for line in text.splitlines() if "vector_add" in line and "gpu__time_duration.sum" in line]
    assert len(lines) == 2 and all(re.match(r"REGRESSION \+\d{3}\.\d% ", line) for line in lines), text
    assert all(f"at {commit_of(5)[:12]}: " in line and "(the newest run's regression awaits confirmation (a change "
               "point needs 3 runs that show it; this is the gate's verdict against its own baseline, "
               "and the change shown is the history's: the newest run against the median since the series' last change "
               "point))" in line for line in lines)
    assert main(["history", "changes", "--db", url, "--format", "json"]) == 0
    found = json.loads(capsys.readouterr().out)
    assert len(found) == 4 and all(c["awaiting"] and c["confidence"] is None and c["commit"] == commit_of(5)
                                   for c in found)
    assert main(["history", "changes", "--db", url, "--format", "md"]) == 0
    assert "| gate | the newest run's regression awaits confirmation" in capsys.readouterr().out


def test_once_later_runs_confirm_it_it_is_a_change_point(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    url = f"sqlite:///{tmp_path / 'h.sqlite'}"
    _record(url, tmp_path, [100.0, 101.0, 99.0, 100.0, 100.5, 99.5, 480.0], status="regression")
    capsys.readouterr()
    assert main(["history", "changes", "--db", url, "--format", "json"]) == 0
    assert [c["awaiting"] for c in json.loads(capsys.readouterr().out)] == [True]
    for index, value in enumerate([481.0, 479.0], start=7):
        assert record_reports(url, write_report(tmp_path / f"later{index}.json", {("gemm", KERNEL_TIME): [value]}),
                              index) == 0
    capsys.readouterr()
    assert main(["history", "changes", "--db", url, "--format", "json"]) == 0
    found = json.loads(capsys.readouterr().out)
    assert [(c["commit"], c["awaiting"]) for c in found] == [(commit_of(6), False)]
