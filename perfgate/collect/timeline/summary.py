"""Whole-trace figures (kernel count, span, busy and idle share): what a trace's README or a note states.

The span is not a gate metric: a pure re-run of the same program moved it 550 -> 197 ms in a real trace
(``../shared/corpus/timeline``, switchtransformers), with the host's start-up inside it.
"""

from __future__ import annotations

from typing import NamedTuple

from perfgate.collect.timeline.intervals import union_length
from perfgate.collect.timeline.model import KERNEL, Trace


class TraceSummary(NamedTuple):
    kernels: int
    unique_kernels: int  # by full (demangled) name
    copies_and_sets: int
    span_ns: int  # first kernel start to last kernel end
    kernel_time_ns: int  # summed: overlapping streams counted twice
    busy_ns: int  # the union of kernel, copy and set intervals inside the span
    ranges: int  # host ranges, profiler steps included

    @property
    def idle_share(self) -> float:
        """Of the span, the share with nothing running on the GPU (0..1)."""
        return 1.0 - self.busy_ns / self.span_ns if self.span_ns else 0.0


def summarize(trace: Trace) -> TraceSummary:
    kernels = [op for op in trace.ops if op.kind == KERNEL]
    if not kernels:
        return TraceSummary(0, 0, len(trace.ops), 0, 0, 0, len(trace.ranges))
    first, last = min(op.start for op in kernels), max(op.end for op in kernels)
    clipped = [(max(op.start, first), min(op.end, last)) for op in trace.ops if op.end > first and op.start < last]
    return TraceSummary(len(kernels), len({op.demangled for op in kernels}), len(trace.ops) - len(kernels),
                        last - first, sum(op.end - op.start for op in kernels),
                        union_length([a for a, _ in clipped], [b for _, b in clipped]), len(trace.ranges))
