"""Traces with values no profiler writes (a fork's artifact can hold anything): one clear InputError each, never an
int() or int64 overflow behind the CLI's last-resort line."""

from __future__ import annotations

import gzip
import json
import sqlite3
from collections.abc import Callable
from typing import Any
from pathlib import Path

import pytest
from helpers.common import run_cli
from helpers.timeline import OURS, corpus_trace

from perfgate.collect import read_table
from perfgate.errors import InputError


@pytest.mark.parametrize("column, value", [("streamId", "'text'"), ("gridX", "X'FF00'"), ("start", "9e999"),
                                           ("correlationId", "'<script>'")])
def test_an_nsys_number_column_holding_something_else_is_a_broken_export(column: str, value: str,
                                                                          tmp_path: Path) -> None:
    """SQLite keeps any type in any column."""
    export = tmp_path / "edited.sqlite"
    export.write_bytes(corpus_trace("nvfuser-h200/report2_ce15be9.sqlite").read_bytes())
    with sqlite3.connect(export) as connection:
        connection.execute(f"UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET {column} = {value}")
    with pytest.raises(InputError, match=r"a broken Nsight Systems export \(a number column holds something else"):
        read_table(export)


def _kineto(edit: str, value: float) -> dict[str, object]:
    document = json.loads(gzip.decompress((OURS / "vector_add.torch.pt.trace.json.gz").read_bytes()))
    kernel = next(e for e in document["traceEvents"] if str(e.get("cat", "")).lower() == "kernel")
    kernel[edit] = value
    return document


def _cupti(value: int) -> dict[str, object]:
    document = json.loads(gzip.decompress((OURS / "vector_add.cupti.a.cupti.json.gz").read_bytes()))
    next(r for r in document["records"] if r.get("kind") in (3, 10))["end"] = value
    return document


@pytest.mark.parametrize("name, document", [("ts.json", lambda: _kineto("ts", 1e300)),
                                            ("dur.json", lambda: _kineto("dur", 1e300)),
                                            ("end.cupti.json", lambda: _cupti(10**30))])
