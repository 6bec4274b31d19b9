"""Issue 14, class 8: a corpus of bad inputs, generated here from the project's own fixtures (and the shared
corpus when present), run through ``compare`` (on both sides) and ``baseline`` on every CI run.

For every input and every run: no traceback (nothing escapes ``main``, and its last-resort "please report
it" line never shows), exit 0, 1 or 2 with exactly one line on stderr for 2 and none otherwise, no hang
(each run is stopped after ``HANG_SECONDS``), no leftover file (perfgate's temporary folder is empty after
every run, and no ``*.tmp`` in the baselines folder), and no silent pass: a ``compare`` that exits 0
although the gated data it read differs from the untouched input must show it (a launch missing, new or
without data, or a note). A gated value on one side only (the ``blocked`` cases, once silent passes) must end
as "not measured": ``test_no_silent_pass_once_compare_flags_one_sided_values``. ``test_corpus_size`` keeps the corpus at 150 inputs or more.
"""

from __future__ import annotations

import csv
import gzip
import io
import json
import lzma
import math
import os
import signal
import struct
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from helpers.common import NCU_REP, REPO

from perfgate.cli import main
from perfgate.collect import read_table
from perfgate.limits import MAX_NAME_CHARS
from perfgate.compare import CompareOptions

H100 = REPO / "tests" / "data" / "h100"
NCU_CSV = REPO / "tests" / "data" / "ncu-csv"
HANG_SECONDS = 60.0
DURATION = "gpu__time_duration.sum"
WANTED = CompareOptions().wanted_metrics()
GATED = ("gpu__time_duration.sum", "dram__bytes_read.sum", "dram__bytes_write.sum", "smsp__inst_executed.sum",
         "time.min")

Build = Callable[[bytes], bytes]


def noise(count: int) -> bytes:
    """Random-looking bytes, the same on every run (a failure can be reproduced)."""
    import random

    return random.Random(count).randbytes(count)


@dataclass(frozen=True)
class Case:
    id: str
    source: str  # key of SOURCES: the untouched input, the other side of each compare
    build: Build | None = None  # the bad bytes from the source's; None: ``special`` makes the path
    special: Callable[[Path], Path] | None = None
    suffix: str = ""  # of the bad file's name (the default: the source's)
    env: tuple[tuple[str, str], ...] = ()
    blocked: bool = False  # a silent pass until the compare stage flags one-sided gated values


# ---------------------------------------------------------------- the untouched inputs

BENCH: dict[str, Any] = {
    "machine_info": {"cpu": {"brand_raw": "Test CPU"}, "processor": "x86_64"}, "version": "5.1.0",
    "benchmarks": [{"name": name, "fullname": f"t.py::{name}", "group": None, "params": None,
                    "stats": {"min": base, "max": base * 1.5, "mean": base * 1.1, "stddev": base * 0.05,
                              "median": base * 1.05, "iqr": base * 0.04, "q1": base * 1.02, "q3": base * 1.08,
                              "rounds": 40, "ops": 1 / base, "data": [base * (1 + i / 100) for i in range(40)]}}
                   for name, base in (("test_parse", 0.0012), ("test_render", 0.0034))],
}


def _baseline_bytes() -> bytes:
    from perfgate.baseline import baseline_documents, dumps_baseline

    table = read_table(H100 / "vector_add.ncu-rep", WANTED)
    [document] = baseline_documents(table, WANTED, source="vector_add.ncu-rep").values()
    return dumps_baseline(document).encode()


SOURCES: dict[str, Callable[[], bytes]] = {
    "rep": lambda: (H100 / "vector_add.ncu-rep").read_bytes(),
    "rep-nested": lambda: (H100 / "nested-regions.ncu-rep").read_bytes(),
    "details": lambda: (H100 / "vector_add.rerun.details-base.csv").read_bytes(),
    "details-scaled": lambda: (H100 / "vector_add.rerun.details.csv").read_bytes(),
    "raw": lambda: (H100 / "vector_add.rerun.raw-base.csv").read_bytes(),
    "mlp-raw": lambda: (H100 / "mlp.rerun.raw-base.csv").read_bytes(),
    "mlp-details": lambda: (H100 / "mlp.rerun.details-base.csv").read_bytes(),
    "stdout": lambda: (H100 / "vector_add.stdout-raw.log").read_bytes(),
    "labels": lambda: (NCU_CSV / "details_default_labels.csv").read_bytes(),
    "bench": lambda: json.dumps(BENCH, indent=1).encode(),
    "baseline": _baseline_bytes,
}
SUFFIX = {"rep": ".ncu-rep", "rep-nested": ".ncu-rep", "stdout": ".log", "bench": ".json", "baseline": ".json"}
CORPUS_SOURCES = {"t4": "mlp-t4/report_v3_loop_unroll.ncu-rep", "a10g": "esmm-a10g/b644635.ncu-rep"}
for _key, _relative in CORPUS_SOURCES.items():
    if (NCU_REP / _relative).is_file():
        SOURCES[_key] = (lambda p: lambda: p.read_bytes())(NCU_REP / _relative)
        SUFFIX[_key] = ".ncu-rep"


