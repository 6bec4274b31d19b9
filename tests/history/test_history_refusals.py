"""The history takes only what it can keep: an in-memory database (which printed "recorded" and kept nothing),
an empty commit or branch, an acceptance of a typed commit never recorded and a negative ``--min-change`` are each
refused with one line, exit 2, and nothing is written."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from helpers.common import run_cli
from helpers.history import KERNEL_TIME, commit_of, record_runs, write_report


@pytest.fixture
def url(tmp_path: Path) -> str:
    url = f"sqlite:///{tmp_path / 'h.sqlite'}"
    record_runs(tmp_path, url, [{"gemm": 100.0}, {"gemm": 101.0}])
    return url


def _runs(url: str) -> int:
    with sqlite3.connect(url[len("sqlite:///"):]) as connection:
        return int(connection.execute("SELECT COUNT(*) FROM perfgate_runs").fetchone()[0])


@pytest.mark.parametrize("db", ["sqlite:///:memory:", "sqlite:///", "sqlite:///runs/"])
def test_a_history_that_keeps_nothing_is_refused(db: str, tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    report = write_report(tmp_path / "r.json", {("gemm", KERNEL_TIME): [100.0]})
    status, out, err = run_cli(capsys, "history", "record", report, "--db", db, "--commit", "c1", "--branch", "main")
    assert status == 2 and err.count("\n") == 1 and not out and "recorded" not in err, err


@pytest.mark.parametrize("flag", ["--commit", "--branch"])
@pytest.mark.parametrize("value", ["", "  "])
def test_an_empty_commit_or_branch_is_refused(flag: str, value: str, url: str, tmp_path: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    report = write_report(tmp_path / "r.json", {("gemm", KERNEL_TIME): [150.0]})
    given = {"--commit": "c9", "--branch": "main", flag: value}
    status, _, err = run_cli(capsys, "history", "record", report, "--db", url, *(x for kv in given.items() for x in kv))
    assert status == 2 and err.count("\n") == 1 and f"{flag}: is empty" in err, err
    assert _runs(url) == 2


@pytest.mark.parametrize("commit", ["", "  ", "feedbeef", commit_of(7)])
def test_accepting_a_commit_never_recorded_is_refused(commit: str, url: str,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    status, _, err = run_cli(capsys, "accept", "--db", url, "--commit", commit, "--reason", "r", "--by", "me")
    assert status == 2 and err.count("\n") == 1, err
    assert "is empty" in err if not commit.strip() else "is recorded" in err
    status, _, err = run_cli(capsys, "accept", "--db", url, "--commit", commit_of(1)[:10], "--reason", "r",
                             "--by", "me")
    assert status == 0, err  # a recorded commit, abbreviated, is accepted


def test_the_checked_out_head_is_accepted_before_its_run_is_recorded(url: str, capsys: pytest.CaptureFixture[str],
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """The PR comment's accept runs at the pull request's head, whose runs only its job's copy of the history
    holds: without --commit it is taken; the typo guard is for a commit that was typed."""
    for name in ("GITHUB_EVENT_PATH", "GITHUB_HEAD_REF"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("GITHUB_SHA", commit_of(7))
    status, out, err = run_cli(capsys, "accept", "--db", url, "--kernel", "gemm", "--reason", "r", "--by", "me")
    assert status == 0 and f"accepted the change at {commit_of(7)[:12]} for 1 series" in out, err
    status, _, err = run_cli(capsys, "accept", "--db", url, "--commit", commit_of(7), "--reason", "r", "--by", "me")
    assert status == 2 and "is recorded" in err, err


def test_accepting_in_a_history_with_no_run_says_where_the_runs_are(tmp_path: Path,
                                                                     capsys: pytest.CaptureFixture[str]) -> None:
    """A developer's clone has no history (the CI keeps it): the line says so, not 'check the filters'."""
    url = f"sqlite:///{tmp_path / 'fresh.sqlite'}"
    status, _, err = run_cli(capsys, "accept", "--db", url, "--test", "t.py::t", "--reason", "r", "--by", "me")
    assert status == 2 and err.count("\n") == 1, err
    assert "holds no recorded run" in err and "skip the accept" in err and "filters" not in err, err


@pytest.mark.parametrize("value", ["-1", "-0.01", "nan", "inf"])
def test_a_negative_min_change_is_refused(value: str, url: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        run_cli(capsys, "history", "changes", "--db", url, "--min-change", value)
    assert info.value.code == 2 and "expected a fraction of 0 or more" in capsys.readouterr().err
