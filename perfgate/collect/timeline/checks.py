"""What no profiler writes, refused before a trace is measured: one clear InputError each, never a verdict.

A trace can come from a fork's artifact or a broken export. Times out of any clock's range are refused where
they are read (``chrome``) or measured (``measure.check_times``); here, whatever the format: a GPU op, launch
call or host range that ends before it starts (Nsight Systems kernels that did made "19 improvements", a pass),
kernels that all last 0 ns (nothing to compare: every one would pass), and names past ``MAX_NAME_CHARS``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path

from perfgate.collect.timeline.model import KERNEL, GpuOp, Launch, LaunchColumns, Range, Trace
from perfgate.errors import InputError
from perfgate.limits import check_name_length

_FIX = "trace again; the file is corrupt or was edited"


def _backwards(items: Iterable[GpuOp | Range] | Mapping[int, Launch]) -> list[tuple[int, int]]:
    """(start, end) of each item that ends before it starts; launch calls held as columns, compared as columns."""
    if isinstance(items, LaunchColumns):
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
    kernels = [op for op in trace.ops if op.kind == KERNEL]
    if kernels and all(op.end == op.start for op in kernels):
        raise InputError(path, f"every kernel lasts 0 ns ({len(kernels):,} kernel{'s' if len(kernels) != 1 else ''}): "
                               "no clock measured them, so there is no time to compare", _FIX)
    check_name_length({op.demangled for op in kernels} | {op.name for op in kernels}, path)
    check_name_length({host.name for host in trace.ranges}, path, "region name")