# ---------------------------------------------------------------- mutations

def cut_at(fraction: float) -> Build:
    """Keep the first part; a cut that would fall on a line end moves one byte on (mid-line, like a real cut)."""
    def build(data: bytes) -> bytes:
        at = int(len(data) * fraction)
        if 0 < at < len(data) and data[at - 1:at] == b"\n":
            at += 1
        return data[:at]
    return build


def cut_bytes(count: int) -> Build:
    return lambda data: data[:count]


def header_then(tail: bytes) -> Build:
    def build(data: bytes) -> bytes:
        return data[: 14 + struct.unpack_from("<I", data, 10)[0]] + tail
    return build


def patch_u32(offset: int, value: int) -> Build:
    def build(data: bytes) -> bytes:
        out = bytearray(data)
        struct.pack_into("<I", out, offset, value)
        return bytes(out)
    return build


def first_block_key(value: int) -> Build:
    def build(data: bytes) -> bytes:
        out = bytearray(data)
        out[14 + struct.unpack_from("<I", data, 10)[0] + 4] = value
        return bytes(out)
    return build


def first_block_length(value: int) -> Build:
    def build(data: bytes) -> bytes:
        out = bytearray(data)
        struct.pack_into("<I", out, 14 + struct.unpack_from("<I", data, 10)[0], value)
        return bytes(out)
    return build


def csv_rows(data: bytes) -> tuple[bytes, list[list[str]]]:
    """(whatever precedes the table, the table's rows) of an ncu CSV file."""
    at = data.find(b'"ID",')
    return data[:at], list(csv.reader(io.StringIO(data[at:].decode("utf-8"))))


def csv_bytes(prefix: bytes, rows: list[list[str]]) -> bytes:
    out = io.StringIO()
    csv.writer(out, quoting=csv.QUOTE_ALL, lineterminator="\n").writerows(rows)
    return prefix + out.getvalue().encode()


def gated_cell(value: str) -> Build:
    """The first launch's duration cell, on either page."""
    def build(data: bytes) -> bytes:
        prefix, rows = csv_rows(data)
        header = rows[0]
        if "Metric Name" in header:
            name, cell = header.index("Metric Name"), header.index("Metric Value")
            row = next(r for r in rows[1:] if r[name] == DURATION)
        else:
            row, cell = rows[2], header.index(DURATION)
        row[cell] = value
        return csv_bytes(prefix, rows)
    return build


def drop_column(column: str) -> Build:
    def build(data: bytes) -> bytes:
        prefix, rows = csv_rows(data)
        at = rows[0].index(column)
        return csv_bytes(prefix, [r[:at] + r[at + 1:] for r in rows])
    return build


def edit_rows(change: Callable[[list[list[str]]], list[list[str]]]) -> Build:
    def build(data: bytes) -> bytes:
        prefix, rows = csv_rows(data)
        return csv_bytes(prefix, change(rows))
    return build


def rename_kernel(name: str) -> Build:
    def change(rows: list[list[str]]) -> list[list[str]]:
        at = rows[0].index("Kernel Name")
        for row in rows[1:]:
            if len(row) > at and row[at] == "vector_add":
                row[at] = name
        return rows
    return edit_rows(change)


def text(replace: Callable[[str], str]) -> Build:
    return lambda data: replace(data.decode("utf-8")).encode("utf-8")


def json_edit(change: Callable[[Any], Any]) -> Build:
    def build(data: bytes) -> bytes:
        document = json.loads(data)
        result = change(document)
        return json.dumps(document if result is None else result).encode().replace(b'"__1e400__"', b"1e400")
    return build


def stat(name: str, value: object) -> Build:
    return json_edit(lambda d: d["benchmarks"][0]["stats"].update({name: value}))


