"""A SQLite history edited by hand or damaged: SQLite keeps any value in any column and enforces no reference, so
each command that reads one says so in one line (exit 2) instead of an int(), float() or KeyError behind the
last-resort line, and writes nothing."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from helpers.common import run_cli
from helpers.history import record_runs

from perfgate.errors import InputError
from perfgate.history.db import open_history

H100 = Path(__file__).resolve().parents[2] / "tests" / "data" / "h100"
READERS = [["history", "changes"], ["history", "dashboard", "-o", "{site}"],
           ["compare", str(H100 / "vector_add.ncu-rep"), str(H100 / "vector_add.rerun.ncu-rep"), "--history"]]


@pytest.fixture
def history(tmp_path: Path) -> Path:
    path = tmp_path / "history.sqlite"
    record_runs(tmp_path, f"sqlite:///{path}", [{"gemm": 100.0 + i, "softmax": 50.0 - i} for i in range(4)])
    return path


def _run(capsys: pytest.CaptureFixture[str], command: list[str], path: Path) -> tuple[int, str]:
    site = path.parent / "site"
    args = [part.replace("{site}", str(site)) for part in command]
    args = [*args, f"sqlite:///{path}"] if args[-1] == "--history" else [*args, "--db", f"sqlite:///{path}"]
    status, _, err = run_cli(capsys, *args)
    assert not site.exists()
    return status, err


@pytest.mark.parametrize("edit", [
    "UPDATE perfgate_points SET value = '[1,2'", "UPDATE perfgate_points SET value = -9e999",
    "UPDATE perfgate_runs SET commit_sha = X'FF00FE'", "UPDATE perfgate_series SET test = X'FF00'",
    "DELETE FROM perfgate_series",
])
@pytest.mark.parametrize("command", READERS, ids=["changes", "dashboard", "compare"])
def test_a_damaged_value_is_one_line(edit: str, command: list[str], history: Path,
                                     capsys: pytest.CaptureFixture[str]) -> None:
    with sqlite3.connect(history) as connection:
        connection.execute(edit)
    status, err = _run(capsys, command, history)
    assert status == 2 and err.count("\n") == 1, err
    assert "holds a value of the wrong type, or a point of no series or run" in err and "please report" not in err


RECORD = ["history", "record", str(H100 / "sessions" / "gate1.json.xz"), "--commit", "c9", "--branch", "main"]


@pytest.mark.parametrize("version", ["'text'", "'-1'", "'NaN'", "-9e999"])
@pytest.mark.parametrize("command", [*READERS, RECORD,
                                     ["accept", "--reason", "r", "--commit", "c1", "--by", "me"]],
                         ids=["changes", "dashboard", "compare", "record", "accept"])
def test_a_schema_version_that_is_no_number_is_one_line(version: str, command: list[str], history: Path,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    with sqlite3.connect(history) as connection:
        connection.execute(f"UPDATE perfgate_meta SET value = {version} WHERE name = 'schema_version'")
    status, err = _run(capsys, command, history)
    assert status == 2 and err.count("\n") == 1, err
    assert "is no version number" in err and "please report" not in err


def test_a_damaged_page_met_while_fetching_is_one_error(tmp_path: Path) -> None:
    """SQLite reads a page when a row on it is fetched: a damaged page past the first rows of a query ("database
    disk image is malformed") escaped the history's error line as a bare sqlite3.DatabaseError."""
    path = tmp_path / "history.sqlite"
    record_runs(tmp_path, f"sqlite:///{path}", [{f"k{j}": 100.0 + i for j in range(300)} for i in range(3)])
    with sqlite3.connect(path) as connection:
        page_size = connection.execute("PRAGMA page_size").fetchone()[0]
        try:
            last_leaf = connection.execute("SELECT max(pageno) FROM dbstat WHERE name = 'perfgate_points' "
                                           "AND pagetype = 'leaf'").fetchone()[0]
        except sqlite3.OperationalError:
            pytest.skip("this SQLite is built without the dbstat table")
    data = bytearray(path.read_bytes())
    data[(last_leaf - 1) * page_size:last_leaf * page_size] = b"\xff" * page_size
    path.write_bytes(bytes(data))
    with open_history(f"sqlite:///{path}", create=False) as history:
        with pytest.raises(InputError, match="history database error: database disk image is malformed"):
            history.query("SELECT series_id, run_id, value FROM perfgate_points")


def test_findings_that_are_no_json_list_are_one_line(history: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with sqlite3.connect(history) as connection:
        run_id = connection.execute("SELECT min(id) FROM perfgate_runs").fetchone()[0]
        connection.execute("INSERT INTO perfgate_findings VALUES (?, 'NVIDIA H100', 't', 'kernel', 'gemm', '', ?, "
                           "'[]')", (run_id, "[" * 100_000))
    status, err = _run(capsys, ["history", "dashboard", "-o", "{site}"], history)
    assert status == 2 and err.count("\n") == 1 and "perfgate_findings holds findings that are no JSON list" in err, err


def test_the_scan_of_every_point_flags_what_typeof_flags(tmp_path: Path) -> None:
    """``check_sqlite_values``'s points check compares instead of calling typeof() per column: the same rows."""
    from perfgate.history.db import _SQLITE_CHECKS

    typeof = ("typeof(series_id) != 'integer' OR typeof(run_id) != 'integer' OR typeof(n) != 'integer' OR "
              + " OR ".join(f"typeof({c}) NOT IN ('integer', 'real') OR abs({c}) > 1.7e308" for c in ("value", "low",
                                                                                                    "high"))
              + " OR series_id NOT IN (SELECT id FROM perfgate_series) OR run_id NOT IN (SELECT id FROM perfgate_runs)")
    hostile = ["abc", 1.5, 1e19, 2.0**63, -(2.0**63), b"\x01", "7", "", " 5 ", "[1,2", "nan", "inf", "1e400",
               float("inf"), -float("inf"), 3.0, 5, -(2**63), 2**63 - 1, 1.7e308, -1.7e308]
    with sqlite3.connect(tmp_path / "points.sqlite") as connection:
        connection.execute("CREATE TABLE perfgate_points (series_id BIGINT NOT NULL, run_id BIGINT NOT NULL, "
                           "n INTEGER NOT NULL, value DOUBLE PRECISION NOT NULL, low DOUBLE PRECISION NOT NULL, "
                           "high DOUBLE PRECISION NOT NULL)")
        connection.execute("CREATE TABLE perfgate_series (id BIGINT)")
        connection.execute("CREATE TABLE perfgate_runs (id BIGINT)")
        rows = [tuple(value if at == column else 1 for at in range(6)) for value in hostile for column in range(6)]
        connection.executemany("INSERT INTO perfgate_points VALUES (?, ?, ?, ?, ?, ?)", rows)
        for table in ("perfgate_series", "perfgate_runs"):  # every id a series and a run: the types decide
            connection.executemany(f"INSERT INTO {table} VALUES (?)", [(1,), *((value,) for value in hostile)])
        flagged = connection.execute(f"SELECT rowid, ({_SQLITE_CHECKS['perfgate_points']}), ({typeof}) "
                                     "FROM perfgate_points").fetchall()
    assert [row for row in flagged if row[1] != row[2]] == []
    assert 0 < sum(row[1] for row in flagged) < len(flagged)
