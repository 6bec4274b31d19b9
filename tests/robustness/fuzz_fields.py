"""A systematic sweep of every field of perfgate's JSON and SQLite inputs, through the CLI in this process (not part
of the normal suite). JSON: each distinct field path of a target of ``fuzz_inputs`` (list positions folded: ``entries.*.ordinal``)
is set, at its first occurrence, to each value of ``VALUES`` (another type, null, 0, -1, ±1e308, 2**63, 10**30, a
lone surrogate, markup, a control sequence, a number as text), and the target's commands run on the file and are
checked as ``fuzz_inputs`` checks them. SQLite (a history store, an Nsight Systems export): each table dropped, and
each column dropped, all NULL, text with markup and a control sequence, 9.9e307, -1 and a blob. Where the seeded fuzz
samples, this tries each field once with each value::

    PYTHONPATH=. python tests/robustness/fuzz_fields.py [--only baseline,bench] [--seconds 1800] [--keep DIR]
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import json
import sqlite3
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import fuzz_inputs as fuzz  # noqa: E402 - a script beside this one, not a package

VALUES: list[Any] = [None, True, -1, 0, 1e308, -1e308, 10**30, 2**63, 0.5, "", "x", fuzz.MARKUP,
                     "\x1b[2J\nPASS: forged", "\ud800", [], {}, [1, 2, 3], "9" * 40]


def field_paths(document: Any) -> dict[tuple[Any, ...], tuple[Any, ...]]:
    """Each distinct field path (positions folded to ``*``) and where it first occurs."""
    found: dict[tuple[Any, ...], tuple[Any, ...]] = {}
    for path in fuzz._nodes(document):
        if path:
            found.setdefault(tuple("*" if isinstance(key, int) else key for key in path), path)
    return found


def sqlite_edits(path: Path) -> list[str]:
    """The statements that damage a copy of the SQLite file at ``path``, one each."""
    with contextlib.closing(sqlite3.connect(path)) as db:
        tables = [row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type='table'")]
        columns = {table: [row[1] for row in db.execute(f'PRAGMA table_info("{table}")')] for table in tables}
    edits = [f'DROP TABLE "{table}"' for table in tables]
    for table, names in columns.items():
        for column in names:
            edits += [f'ALTER TABLE "{table}" DROP COLUMN "{column}"'] + [
                f'UPDATE "{table}" SET "{column}" = {value}'
                for value in ("NULL", "'x\x1b[2J<img src=x onerror=alert(1)>'", "9.9e307", "-1", "x'00ff'")]
    return edits


def _edited(source: bytes, edit: str) -> Callable[[Path], None]:
    def write(path: Path) -> None:
        path.write_bytes(source)
        with contextlib.closing(sqlite3.connect(path)) as db:
            try:
                db.execute(edit)
                db.commit()
            except sqlite3.DatabaseError:  # a constraint refused it: the file stays as it was
                pass
    return write


def sweep_sqlite(target: fuzz.Target, deadline: float, keep: Path | None) -> tuple[int, int, list[fuzz.Finding]]:
    source = target.source()
    with tempfile.TemporaryDirectory() as folder:
        copy_of = Path(folder) / "source.sqlite"
        copy_of.write_bytes(source)
        edits = sqlite_edits(copy_of)
    print(f"{target.name}: {len(edits)} edits", flush=True)
    inputs = runs = 0
    findings: list[fuzz.Finding] = []
    for edit in edits:
        if time.monotonic() > deadline:
            break
        done, found = fuzz.run_input(target, source, _edited(source, edit), edit[:80], keep)
        inputs, runs, findings = inputs + 1, runs + done, findings + found
    return inputs, runs, findings


def sweep(names: set[str], seconds: float, keep: Path | None) -> int:
    deadline = time.monotonic() + seconds
    runs = inputs = 0
    findings: list[fuzz.Finding] = []
    for target in fuzz.TARGETS:
        if target.kind not in ("json", "sqlite") or (names and target.name not in names):
            continue
        if target.kind == "sqlite":
            done_inputs, done, found = sweep_sqlite(target, deadline, keep)
            inputs, runs, findings = inputs + done_inputs, runs + done, findings + found
            continue
        source = target.source()
        document = json.loads(source)
        paths = field_paths(document)
        print(f"{target.name}: {len(paths)} field paths", flush=True)
        for folded, path in paths.items():
            for value in VALUES:
                if time.monotonic() > deadline:
                    break
                edited = copy.deepcopy(document)
                fuzz._at(edited, path[:-1])[path[-1]] = value
                text = json.dumps(edited).encode("utf-8", "surrogatepass")
                done, found = fuzz.run_input(target, source, lambda file: file.write_bytes(text),
                                             f"{'.'.join(map(str, folded))}={value!r:.30}", keep)
                inputs += 1
                runs += done
                findings += found
    print(f"{inputs} inputs, {runs} command runs, {len(findings)} findings", flush=True)
    return 1 if findings else 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", default="", help="targets, comma-separated (default: every JSON and SQLite target)")
    parser.add_argument("--seconds", type=float, default=float("inf"))
    parser.add_argument("--keep", type=Path, help="copy each finding's inputs into this folder, print its stderr")
    args = parser.parse_args()
    return sweep(set(filter(None, args.only.split(","))), args.seconds, args.keep)


if __name__ == "__main__":
    sys.exit(main())
