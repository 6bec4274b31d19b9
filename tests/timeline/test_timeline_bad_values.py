"""Traces with values no profiler writes (a fork's artifact can hold anything): one clear InputError each, never an
int() or int64 overflow behind the CLI's last-resort line."""

from __future__ import annotations

import gzip
import json
import sqlite3
from collections.abc import Callable
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
