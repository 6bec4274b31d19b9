"""CUDA's lazy module loading: a region that holds a kernel's first launch in the process is shown, not judged,
on its host-side times (``docs/timeline.md``, "Lazy module loading").

Real records: the softmax traced on an H200 by the capture script (``tests/data/h200/timeline``, one kernel per
entry of the ``softmax`` region), cut to one region entry as the live source records a test that enters its
region once; the current run's kernels are moved 1 ms later (the region's wall time +1 ms, kernels unchanged).
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
COLD = "timeline_cold_regions"
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


def test_only_the_entry_holding_the_first_launch_is_cold(tmp_path: Path) -> None:
    assert COLD not in _read(_document(), tmp_path / "all.cupti.json").settings  # 1 cold entry of 10: the median
    entries = _softmax_entries(tmp_path)
    first, *later = sorted(entries)
    assert len(entries) == 10 and json.loads(entries[first].settings[COLD]) == ["softmax"]
    assert [index for index in later if COLD in entries[index].settings] == []


def _rows(comparison: Any, metric: str) -> list[tuple[str, str]]:
    results, launches = comparison.results, comparison.launches
    at = comparison.result_launch
    return [(str(launches["kind"][at[i]]), str(results["status"][i])) for i in range(len(results))
            if results["metric"][i] == metric]


@pytest.mark.parametrize("cold", [True, False])
def test_a_cold_regions_wall_time_is_shown_not_judged(tmp_path: Path, cold: bool) -> None:
    entries = _softmax_entries(tmp_path)
    index = next(i for i, m in entries.items() if (COLD in m.settings) == cold)
    baseline = _read(_one_entry(index), tmp_path / "baseline.cupti.json")
    current = _read(_later(_one_entry(index), 1_000_000), tmp_path / "current.cupti.json")
    comparison = compare_tables(baseline, current)
    wall = _rows(comparison, "timeline.wall_time")
    assert wall == [("region", "info" if cold else "regression")]
    assert {status for _, status in _rows(comparison, "timeline.kernel_duration")} == {"unchanged"}
    said = [n for n in comparison.notes if "lazy module loading" in n]
    assert said == ([
        "region `softmax`: wall time and GPU idle not judged: the region holds a kernel's first launch in the "
        "process, whose launch call paid CUDA's lazy module loading (warm the kernel up before the region, or set "
        "CUDA_MODULE_LOADING=EAGER)"] if cold else [])


def _delayed(source: Path, folder: Path) -> Path:
    """The export as if nsys had started capturing 5 s after the process (``nsys profile --delay=5``)."""
    copy_of = folder / source.name
    copy_of.write_bytes(source.read_bytes())
    with sqlite3.connect(copy_of) as connection:
        connection.execute("UPDATE META_DATA_CAPTURE SET value = '5000' WHERE name = 'START_DELAY_MS'")
    return copy_of


@pytest.mark.parametrize("from_start", [True, False])
def test_an_nsys_export_from_the_process_start_marks_its_cold_regions(capsys: pytest.CaptureFixture[str],
                                                                      tmp_path: Path, from_start: bool) -> None:
    """nvFuser's H200 optimisation series (../shared/corpus/timeline, README): each kernel launched once, nsys
    capturing from the start. The allocation region's launch call paid lazy loading (3.4 ms of its 3.39 ms wall
    time, GPU idle 99.9%) and moved +9.6% between the commits while the kernels did not: shown, not judged.
    The same exports captured after a delay may have warmed up before it: judged, they fail."""
    base, cur = (corpus_trace(f"nvfuser-h200/{name}.sqlite") for name in ("report1_64ee035", "report3_f6ab0c3"))
    if not from_start:
        (tmp_path / "a").mkdir(), (tmp_path / "b").mkdir()
        base, cur = _delayed(base, tmp_path / "a"), _delayed(cur, tmp_path / "b")
    regions = json.loads(read_table(base).settings.get(COLD, "[]"))
    assert ("KernelExecutor::runFusion > fusion_executor::allocations::allocateOutputs" in regions) == from_start
    status, out, _ = run_cli(capsys, "compare", base, cur)
    assert status == (0 if from_start else 1)
    assert ("whose launch call paid CUDA's lazy module loading" in out) == from_start
