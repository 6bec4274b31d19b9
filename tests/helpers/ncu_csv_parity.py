"""What ``read_ncu_csv`` gives for every real ncu CSV export perfgate has, and for edited copies of them: one
digest per input, recorded in ``tests/data/ncu-csv-parity.json`` and compared by ``test_ncu_csv_parity.py``.

A reader change (a new parser, a pandas or pyarrow release) must leave every digest as it was: the table,
column by column and value by value (floats to the bit), the facts beside it, or the error's text.

Inputs: every ncu CSV page and log under ``tests/data`` and ``../shared/corpus`` (real exports), synthetic
pages of ``csvgen``, and edits of the real pages that keep or break them in the ways a CSV can be (line ends,
a BOM, ncu's and blank lines between rows, unquoted cells, a wider or cut row, values that are no number).

    python tests/helpers/ncu_csv_parity.py --record      # after a change that is meant to change what is read
    python tests/helpers/ncu_csv_parity.py               # print the inputs whose digest differs
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np

TESTS = Path(__file__).resolve().parents[1]
REPO = TESTS.parent
sys.path.insert(0, str(TESTS))
from helpers.csvgen import write_details_csv, write_raw_csv  # noqa: E402

from perfgate.errors import PerfgateError  # noqa: E402

DIGESTS = TESTS / "data" / "ncu-csv-parity.json"
CORPUS = Path(os.environ.get("PERFGATE_CORPUS", REPO.parent / "shared" / "corpus"))
CSV_SUFFIXES = (".csv", ".log")


def real_exports() -> Iterator[tuple[str, Path]]:
    """(name, path) of every ncu CSV page or log under tests/data, then under ../shared/corpus."""
    for root, prefix in ((TESTS / "data", "data/"), (CORPUS, "corpus/")):
        if root.is_dir():
            for path in sorted(root.rglob("*")):
                if path.is_file() and path.suffix in CSV_SUFFIXES:
                    yield prefix + path.relative_to(root).as_posix(), path


def _lines(data: bytes) -> list[bytes]:
    return data.splitlines(keepends=True)


def _header_at(lines: list[bytes]) -> int:
    return next(i for i, line in enumerate(lines) if line.startswith(b'"ID"'))


def _mid(lines: list[bytes]) -> int:
    start = _header_at(lines)
    return start + max(2, (len(lines) - start) // 2)


def _unquoted(data: bytes) -> bytes:
    """Cells without their quotes where no comma, quote or line end is inside (CSV writers that quote minimally)."""
    lines = _lines(data)
    start = _header_at(lines) + 1  # the header stays as ncu writes it: it is how the table is found
    out = lines[:start]
    for line in lines[start:]:
        if not line.startswith(b'"'):
            out.append(line)
            continue
        cells = line.rstrip(b"\r\n").split(b'","')
        cells[0], cells[-1] = cells[0][1:], cells[-1][:-1]
        if any(b"," in c or b'"' in c for c in cells):
            out.append(line)
            continue
        out.append(b",".join(cells) + line[len(line.rstrip(b"\r\n")):])
    return b"".join(out)


def _replace_cell(data: bytes, value: bytes) -> bytes:
    """The last cell of a row in the middle of the table replaced by ``value``."""
    lines = _lines(data)
    at = _mid(lines)
    line = lines[at].rstrip(b"\r\n")
    lines[at] = line[:line.rfind(b',"') + 1] + value + b"\n"
    return b"".join(lines)


EDITS: dict[str, Callable[[bytes], bytes]] = {
    "crlf": lambda d: d.replace(b"\r\n", b"\n").replace(b"\n", b"\r\n"),
    "bom": lambda d: b"\xef\xbb\xbf" + d,
    "prof-line-between-rows": lambda d: b"".join(
        (ls := _lines(d))[:_mid(ls)] + [b'==PROF== Disconnected from process 4242, "x"\n'] + ls[_mid(ls):]),
    "blank-lines-between-rows": lambda d: b"".join((ls := _lines(d))[:_mid(ls)] + [b"\n", b" \t\n"] + ls[_mid(ls):]),
    "unquoted": _unquoted,
    "wider-row": lambda d: b"".join(
        (ls := _lines(d))[:_mid(ls)] + [ls[_mid(ls)].rstrip(b"\r\n") + b',"extra"\n'] + ls[_mid(ls) + 1:]),
    "short-row": lambda d: b"".join(
        (ls := _lines(d))[:_mid(ls)] + [ls[_mid(ls)][:ls[_mid(ls)].index(b'",') + 1] + b"\n"] + ls[_mid(ls) + 1:]),
    "last-row-cut": lambda d: d.rstrip(b"\r\n")[:-40],
    "quote-left-open": lambda d: d.rstrip(b"\r\n") + b'\n"9999,"open\n',
    "n/a-cell": lambda d: _replace_cell(d, b'"n/a"'),
    "text-cell": lambda d: _replace_cell(d, b'"fast"'),
    "empty-cell": lambda d: _replace_cell(d, b'""'),
    "huge-number": lambda d: _replace_cell(d, b'"123456789012345678901234567890"'),
    "negative-zero": lambda d: _replace_cell(d, b'"-0"'),
    "line-end-in-cell": lambda d: _replace_cell(d, b'"12\n34"'),
    "trailing-comma-on-first-row": lambda d: b"".join(
        (ls := _lines(d))[:_header_at(ls) + 1] + [ls[_header_at(ls) + 1].rstrip(b"\r\n") + b",\n"]
        + ls[_header_at(ls) + 2:]),
}


def synthetic(folder: Path) -> Iterator[tuple[str, Path]]:
    """csvgen's pages (both, two seeds), and every edit of the real pages that hold a table."""
    for seed in (1, 2):
        for page, writer in (("raw", write_raw_csv), ("details", write_details_csv)):
            path = folder / f"csvgen-{page}-{seed}.csv"
            writer(path, 300, 20, seed=seed, run=seed)
            yield f"csvgen/{page}-{seed}", path
    for name, path in real_exports():
        data = path.read_bytes()
        if path.suffix != ".csv" or b'"ID"' not in data:
            continue
        for edit, change in EDITS.items():
            try:
                edited = change(data)
            except (StopIteration, ValueError, IndexError):
                continue  # a page too small for this edit
            out = folder / f"{len(os.listdir(folder))}.csv"
            out.write_bytes(edited)
            yield f"{name}~{edit}", out


