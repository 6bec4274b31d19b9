"""What no profiler writes, refused before a trace is measured: one clear InputError each, never a verdict.

A trace can come from a fork's artifact or a broken export. Times out of any clock's range are refused where
they are read (``chrome``) or measured (``measure.check_times``); here, whatever the format: a GPU op, launch
call or host range that ends before it starts (Nsight Systems kernels that did made "19 improvements", a pass),
kernels that all last 0 ns (nothing to compare: every one would pass), and names past ``MAX_NAME_CHARS``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

import numpy as np

from perfgate.collect.timeline.model import KERNEL, GpuOp, Ints, Launch, LaunchColumns, OpColumns, Range, Trace
from perfgate.errors import InputError
from perfgate.limits import check_name_length

_FIX = "trace again; the file is corrupt or was edited"


def _backwards(items: Iterable[GpuOp | Range] | Mapping[int, Launch]) -> list[tuple[int, int]]:
    """(start, end) of each item that ends before it starts; ops and launch calls held as columns, compared as
    columns."""
    if isinstance(items, (LaunchColumns, OpColumns)):
        wrong = items.end < items.start
        return list(zip(items.start[wrong].tolist(), items.end[wrong].tolist(), strict=True))
    calls = items.values() if isinstance(items, Mapping) else items
    return [(item.start, item.end) for item in calls if item.end < item.start]


def check_trace(trace: Trace, path: Path) -> None:
    """InputError for the first of these a trace holds (one without kernels is left to ``measure.no_kernels``)."""
    for what, items in (("GPU op", trace.ops), ("launch call", trace.launches), ("host range", trace.ranges)):
        backwards = _backwards(items)
        if backwards:
            start, end = backwards[0]
            count = f"{len(backwards):,} {what}s end" if len(backwards) > 1 else f"a {what} ends"
            raise InputError(path, f"{count} before {'they start' if len(backwards) > 1 else 'it starts'} (the first: "
                                   f"{end - start:,} ns long)", _FIX)
    kernels, names = _kernels(trace.ops)
    if kernels.size and (kernels == 0).all():
        raise InputError(path, f"every kernel lasts 0 ns ({kernels.size:,} kernel{'s' if kernels.size != 1 else ''}): "
                               "no clock measured them, so there is no time to compare", _FIX)
    check_name_length(names, path)
    check_name_length({host.name for host in trace.ranges}, path, "region name")


def _kernels(ops: Sequence[GpuOp]) -> tuple[Ints, set[str]]:
    """The kernels' durations, and their distinct names and demangled names."""
    if isinstance(ops, OpColumns):
        kernels = ops.is_kernel()
        codes = np.union1d(ops.name[kernels], ops.demangled[kernels])
        return ops.end[kernels] - ops.start[kernels], {ops.texts[code] for code in codes.tolist()}
    listed = [op for op in ops if op.kind == KERNEL]  # a reader's list (perfgate's CUPTI trace): any Python ints
    return (np.array([int(op.end != op.start) for op in listed], dtype=np.int64),
            {op.demangled for op in listed} | {op.name for op in listed})
