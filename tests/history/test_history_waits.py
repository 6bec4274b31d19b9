"""A history that another connection keeps locked costs a command at most its ``--max-time``: PostgreSQL's
lock_timeout and statement_timeout, and SQLite's busy timeout, are set from it, and running out is one line,
exit 2. Without them a writer holding its transaction open kept ``history changes`` waiting for hours (the
server's own limit)."""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path
from typing import Iterator

import psycopg
import pytest
from helpers.common import run_cli
from helpers.history import KERNEL_TIME, fresh_postgres_database, record_runs, write_report

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
