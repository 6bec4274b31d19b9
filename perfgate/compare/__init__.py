"""Compare a current table with a baseline table: matching, thresholds, statistics. No I/O.

The flow, one module per stage:

- ``identity``: a kernel is its full demangled name, region and launch configuration; the occurrence counts
  launches of one identity (aligned where an op was inserted).
- ``renames``: a kernel on one side only is paired with its other identity (configuration or template
  arguments changed, user aliases, generated names normalized, same position and launch configuration);
  ambiguous pairings are listed, not guessed, and missing + new kernels of a region are not measured.
- ``matching``: launches are matched by (kind, identity, NVTX region, occurrence), a renamed kernel
  under its baseline identity; a launch on one side only is missing or new.
- ``joining``: the values of both sides for each (launch, metric), on integer keys.
- ``repeats`` (with ``statistics`` and ``alone``): the repeated launches of a kernel are judged as one on
  each gated metric, on the Hodges-Lehmann shift and its distribution-free interval: regression,
  improvement, inconclusive or unchanged; a launch that moved alone is a regression of its own.
- ``policies``: the verdict rules, each a named function. A metric's status comes from its threshold
  (crossed in the worse direction, relative AND absolute), a repeated kernel's time from its group; a
  launch's status is the worst of its gated metrics. Metrics without a gating threshold (throughput %,
  occupancy, registers) are ``info``: they explain a change but never fail the gate.
- ``notes``, ``assemble``: what the reader is told, and the two result tables in display order.
- ``flow``: ``compare_tables``, which runs the stages in that order.
"""

from __future__ import annotations

from perfgate.compare.devices import check_devices
from perfgate.compare.flow import compare_tables
from perfgate.compare.options import BENCHMARK_TIME_METRIC, TIME_METRIC, CompareOptions
from perfgate.compare.result import Comparison
from perfgate.compare.statistics import mann_whitney_p

__all__ = [
    "BENCHMARK_TIME_METRIC",
    "TIME_METRIC",
    "CompareOptions",
    "Comparison",
    "check_devices",
    "compare_tables",
    "mann_whitney_p",
]
