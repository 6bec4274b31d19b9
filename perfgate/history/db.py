"""Open a history database and keep its schema current: SQLite (stdlib ``sqlite3``) or PostgreSQL (psycopg 3).

The statements are plain SQL that both engines run as written; only the identity column and the parameter
marker differ (``?`` in the statements here, ``%s`` for psycopg). Every write runs in one transaction, so a
refused or interrupted recording leaves nothing behind, and concurrent writers are serialised by the engine
(SQLite: ``BEGIN IMMEDIATE`` with a busy timeout; PostgreSQL: row locks of the unique indexes).
"""

from __future__ import annotations

import contextlib
import math
import sqlite3
import sys
import time
from pathlib import Path
from typing import Any, Iterator, Sequence

from perfgate.errors import InputError
from perfgate.limits import HISTORY_WAIT_SECONDS
from perfgate.history.keys import SERIES_FIELDS
from perfgate.history.location import (
    DEFAULT_URL,
    HistoryURL,
    resolve_history_url,
    parse_history_url,
    refuse_unknown,
    shown_url,
)
from perfgate.history.schema import (
    ID_COLUMN,
    META,
    MIGRATIONS,
    PG_OBJECTS,
    SCHEMA_QUERY,
    SCHEMA_VERSION,
    foreign_objects,
    harden_sqlite,
    pg_object,
    schema_object,
)

__all__ = ["DEFAULT_URL", "MIGRATIONS", "SCHEMA_VERSION", "History", "open_history", "shown_url", "sqlite_path"]

WAIT_SECONDS = HISTORY_WAIT_SECONDS  # a command's default budget for waiting on the history: connecting, locks, statements
CONNECT_SECONDS = 10  # at most this much of it for connecting to PostgreSQL
_MIGRATION_LOCK = 0x70657266  # pg_advisory_xact_lock key: one migrating writer at a time ("perf")


