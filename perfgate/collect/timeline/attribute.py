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
from collections.abc import Iterator
from typing import NamedTuple

import numpy as np

from perfgate.collect.timeline.model import Ints, Launch, LaunchColumns, OpColumns, Range, Trace
from perfgate.limits import MAX_NAME_CHARS, MAX_OPEN_RANGES, MAX_REGION_PATHS_CHARS
from perfgate.vocabulary import REGION_SEPARATOR

_OPEN, _LAUNCH, _CLOSE = 0, 1, 2  # at the same time: a range opens before, and closes after, a launch in it


class OpLaunches:
    """Per op: its launch call, built when asked for (the calls are held as columns)."""

    def __init__(self, calls: LaunchColumns, positions: Ints) -> None:
        self.calls, self.positions = calls, positions

    def __getitem__(self, op: int) -> Launch | None:
        position = int(self.positions[op])
        return self.calls.at(position) if position >= 0 else None

    def __len__(self) -> int:
        return int(self.positions.size)

    def __iter__(self) -> Iterator[Launch | None]:
        return (self[op] for op in range(len(self)))


class Attribution(NamedTuple):
    paths: list[str]  # per range: its path of names (steps left out; a step's own path is STEP)
    op_sets: Ints  # per op: the number in ``sets`` of the ranges it belongs to
    sets: list[tuple[int, ...]]  # the distinct sets of ranges (indices, steps included) ops belong to; the last: none
    op_launch: OpLaunches  # per op: its launch call

    @property
    def op_ranges(self) -> list[tuple[int, ...]]:
        """Per op: the ranges (indices) it belongs to."""
        return [self.sets[number] for number in self.op_sets.tolist()]


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


class _Held:
    """The sets of open ranges launches saw, each built once and shared: numbered, so that a launch holds a number."""

    def __init__(self) -> None:
        self.sets: list[tuple[int, ...]] = []
        self._known: dict[tuple[int, ...], int] = {}

    def number(self, ranges: tuple[int, ...]) -> int:
        found = self._known.get(ranges)
        if found is None:
            found = self._known[ranges] = len(self.sets)
            self.sets.append(ranges)
        return found


def _sweep(ranges: list[Range], members: list[int], moments: Ints, paths: _Paths | None, held: _Held,
           thread: str = "") -> Ints:
    """One pass over time: ranges ``members`` opening and closing (naming each range's path into ``paths`` where
    given); per launch call at ``moments``, the number in ``held`` of the ranges open then, -1 where none is.

    At the same moment a range opens before, and closes after, a launch in it. Only the ranges' events are walked:
    a launch sees what is open after the events before it, found by binary search (launches are many, ranges few)."""
    events = sorted([(ranges[index].start, _OPEN, index) for index in members]
                    + [(ranges[index].end, _CLOSE, index) for index in members])
    times = np.array([moment for moment, _, _ in events], dtype=np.int64)
    opening = np.sort(np.array([ranges[index].start for index in members], dtype=np.int64))
    # Events before a launch at t: all before t, and the openings at t (they sort before the closings at t).
    before = (np.searchsorted(times, moments, side="left") + np.searchsorted(opening, moments, side="right")
              - np.searchsorted(opening, moments, side="left"))
    places, which = np.unique(before, return_inverse=True)
    numbers = np.full(places.size, -1, dtype=np.int64)
    stack: list[int] = []
    number = -1  # the stack's number in ``held``, looked up once per change
    changed = True
    place = 0
    for done, (_, what, index) in enumerate(events):
        while place < places.size and places[place] == done:
            if changed:
                number, changed = (held.number(tuple(stack)) if stack else -1), False
            numbers[place] = number
            place += 1
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
            changed = True
        elif index in stack:
            stack.remove(index)
            changed = True
    if place < places.size:  # launches after every event: the stack is empty by then
        numbers[place:] = held.number(tuple(stack)) if stack else -1
    return numbers[which.reshape(-1)] if moments.size else np.empty(0, dtype=np.int64)


def attribute(trace: Trace) -> Attribution:
    ranges = trace.ranges
    paths = _Paths(ranges)
    held = _Held()
    calls = LaunchColumns.of(trace.launches)
    thread_names = np.array(calls.threads, dtype=object)[calls.thread] if len(calls) else np.empty(0, dtype=object)
    by_thread: dict[str, list[int]] = defaultdict(list)
    for index, item in enumerate(ranges):
        by_thread[item.thread].append(index)
    seen = np.full(len(calls), -1, dtype=np.int64)  # per call: the number in ``held`` of the ranges it belongs to
    for thread, members in by_thread.items():
        mine = np.flatnonzero(thread_names == thread)
        seen[mine] = _sweep(ranges, members, calls.start[mine], paths, held, thread)
    elsewhere = np.flatnonzero(seen < 0)
    if elsewhere.size and ranges:
        seen[elsewhere] = _sweep(ranges, list(range(len(ranges))), calls.start[elsewhere], None, held)
    _add_steps(ranges, calls.start, seen, held)
    at = calls.positions(OpColumns.of(trace.ops).correlation)
    numbers = np.full(at.size, len(held.sets), dtype=np.int64)  # none: the last set, ()
    found = seen[at[at >= 0]]
    numbers[at >= 0] = np.where(found >= 0, found, len(held.sets))
    return Attribution(paths.of, numbers, [*held.sets, ()], OpLaunches(calls, at))


def _add_steps(ranges: list[Range], moments: Ints, seen: Ints, held: _Held) -> None:
    """A launch inside a step belongs to it whichever thread launched it (steps do not overlap)."""
    steps = [index for index, item in enumerate(ranges) if item.step]
    if not steps:
        return
    steps.sort(key=lambda i: ranges[i].start)
    starts = np.array([ranges[i].start for i in steps], dtype=np.int64)
    ends = np.array([ranges[i].end for i in steps], dtype=np.int64)
    at = np.searchsorted(starts, moments, side="right") - 1
    inside = np.flatnonzero(at >= 0)
    inside = inside[moments[inside] <= ends[at[inside]]]
    extended: dict[tuple[int, int], int] = {}  # shared, as _sweep shares what it finds
    for call, number in zip(inside.tolist(), seen[inside].tolist(), strict=True):
        step = steps[int(at[call])]
        before = held.sets[number] if number >= 0 else ()
        if step not in before:
            key = (number, step)
            if key not in extended:
                extended[key] = held.number((*before, step))
            seen[call] = extended[key]
