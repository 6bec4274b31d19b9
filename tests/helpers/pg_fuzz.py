"""Fuzzing a PostgreSQL history (issue 33): hostile values written straight into an otherwise well-formed history,
then every command that reads or writes one run against it.

A base history is recorded by perfgate itself (two kernels over 12 commits, a step in one, an acceptance, the
change cache filled); each case is a copy of it (``CREATE DATABASE ... TEMPLATE``) changed by SQL, as psql would.
Every command is run in this process with a password in its URL (the server trusts the user, so any password
connects) and classified:

* traceback: an exception perfgate did not turn into its one line (or its "please report it" line);
* hang: a command that took more than ``HANG_SECONDS``;
* silent pass: a history no perfgate wrote (a value it never writes, a change cache that should be searched
  again) read as if it were fine: exit 0 where exit 2 is due, or change points other than the undamaged copy's;
* injection: a line the CI runner acts on (``##[``, ``::``), an escape character, or raw markup of the data
  (``<script``, ``<img``) in what perfgate printed, wrote (Markdown, HTML) or posted;
* secret printed: the URL's password anywhere in that output;
* data damaged: a row that was there before the command and is not after (or is changed).

``python tests/helpers/pg_fuzz.py`` runs the whole campaign (PERFGATE_TEST_POSTGRES_URL names the server; it
creates and drops ``pgfuzz_*`` databases); ``tests/robustness/test_fuzz_postgres_history.py`` runs a seeded slice.
"""

from __future__ import annotations

import base64
import contextlib
import io
import json
import os
import re
import sys
import threading
import time
import uuid
import zipfile
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator

HANG_SECONDS = 30.0
MAX_TIME = "4"  # --max-time of every command: a lock held by another connection ends the wait
SECRET = "pgFuzz-S3cret-7f3a9c"
FINDINGS = ("traceback", "hang", "silent pass", "injection", "secret printed", "data damaged")
READERS = ("changes-text", "changes-md", "changes-json", "dashboard", "compare", "publish")
WRITERS = ("record", "accept")
COMMANDS = (*WRITERS, *READERS)
# How a case must be met: "tolerate" (exit as on the undamaged copy), "refuse" (readers exit 2; "refuse, not
# changes": but history changes, see value_cases), "either" (0-2, no finding), "same changes" (changes json as the
# undamaged copy's: a damaged cache is searched again).
HOSTILE_STRINGS = {
    "script": "<script>alert(1)</script>",
    "img": '<img src=x onerror="alert(1)">',
    "workflow": "x\n##[error]forged\n::error file=a.py::forged",
    "ansi": "\x1b[31mred\x1b]8;;https://evil.example\x07link\x1b]8;;\x07\r\x08",
    "bidi": "\u202eevil\u2028line\u0085",
    "huge": "k" * 2000,  # near what a unique index's row holds (a kernel name longer than that is never recorded)
    "sql": "'; DROP TABLE perfgate_points; --",
    "template": "{{ 7*7 }}{% for x in range(9**9) %}{% endfor %}%s%(x)s",
    "markdown": "`x` | cell </td></tr> [a](javascript:alert(1)) @octocat <!--",
    "empty": "",
}
RAW_MARKUP = re.compile(r"<script>alert|<img src=x")


@dataclass
class Case:
    family: str
    name: str
    sql: str
    expect: str  # tolerate | refuse | either | same changes
    during: Callable[[str], Any] | None = None  # started before each command (a lock holder, a killer)


@dataclass
class Tally:
    tried: Counter[str] = field(default_factory=Counter)  # inputs per family
    runs: int = 0
    found: Counter[str] = field(default_factory=lambda: Counter({name: 0 for name in FINDINGS}))
    details: list[str] = field(default_factory=list)

    def add(self, case: Case, command: str, kind: str, detail: str) -> None:
        self.found[kind] += 1
        self.details.append(f"{case.family}/{case.name} {command}: {kind}: {detail[:300]!r}")

    def summary(self) -> str:
        families = ", ".join(f"{name} {count}" for name, count in sorted(self.tried.items()))
        return (f"{sum(self.tried.values())} inputs ({families}), {self.runs} command runs; "
                + ", ".join(f"{kind}: {count}" for kind, count in self.found.items()))


# ------------------------------------------------------------------ the cases

