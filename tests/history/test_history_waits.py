"""A history that another connection keeps locked costs a command (and the plugin) at most its ``--max-time``: PostgreSQL's
lock_timeout and statement_timeout, and SQLite's busy timeout, are set from it, and running out is one line,
exit 2. Without them a writer holding its transaction open kept ``history changes`` waiting for hours (the
server's own limit)."""

from __future__ import annotations

import contextlib
import sqlite3
import time
from pathlib import Path
from typing import Iterator

import psycopg
import pytest
from helpers.benchmark_suite import BENCH_OPTIONS
from helpers.common import run_cli
from helpers.history import (  # noqa: F401  (history_url: the fixture)
    KERNEL_TIME,
    baseline_file,
    fresh_postgres_database,
    history_url,
    record_runs,
    write_report,
)

from perfgate.history.db import sqlite_path

BUDGET = "0.5"
GAVE_UP = f"gave up waiting for the history database after {BUDGET} s"


@pytest.fixture
def database(tmp_path: Path) -> Iterator[str]:
    for url in fresh_postgres_database():
        record_runs(tmp_path, url, [{"gemm": 100.0}])
        yield url


def _timed(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, float]:
    started = time.monotonic()
    status, _, err = run_cli(capsys, *args, "--max-time", BUDGET)
    return status, err, time.monotonic() - started


@pytest.mark.parametrize("lock", ["LOCK TABLE perfgate_runs IN ACCESS EXCLUSIVE MODE",
                                  "SELECT pg_advisory_xact_lock(1885696614)"],  # a migrating writer's lock
                         ids=["table", "migration"])
def test_a_held_postgresql_lock_costs_at_most_max_time(lock: str, database: str, tmp_path: Path,
                                                       capsys: pytest.CaptureFixture[str],
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    report = write_report(tmp_path / "new.json", {("gemm", KERNEL_TIME): [120.0]}, status="regression")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(tmp_path / "summary.md"))
    for name in ("GITHUB_EVENT_PATH", "GITHUB_REPOSITORY", "GITHUB_SHA"):
        monkeypatch.delenv(name, raising=False)
    commands = [["history", "changes", "--db", database],
                ["history", "record", str(report), "--db", database, "--commit", "c2", "--branch", "main"],
                ["publish", str(report), "--no-comment", "--no-check", "--history", database]]
    with psycopg.connect(database) as holder:  # a transaction left open: released when the block ends
        holder.execute(lock)
        for command in commands:
            status, err, seconds = _timed(capsys, *command)
            assert status == 2 and err.count("\n") == 1 and GAVE_UP in err, (command, err)
            assert seconds < 5, (command, seconds)
    status, _, _ = run_cli(capsys, *commands[1])  # the lock released, the same record goes through
    assert status == 0