def _cell(value: Any) -> Any:
    if isinstance(value, (float, np.floating)):
        return "nan" if math.isnan(value) else float(value).hex()
    if isinstance(value, np.integer):
        return int(value)
    if isinstance(value, np.bool_):
        return bool(value)
    return value


# The metrics ``perfgate compare`` asks the reader for by default (a hint: a reader may skip the others).
COMPARED = ("gpu__time_duration.sum", "dram__bytes_read.sum", "dram__bytes_write.sum", "smsp__inst_executed.sum",
            "launch__registers_per_thread", "sm__throughput.avg.pct_of_peak_sustained_elapsed",
            "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed",
            "sm__warps_active.avg.pct_of_peak_sustained_active")


def digest(path: Path, metrics: tuple[str, ...] | None = None) -> dict[str, Any]:
    """The table ``read_ncu_csv`` reads from ``path`` (its rows and a sha256 of everything in it), or the error;
    ``metrics``: the hint a compare gives."""
    from perfgate.collect.ncu_csv import read_ncu_csv

    try:
        measurement = read_ncu_csv(path, metrics)
    except PerfgateError as exc:  # InputError, NcuError: the one line the user sees
        return {"error": str(exc).replace(str(path), "<input>")}
    table = measurement.table
    content = {
        "columns": {name: [_cell(v) for v in table[name].tolist()] for name in table},
        "settings": dict(measurement.settings),
        "unusable": [dict(u) for u in measurement.unusable],
        "findings": None if measurement.findings is None else {str(k): list(v) for k, v in
                                                                measurement.findings.items()},
        "locations": dict(measurement.locations),
        "samples": {k: list(v) for k, v in measurement.samples.items()},
    }
    text = json.dumps(content, sort_keys=True, default=str)
    return {"rows": len(table), "sha256": hashlib.sha256(text.encode("utf-8")).hexdigest()}


def current(folder: Path) -> dict[str, dict[str, Any]]:
    """Each input's digest, read as a whole and (``NAME@compared``) as a compare reads it."""
    found: dict[str, dict[str, Any]] = {}
    for name, path in [*real_exports(), *synthetic(folder)]:
        found[name] = digest(path)
        found[f"{name}@compared"] = digest(path, COMPARED)
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--record", action="store_true", help=f"write the digests to {DIGESTS.relative_to(REPO)}")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as folder:
        now = current(Path(folder))
    if args.record:
        DIGESTS.write_text(json.dumps(now, indent=1, sort_keys=True, ensure_ascii=False) + "\n", encoding="utf-8")
        print(f"{len(now)} digests written to {DIGESTS.relative_to(REPO)}")
        return 0
    recorded = json.loads(DIGESTS.read_text(encoding="utf-8"))
    differ = sorted(name for name in now if name in recorded and recorded[name] != now[name])
    for name in differ:
        print(f"{name}: recorded {recorded[name]}, now {now[name]}")
    print(f"{len(now) - len(differ)} of {len(now)} inputs as recorded"
          + (f"; {len(set(now) - set(recorded))} not recorded" if set(now) - set(recorded) else ""))
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
