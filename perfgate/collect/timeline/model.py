"""What every timeline reader extracts from its format: GPU activities, launch calls and host ranges.

Times are integer nanoseconds from an origin of the reader's choosing (absolute CUPTI timestamps are
~1.8e18 ns, beyond what a float64 holds to the nanosecond). ``perfgate.collect.timeline.measure`` turns a
``Trace`` into the normalized table.
"""

from __future__ import annotations

import math
from array import array
from collections.abc import Iterator, Mapping, Sequence, ValuesView
from typing import Any, NamedTuple, overload

import numpy as np
import numpy.typing as npt

Ints = npt.NDArray[np.int64]
Floats = npt.NDArray[np.float64]
Codes = npt.NDArray[np.signedinteger[Any]]  # codes into a few distinct values: as narrow as they allow

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


class OpColumns(Sequence[GpuOp]):
    """GPU ops held as columns (an export's hundreds of thousands of kernels: a ``GpuOp`` and its times took about
    250 bytes an op, these about 80): texts and launch dimensions as codes into their few distinct values, the
    optional launch facts as floats (NaN where the trace gives none). A ``GpuOp`` is built when one is asked for."""

    def __init__(self, kinds: list[str], texts: list[str], dims: list[tuple[int, int, int] | None],
                 columns: dict[str, Any]) -> None:
        self.kinds, self.texts, self.dims = kinds, texts, dims  # dims[0] is None
        self.kind: Codes = np.asarray(columns["kind"], dtype=np.int8)  # codes into ``kinds``
        # codes into ``texts``
        self.name: Codes = np.asarray(columns["name"], dtype=np.int32)
        self.demangled: Codes = np.asarray(columns["demangled"], dtype=np.int32)
        self.start: Ints = np.asarray(columns["start"], dtype=np.int64)
        self.end: Ints = np.asarray(columns["end"], dtype=np.int64)
        self.device: Ints = np.asarray(columns["device"], dtype=np.int64)
        self.stream: Ints = np.asarray(columns["stream"], dtype=np.int64)
        self.correlation: Ints = np.asarray(columns["correlation"], dtype=np.int64)
        self.grid: Codes = np.asarray(columns["grid"], dtype=np.int32)  # codes into ``dims``
        self.block: Codes = np.asarray(columns["block"], dtype=np.int32)
        self.registers: Floats = np.asarray(columns["registers"], dtype=np.float64)
        self.static_shared: Floats = np.asarray(columns["static_shared"], dtype=np.float64)
        self.dynamic_shared: Floats = np.asarray(columns["dynamic_shared"], dtype=np.float64)

    @classmethod
    def of(cls, ops: Sequence[GpuOp]) -> OpColumns:
        """Any sequence of ops as columns (itself where it is one)."""
        if isinstance(ops, OpColumns):
            return ops
        recorder = OpRecorder()
        for op in ops:
            recorder.add(*op)
        return recorder.columns()

    def is_kernel(self) -> npt.NDArray[np.bool_]:
        kernel: npt.NDArray[np.bool_] = np.equal(self.kind, self.kinds.index(KERNEL) if KERNEL in self.kinds else -1)
        return kernel

    def at(self, index: int) -> GpuOp:
        def fact(column: Floats) -> int | None:
            value = float(column[index])
            return None if np.isnan(value) else int(value)

        return GpuOp(self.kinds[int(self.kind[index])], self.texts[int(self.name[index])],
                     self.texts[int(self.demangled[index])], int(self.start[index]), int(self.end[index]),
                     int(self.device[index]), int(self.stream[index]), int(self.correlation[index]),
                     self.dims[int(self.grid[index])], self.dims[int(self.block[index])], fact(self.registers),
                     fact(self.static_shared), fact(self.dynamic_shared))

    @overload
    def __getitem__(self, index: int) -> GpuOp: ...

    @overload
    def __getitem__(self, index: slice) -> Sequence[GpuOp]: ...

    def __getitem__(self, index: int | slice) -> GpuOp | Sequence[GpuOp]:
        if isinstance(index, slice):
            return [self.at(i) for i in range(len(self))[index]]
        if not -len(self) <= index < len(self):
            raise IndexError(index)
        return self.at(index % len(self))

    def __iter__(self) -> Iterator[GpuOp]:
        return (self.at(index) for index in range(len(self)))

    def __len__(self) -> int:
        return int(self.start.size)


