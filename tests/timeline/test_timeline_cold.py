"""CUDA's lazy module loading: the host time of each kernel's first launch call in the process is left out of its
region's wall time and GPU idle, and nothing else is (``docs/timeline.md``, "Lazy module loading").

Real records: the softmax traced on an H200 by the capture script (``tests/data/h200/timeline``, one kernel per
entry of the ``softmax`` region), cut to one region entry as the live source records a test that enters its
region once; the current run either starts its GPU work 1 ms later (a host stall: judged wherever it is) or
spends 1 ms more inside the first launch call (module loading: left out).
"""

from __future__ import annotations

import copy
import gzip
import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from helpers.common import run_cli
from helpers.timeline import corpus_trace
from perfgate.collect import read_table
from perfgate.compare import compare_tables
from perfgate.table import Measurement

TRACE = Path(__file__).resolve().parents[1] / "data" / "h200" / "timeline" / "softmax.cupti.a.cupti.json.gz"
LOADING = "timeline_module_loading"
CALLS = (4, 5)  # CUPTI_ACTIVITY_KIND_DRIVER, _RUNTIME
KERNEL, MEMCPY, MEMSET = 10, 1, 2


def _document() -> dict[str, Any]:
    document: dict[str, Any] = json.loads(gzip.decompress(TRACE.read_bytes()))
    return document


def _read(document: dict[str, Any], path: Path) -> Measurement:
    path.write_text(json.dumps(document), encoding="utf-8")
    return read_table(path)


def _one_entry(index: int) -> dict[str, Any]:
    document = _document()
    document["regions"] = [document["regions"][index]]
    return document


def _later(document: dict[str, Any], nanoseconds: int) -> dict[str, Any]:
    """The GPU work from the region's start on, ``nanoseconds`` later: its wall time longer, its kernels not."""
    moved = copy.deepcopy(document)
    begin = moved["regions"][0]["start"]
    for record in moved["records"]:
        if record["kind"] in (KERNEL, MEMCPY, MEMSET) and record["start"] >= begin:
            record["start"] += nanoseconds
            record["end"] += nanoseconds
    return moved


def _softmax_entries(tmp_path: Path) -> dict[int, Measurement]:
    """The single-entry traces whose region launched the softmax kernel, by entry index."""
    found = {}
    for index in range(len(_document()["regions"])):
        measured = _read(_one_entry(index), tmp_path / f"entry{index}.cupti.json")
        if (measured.table.equals("kind", "kernel") & measured.table.equals("region", "softmax")).any():
            found[index] = measured
    return found


def _longer_first_call(document: dict[str, Any], nanoseconds: int) -> dict[str, Any]:
    """The region's first launch call ``nanoseconds`` longer (lazy loading took longer), everything after it later."""
    moved = copy.deepcopy(document)
    begin = moved["regions"][0]["start"]
    kernel = min((r for r in moved["records"] if r["kind"] == KERNEL and r["start"] >= begin), key=lambda r: r["start"])
    call = next(r for r in moved["records"] if r["kind"] in CALLS and r.get("correlation_id") == kernel["correlation_id"])
    for record in moved["records"]:
        if record is call:
            record["end"] += nanoseconds
        elif record["start"] > call["start"]:
            record["start"] += nanoseconds
            record["end"] += nanoseconds
    moved["regions"][0]["end"] += nanoseconds
    return moved


def test_only_the_entry_holding_the_first_launch_spent_time_loading(tmp_path: Path) -> None:
    assert LOADING not in _read(_document(), tmp_path / "all.cupti.json").settings  # 1 cold entry of 10: the median
    entries = _softmax_entries(tmp_path)
    first, *later = sorted(entries)
    assert len(entries) == 10 and list(json.loads(entries[first].settings[LOADING])) == ["softmax"]
    assert [index for index in later if LOADING in entries[index].settings] == []


def _rows(comparison: Any, metric: str) -> list[tuple[str, str]]:
    results, launches = comparison.results, comparison.launches
    at = comparison.result_launch
    return [(str(launches["kind"][at[i]]), str(results["status"][i])) for i in range(len(results))
            if results["metric"][i] == metric]


@pytest.mark.parametrize("cold", [True, False])
def test_a_host_stall_fails_in_a_cold_entry_too(tmp_path: Path, cold: bool) -> None:
    entries = _softmax_entries(tmp_path)
    index = next(i for i, m in entries.items() if (LOADING in m.settings) == cold)
    baseline = _read(_one_entry(index), tmp_path / "baseline.cupti.json")
    current = _read(_later(_one_entry(index), 1_000_000), tmp_path / "current.cupti.json")
    comparison = compare_tables(baseline, current)
    assert _rows(comparison, "timeline.wall_time") == [("region", "regression")]
    assert {status for _, status in _rows(comparison, "timeline.kernel_duration")} == {"unchanged"}