def entry(change: Callable[[dict[str, Any]], Any]) -> Build:
    return json_edit(lambda d: change(d["entries"][0]))


def metric_value(value: object, metric: str = DURATION) -> Build:
    return entry(lambda e: e["metrics"][metric].update(value=value))


def deep(levels: int) -> Build:
    return lambda data: b'{"format": "perfgate-baseline", "entries": ' + b"[" * levels + b"1" + b"]" * levels + b"}"


def fifo(path: Path) -> Path:
    os.mkfifo(path)
    return path


def symlink_to(target: str) -> Callable[[Path], Path]:
    def make(path: Path) -> Path:
        path.symlink_to(target)
        return path
    return make


def loop(path: Path) -> Path:
    path.symlink_to(path)
    return path


def directory(path: Path) -> Path:
    path.mkdir()
    return path


# ---------------------------------------------------------------- the corpus

def _cases() -> list[Case]:
    cases: list[Case] = []
    # Truncations of every input: nothing, a few bytes, inside the header, at a quarter, half, three quarters,
    # and without its last byte (a .ncu-rep must then be refused; a text file loses only its line end).
    for source in SOURCES:
        for label, build in (("empty", cut_bytes(0)), ("1-byte", cut_bytes(1)), ("7-bytes", cut_bytes(7)),
                             ("14-bytes", cut_bytes(14)), ("100-bytes", cut_bytes(100)), ("quarter", cut_at(0.25)),
                             ("half", cut_at(0.5)), ("three-quarters", cut_at(0.75)),
                             ("last-byte", lambda d: d[:-1])):
            cases.append(Case(f"cut-{label}-{source}", source, build))
    # The .ncu-rep framing: a valid header and junk, impossible lengths, other versions, blocks that are no record.
    for source in [s for s in SOURCES if SUFFIX.get(s) == ".ncu-rep"][:3]:
        for label, build in (
                ("header-then-zeros", header_then(bytes(1 << 20))),
                ("header-then-key-and-zeros", header_then(b"\x08" + bytes(1 << 16))),
                ("header-then-random", header_then(noise(4096))),
                ("header-length-zero", patch_u32(10, 0)),
                ("header-length-huge", patch_u32(10, 0xFFFFFFF0)),
                ("version-0", patch_u32(4, 0)),
                ("block-key-zero", first_block_key(0)),
                ("block-length-zero", first_block_length(0)),
                ("block-length-huge", first_block_length(0x7FFFFFFF)),
                ("appended-garbage", lambda d: d + b"trailing garbage"),
                ("magic-only", lambda d: d[:4]),
                ("random-after-magic", lambda d: d[:4] + noise(len(d) - 4))):
            cases.append(Case(f"framing-{label}-{source}", source, build))
    cases += [
        Case("version-3-then-zeros-rep", "rep", lambda d: b"NVR\x00" + struct.pack("<IHI", 3, 1800, 0) + bytes(4096)),
        Case("random-bytes-named-ncu-rep", "rep", lambda d: noise(len(d))),
        Case("text-named-ncu-rep", "rep", lambda d: b"this is not a report\n"),
    ]
    # Compressed inputs: fine ones, broken ones, a bomb (with the size limit lowered).
    cases += [
        Case("xz-of-report", "rep", lzma.compress, suffix=".ncu-rep.xz"),
        Case("gz-of-csv", "details", gzip.compress, suffix=".csv.gz"),
        Case("gz-in-xz", "raw", lambda d: lzma.compress(gzip.compress(d)), suffix=".csv.gz.xz"),
        Case("xz-cut", "rep", lambda d: lzma.compress(d)[:2000], suffix=".ncu-rep.xz"),
        Case("gz-cut", "details", lambda d: gzip.compress(d)[:500], suffix=".csv.gz"),
        Case("gz-of-garbage", "raw", lambda d: gzip.compress(noise(5000)), suffix=".gz"),
        Case("gz-header-only", "raw", lambda d: b"\x1f\x8b\x08\x00", suffix=".gz"),
        # A sound gzip header before a deflate stream that is not one (zlib.error, not OSError).
        Case("gz-bad-deflate", "raw", lambda d: (lambda g: g[:10] + b"\xff" * 8 + g[18:])(gzip.compress(d)),
             suffix=".csv.gz"),
        Case("xz-bomb", "details", lambda d: lzma.compress(d[:d.find(b"\n") + 1] + bytes(30_000_000)), suffix=".xz",
             env=(("PERFGATE_MAX_INPUT_BYTES", "5000000"),)),
    ]
    # A gated cell that is no measurement, on both pages: kept as "no value"; compare must not pass on it.
    for page in ("details", "raw"):
        for label, cell in (("n/a", "n/a"), ("nan", "nan"), ("inf", "inf"), ("-inf", "-inf"), ("1e400", "1e400"),
                            ("text", "fast"), ("hex", "0x1F"), ("negative", "-79392"), ("zero", "0")):
            cases.append(Case(f"cell-{label}-{page}", page, gated_cell(cell), blocked=True))
    # A gated metric absent from one side: compare notes it ("only in ...: not compared"), so it is not silent
    # (that it still passes is for the compare stage: test_issue14_other_branches.py).
    cases += [
        Case("cell-empty-details", "details", gated_cell("")),
        Case("drop-duration-column-raw", "raw", drop_column(DURATION)),
        Case("lost-last-row-details", "details", lambda d: d[: d.rstrip(b"\n").rfind(b"\n") + 1]),
    ]
    # CSV structure.
    for column in ("ID", "Kernel Name", "Metric Name", "Metric Value", "Metric Unit", "Section Name", "Device", "CC"):
        cases.append(Case(f"drop-column-{column.replace(' ', '-')}-details", "details", drop_column(column)))
    for column in ("ID", "Kernel Name", "device__attribute_display_name"):
        cases.append(Case(f"drop-column-{column.replace(' ', '-')}-raw", "raw", drop_column(column)))
    cases += [
        Case("header-only-details", "details", lambda d: d[: d.find(b"\n") + 1]),
        Case("units-row-only-raw", "raw", lambda d: b"\n".join(d.split(b"\n")[:2]) + b"\n"),
        Case("repeated-column-details", "details", edit_rows(lambda rows: [r + r[-1:] for r in rows])),
        Case("ragged-row-details", "details", edit_rows(lambda rows: rows[:3] + [rows[3] + ["x", "y"]] + rows[4:])),
        Case("bom", "details", lambda d: b"\xef\xbb\xbf" + d),
        Case("utf16", "details", lambda d: d.decode().encode("utf-16")),
        Case("crlf", "raw", lambda d: d.replace(b"\n", b"\r\n")),
        Case("nul-inside", "details", lambda d: d[:3000] + b"\x00\x00" + d[3000:]),
        Case("error-line-inside", "details", lambda d: d[:d.find(b"\n") + 1] + b"==ERROR== The application returned "
                                                       b"an error code (1).\n" + d[d.find(b"\n") + 1:]),
        Case("unbalanced-quote", "raw", lambda d: d.replace(b'"vector_add"', b'"vector_add', 1)),
        Case("kernel-name-too-long", "details", rename_kernel("k" * (MAX_NAME_CHARS + 1))),
        Case("kernel-name-with-escapes", "details", rename_kernel("vector_add\x1b[2J\rPASS\nforged")),
        Case("latin1-bytes", "details", lambda d: d.replace(b"vector_add", b"vector_add\xe9\xff")),
        Case("only-prof-lines", "stdout", lambda d: b"\n".join(l for l in d.split(b"\n") if l.startswith(b"=="))),
        Case("text-report", "details", lambda d: (NCU_CSV / "text_report.log").read_bytes()),
        Case("counter-permission-error", "details", lambda d: (NCU_CSV / "err_nvgpuctrperm.log").read_bytes()),
        Case("binary-junk", "details", lambda d: noise(20_000), suffix=".csv"),
        Case("whitespace-only", "details", lambda d: b"   \n\n\t\n"),
    ]
    # pytest-benchmark JSON.
    bench = [
        ("deep-10000", deep(10_000)), ("deep-65", deep(65)),
        ("nan-literal", lambda d: d.replace(b'"rounds": 40', b'"rounds": NaN', 1)),
        ("infinity-literal", lambda d: d.replace(b'"rounds": 40', b'"rounds": Infinity', 1)),
        ("machine-info-list", json_edit(lambda d: d.update(machine_info=[1, 2]))),
        ("machine-info-string", json_edit(lambda d: d.update(machine_info="x86"))),
        ("cpu-string", json_edit(lambda d: d["machine_info"].update(cpu="AMD"))),
        ("cpu-brand-number", json_edit(lambda d: d["machine_info"]["cpu"].update(brand_raw=7))),
        ("benchmarks-object", json_edit(lambda d: d.update(benchmarks={"a": 1}))),
        ("benchmark-number", json_edit(lambda d: d.update(benchmarks=[1]))),
        ("stats-list", json_edit(lambda d: d["benchmarks"][0].update(stats=[1, 2]))),
        ("name-list", json_edit(lambda d: d["benchmarks"][0].update(fullname=["a"], name={"b": 1}))),
        ("data-booleans", stat("data", [True] * 40)), ("data-negative", stat("data", [-0.001] * 40)),
        ("data-strings", stat("data", ["0.001"] * 40)), ("data-1e400", stat("data", ["__1e400__"] * 40)),
        ("top-level-list", lambda d: b"[1, 2, 3]"), ("top-level-string", lambda d: b'"benchmarks"'),
        ("not-utf8", lambda d: d.replace(b"Test CPU", b"Test \xff\xfe CPU")),
    ]
    cases += [Case(f"bench-{label}", "bench", build) for label, build in bench]
    # A benchmark's only gated statistic without a usable value: the benchmark shows as "no data", not silent.
    for label, value in (("text", "fast"), ("bool", True), ("1e400", "__1e400__"), ("negative", -0.001), ("zero", 0),
                         ("list", [0.001])):
        cases.append(Case(f"bench-min-{label}", "bench", stat("min", value)))
    # perfgate baselines.
    baseline = [
        ("deep-10000", deep(10_000)), ("no-entries", json_edit(lambda d: d.update(entries=[]))),
        ("version-2", json_edit(lambda d: d.update(version=2))),
        ("format-other", json_edit(lambda d: d.update(format="other"))),
        ("no-device", json_edit(lambda d: d.pop("device"))),
        ("device-name-empty", json_edit(lambda d: d["device"].update(name=""))),
        ("metrics-list", entry(lambda e: e.update(metrics=[1]))),
        ("value-string", metric_value("fast")), ("value-negative", metric_value(-79392)), ("value-zero", metric_value(0)),
        ("value-1e400", metric_value("__1e400__")), ("value-bool", metric_value(True)),
        ("bytes-negative", metric_value(-1, "dram__bytes_read.sum")),
        ("unit-list", entry(lambda e: e["metrics"][DURATION].update(unit=["ns"]))),
        ("samples-booleans", entry(lambda e: e.update(samples=[True, False]))),
        ("settings-nested", json_edit(lambda d: d.update(settings={"a": {"b": [1]}}))),
        ("extra-key", json_edit(lambda d: d.update(extra=1))),
        ("ordinal-negative", entry(lambda e: e.update(ordinal=-1))),
        ("kind-bogus", entry(lambda e: e.update(kind="warp"))),
        ("name-empty", entry(lambda e: e.update(name=""))),
        ("name-too-long", entry(lambda e: e.update(name="k" * (MAX_NAME_CHARS + 1)))),
        ("entries-object", json_edit(lambda d: d.update(entries={}))),
    ]
    cases += [Case(f"baseline-{label}", "baseline", build) for label, build in baseline]
    cases += GARBAGE_OWN
    # Not files: devices, a FIFO nobody writes, a directory, loops; and a file over the size limit.
    cases += [
        Case("dev-zero", "rep", special=symlink_to("/dev/zero")),
        Case("dev-null", "rep", special=symlink_to("/dev/null")),
        Case("dev-urandom", "rep", special=symlink_to("/dev/urandom")),
        Case("fifo-without-writer", "raw", special=fifo, env=(("PERFGATE_FIFO_WAIT", "0.3"),)),
        Case("directory", "rep", special=directory),
        Case("symlink-loop", "rep", special=loop),
        Case("dangling-symlink", "rep", special=symlink_to("/nonexistent/perfgate/report.ncu-rep")),
        Case("over-the-size-limit", "mlp-raw", lambda d: d, env=(("PERFGATE_MAX_INPUT_BYTES", "50000"),)),
    ]
    return cases


