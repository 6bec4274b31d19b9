"""The total that holds kernels replaced outside every region.

Kernels replaced among the launches outside every region (``perfgate compare a.ncu-rep b.ncu-rep`` of reports
without NVTX ranges, an ncu CSV, a launch outside the ranges of a report that has some) have no region total to be
judged through (``replaced``). The smallest total that holds both sides there is the sum of the launches outside
every region: the whole report where it has no region. It is made only where a replacement needs it (the
comparison is then judged again with it), so every other comparison keeps its rows; and only where the two runs
hold the same top-level regions, so that it holds the same part of the program on both sides (a range added around
code that ran outside every region would move that code's time out of one side's total only).
"""

from __future__ import annotations

from perfgate.collect.timeline.measure import KERNEL_DURATION
from perfgate.compare.replaced import Replacement
from perfgate.regions import add_outside_total, is_additive, scoped_top_regions
from perfgate.table import Measurement
from perfgate.vocabulary import OUTSIDE, TOTAL, some_of


def _adds(metric: str) -> bool:
    """ncu's ``.sum`` rollups, and a trace's kernel durations (its regions' times are host ranges: none here)."""
    return is_additive(metric) or metric == KERNEL_DURATION


def needs_outside_total(replacements: list[Replacement]) -> bool:
    """Whether kernels were replaced outside every region where no total holds them."""
    return any(not replacement.region and replacement.total < 0 for replacement in replacements)


def outside_totals(baseline: Measurement, current: Measurement) -> tuple[Measurement, Measurement, list[str]]:
    """Both sides with a total of their launches outside every region (``total`` where neither run has a region,
    else ``outside any region``), or, where the runs hold different regions, so that no such total compares like
    with like, both unchanged and a note saying so."""
    regions = [scoped_top_regions(side.table) for side in (baseline, current)]
    if regions[0] != regions[1]:
        differ = [f"{some_of(sorted(own - other), 8)} only in the {name}" for own, other, name in
                  ((regions[0], regions[1], "baseline"), (regions[1], regions[0], "current run")) if own - other]
        return baseline, current, [f"kernels replaced outside any region: no total holds them: the runs hold different "
                                   f"regions ({'; '.join(differ)}), so their launches outside every region are not the "
                                   "same part of the program"]
    name = OUTSIDE if regions[0] else TOTAL
    return add_outside_total(baseline, name, _adds), add_outside_total(current, name, _adds), []
