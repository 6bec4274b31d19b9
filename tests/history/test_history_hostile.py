"""A hostile SQLite history file: views and triggers run on every read or write (a recursive view never ends, a
trigger deletes earlier runs' points on the next record, unnoticed). perfgate refuses a file holding any schema
object its migrations do not make, with one line naming the file (exit 2), before it reads or writes a row, and
opens every history with SQLite's defences on."""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

import pytest
from helpers.common import run_cli
from helpers.history import KERNEL_TIME, record_runs, write_report

from perfgate.history.db import open_history

HOSTILE = {
    "recursive view": "CREATE VIEW perfgate_loop AS WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n) "
                      "SELECT i FROM n",
    "trigger": "CREATE TRIGGER perfgate_wipe AFTER INSERT ON perfgate_runs BEGIN DELETE FROM perfgate_points; END",
    "view in a table's place": "ALTER TABLE perfgate_acceptances RENAME TO kept; CREATE VIEW perfgate_acceptances AS "
                               "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n) SELECT i, '', "
                               "'', '', '', '', '', '', '', '' FROM n",
    "table redefined": "DROP TABLE perfgate_acceptances; CREATE TABLE perfgate_acceptances (id INTEGER PRIMARY KEY, "
                       "commit_sha TEXT DEFAULT (zeroblob(2000000000)), gpu TEXT, test TEXT, kernel TEXT, "
                       "region TEXT, metric TEXT, reason TEXT, accepted_by TEXT, accepted_at TEXT)",
    "table of its own": "CREATE TABLE notes (text TEXT)",
    "index of its own": "CREATE INDEX perfgate_points_value ON perfgate_points (value)",
}


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("recorded")
    path = folder / "history.sqlite"
    record_runs(folder, f"sqlite:///{path}", [{"gemm": 100.0 + i} for i in range(25)])
    return path


@pytest.fixture
def history(recorded: Path, tmp_path: Path) -> Path:
    """A history of 25 runs of its own, for one test to edit."""
    path = tmp_path / "history.sqlite"
    shutil.copyfile(recorded, path)
    return path


def _points(path: Path) -> int:
    with sqlite3.connect(path) as connection:
        return int(connection.execute("SELECT COUNT(*) FROM perfgate_points").fetchone()[0])


@pytest.mark.parametrize("edit", HOSTILE.values(), ids=HOSTILE.keys())
@pytest.mark.parametrize("command", ["changes", "record", "accept"])
def test_a_schema_object_perfgate_did_not_create_is_refused(edit: str, command: str, history: Path, tmp_path: Path,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    with sqlite3.connect(history) as connection:
        connection.executescript(edit)
    report = write_report(tmp_path / "new.json", {("gemm", KERNEL_TIME): [130.0]})
    args = {"changes": ["history", "changes"],
            "record": ["history", "record", str(report), "--commit", "c99", "--branch", "main"],
            "accept": ["accept", "--reason", "r", "--commit", "0001", "--by", "me"]}[command]
    status, out, err = run_cli(capsys, *args, "--db", f"sqlite:///{history}", "--max-time", "5")
    assert status == 2 and err.count("\n") == 1 and not out, err
    assert str(history) in err and "perfgate did not create" in err and "please report" not in err
    assert _points(history) == 25  # nothing deleted, nothing written


def test_a_history_perfgate_made_and_analyzed_is_accepted(history: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with sqlite3.connect(history) as connection:
        connection.execute("ANALYZE")  # SQLite's own statistics tables: no code in them
    status, _, err = run_cli(capsys, "history", "changes", "--db", f"sqlite:///{history}")
    assert status == 0, err


def test_a_migrated_history_of_every_older_version_is_accepted(tmp_path: Path) -> None:
    from perfgate.history.schema import ID_COLUMN, META, MIGRATIONS, SCHEMA_VERSION

    for version in range(1, SCHEMA_VERSION):
        path = tmp_path / f"v{version}.sqlite"
        with sqlite3.connect(path) as connection:
            connection.execute(META)
            for step in range(1, version + 1):
                for statement in MIGRATIONS[step]:
                    connection.execute(statement.format(id=ID_COLUMN["sqlite"]))
            connection.execute("INSERT INTO perfgate_meta VALUES ('schema_version', ?)", (str(version),))
        with open_history(f"sqlite:///{path}", create=False) as opened:
            assert opened.query("SELECT value FROM perfgate_meta")[0][0] == str(SCHEMA_VERSION)


def test_sqlite_s_defences_are_on(history: Path) -> None:
    with open_history(f"sqlite:///{history}") as opened:
        assert opened.query("PRAGMA trusted_schema") == [(0,)]
        assert opened.query("PRAGMA cell_size_check") == [(1,)]
        if hasattr(sqlite3, "SQLITE_DBCONFIG_DEFENSIVE"):  # Python 3.12+
            assert opened.connection.getconfig(sqlite3.SQLITE_DBCONFIG_DEFENSIVE)
