"""Which region each GPU op belongs to: the host ranges open on the launching thread when it was launched.

As Nsight Compute's NVTX filter does, through the correlation id: a kernel belongs to the ranges open on the
thread of its launch call at the call's start. A launch on a thread with no range open (autograd's backward
thread inside ``with region("backward")``) belongs to the ranges open at that moment on any thread, as ncu's
process-scoped filter sees it. A kernel whose launch call the trace lacks belongs to no region. Profiler steps
are not part of a region's path (``layer1``, not ``ProfilerStep#3 > layer1``): they are regions of their own.
"""

from __future__ import annotations

from collections import defaultdict
from typing import NamedTuple

import numpy as np

from perfgate.collect.timeline.model import Launch, Range, Trace
from perfgate.vocabulary import REGION_SEPARATOR

_OPEN, _LAUNCH, _CLOSE = 0, 1, 2  # at the same time: a range opens before, and closes after, a launch in it


class Attribution(NamedTuple):
    paths: list[str]  # per range: its path of names (steps left out; a step's own path is STEP)
    op_ranges: list[tuple[int, ...]]  # per op: the ranges (indices) it belongs to, steps included
    op_launch: list[Launch | None]  # per op: its launch call


STEP = "step"


def _sweep(ranges: list[Range], members: list[int], launches: list[tuple[int, Launch]],
           paths: list[str], found: dict[int, tuple[int, ...]]) -> None:
    """One pass over time: ranges ``members`` opening and closing, launches landing in what is open."""
    events: list[tuple[int, int, int]] = []
    for index in members:
        events.append((ranges[index].start, _OPEN, index))
        events.append((ranges[index].end, _CLOSE, index))
    for position, (_, launch) in enumerate(launches):
        events.append((launch.start, _LAUNCH, position))
    events.sort()
    stack: list[int] = []
    for _, what, index in events:
        if what == _OPEN:
            parent = next((paths[i] for i in reversed(stack) if not ranges[i].step), "")
            if not ranges[index].step:
                name = ranges[index].name
                paths[index] = f"{parent}{REGION_SEPARATOR}{name}" if parent else name
            stack.append(index)
        elif what == _CLOSE:
            if index in stack:
                stack.remove(index)
        elif stack:
            found[launches[index][0]] = tuple(stack)


def attribute(trace: Trace) -> Attribution:
    ranges = trace.ranges
    paths = [STEP if r.step else "" for r in ranges]
    by_thread: dict[str, list[int]] = defaultdict(list)
    for index, item in enumerate(ranges):
        by_thread[item.thread].append(index)
    launches_by_thread: dict[str, list[tuple[int, Launch]]] = defaultdict(list)
    for launch in trace.launches.values():
        launches_by_thread[launch.thread].append((launch.correlation, launch))
    found: dict[int, tuple[int, ...]] = {}
    for thread, members in by_thread.items():
        _sweep(ranges, members, launches_by_thread.get(thread, []), paths, found)
    elsewhere = [(c, launch) for c, launch in trace.launches.items() if c not in found]
    if elsewhere and ranges:
        by_time: dict[int, tuple[int, ...]] = {}
        _sweep(ranges, list(range(len(ranges))), elsewhere, list(paths), by_time)
        found.update(by_time)
    _add_steps(ranges, trace.launches, found)
    op_ranges = [found.get(op.correlation, ()) for op in trace.ops]
    op_launch = [trace.launches.get(op.correlation) for op in trace.ops]
    return Attribution(paths, op_ranges, op_launch)


def _add_steps(ranges: list[Range], launches: dict[int, Launch], found: dict[int, tuple[int, ...]]) -> None:
    """A launch inside a step belongs to it whichever thread launched it (steps do not overlap)."""
    steps = [index for index, item in enumerate(ranges) if item.step]
    if not steps:
        return
    steps.sort(key=lambda i: ranges[i].start)
    starts = np.array([ranges[i].start for i in steps], dtype=np.int64)
    for correlation, launch in launches.items():
        at = int(np.searchsorted(starts, launch.start, side="right")) - 1
        if at >= 0 and launch.start <= ranges[steps[at]].end:
            held = found.get(correlation, ())
            if steps[at] not in held:
                found[correlation] = (*held, steps[at])