def _set_cells(column: str, value: str, rows_from: int = 1, count: int = 1) -> Build:
    """``column``'s cell in ``count`` launch rows from the ``rows_from``-th row of the table (the header is 0)."""
    def change(rows: list[list[str]]) -> list[list[str]]:
        at = rows[0].index(column)
        for row in rows[rows_from:rows_from + count]:
            row[at] = value
        return rows
    return edit_rows(change)


def _ids_all_zero(rows: list[list[str]]) -> list[list[str]]:
    for row in rows[1:]:
        if row and row[0].isdecimal():
            row[0] = "0"
    return rows


# Inputs that once made a baseline (exit 0) or a pass out of garbage (issue 23, class 5): each must be refused, or
# end "not measured", exit 2, by ``compare`` on either side and by ``baseline``.
GARBAGE_OWN = [
    Case("bench-benchmarks-empty", "bench", json_edit(lambda d: d.update(benchmarks=[]))),
    Case("bench-fullname-dict", "bench", json_edit(lambda d: d["benchmarks"][0].update(fullname={"a": 1}))),
    Case("bench-names-empty", "bench", json_edit(lambda d: d["benchmarks"][0].update(fullname="", name=""))),
    Case("mlp-details-ids-all-zero", "mlp-details", edit_rows(_ids_all_zero)),
    Case("mlp-raw-id-not-a-number", "mlp-raw", _set_cells("ID", "abc", rows_from=3)),
    Case("mlp-raw-kernel-name-empty", "mlp-raw", _set_cells("Kernel Name", "", rows_from=3)),
    Case("mlp-details-kernel-name-empty", "mlp-details", _set_cells("Kernel Name", "", count=10_000)),
]
CASES = _cases()
GARBAGE = list(GARBAGE_OWN)
# The corpus's own cases that issue 23 turned from a baseline of garbage into a refusal.
GARBAGE += [case for case in CASES if case.id in ("bench-machine-info-list", "bench-machine-info-string",
                                                   "bench-name-list")]