def test_longer_module_loading_in_the_first_launch_call_is_not_judged(tmp_path: Path) -> None:
    entries = _softmax_entries(tmp_path)
    index = next(i for i, m in entries.items() if LOADING in m.settings)
    baseline = _read(_one_entry(index), tmp_path / "baseline.cupti.json")
    current = _read(_longer_first_call(_one_entry(index), 1_000_000), tmp_path / "current.cupti.json")
    comparison = compare_tables(baseline, current)
    assert {status for _, status in _rows(comparison, "timeline.wall_time")} == {"unchanged"}
    assert not comparison.regressed
    said = [n for n in comparison.notes if "lazy module loading" in n]
    assert len(said) == 1 and said[0].startswith("region `softmax`: 49.8 µs → 1.05 ms of kernels' first launch calls")


def _delayed(source: Path, folder: Path) -> Path:
    """The export as if nsys had started capturing 5 s after the process (``nsys profile --delay=5``)."""
    copy_of = folder / source.name
    copy_of.write_bytes(source.read_bytes())
    with sqlite3.connect(copy_of) as connection:
        connection.execute("UPDATE META_DATA_CAPTURE SET value = '5000' WHERE name = 'START_DELAY_MS'")
    return copy_of


@pytest.mark.parametrize("from_start", [True, False])
def test_an_nsys_export_from_the_process_start_leaves_module_loading_out(capsys: pytest.CaptureFixture[str],
                                                                          tmp_path: Path, from_start: bool) -> None:
    """nvFuser's H200 optimisation series (../shared/corpus/timeline, README): each kernel launched once, nsys
    capturing from the start. The allocation region's launch call paid lazy loading (3.4 ms of its 3.39 ms wall
    time, GPU idle 99.9%) and moved +9.6% between the commits while the kernels did not: left out, the series
    passes. The same exports captured after a delay may have warmed up before it: all judged, they fail."""
    base, cur = (corpus_trace(f"nvfuser-h200/{name}.sqlite") for name in ("report1_64ee035", "report3_f6ab0c3"))
    if not from_start:
        (tmp_path / "a").mkdir(), (tmp_path / "b").mkdir()
        base, cur = _delayed(base, tmp_path / "a"), _delayed(cur, tmp_path / "b")
    regions = json.loads(read_table(base).settings.get(LOADING, "{}"))
    assert ("KernelExecutor::runFusion > fusion_executor::allocations::allocateOutputs" in regions) == from_start
    status, out, _ = run_cli(capsys, "compare", base, cur)
    assert status == (0 if from_start else 1)
    assert ("lazy module loading" in out) == from_start


def _stalled(source: Path, folder: Path, at: int, nanoseconds: int) -> Path:
    """The export with the host stalled ``nanoseconds`` at ``at``: everything from then on later, the ranges open
    then longer."""
    copy_of = folder / source.name
    copy_of.write_bytes(source.read_bytes())
    with sqlite3.connect(copy_of) as connection:
        for table in ("NVTX_EVENTS", "CUPTI_ACTIVITY_KIND_RUNTIME", "CUPTI_ACTIVITY_KIND_KERNEL",
                      "CUPTI_ACTIVITY_KIND_MEMSET", "CUPTI_ACTIVITY_KIND_MEMCPY"):
            connection.execute(f"UPDATE {table} SET start = start + ?, end = end + ? WHERE start >= ?",  # noqa: S608
                               (nanoseconds, nanoseconds, at))
        connection.execute("UPDATE NVTX_EVENTS SET end = end + ? WHERE start < ? AND end > ?", (nanoseconds, at, at))
    return copy_of


def test_a_host_stall_in_a_capture_from_the_process_start_fails(capsys: pytest.CaptureFixture[str],
                                                                tmp_path: Path) -> None:
    """A 139 ms stall in nvFuser's runFusion before it allocates (outside any launch call): not module loading."""
    base = corpus_trace("nvfuser-h200/report1_64ee035.sqlite")
    with sqlite3.connect(f"{base.resolve().as_uri()}?mode=ro", uri=True) as connection:
        (at,) = connection.execute("SELECT min(start) FROM NVTX_EVENTS WHERE text = "
                                   "'fusion_executor::allocations::allocateOutputs'").fetchone()
    (tmp_path / "s").mkdir()
    cur = _stalled(base, tmp_path / "s", at, 139_000_000)
    status, out, _ = run_cli(capsys, "compare", base, cur)
    assert status == 1 and "REGRESSION  KernelExecutor::runFusion\n" in out