def _quote(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


GEMM_POINT = ("series_id = (SELECT id FROM perfgate_series WHERE kernel = 'gemm') AND run_id = "
              "(SELECT max(id) FROM perfgate_runs)")


def value_cases() -> list[Case]:
    cases = []
    # "refuse, not changes": history changes answers from its change cache for the points it searched before (the
    # values checked when first read, docs/history.md): a point damaged after that is met by every other reader, and
    # by history changes' next search from scratch (a new commit's rerun, other settings).
    for text, expect in (("'NaN'", "refuse, not changes"), ("'Infinity'", "refuse, not changes"),
                         ("'-Infinity'", "refuse, not changes"),
                         ("1e308", "either"), ("-1e308", "either"), ("-5", "either"), ("0", "either"),
                         ("5e-324", "either")):
        for column in ("value", "low", "high"):
            cases.append(Case("values", f"{column}={text} one point", f"UPDATE perfgate_points SET {column} = "
                              f"{text} WHERE {GEMM_POINT}", expect if column == "value" else "either"))
        cases.append(Case("values", f"value={text} every point", f"UPDATE perfgate_points SET value = {text}", expect))
    for column, texts in (("n", ("0", "-1", "2147483647")),
                          ("samples", ("'not json'", "'[\"NaN\"]'", "'[1e999]'", "'{}'", "'[]'", "'[null]'",
                                       "'" + "[" * 100_000 + "'")),
                          ("same_code_changes", ("'not json'", "'[\"x\"]'", "'[1e999]'", "'{}'", "'[NaN]'")),
                          ("gate", ("'regression'", "'nonsense'", "'<script>alert(1)</script>'"))):
        for text in texts:
            cases.append(Case("values", f"{column}={text[:20]}", f"UPDATE perfgate_points SET {column} = {text} WHERE "
                              f"{GEMM_POINT}", "either"))
    return cases


def null_cases() -> list[Case]:
    cases = [Case("nulls", f"{table}.{column}", f"UPDATE {table} SET {column} = NULL", "either")
             for table, column in (("perfgate_runs", "generator"), ("perfgate_points", "samples"),
                                   ("perfgate_points", "gate"), ("perfgate_points", "code_id"),
                                   ("perfgate_points", "same_code_changes"), ("perfgate_acceptances", "gpu"),
                                   ("perfgate_acceptances", "kernel"))]
    # NOT NULL dropped, then null: a history edited past its own schema
    for table, column in (("perfgate_points", "value"), ("perfgate_runs", "commit_sha"), ("perfgate_runs", "branch"),
                          ("perfgate_runs", "recorded_at"), ("perfgate_series", "kernel"), ("perfgate_series", "unit"),
                          ("perfgate_acceptances", "reason"), ("perfgate_meta", "value")):
        cases.append(Case("nulls", f"{table}.{column} (NOT NULL dropped)",
                          f"ALTER TABLE {table} ALTER COLUMN {column} DROP NOT NULL; UPDATE {table} SET {column} = "
                          "NULL" + (" WHERE name = 'schema_version'" if table == "perfgate_meta" else ""), "either"))
    return cases


def string_cases() -> list[Case]:
    places = {
        "kernel": "UPDATE perfgate_series SET kernel = {v} WHERE kernel = 'gemm'",
        "gpu": "UPDATE perfgate_series SET gpu = {v}",
        "test": "UPDATE perfgate_series SET test = {v} WHERE kernel = 'gemm'",
        "region": "UPDATE perfgate_series SET region = {v} WHERE kernel = 'gemm'",
        "metric": "UPDATE perfgate_series SET metric = {v} WHERE kernel = 'softmax'",
        "unit": "UPDATE perfgate_series SET unit = {v}",
        "direction": "UPDATE perfgate_series SET direction = {v}",
        "commit": "UPDATE perfgate_runs SET commit_sha = {v} WHERE id = (SELECT max(id) - 3 FROM perfgate_runs)",
        "branch": "UPDATE perfgate_runs SET branch = {v} WHERE id = (SELECT max(id) FROM perfgate_runs)",
        "recorded_at": "UPDATE perfgate_runs SET recorded_at = {v} WHERE id = (SELECT max(id) FROM perfgate_runs)",
        "source": "UPDATE perfgate_runs SET source = {v}",
        "generator": "UPDATE perfgate_runs SET generator = {v}",
        "settings": "UPDATE perfgate_runs SET settings = {v}",
        "reason": "UPDATE perfgate_acceptances SET reason = {v}",
        "accepted_by": "UPDATE perfgate_acceptances SET accepted_by = {v}",
        "acceptance commit": "UPDATE perfgate_acceptances SET commit_sha = {v}",
        "code_id": f"UPDATE perfgate_points SET code_id = {{v}} WHERE {GEMM_POINT}",
    }
    cases = [Case("strings", f"{place}={name}", sql.format(v=_quote(text)), "either")
             for place, sql in places.items() for name, text in HOSTILE_STRINGS.items()]
    return cases + [Case("strings", f"{place}=1 MB", places[place].format(v="repeat('k', 1000000)"), "either")
                    for place in ("source", "generator", "settings", "reason", "accepted_by", "code_id")]


def _npz(**arrays: Any) -> str:
    import numpy as np

    buffer = io.BytesIO()
    np.savez_compressed(buffer, **{k: np.asarray(v) for k, v in arrays.items()})
    return base64.b64encode(buffer.getvalue()).decode()


def cache_cases() -> list[Case]:
    import numpy as np

    bomb = io.BytesIO()
    with zipfile.ZipFile(bomb, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("counts.npy", b"\x93NUMPY\x01\x00" + b"v" * 2)
    states = {
        "truncated": "left(state, length(state) / 2)",
        "one char": "left(state, 1)",
        "not base64": "'!!!not base64!!!'",
        "empty": "''",
        "base64 of text": _quote(base64.b64encode(b"hello").decode()),
        "zip of junk": _quote(base64.b64encode(bomb.getvalue()).decode()),
        "wrong arrays": _quote(_npz(other=np.arange(5))),
        "wrong shapes": _quote(_npz(counts=np.ones((3, 3)), ids=np.arange(3), floats=np.zeros(2), ints=np.zeros(2))),
        "object array": _quote(_npz(counts=np.array([{"a": 1}], dtype=object))),
        "huge counts": _quote(_npz(counts=np.full((1, 7), 2**40), ids=np.arange(1))),
        "negative counts": _quote(_npz(counts=np.full((1, 7), -3), ids=np.arange(1))),
        "other rows swapped": "reverse(state)",
    }
    cases = [Case("change cache", name, f"UPDATE perfgate_change_cache SET state = {value}", "same changes")
             for name, value in states.items()]
    meta = "UPDATE perfgate_meta SET value = {v} WHERE name LIKE 'change\\_cache%'"
    from perfgate.history.cache import CACHE_VERSION

    version = f"'\"version\": {CACHE_VERSION}'"
    for name, value in (("meta: other version", f"replace(value, {version}, '\"version\": 99')"),
                        ("meta: older version", f"replace(value, {version}, '\"version\": {CACHE_VERSION - 1}')"),
                        ("meta: not json", "'{{not json'"), ("meta: list", "'[]'"),
                        ("meta: more commits", "replace(value, '\"commits\": 12', '\"commits\": 99')"),
                        ("meta: fewer commits", "replace(value, '\"commits\": 12', '\"commits\": 3')"),
                        ("meta: last_run huge", "replace(value, '\"last_run\": ', '\"last_run\": 9')"),
                        ("meta: last_run text", "replace(value, '\"last_run\": ', '\"last_run\": \"x\", \"y\": ')"),
                        ("meta: commits text", "replace(value, '\"commits\": 12', '\"commits\": \"12\"')"),
                        ("meta: digest wrong", "regexp_replace(value, '\"digest\": \"[0-9a-f]+\"', "
                                               "'\"digest\": \"0\"')")):
        cases.append(Case("change cache", name, meta.format(v=value), "same changes"))
    cases.append(Case("change cache", "row of another series id", "UPDATE perfgate_change_cache SET series_id = "
                      "(SELECT max(id) FROM perfgate_series)", "same changes"))
    cases.append(Case("change cache", "rows deleted, meta kept", "DELETE FROM perfgate_change_cache", "same changes"))
    return cases


def version_cases() -> list[Case]:
    cases = [Case("schema version", f"schema_version={text}", "UPDATE perfgate_meta SET value = "
                  f"{_quote(text)} WHERE name = 'schema_version'", "refuse" if text != "6" else "tolerate")
             for text in ("99", "-1", "7", "0", "", "abc", "٦", " 6", "6\n", "6.0", "1e1", "6" * 400)]
    cases.append(Case("schema version", "schema_version row deleted", "DELETE FROM perfgate_meta WHERE name = "
                      "'schema_version'", "refuse"))
    cases.append(Case("schema version", "meta table dropped", "DROP TABLE perfgate_meta", "refuse"))
    return cases


def duplicate_cases() -> list[Case]:
    copy_runs = ("INSERT INTO perfgate_runs (run_key, commit_sha, branch, recorded_at, source, generator, settings) "
                 "SELECT run_key || 'dup', commit_sha, branch, recorded_at, source, generator, settings FROM "
                 "perfgate_runs; INSERT INTO perfgate_points (series_id, run_id, n, value, low, high, samples, gate) "
                 "SELECT p.series_id, d.id, p.n, p.value, p.low, p.high, p.samples, p.gate FROM perfgate_points p "
                 "JOIN perfgate_runs r ON r.id = p.run_id JOIN perfgate_runs d ON d.run_key = r.run_key || 'dup'")
    return [
        Case("duplicates", "every run twice", copy_runs, "tolerate"),
        Case("duplicates", "acceptances twice", "INSERT INTO perfgate_acceptances (commit_sha, gpu, test, kernel, "
             "region, metric, reason, accepted_by, accepted_at) SELECT commit_sha, gpu, test, kernel, region, metric, "
             "reason, accepted_by, accepted_at FROM perfgate_acceptances", "tolerate"),
        Case("duplicates", "same commit on every run", "UPDATE perfgate_runs SET commit_sha = 'abc'", "either"),
        Case("duplicates", "same recorded_at on every run", "UPDATE perfgate_runs SET recorded_at = "
             "'2026-11-01T00:00:00.000000Z'", "either"),
        Case("duplicates", "series twice by case", "INSERT INTO perfgate_series (gpu, test, kind, kernel, region, "
             "metric, unit, direction) SELECT lower(gpu), test, kind, kernel, region, metric, unit, direction FROM "
             "perfgate_series", "tolerate"),
        Case("duplicates", "runs of no point", "INSERT INTO perfgate_runs (run_key, commit_sha, branch, recorded_at, "
             "source, generator, settings) SELECT run_key || 'empty', commit_sha || 'e', branch, recorded_at, source, "
             "generator, settings FROM perfgate_runs", "either"),
        Case("duplicates", "findings twice", "INSERT INTO perfgate_findings SELECT max(id), 'g', 't', 'kernel', 'k', "
             "'', 'x', 'y' FROM perfgate_runs", "either"),
    ]


def lock_cases() -> list[Case]:
    def holder(statement: str) -> Callable[[str], Any]:
        def start(url: str) -> Any:
            import psycopg

            connection = psycopg.connect(url)
            connection.execute(statement)  # type: ignore[arg-type]  # in a transaction, held until closed
            return connection
        return start

    cases = []
    for table in ("perfgate_runs", "perfgate_points", "perfgate_series", "perfgate_meta", "perfgate_acceptances",
                  "perfgate_change_cache"):
        for mode in ("ACCESS EXCLUSIVE", "EXCLUSIVE"):
            cases.append(Case("locks", f"{mode} on {table}", "", "either",
                              holder(f"LOCK TABLE {table} IN {mode} MODE")))
    cases.append(Case("locks", "migration's advisory lock", "", "either",
                      holder("SELECT pg_advisory_xact_lock(1885696614)")))
    cases.append(Case("locks", "meta rows FOR UPDATE", "", "either", holder("SELECT * FROM perfgate_meta FOR UPDATE")))
    return cases


def _killer(delay: float, lock: str | None) -> Callable[[str], Any]:
    """After ``delay`` s, another session ends every other backend of the database (``lock``: held first, so
    the command is waiting on it when it is ended)."""
    def start(url: str) -> Any:
        import psycopg

        holder = psycopg.connect(url)
        if lock:
            holder.execute(lock)  # type: ignore[arg-type]
        stop = threading.Event()

        def kill() -> None:
            with psycopg.connect(url, autocommit=True) as admin:
                while not stop.wait(delay):
                    admin.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = "
                                  "current_database() AND pid NOT IN (pg_backend_pid(), %s)", (holder.info.backend_pid,))

        thread = threading.Thread(target=kill, daemon=True)
        thread.start()

        class Stop:
            def close(self) -> None:
                stop.set()
                thread.join(10)
                holder.close()
        return Stop()
    return start


def drop_cases() -> list[Case]:
    cases = [Case("dropped connection", f"terminated every {delay} s", "", "either", _killer(delay, None))
             for delay in (0.01, 0.03, 0.1, 0.3)]
    cases += [Case("dropped connection", f"terminated while waiting on {table}", "", "either",
                   _killer(1.0, f"LOCK TABLE {table} IN ACCESS EXCLUSIVE MODE"))
              for table in ("perfgate_runs", "perfgate_points", "perfgate_meta")]
    return cases


FAMILIES: dict[str, Callable[[], list[Case]]] = {
    "values": value_cases, "nulls": null_cases, "strings": string_cases, "change cache": cache_cases,
    "schema version": version_cases, "duplicates": duplicate_cases, "locks": lock_cases,
    "dropped connection": drop_cases,
}


def all_cases() -> list[Case]:
    return [case for make in FAMILIES.values() for case in make()]


# ------------------------------------------------------------------ running the commands

@dataclass
class Ran:
    code: int
    out: str  # stdout and stderr
    seconds: float
    error: str = ""  # an exception that escaped main()
    written: str = ""  # every file the command wrote, every request it posted


def with_password(server: str, database: str, secret: str = SECRET) -> str:
    from psycopg.conninfo import conninfo_to_dict

    params = conninfo_to_dict(server)
    return (f"postgresql://{params.get('user', 'perfgate')}:{secret}@{params.get('host', '127.0.0.1')}:"
            f"{params.get('port', 5432)}/{database}")


def plain_url(server: str, database: str) -> str:
    return server.rsplit("/", 1)[0] + "/" + database


def run_main(argv: list[str], env: dict[str, str] | None = None) -> Ran:
    from perfgate.cli import main

    out, err = io.StringIO(), io.StringIO()
    saved = dict(os.environ)
    if env is not None:
        os.environ.clear()
        os.environ.update(env)
    started = time.monotonic()
    error = ""
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                code = main(argv)
            except SystemExit as exc:
                code = int(exc.code or 0)
            except BaseException as exc:  # noqa: BLE001 - what escaped perfgate is the finding
                code, error = -1, f"{type(exc).__name__}: {exc}"
    finally:
        os.environ.clear()
        os.environ.update(saved)
    return Ran(code, out.getvalue() + err.getvalue(), time.monotonic() - started, error)


@dataclass
class Inputs:
    folder: Path
    new_report: Path  # a run to record
    current: Path  # compare --history's CURRENT
    published: Path  # the report publish --history posts
    accept_commit: str
    github: Any = None  # helpers.github_server.FakeGitHub, serving


def command_argv(command: str, url: str, inputs: Inputs, out_dir: Path) -> list[str]:
    common = ["--db", url, "--max-time", MAX_TIME]
    if command == "record":
        return ["history", "record", str(inputs.new_report), *common, "--commit", "f" * 40, "--branch", "main",
                "--when", "2026-12-01T00:00:00Z"]
    if command == "accept":
        return ["accept", *common, "--commit", inputs.accept_commit, "--kernel", "gemm", "--reason", "fuzz", "--by",
                "fuzz"]
    if command.startswith("changes"):
        return ["history", "changes", *common, "--branch", "main", "--format", command.split("-")[1]]
    if command == "dashboard":
        return ["history", "dashboard", *common, "--branch", "main", "-o", str(out_dir / "dashboard")]
    if command == "compare":
        return ["compare", str(inputs.current), "--history", url, "--format", "md", "--max-time", MAX_TIME]
    return ["publish", str(inputs.published), "--history", url, "--max-time", MAX_TIME, "--retry-backoff", "0.05"]


def run_command(command: str, url: str, inputs: Inputs, out_dir: Path) -> Ran:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GITHUB_", "RUNNER_", "PERFGATE_HISTORY"))}
    posted_before = 0
    if command == "publish":
        from helpers.github_server import actions_env, pull_request_event

        env = actions_env(inputs.github, out_dir, event=pull_request_event(out_dir))
        posted_before = len(inputs.github.requests)
    ran = run_main(command_argv(command, url, inputs, out_dir), env)
    written = [path.read_text(errors="replace") for path in sorted(out_dir.rglob("*")) if path.is_file()
               and path.suffix in (".html", ".md", ".json", ".js", ".svg", ".csv", ".txt")]
    if command == "publish":
        written += [json.dumps(request.body) for request in inputs.github.requests[posted_before:]]
    ran.written = "\n".join(written)
    return ran


def findings_of(ran: Ran, command: str, expect: str, clean: dict[str, Ran],
                secrets: tuple[str, ...] = (SECRET,)) -> list[tuple[str, str]]:
    """The findings of one run of ``command`` on a case met as ``expect`` (``clean``: the runs on the undamaged copy)."""
    found: list[tuple[str, str]] = []
    printed, everything = ran.out, ran.out + ran.written
    if ran.error or "Traceback" in printed or "please report it" in printed:
        found.append(("traceback", ran.error or printed[-400:]))
    if ran.seconds > HANG_SECONDS:
        found.append(("hang", f"{ran.seconds:.1f} s"))
    logged = [line for line in printed.splitlines() if "##[" in line or line.lstrip().startswith("::")
              or "\x1b" in line]
    rendered = ran.written + (printed if command in ("changes-md", "compare") else "")  # Markdown, HTML, posted
    if logged or RAW_MARKUP.search(rendered):
        found.append(("injection", repr(logged[:3]) + repr(RAW_MARKUP.findall(rendered)[:3])))
    if any(secret in everything for secret in secrets):
        found.append(("secret printed", printed[:300]))
    if ran.code not in (0, 1, 2) and not ran.error:
        found.append(("traceback", f"exit {ran.code}"))
    if ran.code == 2 and printed.strip().count("\n") > 0 and command != "publish":
        found.append(("traceback", f"more than one line: {printed[:300]}"))
    base = clean.get(command)
    refused_by = READERS if expect == "refuse" else READERS[3:] if expect == "refuse, not changes" else ()
    if command in refused_by and ran.code != 2:
        found.append(("silent pass", f"exit {ran.code}: {printed[:200]}"))
    if expect == "tolerate" and base is not None and ran.code != base.code:
        found.append(("silent pass" if ran.code == 0 else "traceback", f"exit {ran.code} (undamaged: {base.code}): "
                      f"{printed[:200]}"))
    if expect == "same changes" and command == "changes-json" and base is not None and ran.out != base.out:
        found.append(("silent pass", f"exit {ran.code}, change points differ from the undamaged history's: "
                      f"{printed[:200]}"))
    return found


# ------------------------------------------------------------------ databases

def admin(server: str) -> Any:
    import psycopg

    return psycopg.connect(server, autocommit=True)


def create_database(server: str, name: str, template: str | None = None) -> None:
    with admin(server) as connection:
        connection.execute(f"CREATE DATABASE {name}" + (f" TEMPLATE {template}" if template else ""))  # type: ignore[arg-type]


def drop_database(server: str, name: str) -> None:
    with admin(server) as connection:
        connection.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")  # type: ignore[arg-type]


def execute(url: str, sql: str) -> None:
    import psycopg

    with psycopg.connect(url, autocommit=True) as connection:
        connection.execute(sql)  # type: ignore[arg-type]


TABLES = ("perfgate_runs", "perfgate_series", "perfgate_points", "perfgate_acceptances", "perfgate_findings")


def snapshot(url: str) -> set[tuple[str, str]]:
    """Every row of the tables that hold what was measured and accepted (the cache is perfgate's to rewrite)."""
    import psycopg

    rows: set[tuple[str, str]] = set()
    with psycopg.connect(url, autocommit=True) as connection:
        for table in TABLES:
            with contextlib.suppress(psycopg.Error):
                rows.update((table, repr(row)) for row in connection.execute(f"SELECT * FROM {table}"))  # type: ignore[arg-type]
    return rows


def make_base(server: str, folder: Path, name: str) -> Inputs:
    """The undamaged history: 12 commits of two kernels (gemm steps from 100 to 130 µs at the 8th), an acceptance of
    that step, the change cache filled; and the reports the commands take."""
    from helpers.history import KERNEL_TIME, baseline_file, commit_of, write_report

    from perfgate.history.db import open_history
    from perfgate.history.record import Provenance, iso_time, record_files

    create_database(server, name)
    url = plain_url(server, name)
    runs = [{"gemm": (100e3 if i < 7 else 130e3) + (i % 3) * 200, "softmax": 50e3 + (i % 2) * 100} for i in range(12)]
    with open_history(url) as history:  # one connection for the 12 runs (each command's opening checks the schema)
        for index, values in enumerate(runs):
            report = write_report(folder / f"run{index}.json", {(k, KERNEL_TIME): [v] for k, v in values.items()})
            record_files(history, [str(report)], Provenance(commit_of(index), "main",
                                                            iso_time(f"2026-11-{index + 1:02d}T00:00:00Z")))
    assert run_main(["accept", "--db", url, "--commit", commit_of(7), "--kernel", "gemm", "--reason", "faster path",
                     "--by", "lead"]).code == 0
    assert run_main(["history", "changes", "--db", url, "--format", "json"]).code == 0  # fills the cache
    new_report = write_report(folder / "new.json", {("gemm", KERNEL_TIME): [131e3], ("softmax", KERNEL_TIME): [50e3]})
    current = baseline_file(folder / "current.json", {"gemm": 180e3, "softmax": 50e3})
    published = write_report(folder / "published.json", {("gemm", KERNEL_TIME): [180e3]}, status="regression")
    return Inputs(folder, new_report, current, published, commit_of(7))


# ------------------------------------------------------------------ the campaign

def run_case(server: str, base: str, case: Case, inputs: Inputs, clean: dict[str, Ran], tally: Tally,
             commands: tuple[str, ...] = (*READERS, *WRITERS)) -> None:
    name = f"pgfuzz_case_{uuid.uuid4().hex[:10]}"
    create_database(server, name, template=base)
    url = with_password(server, name)
    try:
        if case.sql:
            execute(plain_url(server, name), case.sql)
        before = snapshot(plain_url(server, name))
        for command in commands:
            out_dir = inputs.folder / name / command
            out_dir.mkdir(parents=True)
            held = case.during(plain_url(server, name)) if case.during else None
            try:
                ran = run_command(command, url, inputs, out_dir)
            finally:
                if held is not None:
                    held.close()
            tally.runs += 1
            for kind, detail in findings_of(ran, command, case.expect, clean):
                tally.add(case, command, kind, detail)
        lost = before - snapshot(plain_url(server, name))
        if lost:
            tally.add(case, "after", "data damaged", f"{len(lost)} rows lost or changed: {sorted(lost)[:2]}")
    finally:
        drop_database(server, name)
    tally.tried[case.family] += 1


def clean_runs(server: str, base: str, inputs: Inputs, commands: tuple[str, ...] = (*READERS, *WRITERS)
               ) -> dict[str, Ran]:
    """Each command's run on an undamaged copy: what a tolerated case must match."""
    name = f"pgfuzz_clean_{uuid.uuid4().hex[:10]}"
    create_database(server, name, template=base)
    try:
        url = with_password(server, name)
        found = {}
        for command in commands:
            out_dir = inputs.folder / name / command
            out_dir.mkdir(parents=True)
            found[command] = run_command(command, url, inputs, out_dir)
            assert found[command].code in (0, 1), (command, found[command])
        return found
    finally:
        drop_database(server, name)


@contextlib.contextmanager
def campaign(server: str, folder: Path, commands: tuple[str, ...] = (*READERS, *WRITERS)
             ) -> Iterator[tuple[str, Inputs, dict[str, Ran]]]:
    """The base history, the loopback GitHub and the undamaged runs of ``commands``, for as long as the block runs."""
    from helpers.github_server import PR, HEAD_SHA, MERGE_SHA, READ_ONLY_TOKEN, REPO, TOKEN, FakeGitHub, serve

    base = f"pgfuzz_base_{uuid.uuid4().hex[:10]}"
    fake = FakeGitHub(TOKEN, read_only_tokens=(READ_ONLY_TOKEN,))
    fake.add_repo(REPO, repo_id=4242, pulls={PR: HEAD_SHA}, commits=(MERGE_SHA,))
    try:
        inputs = make_base(server, folder, base)
        with serve(fake):
            inputs.github = fake
            yield base, inputs, clean_runs(server, base, inputs, commands)
    finally:
        drop_database(server, base)


def bad_urls(server: str, database: str, secret: str = SECRET) -> dict[str, str]:
    """URLs that carry ``secret`` and name no history perfgate can open (or one it can, with the secret elsewhere)."""
    good = with_password(server, database, secret)
    host = good.split("@", 1)[1]
    return {
        "wrong port": good.replace(host.split("/")[0], "127.0.0.1:1"),
        "wrong database": good.rsplit("/", 1)[0] + "/pgfuzz_no_such_database",
        "wrong user": good.replace("//perfgate:", "//pgfuzz_no_such_user:"),
        "unresolvable host": good.replace(host.split("/")[0], "no-such-host.invalid:55432"),
        "password in the query": f"postgresql://pgfuzz_no_such_user@{host}?password={secret}",
        "sslpassword and sslmode=require": f"{good}?sslmode=require&sslpassword={secret}",
        "key=value": f"host=127.0.0.1 port=1 user=perfgate password={secret} dbname=x",
        "unescaped / ? # @ in it": good.replace(f":{secret}@", f":{secret}/a?b#c@d@").replace("55432", "1"),
        "percent-encoded": good.replace(f":{secret}@", f":{secret}%2F%40x@").replace("/" + database, "/nodb"),
        "scheme in capitals": good.replace("postgresql://", "PostgreSQL://").replace("55432", "1"),
        "bad option": f"{good}?options=-c%20no_such_setting%3D{secret}",
    }


def run_urls(server: str, base: str, inputs: Inputs, tally: Tally, extra: dict[str, str] | None = None) -> None:
    """Each bad URL through every command: one line, exit 2, the secret in none of it."""
    name = f"pgfuzz_urls_{uuid.uuid4().hex[:10]}"
    create_database(server, name, template=base)
    try:
        for label, url in {**bad_urls(server, name), **(extra or {})}.items():
            case = Case("urls", label, "", "refuse")
            for command in (*READERS, *WRITERS):
                out_dir = inputs.folder / name / label.replace(" ", "_").replace("/", "_") / command
                out_dir.mkdir(parents=True)
                ran = run_command(command, url, inputs, out_dir)
                tally.runs += 1
                for kind, detail in findings_of(ran, command, "refuse", {}):
                    tally.add(case, command, kind, detail)
            tally.tried["urls"] += 1
    finally:
        drop_database(server, name)


@contextlib.contextmanager
def password_server(port: int = 55499) -> Iterator[str]:
    """A cluster of its own that asks for a password (scram-sha-256; the shared one trusts its user): the URL of
    its user ``fuzz`` with a wrong password, ``SECRET``."""
    import shutil
    import subprocess
    import tempfile

    home = Path(tempfile.mkdtemp(prefix="pgfuzz-auth-"))  # initdb refuses root: run as postgres where root
    as_user = ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []
    if as_user:
        shutil.chown(home, "postgres")
    (home / "pw").write_text("right-password\n")
    data = home / "data"
    subprocess.run([*as_user, "initdb", "-D", str(data), "-U", "fuzz", "--pwfile", str(home / "pw"), "-A",
                    "scram-sha-256"], check=True, capture_output=True)
    subprocess.run([*as_user, "pg_ctl", "-D", str(data), "-o", f"-p {port} -k {home} -c listen_addresses=127.0.0.1",
                    "-w", "-l", str(home / "auth.log"), "start"], check=True, capture_output=True)
    try:
        yield f"postgresql://fuzz:{SECRET}@127.0.0.1:{port}/postgres"
    finally:
        subprocess.run([*as_user, "pg_ctl", "-D", str(data), "-m", "immediate", "stop"], check=False,
                       capture_output=True)
        shutil.rmtree(home, ignore_errors=True)


def main() -> int:
    import argparse
    import random
    import tempfile

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--family", action="append", choices=[*sorted(FAMILIES), "urls"], help="only these (default: all)")
    parser.add_argument("--sample", type=int, default=0, help="this many cases drawn at random (default: all)")
    parser.add_argument("--seed", type=int, default=33)
    parser.add_argument("--password-server", action="store_true", help="urls: also a wrong password, against a "
                        "cluster of its own started with initdb (port 55499)")
    args = parser.parse_args()
    server = os.environ["PERFGATE_TEST_POSTGRES_URL"]
    cases = [case for name, make in FAMILIES.items() if not args.family or name in args.family for case in make()]
    if args.sample:
        cases = random.Random(args.seed).sample(cases, min(args.sample, len(cases)))
    tally = Tally()
    with contextlib.ExitStack() as stack:
        folder = stack.enter_context(tempfile.TemporaryDirectory())
        base, inputs, clean = stack.enter_context(campaign(server, Path(folder)))
        for number, case in enumerate(cases):
            seen = len(tally.details)
            run_case(server, base, case, inputs, clean, tally)
            for line in tally.details[seen:]:
                print("  " + line, flush=True)
            print(f"[{number + 1}/{len(cases)}] {case.family}/{case.name[:60]!r}: {tally.summary()}", flush=True)
        if not args.family or "urls" in args.family:
            extra = {}
            if args.password_server:
                wrong = stack.enter_context(password_server())
                extra = {"wrong password": wrong, "wrong password, ?password=": wrong.replace(f":{SECRET}@", "@")
                         + f"?password={SECRET}"}
            run_urls(server, base, inputs, tally, extra)
    print("\n".join(tally.details))
    print(tally.summary())
    return 1 if tally.details else 0


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    sys.exit(main())