BLOCKED = [case for case in CASES if case.blocked]


# ---------------------------------------------------------------- running one input

class Hang(BaseException):
    """A run took longer than ``HANG_SECONDS`` (a BaseException: main() must not turn it into an exit status)."""


@dataclass
class Run:
    args: list[str]
    status: int | None = None
    out: str = ""
    err: str = ""
    seconds: float = 0.0
    problems: list[str] = field(default_factory=list)
    report: dict[str, Any] | None = None


def _call(capsys: pytest.CaptureFixture[str], args: list[str]) -> Run:
    run = Run(args)
    alarm = threading.current_thread() is threading.main_thread() and hasattr(signal, "setitimer")

    def stop(signum: int, frame: object) -> None:
        raise Hang()

    previous = signal.signal(signal.SIGALRM, stop) if alarm else None
    if alarm:
        signal.setitimer(signal.ITIMER_REAL, HANG_SECONDS)
    started = time.monotonic()
    try:
        run.status = main(args)
    except Hang:
        run.problems.append(f"hang: still running after {HANG_SECONDS:g} s")
    except SystemExit as exc:  # argparse: a usage error
        run.status = exc.code if isinstance(exc.code, int) else 2
    except BaseException as exc:  # noqa: BLE001 - a traceback is what this test looks for
        run.problems.append(f"traceback: {type(exc).__name__}: {exc}")
    finally:
        if alarm:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, previous)
    run.seconds = time.monotonic() - started
    run.out, run.err = capsys.readouterr()
    if run.seconds > HANG_SECONDS:
        run.problems.append(f"hang: {run.seconds:.0f} s")
    if run.status is not None:
        if run.status not in (0, 1, 2):
            run.problems.append(f"exit status {run.status}")
        if "please report it" in run.err or "Traceback" in run.err:
            run.problems.append(f"traceback (the last-resort line): {run.err.strip()}")
        if run.status == 2 and (run.err.count("\n") != 1 or not run.err.startswith("perfgate: error: ")):
            run.problems.append(f"exit 2 without exactly one error line: {run.err!r}")
        if run.status in (0, 1) and run.err:
            run.problems.append(f"exit {run.status} with stderr: {run.err!r}")
    return run


