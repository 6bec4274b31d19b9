"""What every timeline reader extracts from its format: GPU activities, launch calls and host ranges.

Times are integer nanoseconds from an origin of the reader's choosing (absolute CUPTI timestamps are
~1.8e18 ns, beyond what a float64 holds to the nanosecond). ``perfgate.collect.timeline.measure`` turns a
``Trace`` into the normalized table.
"""

from __future__ import annotations

from typing import NamedTuple

KERNEL = "kernel"
MEMCPY = "memcpy"
MEMSET = "memset"
NO_CORRELATION = -1
# A trace's fact: it was recorded from its process's start, so a kernel's first launch in it is the process's first.
FROM_PROCESS_START = "trace_from_process_start"
# A setting a trace's measurement carries for compare (``perfgate.compare.sources``): the trace's time step in ns
# where it is coarser than a nanosecond.
RESOLUTION_SETTING = "trace_resolution_ns"


class GpuOp(NamedTuple):
    """One kernel, copy or set as the GPU ran it."""

    kind: str  # KERNEL, MEMCPY or MEMSET
    name: str  # kernel function name (bare), or "memcpy"/"memset"
    demangled: str
    start: int
    end: int
    device: int
    stream: int
    correlation: int  # the launching API call's correlation id; NO_CORRELATION when the trace gives none
    grid: tuple[int, int, int] | None = None
    block: tuple[int, int, int] | None = None
    registers: int | None = None  # per thread
    static_shared: int | None = None  # bytes per block
    dynamic_shared: int | None = None


class Launch(NamedTuple):
    """The host API call (runtime or driver) with a correlation id: where and when a GPU op was asked for."""

    correlation: int
    thread: str
    start: int
    end: int


class Range(NamedTuple):
    """A host range: an NVTX push/pop range, a ``record_function``, a ``perfgate.region``, or a profiler step."""

    name: str
    thread: str
    start: int
    end: int
    step: bool = False  # a profiler step (``ProfilerStep#N``, or a step the live source marked)


class Device(NamedTuple):
    name: str
    cc: str  # "9.0", "" when the trace does not say


class Trace(NamedTuple):
    format: str  # "kineto", "nsys" or "cupti"
    ops: list[GpuOp]
    launches: dict[int, Launch]  # by correlation id: the first API call with that id
    ranges: list[Range]
    devices: dict[int, Device]
    facts: dict[str, str | int | float | bool]  # versions and the like, kept in the measurement's settings
