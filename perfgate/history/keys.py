"""The history's keys, one home: a series is one metric of one kernel (GPU, test, kind, kernel, region, metric), so
that what is recorded and what is looked up meet. Facts an input may not know are keyed the same way on both
sides (a GPU that ncu's CSV details page does not name is recorded as ``unknown``, and looked up as ``unknown``;
no test or region is ``""``, no kind is a kernel).

A kernel's series is of one kernel as the comparison knows it (``perfgate.compare.identity``): its full demangled
name (its function name where none is known) and its launch configuration where known, in one readable text
(``series_kernel``: ``void gemm<128>(float *) grid (60, 1, 1) block (256, 1, 1)``). PyTorch's
``vectorized_elementwise_kernel<4, AddFunctor>`` and ``<4, GeluFunctor>``, or one cuBLAS kernel launched at three
grids, are series apart. A history recorded before kept a kernel's series by its function name alone: those
series stay readable, and a reference falls back to them (``perfgate.history.reference``).

Keys are plain tuples, not named ones: a report's every launch and metric makes one when it is recorded, and a
named tuple costs several times as much to build."""

from __future__ import annotations

import re
from typing import Any, Mapping, Sequence

from perfgate.demangled import bare_name, short_name
from perfgate.vocabulary import KIND_KERNEL

UNKNOWN_GPU = "unknown"
SERIES_FIELDS = ("gpu", "test", "kind", "kernel", "region", "metric")  # perfgate_series' unique key, in order
KERNEL_FIELDS = SERIES_FIELDS[:-1]  # every metric of one kernel (its findings, its dashboard page)
SeriesKey = tuple[str, str, str, str, str, str]  # SERIES_FIELDS
KernelKey = tuple[str, str, str, str, str]  # KERNEL_FIELDS
SELECT_SERIES_KEYS = f"SELECT id, {', '.join(SERIES_FIELDS)} FROM perfgate_series"


_SHAPE = re.compile(r"(?: grid (\([0-9, ]+\)))?(?: block (\([0-9, ]+\)))?\Z")  # a series kernel's configuration


def is_kernel(kind: str | None) -> bool:
    """Whether a launch of this kind is a kernel (no kind is one), not a benchmark or a region total."""
    return (kind or KIND_KERNEL) == KIND_KERNEL


def series_kernel(kind: str | None, kernel: str, demangled: str | None, grid: str | None, block: str | None) -> str:
    """The kernel of a launch's series: for a kernel, its demangled name (else its function name) and its grid and
    block where known; a benchmark or a region total by its name."""
    if not is_kernel(kind):
        return kernel
    return (demangled or kernel) + (f" grid {grid}" if grid else "") + (f" block {block}" if block else "")


def launch_kernels(launches: Mapping[str, Any]) -> list[str]:
    """Per launch of a report's ``launches`` table, its ``series_kernel`` (a report without grid or block columns,
    from before they were added: without them). Computed once per distinct launch facts: a report may hold 500k
    launches of a few kernels."""
    count = len(launches["kernel"])
    columns = [launches.get(name) or [None] * count for name in ("kind", "kernel", "demangled", "grid", "block")]
    made: dict[tuple[Any, ...], str] = {}
    found = []
    for facts in zip(*columns):
        name = made.get(facts)
        if name is None:
            name = made[facts] = series_kernel(*facts)
        found.append(name)
    return found


def kernel_parts(kernel: str) -> tuple[str, str, str]:
    """A series kernel's name without its launch configuration (the demangled name, else the function name), its
    grid and its block ("" where not known)."""
    shape = _SHAPE.search(kernel)
    if shape is None or not shape.start():
        return kernel, "", ""
    return kernel[:shape.start()], shape.group(1) or "", shape.group(2) or ""


def kernel_name(kernel: str) -> str:
    """A series kernel's name without its launch configuration: the demangled name (else the function name)."""
    return kernel_parts(kernel)[0]


def function_name(kernel: str, kind: str | None = KIND_KERNEL) -> str:
    """A series kernel's bare function name (what a history recorded before keyed its series by); a benchmark's or
    a region's name as it is."""
    return bare_name(kernel_name(kernel)) if is_kernel(kind) else kernel


def shown_kernel(kernel: str, kind: str | None = KIND_KERNEL) -> str:
    """A series kernel as a reader is shown it: ``gemm<128> grid (60, 1, 1) block (256, 1, 1)``; a benchmark's or
    a region's name as it is."""
    if not is_kernel(kind):
        return kernel
    name = kernel_name(kernel)
    return short_name(name) + kernel[len(name):]


def gpu_key(device: object) -> str:
    """A series' GPU: the device's name, ``unknown`` where the input names none."""
    return str(device) if device else UNKNOWN_GPU


def series_key(device: object, test: str | None, kind: str | None, kernel: str, region: str | None,
               metric: str | None) -> SeriesKey:
    """The series of a launch's metric, from a report's or a table's columns."""
    return (gpu_key(device), test or "", kind or "kernel", kernel, region or "", metric or "")


def kernel_key(device: object, test: str | None, kind: str | None, kernel: str, region: str | None) -> KernelKey:
    """The kernel of a launch: its series' key without the metric."""
    return (gpu_key(device), test or "", kind or "kernel", kernel, region or "")


def facts_key(facts: Mapping[str, Any], fields: Sequence[str] = SERIES_FIELDS) -> tuple[str, ...]:
    """The key of a stored series from its facts (``perfgate.history.series.SERIES_COLUMNS``)."""
    return tuple(facts[name] for name in fields)


def with_test(key: SeriesKey, test: str) -> SeriesKey:
    """``key`` as measured by ``test`` (``""``: by no test, a report compared by hand)."""
    return (key[0], test, key[2], key[3], key[4], key[5])


def with_kernel(key: SeriesKey, kernel: str) -> SeriesKey:
    """``key`` of another series kernel (another launch configuration, or the function name a history recorded
    before keyed it by)."""
    return (key[0], key[1], key[2], kernel, key[4], key[5])
