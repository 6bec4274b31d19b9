"""Regions of every ../shared/corpus/timeline file against a count made here, apart from perfgate's readers.

The count reads each file directly (``json`` for Chrome traces, SQL for Nsight Systems exports) and applies
the rule docs/timeline.md states, by brute force: a GPU op belongs to the host ranges open on its launch
call's thread at the call's start (both ends included), or, where none is open there, to those open on any
thread; ``ProfilerStep#N`` ranges form the region ``step`` whatever the thread; a range's path is its
enclosing range's path, then its name. Per region path: the median kernel count over the entries that ran
GPU work; a trace without ranges, one region ``whole trace``. Per kernel: its innermost region. perfgate's table must give the same.
"""

from __future__ import annotations

import gzip
import json
import re
import sqlite3
import statistics
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
import pytest

from perfgate.collect import read_table
from helpers.common import run_cli
from helpers.timeline import TIMELINE_CORPUS, corpus_trace

SEPARATOR = " > "
STEP = re.compile(r"^ProfilerStep#\d+$")
FILES = sorted(str(p.relative_to(TIMELINE_CORPUS)) for p in TIMELINE_CORPUS.glob("*/*")
               if p.suffix in (".json", ".gz", ".sqlite")) if TIMELINE_CORPUS.is_dir() else []


class Ranges(NamedTuple):
    names: list[str]
    threads: list[str]
    starts: np.ndarray
    ends: np.ndarray


class Op(NamedTuple):
    kernel: bool
    thread: str | None  # the launch call's thread; None: the trace has no launch call for it
    launched: float


def _chrome(path: Path) -> tuple[Ranges, list[Op]]:
    with (gzip.open(path, "rt", encoding="utf-8") if path.suffix == ".gz" else path.open(encoding="utf-8")) as f:
        document = json.load(f)
    events = [e for e in document["traceEvents"] if e.get("ph") == "X"]
    calls: dict[Any, dict[str, Any]] = {}
    for event in events:
        if str(event.get("cat", "")).lower() in ("cuda_runtime", "runtime", "cuda_driver"):
            calls.setdefault(event["args"].get("correlation"), event)
    ranges = [e for e in events if e.get("cat") == "user_annotation"]
    ops = []
    for event in events:
        category = str(event.get("cat", "")).lower()
        if category in ("kernel", "gpu_memcpy", "gpu_memset", "memcpy", "memset"):
            call = calls.get(event.get("args", {}).get("correlation"))
            ops.append(Op(category == "kernel", None if call is None else f"{call['pid']}/{call['tid']}",
                          call["ts"] if call else 0.0))
    return Ranges([r["name"] for r in ranges], [f"{r['pid']}/{r['tid']}" for r in ranges],
                  np.array([r["ts"] for r in ranges], dtype=float),
                  np.array([r["ts"] + r["dur"] for r in ranges], dtype=float)), ops