def _gated_values(path: Path) -> dict[tuple[Any, ...], float | None] | None:
    """The gated values of an input by (kind, kernel, region, ordinal, metric); None when it cannot be read."""
    try:
        table = read_table(path, WANTED).table.to_frame()
    except Exception:  # noqa: BLE001 - the runs report it
        return None
    gated = table[table["metric"].isin(GATED)]
    return {(r.kind, r.kernel, r.region, r.ordinal, r.metric): (None if math.isnan(r.value) else r.value)
            for r in gated.itertuples(index=False)}


def silent_pass(run: Run, good: Path, bad: Path) -> bool:
    """A compare that passed although the gated data differs from the untouched input, with no sign of it."""
    if run.status != 0 or run.report is None:
        return False
    before, after = _gated_values(good), _gated_values(bad)
    if before is None or after is None or before == after:
        return False
    summary = run.report.get("summary", {})
    shown = any(summary.get(status) for status in ("regression", "no data", "missing", "new"))
    return not shown and not run.report.get("notes")


@dataclass
class Outcome:
    runs: list[Run]
    silent: list[str]
    leftovers: list[str]


def run_case(case: Case, folder: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> Outcome:
    import tempfile

    spool = folder / "tmp"
    spool.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(spool))
    for name, value in case.env:
        monkeypatch.setenv(name, value)
    suffix = case.suffix or SUFFIX.get(case.source, ".csv")
    good = folder / f"good{SUFFIX.get(case.source, '.csv')}"
    good.write_bytes(SOURCES[case.source]())
    bad = folder / f"bad{suffix}"
    if case.special is not None:
        case.special(bad)
    else:
        assert case.build is not None
        bad.write_bytes(case.build(good.read_bytes()))
    baselines = folder / "baselines"
    runs: list[Run] = []
    silent: list[str] = []
    leftovers: list[str] = []
    for label, args in (("current", ["compare", good, bad]), ("baseline", ["compare", bad, good]),
                        ("baseline-command", ["baseline", bad, "-d", baselines, "--name", "b"])):
        report = folder / f"report-{label}.json"
        command = [str(a) for a in args] + (["--format", "json", "-o", str(report)] if args[0] == "compare" else [])
        run = _call(capsys, command)
        if report.is_file():
            try:
                run.report = json.loads(report.read_text())
            except ValueError:
                run.problems.append("the JSON report is not JSON")
        runs.append(run)
        if args[0] == "compare" and silent_pass(run, good, bad):
            silent.append(f"{label}: exit 0, the gated data differs from the untouched input, and the report "
                          f"shows nothing ({run.report and run.report.get('summary')})")
        leftovers += [f"{label}: {p.relative_to(folder)}" for p in spool.rglob("*")]
        leftovers += [f"{label}: {p.relative_to(folder)}" for p in baselines.rglob("*.tmp")]
    return Outcome(runs, silent, leftovers)


