"""A PostgreSQL history whose perfgate_* tables carry code perfgate did not put there (issue 33, 8): a trigger that
deletes earlier runs' points on the next record, a rule, a view in a table's place, a policy, a default, an
expression index or a check constraint each run on a read or write. Refused in one line (exit 2) before a row is
read or written, as a SQLite history is; what perfgate's own migrations make (up to the history's version, in a
temporary schema rolled back) is never refused. Against the real server (PERFGATE_TEST_POSTGRES_URL)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers.common import run_cli
from helpers.history import KERNEL_TIME, fresh_postgres_database, record_runs, write_report

from perfgate.errors import InputError
from perfgate.history.db import open_history

_WIPE = ("CREATE FUNCTION perfgate_test_wipe() RETURNS trigger LANGUAGE plpgsql AS "
         "$$ BEGIN DELETE FROM perfgate_points; RETURN NEW; END $$")
# (edit, undo, what the refusal names)
HOSTILE = {
    "trigger": (f"{_WIPE}; CREATE TRIGGER perfgate_wipe AFTER INSERT ON perfgate_runs FOR EACH ROW "
                "EXECUTE FUNCTION perfgate_test_wipe()",
                "DROP TRIGGER perfgate_wipe ON perfgate_runs; DROP FUNCTION perfgate_test_wipe()",
                "a trigger on perfgate_runs"),
    "rule": ("CREATE RULE perfgate_forget AS ON INSERT TO perfgate_points DO INSTEAD NOTHING",
             "DROP RULE perfgate_forget ON perfgate_points", "a rule on perfgate_points"),
    "view": ("CREATE VIEW perfgate_loop AS WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n) "
             "SELECT i FROM n", "DROP VIEW perfgate_loop", "a view"),
    "view in a table's place": (
        "ALTER TABLE perfgate_acceptances RENAME TO kept; CREATE VIEW perfgate_acceptances AS SELECT * FROM kept",
        "DROP VIEW perfgate_acceptances; ALTER TABLE kept RENAME TO perfgate_acceptances", "a view"),
    "policy": ("ALTER TABLE perfgate_points ENABLE ROW LEVEL SECURITY; CREATE POLICY perfgate_hide ON perfgate_points "
               "USING (false)", "DROP POLICY perfgate_hide ON perfgate_points; ALTER TABLE perfgate_points DISABLE ROW "
               "LEVEL SECURITY", "perfgate_points"),
    "default": ("ALTER TABLE perfgate_runs ALTER COLUMN generator SET DEFAULT pg_sleep(5)::text",
                "ALTER TABLE perfgate_runs ALTER COLUMN generator DROP DEFAULT", "a default on perfgate_runs"),
    "expression index": ("CREATE INDEX perfgate_points_slow ON perfgate_points ((value + 1))",
                         "DROP INDEX perfgate_points_slow", "an index"),
    "check constraint": ("ALTER TABLE perfgate_series ADD CONSTRAINT perfgate_short CHECK (length(kernel) < 3) "
                         "NOT VALID", "ALTER TABLE perfgate_series DROP CONSTRAINT perfgate_short",
                         "a constraint on perfgate_series"),
    "NOT NULL dropped": ("ALTER TABLE perfgate_runs ALTER COLUMN commit_sha DROP NOT NULL",
                         "ALTER TABLE perfgate_runs ALTER COLUMN commit_sha SET NOT NULL", "a column on perfgate_runs"),
    "column of another type": ("ALTER TABLE perfgate_series ALTER COLUMN kernel TYPE varchar(8) USING left(kernel, 8)",
                               "ALTER TABLE perfgate_series ALTER COLUMN kernel TYPE text", "a column on perfgate_series"),
    "table of its own": ("CREATE TABLE perfgate_notes (text TEXT)", "DROP TABLE perfgate_notes", "a table"),
}


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    databases = fresh_postgres_database()
    url = next(databases)
    record_runs(tmp_path_factory.mktemp("pg"), url, [{"gemm": 100.0 + i} for i in range(3)])
    yield url
    databases.close()


def _run(url: str, script: str) -> None:
    import psycopg

    with psycopg.connect(url, autocommit=True) as connection:
        connection.execute(script)  # type: ignore[arg-type]


def _points(url: str) -> int:
    import psycopg

    with psycopg.connect(url, autocommit=True) as connection:
        found = connection.execute("SELECT count(*) FROM perfgate_points").fetchone()
        return int(found[0]) if found else 0


@pytest.mark.parametrize("name", HOSTILE)
def test_code_perfgate_did_not_put_in_a_postgresql_history_is_refused(name: str, recorded: str, tmp_path: Path,
                                                                      capsys: pytest.CaptureFixture[str]) -> None:
    edit, undo, named = HOSTILE[name]
    before = _points(recorded)
    _run(recorded, edit)
    try:
        report = write_report(tmp_path / "new.json", {("gemm", KERNEL_TIME): [130.0]})
        status, _, err = run_cli(capsys, "history", "record", report, "--db", recorded, "--commit", "f" * 40,
                                 "--branch", "main")
        assert status == 2 and err.count("\n") == 1, err
        assert "perfgate did not create" in err and named in err, err
        assert _points(recorded) == before
        status, _, err = run_cli(capsys, "history", "changes", "--db", recorded)
        assert status == 2 and "perfgate did not create" in err, err
    finally:
        _run(recorded, undo)
    open_history(recorded).close()  # undone: the history is perfgate's again


def test_an_older_history_of_perfgate_s_own_is_migrated_not_refused() -> None:
    """The objects expected are those of the history's own version: an older one, untouched, migrates."""
    databases = fresh_postgres_database()
    url = next(databases)
    try:
        open_history(url).close()
        _run(url, "DROP TABLE perfgate_culprits; DROP TABLE perfgate_change_cache; "
                  "ALTER TABLE perfgate_points DROP COLUMN code_id, DROP COLUMN same_code_changes; "
                  "UPDATE perfgate_meta SET value = '3' "
                  "WHERE name = 'schema_version'")
        open_history(url).close()
        with pytest.raises(InputError, match="a view"):  # and one that was changed is still refused
            _run(url, "CREATE VIEW perfgate_extra AS SELECT 1")
            open_history(url)
    finally:
        databases.close()
