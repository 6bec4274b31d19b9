"""What ``read_table`` makes of every input file perfgate holds, and of a set of bad inputs: one line each.

Run it on two trees and diff the outputs to show a change to the readers kept every read and every error
byte-identical::

    PYTHONPATH=/work/main python tests/benchmarks/reader_parity.py > before.txt
    PYTHONPATH=$PWD python tests/benchmarks/reader_parity.py > after.txt
    diff before.txt after.txt

Inputs: every file under ``tests/data`` and ``../shared/corpus`` (reports, CSV pages, logs, traces, Nsight Systems
exports, baselines, benchmark JSON, compressed ones; READMEs too: they are bad inputs), the bad inputs written
below (empty, a directory, misnamed, broken or truncated, compressed garbage, JSON of no known kind), and a few
of them read from a pipe. A read is shown as a SHA-256 of every column's dtype and values and every fact beside
the table; an error as its class and text (with the temporary folder's name replaced).
"""

from __future__ import annotations

import gzip
import hashlib
import json
import lzma
import os
import re
import sys
import tempfile
import threading
from pathlib import Path

import numpy as np

from perfgate.collect import read_table
from perfgate.errors import PerfgateError
from perfgate.table import Measurement

ROOT = Path(__file__).resolve().parents[2]
SHARED = ROOT.parent / "shared" / "corpus"


def digest(measurement: Measurement, folder: str) -> str:
    hasher = hashlib.sha256()
    table = measurement.table
    for name in table.columns:
        values = np.asarray(table[name])
        hasher.update(f"{name}:{values.dtype}:{len(values)}".encode())
        hasher.update(repr(values.tolist()).encode() if values.dtype == object else values.tobytes())
    for field in measurement._fields[1:]:
        text = f"{field}={getattr(measurement, field)!r}"
        hasher.update((text.replace(folder, "<tmp>") if folder else text).encode())
    return f"{len(table)} rows {hasher.hexdigest()[:16]}"


def outcome(path: str, folder: str, metrics: tuple[str, ...] | None = None) -> str:
    try:
        return digest(read_table(path, metrics), folder)
    except PerfgateError as exc:
        text = str(exc).replace(folder, "<tmp>") if folder else str(exc)
        text = re.sub(r"/tmp/perfgate-\w+", "<spool>", text)  # a pipe's temporary copy, named at random
        return f"{type(exc).__name__}: {text}"


def bad_inputs(folder: Path) -> list[Path]:
    """Files no reader should accept, or that each reader must refuse with its own message."""
    made: dict[str, bytes] = {
        "empty.json": b"",
        "garbage.bin": bytes(range(256)) * 4,
        "text.txt": b"hello, this is not a report\n",
        "misnamed.ncu-rep": b'{"format": "perfgate-baseline"}',
        "json-array.json": b"[1, 2, 3]",
        "json-object.json": b'{"some": "thing"}',
        "json-scalar.json": b"  42",
        "broken.json": b'{"benchmarks": [1, 2',
        "broken-trace.json": b'{"traceEvents": [{"ph": "X", "name": "k"}, ',
        "bare-events.json": b'[{"ph": "X", "name": "k", "ts": 1, "dur": 2, "cat": "kernel"}]',
        "nan.json": b'{"benchmarks": [], "version": NaN}',
        "deep.json": b"[" * 300 + b"]" * 300,
        "baseline-bad.json": b'{"format": "perfgate-baseline", "version": 99}',
        "bench-empty.json": b'{"benchmarks": [], "machine_info": {}}',
        "cupti-bad.json": b'{"format": "perfgate-cupti-trace", "records": [{"kind": 1}]}',
        "not-utf8.json": b'{"a": "\xff\xfe"}',
        "prof-log.log": b"==PROF== Connected to process 1\n==ERROR== The application returned an error\n",
        "csv-header-only.csv": b'"ID","Process ID","Kernel Name"\n',
        "sqlite-garbage.sqlite": b"SQLite format 3\x00" + b"\x00" * 200,
        "ncu-magic.bin": b"NVIDIA Nsight Compute" + b"\x00" * 64,
        "garbage.gz": b"\x1f\x8b" + b"\x00" * 40,
        "garbage.xz": b"\xfd7zXZ\x00" + b"\x01" * 40,
        "empty-inside.gz": gzip.compress(b""),
        "text-inside.txt.gz": gzip.compress(b"nothing perfgate reads\n"),
        "json-inside.json.xz": lzma.compress(b'{"some": "thing"}'),
        "broken-json-inside.json.gz": gzip.compress(b'{"traceEvents": [{"ph": '),
        "baseline-inside.json.gz": gzip.compress(json.dumps({"format": "perfgate-baseline"}).encode()),
        "gz-in-xz.gz.xz": lzma.compress(gzip.compress(b'{"x": 1}')),
    }
    paths = []
    for name, data in made.items():
        path = folder / name
        path.write_bytes(data)
        paths.append(path)
    (folder / "a-directory").mkdir()
    paths.append(folder / "a-directory")
    paths.append(folder / "missing.json")
    return paths


def through_pipe(path: Path, folder: str) -> str:
    """``read_table`` of ``path``'s bytes from an anonymous pipe (``cmd | perfgate ... /dev/stdin``)."""
    data = path.read_bytes() if path.is_file() else b""
    read_end, write_end = os.pipe()

    def write() -> None:
        try:
            with os.fdopen(write_end, "wb") as out:
                out.write(data)
        except BrokenPipeError:  # refused after its first bytes: the rest is never read
            pass

    writer = threading.Thread(target=write)
    writer.start()
    try:
        return outcome(f"/proc/self/fd/{read_end}", folder).replace(f"/proc/self/fd/{read_end}", "<pipe>")
    finally:
        os.close(read_end)
        writer.join()


def main() -> int:
    files = sorted(p for base in (ROOT / "tests" / "data", SHARED) if base.is_dir()
                   for p in base.rglob("*") if p.is_file())
    for path in files:
        print(f"{path.relative_to(ROOT.parent) if SHARED in path.parents else path.relative_to(ROOT)}: "
              f"{outcome(str(path), '')}")
    with tempfile.TemporaryDirectory(prefix="parity-") as folder:
        bad = bad_inputs(Path(folder))
        for path in bad:
            print(f"bad {path.name}: {outcome(str(path), folder)}")
        for path in bad[:20]:
            print(f"pipe {path.name}: {through_pipe(path, folder)}")
        some = [p for p in files if p.name.endswith((".ncu-rep", ".csv", ".json", ".json.gz", ".sqlite"))][::4]
        for path in some:
            print(f"pipe {path.name}: {through_pipe(path, folder)}")
        for path in [p for p in files if p.name.endswith((".ncu-rep", ".csv"))][:6]:
            print(f"metrics {path.name}: {outcome(str(path), folder, ('gpu__time_duration.sum',))}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