def _nsys(path: Path) -> tuple[Ranges, list[Op]]:
    with sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True) as db:
        db.text_factory = lambda raw: raw.decode("utf-8", "replace")
        tables = {row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        rows = db.execute("SELECT coalesce(n.text, s.value, ''), n.globalTid, n.start, n.end FROM NVTX_EVENTS n "
                          "LEFT JOIN StringIds s ON n.textId = s.id WHERE n.end IS NOT NULL").fetchall()
        ops = []
        for table in ("CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_MEMCPY", "CUPTI_ACTIVITY_KIND_MEMSET"):
            if table in tables:
                query = (f"SELECT r.globalTid, r.start FROM {table} o LEFT JOIN CUPTI_ACTIVITY_KIND_RUNTIME r "
                         "ON r.rowid = (SELECT min(rowid) FROM CUPTI_ACTIVITY_KIND_RUNTIME "
                         "WHERE correlationId = o.correlationId)")
                ops += [Op(table.endswith("KERNEL"), None if tid is None else str(tid), start or 0)
                        for tid, start in db.execute(query)]
    return Ranges([r[0] for r in rows], [str(r[1]) for r in rows], np.array([r[2] for r in rows], dtype=float),
                  np.array([r[3] for r in rows], dtype=float)), ops


def _paths(ranges: Ranges, steps: np.ndarray) -> list[str]:
    """Each range's path: the innermost range open on its thread when it opened (the one opened last), then it."""
    order = sorted(range(len(ranges.names)), key=lambda i: (ranges.starts[i], -ranges.ends[i]))
    opened: dict[str, list[int]] = defaultdict(list)  # per thread, the ranges opened so far, oldest first
    paths: dict[int, str] = {}
    for index in order:
        if steps[index]:
            paths[index] = "step"
            continue
        thread = ranges.threads[index]
        opened[thread] = [j for j in opened[thread] if ranges.ends[j] >= ranges.starts[index]]
        parent = paths[opened[thread][-1]] + SEPARATOR if opened[thread] else ""
        paths[index] = parent + ranges.names[index]
        opened[thread].append(index)
    return [paths[i] for i in range(len(ranges.names))]


def independent_regions(path: Path) -> tuple[dict[str, float], Counter[str]]:
    """(median kernel count per region path, kernels per innermost region path ("" for none))."""
    ranges, ops = _nsys(path) if path.suffix == ".sqlite" else _chrome(path)
    steps = np.array([bool(STEP.match(name)) for name in ranges.names], dtype=bool)
    threads = np.array(ranges.threads, dtype=object)
    paths = _paths(ranges, steps)
    gpu_ops: dict[int, int] = defaultdict(int)
    kernels: dict[int, int] = defaultdict(int)
    innermost: Counter[str] = Counter()
    for op in ops:
        held: list[int] = []
        if op.thread is not None:
            open_now = (ranges.starts <= op.launched) & (op.launched <= ranges.ends)
            mine = open_now & ~steps & (threads == op.thread)
            held = list(np.flatnonzero(mine if mine.any() else open_now & ~steps))
            held += list(np.flatnonzero(open_now & steps))
        for index in held:
            gpu_ops[index] += 1
            kernels[index] += op.kernel
        if op.kernel:
            innermost[max((paths[i] for i in held if not steps[i]), key=len, default="")] += 1
    entries: dict[str, list[int]] = defaultdict(list)
    for index in gpu_ops:
        entries[paths[index]].append(kernels[index])
    if not ranges.names and ops:  # no ranges at all: the whole trace is one region
        entries["whole trace"].append(sum(op.kernel for op in ops))
    return {p: float(statistics.median(counts)) for p, counts in entries.items()}, innermost


def test_the_corpus_is_here() -> None:
    if not FILES:
        pytest.skip("../shared/corpus/timeline not available")
    assert len(FILES) == 18


@pytest.mark.parametrize("relative", FILES)
def test_regions_match_an_independent_count(relative: str) -> None:
    expected_regions, expected_kernels = independent_regions(corpus_trace(relative))
    table = read_table(corpus_trace(relative)).table
    regions = table[table.equals("kind", "region") & table.equals("metric", "timeline.kernel_count")]
    assert dict(zip(regions["kernel"].tolist(), regions["value"].tolist())) == expected_regions
    kernels = table[table.equals("kind", "kernel") & table.equals("metric", "timeline.kernel_duration")]
    assert Counter(kernels["region"].tolist()) == expected_kernels


def test_the_independent_count_sees_what_the_readmes_say() -> None:
    """Spot checks of the count itself, by hand from the files: the fp32 T4 run's 3 profiler steps of 29
    kernels and Adam's 7 per step; every llama3 kernel inside an NVTX range, in 1,089 ranges."""
    regions, kernels = independent_regions(corpus_trace("amp-lab-t4/fp32.pt.trace.json"))
    assert regions == {"step": 29, "Optimizer.step#Adam.step": 7}
    assert kernels == Counter({"": 74, "Optimizer.step#Adam.step": 21})
    regions, kernels = independent_regions(corpus_trace("llama3-sim-rtx4060ti/real_inference_simulation.sqlite"))
    assert len(regions) == 1089 and "" not in kernels and sum(kernels.values()) == 1536


@pytest.mark.parametrize("relative", FILES)
def test_a_baseline_of_each_file_gates_the_same_file_as_a_pass(capsys: pytest.CaptureFixture[str], tmp_path: Path,
                                                               relative: str) -> None:
    """Every corpus file through ``perfgate baseline`` and the gate (``compare DIR FILE``): the same measurement
    read twice passes, with no launch inconclusive (a group's spread says nothing when its values are the same)."""
    trace = corpus_trace(relative)
    assert run_cli(capsys, "baseline", trace, "--dir", tmp_path, "--name", "run")[0] == 0
    status, out, err = run_cli(capsys, "compare", tmp_path, trace, "--name", "run")
    assert status == 0, out + err
    assert "PASS: no regression" in out and "inconclusive" not in out
