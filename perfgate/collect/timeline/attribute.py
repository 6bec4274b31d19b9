"""Which region each GPU op belongs to: the host ranges open on the launching thread when it was launched.

As Nsight Compute's NVTX filter does, through the correlation id: a kernel belongs to the ranges open on the
thread of its launch call at the call's start. A launch on a thread with no range open (autograd's backward
thread inside ``with region("backward")``) belongs to the ranges open at that moment on any thread, as ncu's
process-scoped filter sees it. A kernel whose launch call the trace lacks belongs to no region. Profiler steps
are not part of a region's path (``layer1``, not ``ProfilerStep#3 > layer1``): they are regions of their own.
A range's path is built from the ranges that enclose it whole (NVTX push/pop ranges nest on their thread; start/end
ranges "may overlap with other ranges arbitrarily", NVTX's documentation says): a range that only overlaps
another, starting inside it and ending after it, is not its child. A kernel inside both belongs to both.

Bounded for any input (``perfgate.limits``): at most ``MAX_OPEN_RANGES`` ranges open at once, a path of at most
``MAX_NAME_CHARS`` characters, and each distinct path built once and shared (a path is its parent's plus a name, so
paths rebuilt for every range of a deep nesting would grow with the square of the depth); past a limit,
``RangeLimit``, which the caller names the trace in.
"""

from __future__ import annotations

from collections import defaultdict
from typing import NamedTuple

import numpy as np

from perfgate.collect.timeline.model import Launch, Range, Trace
from perfgate.limits import MAX_NAME_CHARS, MAX_OPEN_RANGES, MAX_REGION_PATHS_CHARS
from perfgate.vocabulary import REGION_SEPARATOR

_OPEN, _LAUNCH, _CLOSE = 0, 1, 2  # at the same time: a range opens before, and closes after, a launch in it


class Attribution(NamedTuple):
    paths: list[str]  # per range: its path of names (steps left out; a step's own path is STEP)
    op_ranges: list[tuple[int, ...]]  # per op: the ranges (indices) it belongs to, steps included
    op_launch: list[Launch | None]  # per op: its launch call


STEP = "step"


class RangeLimit(Exception):
    """A trace's ranges past one of ``perfgate.limits``' bounds: ``problem`` and ``fix`` of the InputError to raise."""

    def __init__(self, problem: str, fix: str) -> None:
        super().__init__(problem)
        self.problem, self.fix = problem, fix


class _Paths:
    """Region paths, each distinct one built once: (parent path, name) -> the shared path string."""

    def __init__(self, ranges: list[Range]) -> None:
        self.of = [STEP if r.step else "" for r in ranges]  # per range
        self._known: dict[tuple[str, str], str] = {}
        self._chars = 0

    def name(self, index: int, name: str, parent: str) -> None:
        key = (parent, name)
        path = self._known.get(key)
        if path is None:
            length = len(parent) + len(REGION_SEPARATOR) + len(name) if parent else len(name)
            if length > MAX_NAME_CHARS:
                raise RangeLimit(f"a region path of {length:,} characters (perfgate reads region paths up to "
                                 f"{MAX_NAME_CHARS:,})", "name ranges shorter, or nest them less deeply")
            self._chars += length
            if self._chars > MAX_REGION_PATHS_CHARS:
                raise RangeLimit(f"distinct region paths of more than {MAX_REGION_PATHS_CHARS:,} characters "
                                 "together (perfgate reads up to that many)",
                                 "name ranges shorter, or make fewer distinct ones")
            path = f"{parent}{REGION_SEPARATOR}{name}" if parent else name
            self._known[key] = path
        self.of[index] = path


def _too_many_open(thread: str) -> RangeLimit:
    where = f"on thread {thread}" if thread else "at one moment"
    return RangeLimit(f"more than {MAX_OPEN_RANGES} ranges open at once {where} (perfgate reads up to "
                      f"{MAX_OPEN_RANGES})", "close the ranges the program opens (every push needs its pop)")