def test_a_time_past_int64_is_refused_in_one_line(name: str, document: Callable[[], dict[str, object]], tmp_path: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    trace = tmp_path / name
    trace.write_text(json.dumps(document()))
    with pytest.raises(InputError, match="a time stamp out of any clock's range"):
        read_table(trace)
    status, _, err = run_cli(capsys, "baseline", trace, "-d", tmp_path / "baselines")
    assert status == 2 and err.count("\n") == 1 and "time stamp out of any clock's range" in err, err
    assert not (tmp_path / "baselines").exists()


# ---------------------------------------------------------------- issue 33, item 6: garbage that used to pass

CHROME = "amp-lab-t4/fp32.pt.trace.json"
NSYS = "nvfuser-h200/report2_ce15be9.sqlite"


def _chrome_copy(tmp_path: Path, edit: Callable[[dict[str, Any]], None], name: str = "edited.json") -> Path:
    """A real Kineto trace with every event passed through ``edit``."""
    document = json.loads(corpus_trace(CHROME).read_text())
    for event in document["traceEvents"]:
        edit(event)
    target = tmp_path / name
    target.write_text(json.dumps(document))
    return target


def _nsys_copy(tmp_path: Path, *statements: str) -> Path:
    export = tmp_path / "edited.sqlite"
    export.write_bytes(corpus_trace(NSYS).read_bytes())
    with sqlite3.connect(export) as connection:
        for statement in statements:
            connection.execute(statement)
    return export


def _is_kernel(event: dict[str, Any]) -> bool:
    return str(event.get("cat", "")).lower() == "kernel"


def _refused(capsys: pytest.CaptureFixture[str], tmp_path: Path, edited: Path, original: Path, problem: str) -> None:
    """One line, exit 2, on either side of compare and in baseline; no baseline written."""
    for args in (["compare", original, edited], ["compare", edited, original],
                 ["baseline", edited, "-d", tmp_path / "baselines"]):
        status, out, err = run_cli(capsys, *args)
        assert status == 2 and err.count("\n") == 1 and problem in err and str(edited) in err, (args, out, err)
    assert not (tmp_path / "baselines").exists()


def test_every_chrome_time_stamp_at_the_float_limit_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Every ``ts`` 1.7e308: measured from the first, every time was 0 and the trace passed."""
    def edit(event: dict[str, Any]) -> None:
        if "ts" in event:
            event["ts"] = 1.7e308

    _refused(capsys, tmp_path, _chrome_copy(tmp_path, edit), corpus_trace(CHROME), "a time stamp out of any clock's range")


def test_a_chrome_time_that_parses_as_infinity_is_refused(tmp_path: Path) -> None:
    """``1e999`` is valid JSON and parses as inf: the kernel was dropped without a word."""
    edited = _chrome_copy(tmp_path, lambda e: e.update(dur="DUR") if _is_kernel(e) else None)
    edited.write_text(edited.read_text().replace('"DUR"', "1e999", 1))
    with pytest.raises(InputError, match=r"a time stamp out of any clock's range \(inf µs\)"):
        read_table(edited)


def test_a_chrome_kernel_of_negative_duration_is_refused(tmp_path: Path) -> None:
    """It was dropped without a word, and the trace compared without it."""
    kernels = iter(range(1))
    edited = _chrome_copy(tmp_path, lambda e: e.update(dur=-5) if _is_kernel(e) and next(kernels, None) == 0 else None)
    with pytest.raises(InputError, match="a GPU op ends before it starts"):
        read_table(edited)


def test_nsys_kernels_that_end_before_they_start_are_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """They made "19 improvements" and a pass."""
    edited = _nsys_copy(tmp_path, "UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET end = start - (end - start)")
    _refused(capsys, tmp_path, edited, corpus_trace(NSYS), "19 GPU ops end before they start")


def test_an_nsys_range_that_ends_before_it_starts_is_refused(tmp_path: Path) -> None:
    edited = _nsys_copy(tmp_path, "UPDATE NVTX_EVENTS SET end = start - 1 WHERE rowid = (SELECT min(rowid) FROM NVTX_EVENTS)")
    with pytest.raises(InputError, match="a host range ends before it starts"):
        read_table(edited)


@pytest.mark.parametrize("format_", ["nsys", "chrome"])
def test_kernels_that_all_last_zero_are_refused(format_: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Nothing to compare: every kernel passed."""
    if format_ == "nsys":
        edited, original = _nsys_copy(tmp_path, "UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET end = start"), corpus_trace(NSYS)
    else:
        edited = _chrome_copy(tmp_path, lambda e: e.update(dur=0) if _is_kernel(e) else None)
        original = corpus_trace(CHROME)
    _refused(capsys, tmp_path, edited, original, "every kernel lasts 0 ns")


def test_one_kernel_of_zero_duration_is_read(tmp_path: Path) -> None:
    """A single 0 ns kernel is a coarse clock's rounding, not garbage."""
    edited = _nsys_copy(tmp_path, "UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET end = start "
                                  "WHERE rowid = (SELECT min(rowid) FROM CUPTI_ACTIVITY_KIND_KERNEL)")
    assert len(read_table(edited).table)


def test_a_cupti_kernel_that_ends_before_it_starts_is_refused(tmp_path: Path) -> None:
    """perfgate's own trace dropped it without a word."""
    document = json.loads(gzip.decompress((OURS / "vector_add.cupti.a.cupti.json.gz").read_bytes()))
    kernel = next(r for r in document["records"] if r.get("kind") in (3, 10))
    kernel["end"] = kernel["start"] - 10
    trace = tmp_path / "backwards.cupti.json"
    trace.write_text(json.dumps(document))
    with pytest.raises(InputError, match="a GPU op ends before it starts"):
        read_table(trace)


@pytest.mark.parametrize("column, value", [("start", -(2**63)), ("end", 2**62), ("correlationId", "'x'")])
def test_an_nsys_launch_call_out_of_range_is_refused_from_its_columns(column: str, value: object,
                                                                     tmp_path: Path) -> None:
    """Launch calls are held as int64 columns: the smallest int64 (whose absolute value is itself) is out of range
    too, and text where a number belongs is a broken export, as in the kernels' table."""
    export = tmp_path / "edited.sqlite"
    export.write_bytes(corpus_trace("nvfuser-h200/report2_ce15be9.sqlite").read_bytes())
    with sqlite3.connect(export) as connection:
        connection.execute(f"UPDATE CUPTI_ACTIVITY_KIND_RUNTIME SET {column} = {value} WHERE rowid = 3")
    connection.close()
    message = "a number column holds something else" if column == "correlationId" else "out of any clock's range"
    with pytest.raises(InputError, match=message):
        read_table(export)