def _describe(outcome: Outcome) -> str:
    return "\n".join(f"{' '.join(r.args[:1])} ... -> {r.status} in {r.seconds:.2f} s: {r.err.strip()[:300]} "
                     f"{r.problems}" for r in outcome.runs)


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_bad_input(case: Case, tmp_path: Path, capsys: pytest.CaptureFixture[str],
                   monkeypatch: pytest.MonkeyPatch) -> None:
    outcome = run_case(case, tmp_path, capsys, monkeypatch)
    problems = [p for run in outcome.runs for p in run.problems]
    assert not problems, f"{case.id}: {problems}\n{_describe(outcome)}"
    assert not outcome.leftovers, f"{case.id}: left behind {outcome.leftovers}"
    if not case.blocked:
        assert not outcome.silent, f"{case.id}: silent pass: {outcome.silent}\n{_describe(outcome)}"


@pytest.mark.parametrize("case", BLOCKED, ids=[c.id for c in BLOCKED])
def test_no_silent_pass_once_compare_flags_one_sided_values(case: Case, tmp_path: Path,
                                                           capsys: pytest.CaptureFixture[str],
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """Each of these used to pass with the gated value "no data" on one side and no note; compare now reports
    such a value as not measured (exit 2, the reason in the report)."""
    outcome = run_case(case, tmp_path, capsys, monkeypatch)
    assert not outcome.silent, f"{case.id}: silent pass: {outcome.silent}"


@pytest.mark.parametrize("case", GARBAGE, ids=[c.id for c in GARBAGE])
def test_garbage_is_never_a_baseline_nor_a_pass(case: Case, tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    outcome = run_case(case, tmp_path, capsys, monkeypatch)
    assert [run.status for run in outcome.runs] == [2, 2, 2], _describe(outcome)
    assert not list((tmp_path / "baselines").rglob("*.json"))


def test_corpus_size() -> None:
    """At least 150 inputs from the project's own fixtures alone (the shared corpus adds more when present)."""
    own = [case for case in CASES if case.source not in CORPUS_SOURCES]
    assert len(own) >= 150, len(own)
    assert len({case.id for case in CASES}) == len(CASES)