def _sweep(ranges: list[Range], members: list[int], launches: list[tuple[int, Launch]],
           paths: _Paths | None, found: dict[int, tuple[int, ...]], thread: str = "") -> None:
    """One pass over time: ranges ``members`` opening and closing, launches landing in what is open (naming each
    range's path into ``paths`` where given)."""
    events: list[tuple[int, int, int]] = []
    for index in members:
        events.append((ranges[index].start, _OPEN, index))
        events.append((ranges[index].end, _CLOSE, index))
    for position, (_, launch) in enumerate(launches):
        events.append((launch.start, _LAUNCH, position))
    events.sort()
    stack: list[int] = []
    held: tuple[int, ...] | None = None  # the stack as launches see it, built once per change and shared
    for _, what, index in events:
        if what == _OPEN:
            if paths is not None and not ranges[index].step:
                # Its parent: the innermost open range that encloses it whole. Start/end ranges may overlap without
                # nesting (A starts, B starts, A ends, C starts...): taken as a stack, each would be the last one's
                # child and the paths would grow with the number of ranges, not with the nesting.
                end = ranges[index].end
                parent = next((paths.of[i] for i in reversed(stack) if not ranges[i].step and ranges[i].end >= end),
                              "")
                paths.name(index, ranges[index].name, parent)
            stack.append(index)
            if len(stack) > MAX_OPEN_RANGES:
                raise _too_many_open(thread)
            held = None
        elif what == _CLOSE:
            if index in stack:
                stack.remove(index)
                held = None
        elif stack:
            if held is None:
                held = tuple(stack)
            found[launches[index][0]] = held


def attribute(trace: Trace) -> Attribution:
    ranges = trace.ranges
    paths = _Paths(ranges)
    by_thread: dict[str, list[int]] = defaultdict(list)
    for index, item in enumerate(ranges):
        by_thread[item.thread].append(index)
    launches_by_thread: dict[str, list[tuple[int, Launch]]] = defaultdict(list)
    for launch in trace.launches.values():
        launches_by_thread[launch.thread].append((launch.correlation, launch))
    found: dict[int, tuple[int, ...]] = {}
    for thread, members in by_thread.items():
        _sweep(ranges, members, launches_by_thread.get(thread, []), paths, found, thread)
    elsewhere = [(c, launch) for c, launch in trace.launches.items() if c not in found]
    if elsewhere and ranges:
        by_time: dict[int, tuple[int, ...]] = {}
        _sweep(ranges, list(range(len(ranges))), elsewhere, None, by_time)
        found.update(by_time)
    _add_steps(ranges, trace.launches, found)
    op_ranges = [found.get(op.correlation, ()) for op in trace.ops]
    op_launch = [trace.launches.get(op.correlation) for op in trace.ops]
    return Attribution(paths.of, op_ranges, op_launch)


def _add_steps(ranges: list[Range], launches: dict[int, Launch], found: dict[int, tuple[int, ...]]) -> None:
    """A launch inside a step belongs to it whichever thread launched it (steps do not overlap)."""
    steps = [index for index, item in enumerate(ranges) if item.step]
    if not steps:
        return
    steps.sort(key=lambda i: ranges[i].start)
    starts = np.array([ranges[i].start for i in steps], dtype=np.int64)
    extended: dict[tuple[tuple[int, ...], int], tuple[int, ...]] = {}  # shared, as _sweep shares what it finds
    for correlation, launch in launches.items():
        at = int(np.searchsorted(starts, launch.start, side="right")) - 1
        if at >= 0 and launch.start <= ranges[steps[at]].end:
            held = found.get(correlation, ())
            if steps[at] not in held:
                key = (held, steps[at])
                if key not in extended:
                    extended[key] = (*held, steps[at])
                found[correlation] = extended[key]
