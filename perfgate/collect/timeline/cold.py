"""A trace that began with its process: the host time of each kernel's first launch call is CUDA's lazy module
loading (``docs/timeline.md``, "Lazy module loading"), left out of its region's wall time; nothing else is.
"""

from __future__ import annotations

import statistics
from collections import defaultdict

import numpy as np
import numpy.typing as npt

from perfgate.collect.timeline.attribute import Attribution
from perfgate.collect.timeline.intervals import merged
from perfgate.collect.timeline.model import FROM_PROCESS_START, KERNEL, Trace
from perfgate.collect.timeline.region_entry import RegionInstance

# A kernel's first launch call in a trace shows CUDA loading its module when it took this long and this many times
# the median of the kernel's later launch calls (a warm launch call takes microseconds).
LOADING_CALL_NS, LOADING_RATIO = 1_000_000, 100


def first_launch_calls(trace: Trace, attribution: Attribution) -> tuple[list[tuple[int, int]], bool]:
    """The launch calls (start, end) of each kernel's first launch in the traced process, where CUDA's lazy loading
    loads the kernel's module, inside the call; and whether the trace itself showed it (``_shows_loading``). Empty
    unless the trace is known to start with its process (perfgate's own CUPTI trace; an Nsight Systems export
    captured from the start) or, a Kineto trace not saying where it began, shows it: a profiler trace may start after
    warm-up steps, where a kernel's first launch in the trace is not its first in the process."""
    calls: dict[str, list[tuple[int, int] | None]] = defaultdict(list)
    for index in sorted((i for i, op in enumerate(trace.ops) if op.kind == KERNEL), key=lambda i: trace.ops[i].start):
        launch = attribution.op_launch[index]
        calls[trace.ops[index].demangled].append(None if launch is None else (launch.start, launch.end))
    known = trace.format == "cupti" or bool(trace.facts.get(FROM_PROCESS_START))
    shown = trace.format == "kineto" and _shows_loading(calls)  # an export that says it began later is believed
    if not (known or shown):
        return [], False
    return sorted({spans[0] for spans in calls.values() if spans[0] is not None}), shown


def _shows_loading(calls: dict[str, list[tuple[int, int] | None]]) -> bool:
    """Whether at least a third of the kernels launched more than once paid module loading in their first launch
    call (``LOADING_CALL_NS``, ``LOADING_RATIO``): a trace that began before its process's first launches. In the
    corpus the one-shot switchtransformers traces show it (16 and 17 of 29 kernels); Kineto traces recorded after
    warm-up do not (at most 4 of 33)."""
    repeated = [spent for spent in ([span[1] - span[0] for span in spans if span is not None] for spans in calls.values())
                if len(spent) > 1]
    loading = sum(1 for spent in repeated
                  if spent[0] >= max(LOADING_CALL_NS, LOADING_RATIO * statistics.median(spent[1:])))
    return bool(repeated) and 3 * loading >= len(repeated)


def longest_gap(trace: Trace, entry: RegionInstance, cold_calls: list[tuple[int, int]]) -> tuple[int, str]:
    """The entry's longest stretch with nothing on the GPU, less the first launch calls in it (ns), and the name of
    the GPU work that ended it: in a one-shot run, where its host time went besides module loading."""
    ops = [trace.ops[i] for i in entry.ops]
    begin, finish = merged([op.start for op in ops], [op.end for op in ops])
    lows, highs = np.concatenate(([entry.start], finish[:-1])), begin
    spans = lows < highs
    if not spans.any():
        return 0, ""
    lows, highs = lows[spans], highs[spans]
    gaps = highs - lows - (_loaded_before(highs, cold_calls) - _loaded_before(lows, cold_calls))
    at = int(np.argmax(gaps))
    after = min((op for op in ops if op.start >= int(highs[at])), key=lambda op: op.start)
    return int(gaps[at]), after.name


def _loaded_before(moments: npt.NDArray[np.int64], cold_calls: list[tuple[int, int]]) -> npt.NDArray[np.int64]:
    """Per moment, the host time in first launch calls before it (their union)."""
    begin, finish = merged([lo for lo, _ in cold_calls], [hi for _, hi in cold_calls])
    if not begin.size:
        return np.zeros(moments.size, dtype=np.int64)
    before = np.concatenate(([0], np.cumsum(finish - begin)))
    at = np.searchsorted(begin, moments, side="right") - 1
    inside = np.clip(moments - begin[np.maximum(at, 0)], 0, (finish - begin)[np.maximum(at, 0)])
    return np.where(at >= 0, before[np.maximum(at, 0)] + inside, 0)
