"""A longer, structure-aware fuzz of every input perfgate reads, through its CLI in this process.

Not part of the normal suite (its name does not start with ``test_``): run it by hand when a reader changes::

    PYTHONPATH=. python tests/robustness/fuzz_inputs.py [--seconds 300] [--seed 0] [--only NAME,...]

Each target is a real input from ``tests/data`` (or ``baselines/``) and the commands that read it. A run takes
the input, mutates it with a seeded random generator (JSON: a node replaced by a value of another type, NaN,
inf, a huge or negative number, a hostile string, deep nesting, a key removed or duplicated; CSV: a cell, a
column or a row; SQLite: a table or column dropped, a cell of another type, the file cut; TOML: a
``[tool.perfgate]`` key of another type; any input: cut short, a byte flipped, a BOM, UTF-16), runs each command
and checks the house rules: exit 0, 1 or 2 (3 for publish), no traceback and no last-resort "please report it"
line, exactly one line on stderr for exit 2, no raw control character on stdout or stderr, no hostile markup
unescaped in a Markdown or HTML report, no leftover output beside a refused ``-o``, and no run past
``HANG_SECONDS``. A finding is printed with its seed, so ``--seed N --runs 1 --only NAME`` replays it.
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import csv
import gzip
import io
import json
import lzma
import os
import random
import re
import shutil
import signal
import sqlite3
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tests"))
DATA = REPO / "tests" / "data"
HANG_SECONDS = 30
MARKUP = "<img src=x onerror=alert(1)>"
HOSTILE_STRINGS = ["", " ", "\x1b[2J\x1b[31mREGRESSION", "k\nPASS: forged line", "a\rPASS", MARKUP,
                   "| forged | cell |", "::error::forged", "##[error]forged", "\u202eevil", "\x00nul", "x" * 70_000,
                   "../../etc/passwd", "nan", "1e999", "-1", "0x10", "{\"a\": 1}", "🙂" * 10, "\ud800"]
HOSTILE_NUMBERS: list[Any] = [0, -1, -1e-300, 1e308, -1e308, 10**30, 2**63, -(2**63), 0.5, float("nan"),
                              float("inf"), float("-inf"), True, False]
RAW_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202e\u2028\u2029]")
Command = list[str]


class Hang(BaseException):
    pass


# ---------------------------------------------------------------- mutations

def hostile_value(rng: random.Random) -> Any:
    choice = rng.randrange(6)
    if choice == 0:
        return rng.choice(HOSTILE_STRINGS)
    if choice == 1:
        return rng.choice(HOSTILE_NUMBERS)
    if choice == 2:
        return None
    if choice == 3:
        return rng.choice([[], {}, [None], {"": None}, [[[[1]]]]])
    if choice == 4:
        return f"__deep{rng.choice([70, 200, 5000])}__"  # nested lists, written out by dump_json
    return rng.choice([MARKUP, "\x1b]52;c;ZXZpbA==\x07", "a\n::warning::x"])


def _nodes(document: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    found = [path]
    if len(path) > 20:
        return found
    if isinstance(document, dict):
        for key, value in document.items():
            found += _nodes(value, (*path, key))
    elif isinstance(document, list):
        for index, value in enumerate(document[:50]):
            found += _nodes(value, (*path, index))
    return found


def _at(document: Any, path: tuple[Any, ...]) -> Any:
    for key in path:
        document = document[key]
    return document


def mutate_json_tree(document: Any, rng: random.Random) -> Any:
    document = copy.deepcopy(document)
    for _ in range(rng.choice([1, 1, 1, 2, 3])):
        paths = [p for p in _nodes(document) if p]
        if not paths:
            return hostile_value(rng)
        path = rng.choice(paths)
        parent = _at(document, path[:-1])
        key = path[-1]
        action = rng.randrange(10)
        if action == 0 and isinstance(parent, dict):
            del parent[key]
        elif action == 1 and isinstance(parent, dict):  # a hostile key beside it
            parent[rng.choice(HOSTILE_STRINGS[:12])] = parent[key]
        elif action == 2 and isinstance(parent[key], str):  # a hostile name inside the real one
            parent[key] = parent[key] + rng.choice(HOSTILE_STRINGS[2:11])
        elif action == 3 and isinstance(parent[key], (int, float)) and not isinstance(parent[key], bool):
            parent[key] = rng.choice([-parent[key], parent[key] * 1e300, str(parent[key]), 0, float("nan")])
        elif action == 4 and isinstance(parent, list) and parent:
            parent.append(copy.deepcopy(parent[key]))  # a duplicate entry
        else:
            parent[key] = hostile_value(rng)
    return document


def dump_json(document: Any, rng: random.Random) -> bytes:
    text = json.dumps(document, indent=rng.choice([None, 1]), allow_nan=True)
    if rng.random() < 0.1 and text.startswith("{") and "{" in text[1:]:
        text = text.replace("{", '{"format": "x", ', 1)  # a duplicate key, the later one wins in Python
    text = re.sub(r'"__deep(\d+)__"', lambda m: "[" * int(m.group(1)) + "1" + "]" * int(m.group(1)), text)
    return text.encode("utf-8", "surrogatepass")


def mutate_bytes(data: bytes, rng: random.Random) -> bytes:
    action = rng.randrange(9)
    if action == 0:
        return data[:rng.randrange(len(data) + 1)]
    if action == 1 and data:
        at = rng.randrange(len(data))
        return data[:at] + bytes([data[at] ^ (1 << rng.randrange(8))]) + data[at + 1:]
    if action == 2:
        return b"\xef\xbb\xbf" + data
    if action == 3:
        try:
            return data.decode("utf-8").encode(rng.choice(["utf-16", "utf-16-le", "latin-1"]), "replace")
        except UnicodeDecodeError:
            return data[::-1]
    if action == 4:
        return rng.randbytes(rng.choice([1, 100, 10_000]))
    if action == 5:
        return b""
    if action == 6:
        return gzip.compress(data)[:rng.randrange(10, max(11, len(data) // 3))]
    if action == 7:
        return lzma.compress(data)[:rng.randrange(10, max(11, len(data) // 3))]
    return data.replace(b"\n", b"\r\n")


def mutate_csv(data: bytes, rng: random.Random) -> bytes:
    lines = data.decode("utf-8", "replace").splitlines(keepends=True)
    rows_at = [i for i, line in enumerate(lines) if line.startswith('"')]
    if not rows_at:
        return mutate_bytes(data, rng)
    at = rng.choice(rows_at)
    row = next(csv.reader([lines[at]]))
    action = rng.randrange(5)
    if action == 0 and row:
        row[rng.randrange(len(row))] = str(rng.choice(HOSTILE_STRINGS + [str(v) for v in HOSTILE_NUMBERS]))
    elif action == 1 and row:
        del row[rng.randrange(len(row))]
    elif action == 2:
        row += ["extra"] * rng.randrange(1, 4)
    elif action == 3:
        lines.insert(at, lines[at])
        return "".join(lines).encode()
    else:
        del lines[at]
        return "".join(lines).encode()
    out = io.StringIO()
    csv.writer(out, quoting=csv.QUOTE_ALL, lineterminator="\n").writerow(row)
    lines[at] = out.getvalue()
    return "".join(lines).encode("utf-8", "surrogatepass")


def mutate_sqlite(path: Path, rng: random.Random) -> None:
    """Damage the SQLite file at ``path`` in place."""
    if rng.random() < 0.15:
        data = path.read_bytes()
        path.write_bytes(mutate_bytes(data, rng))
        return
    with contextlib.closing(sqlite3.connect(path)) as db:
        tables = [r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='table'")]
        table = rng.choice(tables)
        columns = [r[1] for r in db.execute(f'PRAGMA table_info("{table}")')]
        action = rng.randrange(5)
        try:
            if action == 0:
                db.execute(f'DROP TABLE "{table}"')
            elif action == 1 and len(columns) > 1:
                db.execute(f'ALTER TABLE "{table}" DROP COLUMN "{rng.choice(columns)}"')
            elif action == 2:
                db.execute(f'DELETE FROM "{table}"')
            else:
                column = rng.choice(columns)
                value = hostile_value(rng)
                if isinstance(value, (list, dict)) or (isinstance(value, int) and abs(value) >= 2**63):
                    value = json.dumps(value)[:1000]
                if isinstance(value, str):
                    value = value.encode("utf-8", "surrogatepass").decode("utf-8", "replace")
                # rows chosen at random; a NOT NULL or CHECK constraint may refuse, then nothing changes
                db.execute(f'UPDATE "{table}" SET "{column}" = ? WHERE rowid IN '
                           f'(SELECT rowid FROM "{table}" ORDER BY random() LIMIT ?)', (value, rng.choice([1, 3, 1000])))
            db.commit()
        except sqlite3.DatabaseError:
            pass


TOML_KEYS = {"thresholds": None, "metrics": None, "significance": None, "baselines": None, "strict": None,
             "history": None, "history_branch": None, "clock_control": None, "timeout": None, "source": None,
             "accept_unpaired_kernels": None, "allow_device_mismatch": None}


def toml_value(rng: random.Random) -> str:
    return rng.choice(['""', '"x"', "1", "-1", "0", "nan", "inf", "1e999", "true", "[]", "[1, 2]", '["x"]', "{}",
                       '{ "gpu__time_duration.sum" = "5%" }', '{ "x" = 0.05 }', '"\\u001b[2J"', '"5%"',
                       '{ "time.min" = "nan%" }', '"sqlite:///dev/null"', '"postgresql://nobody@127.0.0.1:1/x"',
                       '"' + "a" * 5000 + '"', '[[]]', '"<script>"', '{ "gpu__time_duration.sum" = "-5%" }'])


def pyproject(rng: random.Random) -> bytes:
    lines = ["[tool.perfgate]"]
    for key in rng.sample(sorted(TOML_KEYS), rng.randrange(1, 4)):
        lines.append(f"{key} = {toml_value(rng)}")
    if rng.random() < 0.1:
        lines.append(lines[-1])  # a duplicate key: invalid TOML
    if rng.random() < 0.1:
        lines.append("[tool.perfgate.thresholds]\n\"x\" = \"5%\"")
    return ("\n".join(lines) + "\n").encode()


# ---------------------------------------------------------------- targets

def _xz(path: Path) -> bytes:
    return lzma.decompress(path.read_bytes())


def _gz(path: Path) -> bytes:
    return gzip.decompress(path.read_bytes())


@dataclass(frozen=True)
class Target:
    name: str
    source: Callable[[], bytes]
    kind: str  # json, csv, bytes
    suffix: str
    commands: Callable[[Path, Path, Path], list[Command]]  # (mutated, original, scratch) -> argv lists


def _compare_both(mutated: Path, original: Path, scratch: Path) -> list[Command]:
    return [["compare", str(original), str(mutated)], ["compare", str(mutated), str(original), "--format", "json"],
            ["compare", str(original), str(mutated), "-o", str(scratch / "out.html")],
            ["compare", str(original), str(mutated), "-o", str(scratch / "out.md")]]


def _baseline_commands(mutated: Path, original: Path, scratch: Path) -> list[Command]:
    folder = scratch / "baselines" / "nvidia-h100-80gb-hbm3-sm90"
    folder.mkdir(parents=True, exist_ok=True)
    shutil.copy(mutated, folder / "vector_add.json")
    current = str(DATA / "h100" / "vector_add.rerun.raw-base.csv")
    return [["compare", str(mutated), current], ["compare", str(mutated), current, "-o", str(scratch / "o.html")],
            ["compare", str(scratch / "baselines"), current, "--name", "vector_add", "-o", str(scratch / "o.md")],
            ["baselines", "list", "-d", str(scratch / "baselines")]]


def _report_commands(mutated: Path, original: Path, scratch: Path) -> list[Command]:
    db = f"sqlite:///{scratch / 'history.sqlite'}"
    return [["merge", str(mutated), str(original), "-o", str(scratch / "merged.json")],
            ["history", "record", str(mutated), "--db", db, "--commit", "a" * 40, "--branch", "main",
             "--when", "2026-01-01T00:00:00+00:00"],
            ["history", "changes", "--db", db, "--branch", "main", "--format", "md"],
            ["history", "dashboard", "--db", db, "--branch", "main", "-o", str(scratch / "dash")],
            ["publish", str(mutated), "--no-comment", "--no-check"]]


def _nsys_source() -> bytes:
    from helpers.nsys_export import write_nsys_export  # type: ignore[import-not-found]

    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "x.sqlite"
        write_nsys_export(path, 12, per_step=4)
        return path.read_bytes()


def _history_source() -> bytes:
    from perfgate.cli import main

    with tempfile.TemporaryDirectory() as folder:
        db = f"sqlite:///{folder}/h.sqlite"
        for index, name in enumerate(["gate1", "gate2", "gate3", "gate4", "gate5"]):
            report = Path(folder) / f"{name}.json.xz"
            shutil.copy(DATA / "h100" / "sessions" / f"{name}.json.xz", report)
            with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
                main(["history", "record", str(report), "--db", db, "--commit", f"{index:040x}", "--branch",
                      "main", "--when", f"2026-01-0{index + 1}T00:00:00+00:00"])
        return (Path(folder) / "h.sqlite").read_bytes()


def _history_commands(mutated: Path, original: Path, scratch: Path) -> list[Command]:
    db = f"sqlite:///{mutated}"
    report = scratch / "gate1.json.xz"
    shutil.copy(DATA / "h100" / "sessions" / "gate1.json.xz", report)
    return [["history", "changes", "--db", db, "--branch", "main"],
            ["history", "changes", "--db", db, "--branch", "main", "--format", "json"],
            ["history", "dashboard", "--db", db, "--branch", "main", "-o", str(scratch / "dash")],
            ["history", "record", str(report), "--db", db, "--commit", "f" * 40, "--branch", "main"],
            ["accept", "--reason", "fuzz", "--commit", "0" * 40, "--db", db]]


def _config_commands(mutated: Path, original: Path, scratch: Path) -> list[Command]:
    a, b = str(DATA / "h100" / "vector_add.rerun.raw-base.csv"), str(DATA / "h100" / "vector_add.rerun.raw.csv")
    return [["compare", a, b, "--config", str(mutated)], ["baselines", "list", "--config", str(mutated)],
            ["history", "changes", "--config", str(mutated), "--db", f"sqlite:///{scratch / 'h.sqlite'}"]]


def _event_commands(mutated: Path, original: Path, scratch: Path) -> list[Command]:
    return [["publish", str(scratch / "report.json"), "--no-comment", "--no-check", "--sha", "a" * 40]]


def _event_source() -> bytes:
    return json.dumps({"pull_request": {"number": 7, "head": {"sha": "a" * 40, "repo": {"full_name": "o/r"}},
                                        "base": {"sha": "b" * 40, "repo": {"full_name": "o/r"}}},
                       "workflow_run": {"head_sha": "c" * 40, "pull_requests": [{"number": 7}],
                                        "html_url": "https://github.com/o/r/actions/runs/1"},
                       "repository": {"full_name": "o/r"}}).encode()


def _name_commands(mutated: Path, original: Path, scratch: Path) -> list[Command]:
    name = mutated.read_text(encoding="utf-8")
    gpu = scratch / "baselines" / name
    gpu.mkdir(parents=True)
    baseline = REPO / "baselines" / "nvidia-h100-80gb-hbm3-sm90" / "examples.test_cupy_raw_kernel__test_vector_add.json"
    shutil.copy(baseline, gpu / f"{name}.json")
    current = scratch / f"{name}.csv"
    shutil.copy(DATA / "h100" / "vector_add.rerun.raw-base.csv", current)
    return [["baselines", "list", "-d", str(scratch / "baselines")],
            ["compare", str(scratch / "baselines"), str(current), "--name", name, "-o", str(scratch / "o.md")],
            ["compare", str(gpu / f"{name}.json"), str(current), "-o", str(scratch / "o.html")],
            ["compare", str(gpu / f"{name}.json"), str(current)],
            ["baseline", str(current), "-d", str(scratch / "new"), "--name", name]]


def _url_commands(mutated: Path, original: Path, scratch: Path) -> list[Command]:
    url = mutated.read_text(encoding="utf-8")
    report = scratch / "gate1.json.xz"
    shutil.copy(DATA / "h100" / "sessions" / "gate1.json.xz", report)
    a, b = str(DATA / "h100" / "vector_add.rerun.raw-base.csv"), str(DATA / "h100" / "vector_add.rerun.raw.csv")
    return [["history", "changes", "--db", url, "--max-time", "2"],
            ["history", "record", str(report), "--db", url, "--max-time", "2", "--commit", "a" * 40, "--branch", "m"],
            ["compare", a, b, "--history", url]]


BENCH = {"machine_info": {"cpu": {"brand_raw": "Test CPU"}}, "version": "5.1.0",
         "benchmarks": [{"name": n, "fullname": f"t.py::{n}", "group": None, "params": None,
                         "stats": {"min": b, "max": b * 1.5, "mean": b * 1.1, "stddev": b * 0.05, "median": b,
                                   "iqr": b * 0.04, "q1": b, "q3": b * 1.1, "rounds": 10, "ops": 1 / b,
                                   "data": [b * (1 + i / 100) for i in range(10)]}}
                        for n, b in (("test_parse", 0.0012), ("test_render", 0.0034))]}
TIMELINE = DATA / "h200" / "timeline"
H200_BASELINES = REPO / "baselines" / "nvidia-h200-sm90"
TARGETS = [
    Target("baseline", lambda: (REPO / "baselines" / "nvidia-h100-80gb-hbm3-sm90" /
                                "examples.test_cupy_raw_kernel__test_vector_add.json").read_bytes(),
           "json", ".json", _baseline_commands),
    Target("timeline-baseline", lambda: (H200_BASELINES /
                                         "examples.test_cupy_raw_kernel__test_vector_add.timeline.json").read_bytes(),
           "json", ".json", _compare_both),
    Target("bench", lambda: json.dumps(BENCH).encode(), "json", ".json", _compare_both),
    Target("kineto", lambda: _gz(TIMELINE / "vector_add.torch.pt.trace.json.gz"), "json", ".json", _compare_both),
    Target("cupti", lambda: _gz(TIMELINE / "vector_add.cupti.a.cupti.json.gz"), "json", ".cupti.json",
           _compare_both),
    Target("report", lambda: _xz(DATA / "h100" / "sessions" / "gate1.json.xz"), "json", ".json", _report_commands),
    Target("raw-csv", lambda: (DATA / "h100" / "vector_add.rerun.raw-base.csv").read_bytes(), "csv", ".csv",
           _compare_both),
    Target("details-csv", lambda: (DATA / "h100" / "vector_add.rerun.details.csv").read_bytes(), "csv", ".csv",
           _compare_both),
    Target("nsys", _nsys_source, "sqlite", ".sqlite", _compare_both),
    Target("history", _history_source, "sqlite", ".sqlite", _history_commands),
    Target("config", lambda: b"", "toml", ".toml", _config_commands),
    Target("event", _event_source, "json", ".json", _event_commands),
    Target("names", lambda: b"", "name", ".txt", _name_commands),
    Target("history-url", lambda: b"", "url", ".txt", _url_commands),
    Target("ncu-rep", lambda: (DATA / "h100" / "vector_add.ncu-rep").read_bytes(), "bytes", ".ncu-rep", _compare_both),
]


# ---------------------------------------------------------------- one run

@dataclass
class Finding:
    target: str
    label: str  # seed=N, or the field and value of a sweep
    argv: Command
    problem: str
    detail: str


def hostile_name(rng: random.Random) -> str:
    """A file or folder name (no '/' or NUL) that tries to act on a terminal, a Markdown table or a page."""
    parts = [rng.choice(["vector_add", "a", "-", "--help", "..", " ", "x" * 200])]
    parts += rng.sample(["\x1b[2J", "\n", "\r", MARKUP.replace("/", ""), "|", "`", "::error::x", "##[x]", "\u202e",
                         "*_", "@team", "🙂", "\x7f", "\t"], rng.randrange(1, 4))
    rng.shuffle(parts)
    return "".join(parts)[:240].replace("/", "_").encode()[:240].decode(errors="ignore") or "x"


def history_url(rng: random.Random) -> str:
    return rng.choice(["", "sqlite://", "sqlite:///", "sqlite:////dev/null", "sqlite:////dev/zero", "sqlite:////proc",
                       "sqlite:////nonexistent/dir/h.sqlite", "sqlite:///" + "x" * 5000, "mysql://u@h/db",
                       "postgresql://", "postgresql://u@127.0.0.1:1/x", "postgresql://u@[::1/x", "sqlite:///%00",
                       "postgresql://u@127.0.0.1:1/x?sslmode=bogus", "sqlite:///h.sqlite?mode=ro", "file:///etc/passwd",
                       "sqlite:///\x1b[2J.sqlite", "postgresql://u:p@@127.0.0.1:1/x", "sqlite:///" + MARKUP])


def _mutated(target: Target, source: bytes, rng: random.Random, path: Path) -> None:
    if target.kind == "name":
        path.write_text(hostile_name(rng), encoding="utf-8", errors="surrogatepass")
        return
    if target.kind == "url":
        path.write_text(history_url(rng), encoding="utf-8")
        return
    if target.kind == "toml":
        path.write_bytes(pyproject(rng))
        return
    if target.kind == "sqlite":
        path.write_bytes(source)
        mutate_sqlite(path, rng)
        return
    if rng.random() < 0.2 or target.kind == "bytes":
        path.write_bytes(mutate_bytes(source, rng))
        return
    if target.kind == "csv":
        path.write_bytes(mutate_csv(source, rng))
        return
    try:
        path.write_bytes(dump_json(mutate_json_tree(json.loads(source), rng), rng))
    except (RecursionError, ValueError):
        path.write_bytes(mutate_bytes(source, rng))


def _on_alarm(signum: int, frame: object) -> None:
    raise Hang()


def run_cli(argv: Command, env: dict[str, str], cwd: Path) -> tuple[int | str, str, str, float]:
    """``perfgate ARGV`` in this process, in ``cwd`` (a relative history URL makes its database there)."""
    from perfgate.cli import main

    out, err = io.StringIO(), io.StringIO()
    home = Path.cwd()
    os.chdir(cwd)
    saved = {key: os.environ.get(key) for key in env}
    os.environ.update(env)
    started = time.monotonic()
    signal.signal(signal.SIGALRM, _on_alarm)
    signal.alarm(HANG_SECONDS)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                status: int | str = main(argv)
                if status in (130, 143):  # perfgate made Ctrl-C or SIGTERM a clean exit: stop the fuzz too
                    raise KeyboardInterrupt
            except SystemExit as exc:  # argparse's usage errors
                status = exc.code if isinstance(exc.code, int) else 2
            except Hang:
                status = "hang"
            except KeyboardInterrupt:
                raise
            except BaseException as exc:  # noqa: BLE001 - an escape from main is what this looks for
                import traceback

                status = f"escaped {type(exc).__name__}"
                err.write(traceback.format_exc())
    finally:
        signal.alarm(0)
        os.chdir(home)
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
    return status, out.getvalue(), err.getvalue(), time.monotonic() - started


def check(argv: Command, status: int | str, out: str, err: str, scratch: Path) -> str | None:
    allowed = {0, 1, 2, 3} if argv[0] == "publish" else {0, 1, 2}
    if status not in allowed:
        return f"status {status}"
    if "please report it" in err or "Traceback" in err:
        return "unforeseen error"
    if status == 2 and not (err.count("\n") == 1 and err.startswith("perfgate: error: ")) and "usage:" not in err:
        return "not one error line"
    if RAW_CONTROL.search(out) or RAW_CONTROL.search(err):
        return "raw control character"
    written_files = [scratch / name for name in ("out.html", "o.html", "out.md", "o.md", "summary.md")]
    written_files += sorted((scratch / "dash").rglob("*.html"))
    for written in written_files:
        if written.is_file() and MARKUP in written.read_text(errors="replace"):
            return f"markup unescaped in {written.name}"
    if "--format" in argv and argv[argv.index("--format") + 1] == "md" and MARKUP in out:
        return "markup unescaped in Markdown on stdout"
    if "-o" in argv and status == 2 and "not measured" not in err:
        target = Path(argv[argv.index("-o") + 1])
        leftovers = [p.name for p in target.parent.glob(f".{target.name}*")] + \
                    [p.name for p in target.parent.glob(f"{target.name}.*tmp*")]
        if leftovers:
            return f"leftover {leftovers}"
    return None


def run_input(target: Target, source: bytes, write: Callable[[Path], None], label: str,
              keep: Path | None = None) -> tuple[int, list[Finding]]:
    """Each of ``target``'s commands on the input ``write`` makes (beside ``source``, the untouched one) in a scratch
    folder: (command runs, findings). ``label`` names the input in what is printed."""
    findings: list[Finding] = []
    runs = 0
    with tempfile.TemporaryDirectory(prefix="perfgate-fuzz-") as folder:
        scratch = Path(folder)
        original = scratch / f"original{target.suffix}"
        original.write_bytes(source)
        mutated = scratch / f"mutated{target.suffix}"
        write(mutated)
        env = {"PERFGATE_FIFO_WAIT": "0.5", "GITHUB_STEP_SUMMARY": str(scratch / "summary.md"),
               "GITHUB_REPOSITORY": "o/r", "GITHUB_API_URL": "http://127.0.0.1:9", "GITHUB_TOKEN": "fuzz-token",
               "GITHUB_EVENT_PATH": str(mutated if target.name == "event" else scratch / "none.json")}
        if target.name == "event":
            (scratch / "report.json").write_bytes(_xz(DATA / "h100" / "sessions" / "gate1.json.xz"))
        for argv in target.commands(mutated, original, scratch):
            runs += 1
            status, out, err, took = run_cli(argv, env, scratch)
            problem = check(argv, status, out, err, scratch)
            if problem is None and took > 10:
                problem = f"slow ({took:.1f} s)"
            if problem is None:
                continue
            findings.append(Finding(target.name, label, argv[:2], problem, err[-600:]))
            print(f"FINDING {target.name} {label} {argv[:2]}: {problem}\n  {err[-600:]!r}", flush=True)
            if keep is not None:
                shutil.copytree(scratch, keep / f"{target.name}-{len(findings)}-{label}"[:200], dirs_exist_ok=True)
                print(f"  {argv}\n{err[-5000:]}", flush=True)
    return runs, findings


def fuzz(targets: list[Target], seconds: float, seed: int, runs: int | None, keep: Path | None = None) -> list[Finding]:
    """Seeded mutations of each target in turn, for ``seconds`` or ``runs`` inputs."""
    findings: list[Finding] = []
    sources = {t.name: t.source() for t in targets}
    deadline = time.monotonic() + seconds
    count = executions = 0
    while time.monotonic() < deadline and (runs is None or count < runs):
        target = targets[count % len(targets)]
        rng = random.Random(seed + count)
        done, found = run_input(target, sources[target.name],
                                lambda path: _mutated(target, sources[target.name], rng, path), f"seed={seed + count}",
                                keep)
        count += 1
        executions += done
        findings += found
    print(f"{count} inputs, {executions} command runs, {len(findings)} findings", flush=True)
    return findings


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=300)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--runs", type=int)
    parser.add_argument("--only", default="")
    parser.add_argument("--keep", type=Path, help="copy each finding's inputs into this folder, print its stderr")
    args = parser.parse_args()
    only = set(filter(None, args.only.split(",")))
    targets = [t for t in TARGETS if not only or t.name in only]
    return 1 if fuzz(targets, args.seconds, args.seed, args.runs, args.keep) else 0


if __name__ == "__main__":
    sys.exit(main())
