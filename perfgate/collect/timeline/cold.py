"""A trace that began with its process: the host time of each kernel's first launch call is CUDA's lazy module
loading (``docs/timeline.md``, "Lazy module loading"), left out of its region's wall time; nothing else is.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from perfgate.collect.timeline.attribute import Attribution
from perfgate.collect.timeline.intervals import merged
from perfgate.collect.timeline.model import FROM_PROCESS_START, OpColumns, Trace
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
    ops = OpColumns.of(trace.ops)
    kernels = np.flatnonzero(ops.is_kernel())
    kernels = kernels[np.argsort(ops.start[kernels], kind="stable")]
    positions = attribution.op_launch.positions[kernels]
    launched = positions >= 0
    calls = attribution.op_launch.calls
    at = np.maximum(positions, 0)
    starts = calls.start[at] if len(calls) else np.zeros(kernels.size, dtype=np.int64)
    ends = calls.end[at] if len(calls) else np.zeros(kernels.size, dtype=np.int64)
    names = ops.demangled[kernels]
    known = trace.format == "cupti" or bool(trace.facts.get(FROM_PROCESS_START))
    # an export that says it began later is believed
    shown = trace.format == "kineto" and _shows_loading(names[launched], (ends - starts)[launched])
    if not (known or shown):
        return [], False
    first = np.unique(names, return_index=True)[1]  # each kernel's first launch, in time order
    first = first[launched[first]]
    return sorted(set(zip(starts[first].tolist(), ends[first].tolist(), strict=True))), shown


def _shows_loading(names: npt.NDArray[np.int32], spent: npt.NDArray[np.int64]) -> bool:
    """Whether at least a third of the kernels launched more than once paid module loading in their first launch
    call (``LOADING_CALL_NS``, ``LOADING_RATIO``); ``names``, ``spent``: each launch's kernel and its call's host
    time, in time order. A trace that began before its process's first launches. In the corpus the one-shot
    switchtransformers traces show it (16 and 17 of 29 kernels); Kineto traces recorded after warm-up do not (at
    most 4 of 33)."""
    order = np.argsort(names, kind="stable")  # each kernel's launches together, still in time order
    groups = np.split(spent[order], np.flatnonzero(np.diff(names[order])) + 1) if names.size else []
    repeated = [group for group in groups if group.size > 1]
    loading = sum(1 for group in repeated
                  if group[0] >= max(LOADING_CALL_NS, LOADING_RATIO * float(np.median(group[1:]))))
    return bool(repeated) and 3 * loading >= len(repeated)


def longest_gap(trace: Trace, entry: RegionInstance, cold_calls: list[tuple[int, int]]) -> tuple[int, str]:
    """The entry's longest stretch with nothing on the GPU, less the first launch calls in it (ns), and the name of
    the GPU work that ended it: in a one-shot run, where its host time went besides module loading."""
    ops = OpColumns.of(trace.ops)
    inside = np.asarray(entry.ops, dtype=np.int64)
    op_starts, op_ends = ops.start[inside], ops.end[inside]
    begin, finish = merged(op_starts, op_ends)
    lows, highs = np.concatenate(([entry.start], finish[:-1])), begin
    spans = lows < highs
    if not spans.any():
        return 0, ""
    lows, highs = lows[spans], highs[spans]
    gaps = highs - lows - (_loaded_before(highs, cold_calls) - _loaded_before(lows, cold_calls))
    at = int(np.argmax(gaps))
    later = np.flatnonzero(op_starts >= int(highs[at]))
    after = int(inside[later[np.argmin(op_starts[later])]])
    return int(gaps[at]), ops.texts[int(ops.name[after])]


def _loaded_before(moments: npt.NDArray[np.int64], cold_calls: list[tuple[int, int]]) -> npt.NDArray[np.int64]:
    """Per moment, the host time in first launch calls before it (their union)."""
    begin, finish = merged([lo for lo, _ in cold_calls], [hi for _, hi in cold_calls])
    if not begin.size:
        return np.zeros(moments.size, dtype=np.int64)
    before = np.concatenate(([0], np.cumsum(finish - begin)))
    at = np.searchsorted(begin, moments, side="right") - 1
    inside = np.clip(moments - begin[np.maximum(at, 0)], 0, (finish - begin)[np.maximum(at, 0)])
    return np.where(at >= 0, before[np.maximum(at, 0)] + inside, 0)