class OpRecorder:
    """GPU ops gathered one at a time into ``OpColumns``: each distinct text and launch dimension held once."""

    _TYPES = {"kind": "b", "name": "i", "demangled": "i", "start": "q", "end": "q", "device": "q", "stream": "q",
              "correlation": "q", "grid": "i", "block": "i", "registers": "d", "static_shared": "d",
              "dynamic_shared": "d"}

    def __init__(self) -> None:
        self._kinds: dict[str, int] = {}
        self._texts: dict[str, int] = {}
        self._dims: dict[tuple[int, int, int] | None, int] = {None: 0}
        self._columns: dict[str, array[Any]] = {name: array(code) for name, code in self._TYPES.items()}

    def add(self, kind: str, name: str, demangled: str, start: int, end: int, device: int, stream: int,
            correlation: int, grid: tuple[int, int, int] | None = None, block: tuple[int, int, int] | None = None,
            registers: int | None = None, static_shared: int | None = None,
            dynamic_shared: int | None = None) -> None:
        """One op, as ``GpuOp`` takes it; OverflowError where a number is past int64 (the reader names the file)."""
        texts, dims = self._texts, self._dims
        values = (self._kinds.setdefault(kind, len(self._kinds)), texts.setdefault(name, len(texts)),
                  texts.setdefault(demangled, len(texts)), start, end, device, stream, correlation,
                  dims.setdefault(grid, len(dims)), dims.setdefault(block, len(dims)),
                  math.nan if registers is None else registers, math.nan if static_shared is None else static_shared,
                  math.nan if dynamic_shared is None else dynamic_shared)
        for column, value in zip(self._columns.values(), values, strict=True):
            column.append(value)

    def columns(self) -> OpColumns:
        return OpColumns(list(self._kinds), list(self._texts), list(self._dims),
                         {name: np.frombuffer(column, dtype=column.typecode) if len(column) else []
                          for name, column in self._columns.items()})


class Launch(NamedTuple):
    """The host API call (runtime or driver) with a correlation id: where and when a GPU op was asked for."""

    correlation: int
    thread: str
    start: int
    end: int


class LaunchColumns(Mapping[int, Launch]):
    """Launch calls by correlation id, held as columns (an Nsight Systems export's hundreds of thousands of them: a
    ``Launch`` object and a dict entry each took about 250 bytes a call). A ``Launch`` is built when one is asked for;
    iteration follows the order the calls were given in."""

    def __init__(self, correlation: Any, thread: Any, threads: list[str], start: Any, end: Any) -> None:
        self.correlation: Ints = np.asarray(correlation, dtype=np.int64)
        self.thread: Ints = np.asarray(thread, dtype=np.int64)  # codes into ``threads``
        self.threads = threads
        self.start: Ints = np.asarray(start, dtype=np.int64)
        self.end: Ints = np.asarray(end, dtype=np.int64)
        self._order = np.argsort(self.correlation, kind="stable")
        self._sorted = self.correlation[self._order]

    @classmethod
    def of(cls, launches: Mapping[int, Launch]) -> LaunchColumns:
        """Any mapping of launch calls as columns (itself where it is one)."""
        if isinstance(launches, LaunchColumns):
            return launches
        codes: dict[str, int] = {}
        count = len(launches)
        return cls(np.fromiter(launches, dtype=np.int64, count=count),
                   np.fromiter((codes.setdefault(call.thread, len(codes)) for call in launches.values()),
                               dtype=np.int64, count=count),
                   list(codes), np.fromiter((call.start for call in launches.values()), dtype=np.int64, count=count),
                   np.fromiter((call.end for call in launches.values()), dtype=np.int64, count=count))

    def positions(self, correlations: Any) -> Ints:
        """Per correlation id: its call's position (in the given order), -1 where there is none."""
        wanted = np.asarray(correlations, dtype=np.int64)
        if not self._sorted.size:
            return np.full(wanted.size, -1, dtype=np.int64)
        at = np.minimum(np.searchsorted(self._sorted, wanted), self._sorted.size - 1)
        return np.where(self._sorted[at] == wanted, self._order[at], -1)

    def at(self, position: int) -> Launch:
        return Launch(int(self.correlation[position]), self.threads[int(self.thread[position])],
                      int(self.start[position]), int(self.end[position]))

    def __getitem__(self, correlation: int) -> Launch:
        position = int(self.positions([correlation])[0]) if isinstance(correlation, int) else -1
        if position < 0:
            raise KeyError(correlation)
        return self.at(position)

    def __iter__(self) -> Iterator[int]:
        return iter(self.correlation.tolist())

    def values(self) -> ValuesView[Launch]:
        return _Calls(self)

    def __len__(self) -> int:
        return int(self.correlation.size)


class _Calls(ValuesView[Launch]):
    """A ``LaunchColumns``' calls in order, each built as it is reached (not looked up by its id)."""

    def __init__(self, launches: LaunchColumns) -> None:
        super().__init__(launches)
        self.launches = launches

    def __iter__(self) -> Iterator[Launch]:
        return (self.launches.at(position) for position in range(len(self.launches)))


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
    ops: Sequence[GpuOp]  # ``OpColumns`` from every reader
    launches: Mapping[int, Launch]  # by correlation id: the first API call with that id
    ranges: list[Range]
    devices: dict[int, Device]
    facts: dict[str, str | int | float | bool]  # versions and the like, kept in the measurement's settings