class History:
    """One open history: ``execute``/``query`` take statements with ``?`` markers, ``transaction`` groups them."""

    def __init__(self, location: HistoryURL, dialect: str, connection: Any, max_time: float = WAIT_SECONDS) -> None:
        self.location = location
        self.shown = location.shown  # the URL as it may be printed: no password in any form
        self.dialect = dialect
        self.connection = connection
        self.max_time = max_time

    def _sql(self, statement: str) -> str:
        return statement.replace("?", "%s") if self.dialect == "postgresql" else statement

    def execute(self, statement: str, params: Sequence[Any] = ()) -> Any:
        with self._errors():
            return self.connection.execute(self._sql(statement), tuple(params))

    def executemany(self, statement: str, rows: Sequence[Sequence[Any]]) -> None:
        if not rows:
            return
        with self._errors():
            if self.dialect == "postgresql":
                with self.connection.cursor() as cursor:
                    cursor.executemany(self._sql(statement), rows)
            else:
                self.connection.executemany(statement, rows)

    def insert_rows(self, table: str, columns: Sequence[str], rows: Sequence[Sequence[Any]],
                    unique: Sequence[str] = ()) -> None:
        """Insert many rows (``unique``: skip those whose key is taken). PostgreSQL: COPY through a temporary
        table, a tenth of the time of one INSERT per row; SQLite: executemany, in-process already."""
        if not rows:
            return
        names = ", ".join(columns)
        conflict = f" ON CONFLICT ({', '.join(unique)}) DO NOTHING" if unique else ""
        if self.dialect != "postgresql":
            marks = ", ".join("?" * len(columns))
            self.executemany(f"INSERT INTO {table} ({names}) VALUES ({marks}){conflict}", rows)
            return
        with self._errors(), self.connection.cursor() as cursor:
            cursor.execute(f"CREATE TEMPORARY TABLE staging_{table} ON COMMIT DROP AS SELECT {names} FROM {table} "
                           "WITH NO DATA")
            with cursor.copy(f"COPY staging_{table} ({names}) FROM STDIN") as copy:
                for row in rows:
                    copy.write_row(row)
            # In key order, as the SQLite path: concurrent writers lock new keys in one order, no deadlock.
            order = f" ORDER BY {', '.join(unique)}" if unique else ""
            cursor.execute(f"INSERT INTO {table} ({names}) SELECT {names} FROM staging_{table}{order}{conflict}")
            cursor.execute(f"DROP TABLE staging_{table}")

    def query(self, statement: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        with self._errors():  # a damaged page is met while fetching, not when the statement starts
            return list(self.execute(statement, params).fetchall())

    @contextlib.contextmanager
    def reading(self, statement: str, params: Sequence[Any] = ()) -> Iterator[Any]:
        """The cursor of a query, to fetch its rows a part at a time (``fetchmany``)."""
        with self._errors():
            yield self.execute(statement, params)

    @contextlib.contextmanager
    def transaction(self) -> Iterator[None]:
        """All or nothing: an exception rolls every statement of the block back."""
        if self.dialect == "postgresql":
            with self._errors(), self.connection.transaction():
                yield
            return
        self.execute("BEGIN IMMEDIATE")  # takes the write lock at once: no upgrade deadlock between writers
        try:
            yield
        except BaseException:
            self.connection.execute("ROLLBACK")
            raise
        self.execute("COMMIT")

    @contextlib.contextmanager
    def _errors(self) -> Iterator[None]:
        """A database error as one line naming the history (and what to do), not a traceback; the engine's
        message with every secret of the URL scrubbed (libpq may quote it)."""
        try:
            yield
        except Exception as exc:
            if not _is_database_error(exc):
                raise
            if _is_timeout(exc):
                raise waited_too_long(self.shown, self.max_time) from None
            raise InputError(self.shown, f"history database error: {self.location.scrub(_first_line(exc))}",
                             "check --db names a perfgate history that this user can write") from None

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.connection.close()

    def __enter__(self) -> History:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _is_database_error(exc: BaseException) -> bool:
    if isinstance(exc, sqlite3.Error):
        return True
    psycopg = _psycopg_or_none()
    return psycopg is not None and isinstance(exc, psycopg.Error)


def _is_timeout(exc: BaseException) -> bool:
    """A wait past the command's budget: PostgreSQL's lock_timeout or statement_timeout, SQLite's busy timeout."""
    if isinstance(exc, sqlite3.OperationalError):
        return "locked" in str(exc)  # "database is locked", "database table is locked": SQLITE_BUSY/LOCKED
    psycopg = _psycopg_or_none()
    return psycopg is not None and isinstance(exc, (psycopg.errors.LockNotAvailable, psycopg.errors.QueryCanceled))


def waited_too_long(shown: str, max_time: float) -> InputError:
    """The one line for a history that another connection kept locked (or a statement that ran) past the budget."""
    return InputError(shown, f"gave up waiting for the history database after {max_time:g} s (another connection "
                             "holds a lock on it, or the server is overloaded)",
                      "retry when the other writer is done, or raise --max-time (pytest: "
                      "--perfgate-history-max-time)")


def _psycopg_or_none() -> Any:
    return sys.modules.get("psycopg")  # loaded only when a PostgreSQL history was opened


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__


def sqlite_path(url: str) -> Path | None:
    """The file of a ``sqlite:///path`` URL (relative to the current folder; ``sqlite:////abs`` is absolute)."""
    parsed = parse_history_url(url)
    return Path(parsed.target) if parsed.engine == "sqlite" else None


def open_history(url: str | None = None, *, create: bool = True, max_time: float = WAIT_SECONDS) -> History:
    """Open (and with ``create``, make and migrate) the history at ``url``; refuse one that cannot be used.
    ``max_time``: seconds it may wait for the database (connecting, another writer's locks, one statement)."""
    location = parse_history_url(resolve_history_url(url) or DEFAULT_URL)
    if location.engine == "sqlite":
        history = _open_sqlite(location, create, max_time)
    elif location.engine == "postgresql":
        history = _open_postgresql(location, max_time)
    else:
        raise refuse_unknown(location)
    try:
        if history.dialect == "sqlite":
            check_sqlite_schema(history)
        else:
            check_postgresql_schema(history)
        migrate(history, create)
    except BaseException:
        history.close()
        raise
    return history


# SQLite keeps any value in any column and enforces no reference (a history edited by hand, or damaged): what
# the readers rely on is checked before they read. PostgreSQL enforces the declared types and references.
_TEXT = "typeof({}) != 'text'"
_SQLITE_CHECKS = {
    "perfgate_runs": " OR ".join(_TEXT.format(c) for c in ("commit_sha", "branch", "recorded_at", "settings")),
    "perfgate_series": " OR ".join(_TEXT.format(c) for c in (*SERIES_FIELDS, "unit", "direction")),
    # typeof() per column was most of a scan of every point (1 s a million on the development machine), these
    # comparisons less than half: an integer column's value other than an integer differs from its CAST (text and
    # blobs from every number, reals from their integer part) but for a real of -2**63, which typeof() then
    # names; a real column's text, blob or infinity is outside +-1.7e308 (numbers sort before text and blobs)
    "perfgate_points": " OR ".join(f"{c} != CAST({c} AS INTEGER) OR ({c} = -9223372036854775808 AND "
                                   f"typeof({c}) != 'integer')" for c in ("series_id", "run_id", "n"))
                       + " OR " + " OR ".join(f"NOT ({c} BETWEEN -1.7e308 AND 1.7e308)" for c in ("value", "low", "high"))
                       + " OR series_id NOT IN (SELECT id FROM perfgate_series) "
                         "OR run_id NOT IN (SELECT id FROM perfgate_runs)",
}


def damaged(history: History, what: str) -> InputError:
    """The error for a history holding ``what`` no perfgate wrote (edited by hand, or a damaged file)."""
    return InputError(history.shown, f"{what} (the history was edited or is damaged)",
                      "restore it from a backup, or record into a new one")


def check_sqlite_values(history: History, points: bool = True) -> None:
    """InputError naming the first table holding a value of the wrong type or a point of no series or run.
    ``points`` False: not the points (a scan of every one; a reader of only some checks those as it reads them)."""
    if history.dialect != "sqlite":
        return
    for table, wrong in _SQLITE_CHECKS.items():
        if table == "perfgate_points" and not points:
            continue
        if history.query(f"SELECT 1 FROM {table} WHERE {wrong} LIMIT 1"):
            raise damaged(history, f"{table} holds a value of the wrong type, or a point of no series or run")


def check_sqlite_schema(history: History) -> None:
    """Refuse a SQLite history holding a view, trigger, table or index perfgate did not create: such an object
    runs on every read or write (a view that never ends, a trigger that deletes points)."""
    _refuse_foreign(history, foreign_objects([schema_object(row) for row in history.query(SCHEMA_QUERY)]), "file's")


def _refuse_foreign(history: History, foreign: list[tuple[str, str, str, str]], whose: str) -> None:
    if foreign:
        kind, name, table, _ = foreign[0]
        more = f" and {len(foreign) - 1} more" if len(foreign) > 1 else ""
        on = f" on {table}" if table and table != name else ""
        article = "an" if kind[:1] in "aeiou" else "a"
        raise InputError(history.shown, f"holds {article} {kind}{on} perfgate did not create ({name[:80]!r}{more}); perfgate "
                         f"reads no history whose schema was changed, as it could run code of the {whose}",
                         "record into a new history, or restore this one from a backup")


class _RolledBack(Exception):
    """Ends the transaction that made perfgate's own schema to compare with: nothing of it is kept."""


def check_postgresql_schema(history: History) -> None:
    """Refuse a PostgreSQL history whose ``perfgate_*`` tables carry a trigger, rule, view, policy, default, index or
    constraint perfgate's migrations do not make (``schema.PG_OBJECTS``): compared with what the same migrations,
    up to the history's version, make in this session's temporary schema, in a transaction rolled back."""
    schema, oid = history.query("SELECT current_schema(), (SELECT oid FROM pg_namespace "
                                "WHERE nspname = current_schema())")[0]
    if oid is None:
        return  # no schema to create tables in: migrate says so
    found = [pg_object(row, str(schema)) for row in history.query(PG_OBJECTS.format(schema=int(oid)))]
    if not found:
        return  # a new history
    version = 0
    if ("table", "perfgate_meta") in {(kind, name) for kind, name, _, _ in found}:
        version = schema_version(history)
        if version > SCHEMA_VERSION:
            return  # a newer perfgate's history: migrate refuses it
    made: set[tuple[str, str, str, str]] = set()
    try:
        with history.transaction():
            history.execute("SET LOCAL search_path TO pg_temp")  # what the migrations make is temporary
            history.execute(META)
            temporary, temporary_oid = history.query("SELECT nspname, oid FROM pg_namespace "
                                                     "WHERE oid = pg_my_temp_schema()")[0]
            for target in range(1, version + 1):
                for statement in MIGRATIONS[target]:
                    history.execute(statement.format(id=ID_COLUMN["postgresql"]))
            made.update(pg_object(row, str(temporary), "pg_temp")
                        for row in history.query(PG_OBJECTS.format(schema=int(temporary_oid))))
            raise _RolledBack
    except _RolledBack:
        pass
    _refuse_foreign(history, [item for item in found if item not in made], "database's")


def _open_sqlite(location: HistoryURL, create: bool, max_time: float) -> History:
    path = Path(location.target)
    if location.target in ("", ":memory:") or location.target.endswith("/"):
        raise InputError(location.shown, "names no history file (an in-memory database keeps nothing)",
                         "pass sqlite:///path/history.sqlite")
    if not path.exists() and not create:
        raise InputError(path, "no history here", "record runs first with 'perfgate history record', or pass --db")
    if path.is_dir():
        raise InputError(path, "is a directory, not a history file", "pass sqlite:///path/history.sqlite")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        connection = sqlite3.connect(path, timeout=max_time, isolation_level=None)
        harden_sqlite(connection)
    except (OSError, sqlite3.Error) as exc:
        raise InputError(path, f"cannot open the history ({_first_line(exc)})",
                         "check the folder exists and is writable") from None
    return History(location, "sqlite", connection, max_time)


def _open_postgresql(location: HistoryURL, max_time: float) -> History:
    try:
        import psycopg
        from psycopg.conninfo import conninfo_to_dict, make_conninfo
    except ImportError:
        raise InputError(location.shown, "a PostgreSQL history needs psycopg 3",
                         "pip install 'perfgate[postgres]'") from None
    try:  # libpq's own parser, once: what is connected to is what libpq reads
        params = conninfo_to_dict(location.target)
    except psycopg.Error as exc:
        raise InputError(location.shown, f"is no PostgreSQL URL libpq reads ({location.scrub(_first_line(exc))})",
                         "percent-encode / ? # @ : in the user and password, e.g. %2F for /") from None
    deadline = time.monotonic() + max_time
    params["connect_timeout"] = max(1, math.ceil(min(max_time, CONNECT_SECONDS)))
    try:
        connection = psycopg.connect(make_conninfo("", **params), autocommit=True)
    except psycopg.Error as exc:
        raise InputError(location.shown, f"cannot connect to the history database "
                         f"({location.scrub(_first_line(exc))})",
                         "check the server is up and the URL's host, port, user and database") from None
    history = History(location, "postgresql", connection, max_time)
    # What is left of the budget bounds each wait for a lock and each statement (0 would mean no bound).
    left = f"{max(1, int((deadline - time.monotonic()) * 1000))}ms"
    try:
        history.execute("SELECT set_config('lock_timeout', ?, false), set_config('statement_timeout', ?, false)",
                        (left, left))
    except BaseException:
        history.close()
        raise
    return history


def schema_version(history: History) -> int:
    """The version the database's schema is at; 0 for an empty database."""
    found = history.query("SELECT value FROM perfgate_meta WHERE name = 'schema_version'")
    if not found:
        return 0
    value = found[0][0]
    if not (isinstance(value, str) and value.isdigit() and value.isascii()):
        raise damaged(history, f"history schema version {value!r} is no version number")
    return int(value)


def migrate(history: History, create: bool = True) -> None:
    """Bring the schema to ``SCHEMA_VERSION`` in one transaction, one migrating writer at a time (``create``
    False: only a history that exists, of an older version, is migrated)."""
    if history.dialect == "postgresql":
        # Two PostgreSQL sessions running CREATE TABLE IF NOT EXISTS at once can both try to add the table to
        # the catalog ("pg_type_typname_nsp_index"): the first writers of a new history create it in turn.
        with history.transaction():
            history.execute("SELECT pg_advisory_xact_lock(?)", (_MIGRATION_LOCK,))
            history.execute(META)
    else:
        history.execute(META)
    version = schema_version(history)
    if version > SCHEMA_VERSION:
        raise InputError(history.shown, f"history schema version {version} is newer than this perfgate "
                         f"reads ({SCHEMA_VERSION})", "upgrade perfgate to use this history")
    if version == SCHEMA_VERSION:
        return
    if not create and version == 0:  # nothing here; an older version's history is migrated by any command
        raise InputError(history.shown, "holds no perfgate history",
                         "record runs first with 'perfgate history record'")
    with history.transaction():
        if history.dialect == "postgresql":
            history.execute("SELECT pg_advisory_xact_lock(?)", (_MIGRATION_LOCK,))
        version = schema_version(history)  # another writer may have migrated while this one waited
        for target in range(version + 1, SCHEMA_VERSION + 1):
            for statement in MIGRATIONS[target]:
                history.execute(statement.format(id=ID_COLUMN[history.dialect]))
        if version < SCHEMA_VERSION:
            history.execute("DELETE FROM perfgate_meta WHERE name = 'schema_version'")
            history.execute("INSERT INTO perfgate_meta (name, value) VALUES ('schema_version', ?)",
                            (str(SCHEMA_VERSION),))