def test_a_held_sqlite_write_lock_costs_at_most_max_time(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "h.sqlite"
    record_runs(tmp_path, f"sqlite:///{path}", [{"gemm": 100.0}])
    report = write_report(tmp_path / "new.json", {("gemm", KERNEL_TIME): [120.0]})
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    try:
        status, err, seconds = _timed(capsys, "history", "record", str(report), "--db", f"sqlite:///{path}",
                                      "--commit", "c2", "--branch", "main")
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert status == 2 and err.count("\n") == 1 and GAVE_UP in err, err
    assert seconds < 5


def test_max_time_must_be_seconds(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        run_cli(capsys, "history", "changes", "--max-time", "-1")
    assert info.value.code == 2 and "must be 0 or more" in capsys.readouterr().err


@contextlib.contextmanager
def _held(url: str) -> Iterator[None]:
    """Another connection holding a lock that keeps readers out too: SQLite's exclusive lock, PostgreSQL's access
    exclusive lock on every perfgate table; released when the block ends."""
    path = sqlite_path(url)
    if path is not None:
        holder = sqlite3.connect(path, isolation_level=None)
        holder.execute("BEGIN EXCLUSIVE")
        try:
            yield
        finally:
            holder.execute("ROLLBACK")
            holder.close()
        return
    with psycopg.connect(url) as connection:  # a transaction left open until the block ends
        tables = [row[0] for row in connection.execute(
            "SELECT tablename FROM pg_tables WHERE tablename LIKE 'perfgate%' ORDER BY tablename")]
        connection.execute(f"LOCK TABLE {', '.join(tables)} IN ACCESS EXCLUSIVE MODE")
        yield


def test_baseline_history_gives_up_after_max_time(history_url: str, tmp_path: Path,  # noqa: F811
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    """``perfgate baseline --history``, reading the acceptances, waits at most ``--max-time`` for a history another
    connection keeps locked: one line, exit 2, no baseline written; the lock released, the update goes through."""
    record_runs(tmp_path, history_url, [{"gemm": 100.0}])
    report = baseline_file(tmp_path / "run.json", {"gemm": 120.0})
    update = ["baseline", str(report), "-d", str(tmp_path / "baselines"), "--history", history_url]
    with _held(history_url):
        status, err, seconds = _timed(capsys, *update)
    assert status == 2 and err.count("\n") == 1 and GAVE_UP in err and "Traceback" not in err, err
    assert seconds < 5 and not (tmp_path / "baselines").exists()
    status, _, err = run_cli(capsys, *update, "--max-time", BUDGET)
    assert status == 0, err


def test_max_time_of_baseline_comes_from_the_configuration(history_url: str, tmp_path: Path,  # noqa: F811
                                                           capsys: pytest.CaptureFixture[str],
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """``[tool.perfgate] history_max_time`` is baseline's wait where --max-time is not given."""
    record_runs(tmp_path, history_url, [{"gemm": 100.0}])
    report = baseline_file(tmp_path / "run.json", {"gemm": 120.0})
    (tmp_path / "pyproject.toml").write_text(f"[tool.perfgate]\nhistory_max_time = {BUDGET}\n", encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    with _held(history_url):
        started = time.monotonic()
        status, _, err = run_cli(capsys, "baseline", str(report), "--history", history_url)
    assert status == 2 and err.count("\n") == 1 and GAVE_UP in err, err
    assert time.monotonic() - started < 5


def test_the_plugin_gives_up_after_its_max_time(suite: pytest.Pytester, history_url: str,  # noqa: F811
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """``pytest --perfgate --perfgate-history-max-time``: a history another connection keeps locked stops reading
    its reference and learned thresholds with one usage error (pytest's exit 4, no traceback), and recording the
    session with one line under passing tests, each within the wait given."""
    for name in ("GITHUB_HEAD_REF", "GITHUB_EVENT_PATH"):
        monkeypatch.delenv(name, raising=False)
    suite.runpytest("--perfgate", "--perfgate-update", *BENCH_OPTIONS).assert_outcomes(passed=2)
    suite.runpytest("--perfgate", *BENCH_OPTIONS, "--perfgate-history", history_url).assert_outcomes(passed=2)
    wait = ("--perfgate-history", history_url, "--perfgate-history-max-time", BUDGET)
    with _held(history_url):
        started = time.monotonic()
        learning = suite.runpytest("--perfgate", *BENCH_OPTIONS, *wait, "--perfgate-history-thresholds")
        learned_in = time.monotonic() - started
        started = time.monotonic()
        recording = suite.runpytest("--perfgate", *BENCH_OPTIONS, *wait)
        recorded_in = time.monotonic() - started
    assert learning.ret == pytest.ExitCode.USAGE_ERROR
    errors = [line for line in learning.errlines if line.strip()]
    assert len(errors) == 1 and errors[0].startswith("ERROR: perfgate: ") and GAVE_UP in errors[0], errors
    assert "Traceback" not in "\n".join(learning.outlines + learning.errlines)
    recording.assert_outcomes(passed=2)
    recording.stdout.fnmatch_lines([f"perfgate: cannot record the session in the history: *{GAVE_UP}*"])
    assert learned_in < 10 and recorded_in < 10
