"""Repeated launches: a kernel launched many times is one kernel with many samples of its time.

Launches of the same kernel (the name both sides were matched by), in the same NVTX region, with the
same grid and block, form a *group*. For a gated time-like metric (``metrics.is_time_like``:
duration) the group's baseline values and current values are two samples, and the group is judged
once, as a whole, on the shift between them (``statistics.shift_interval``, on log values so the
shift is a ratio):

- a regression when the whole interval lies beyond the metric's limit in the worse direction,
- an improvement when it lies beyond the limit in the better direction,
- *inconclusive* when it reaches beyond the limit in the worse direction without lying beyond it,
- unchanged otherwise (an interval that only straddles the improvement limit included).

The limit is the threshold's relative part, or its absolute part taken relative to the baseline's
median, whichever is larger (a change must exceed both). A group whose samples are too few for an
interval at the chosen confidence (with 95%: fewer than 4 launches a side) is compared launch by
launch, as a single launch always is. Work counters are never grouped: they are near-deterministic
and stay judged exactly, launch by launch.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from perfgate.columns import factorize, filled, median
from perfgate.compare.arrays import Bools, Floats, Ints, Objects
from perfgate.compare.joining import JoinedRows
from perfgate.compare.matching import MATCH_KERNEL, MatchedLaunches
from perfgate.compare.statistics import interval_rank, shift_interval
from perfgate.metrics import is_time_like
from perfgate.vocabulary import KIND_KERNEL, Status


class GroupVerdicts(NamedTuple):
    """The groups judged as a whole, as per-row and per-launch arrays.

    Per joined row: ``group`` (-1 where the row was not judged with a group), the sample sizes, the
    medians of both sides, the estimated relative change with its interval, and the group's
    ``status`` ("" where none). Per launch id: ``launch_group``, the group of every launch of a
    judged kernel (one-sided launches included), else -1.
    """

    group: Ints
    n_baseline: Ints
    n_current: Ints
    median_baseline: Floats
    median_current: Floats
    estimate: Floats
    low: Floats
    high: Floats
    status: Objects
    launch_group: Ints
    inconclusive: bool = False  # some group's verdict is inconclusive

    @classmethod
    def none(cls, rows: int, launches: int) -> GroupVerdicts:
        nan = np.full(rows, np.nan)
        return cls(group=np.full(rows, -1, dtype=np.int64), n_baseline=np.zeros(rows, dtype=np.int64),
                   n_current=np.zeros(rows, dtype=np.int64), median_baseline=nan, median_current=nan.copy(),
                   estimate=nan.copy(), low=nan.copy(), high=nan.copy(), status=filled(rows, ""),
                   launch_group=np.full(launches, -1, dtype=np.int64))

    @property
    def any(self) -> bool:
        return bool((self.launch_group >= 0).any())


def kernel_groups(launches: MatchedLaunches) -> Ints:
    """Per launch id, its group: same kernel, region, grid and block (the current run's configuration
    where the launch is in it); -1 for a launch that is not a kernel's."""
    frame = launches.frame
    codes = np.zeros(launches.count, dtype=np.int64)
    for column in (frame[MATCH_KERNEL], frame["region"], launches.either("grid"), launches.either("block")):
        found, uniques = factorize(column)
        codes = codes * (len(uniques) + 1) + found
    _, group = np.unique(codes, return_inverse=True)
    grouped: Ints = np.where(launches.kinds == KIND_KERNEL, group.astype(np.int64), -1)
    return grouped


def _limit(relative: float, absolute: float, baseline: float) -> float:
    """The relative change a group must exceed: the relative limit, or the absolute one relative to the
    baseline's median, whichever is larger (-1: not given)."""
    limit = max(relative, 0.0)
    if absolute >= 0 and baseline > 0:
        limit = max(limit, absolute / baseline)
    return limit


def group_status(low: float, high: float, worse_sign: float, limit: float) -> str:
    """A group's verdict from the interval of its relative change (see the module's docstring)."""
    worse_low, worse_high = sorted((low * worse_sign, high * worse_sign))
    if worse_low > limit:
        return Status.REGRESSION.value
    if worse_high < -limit:
        return Status.IMPROVEMENT.value
    if worse_high > limit:
        return Status.INCONCLUSIVE.value
    return Status.UNCHANGED.value


def judge_groups(rows: JoinedRows, launches: MatchedLaunches, worse_sign: Floats, gated: Bools,
                 relative: Floats, absolute: Floats, confidence: float) -> GroupVerdicts:
    """Judge every group of repeated kernel launches on each gated time-like metric. ``worse_sign`` and
    ``gated`` are per metric code (``policies.MetricRules``), ``relative`` and ``absolute`` per joined row
    (``series_thresholds.row_limits``: a series may have a threshold of its own)."""
    verdicts = GroupVerdicts.none(len(rows), launches.count)
    metrics = [code for code, name in enumerate(rows.names)
               if code < len(gated) and gated[code] and is_time_like(name)]
    if not metrics or launches.count < 2:
        return verdicts
    group = kernel_groups(launches)
    sizes = np.bincount(group[group >= 0], minlength=1)
    if not (sizes >= 2).any():
        return verdicts
    repeated = np.where(group >= 0, sizes[np.maximum(group, 0)] >= 2, False)
    judged_groups: dict[int, int] = {}  # kernel group -> the id shown (in order of judging)
    found_statuses: set[str] = set()
    for code in metrics:
        selected = np.flatnonzero((rows.metric_code == code) & repeated[rows.launch_id])
        if not selected.size:
            continue
        row_group = group[rows.launch_id[selected]]
        order = np.argsort(row_group, kind="stable")
        selected, row_group = selected[order], row_group[order]
        starts = np.flatnonzero(np.r_[True, row_group[1:] != row_group[:-1]])
        for members in np.split(selected, starts[1:]):
            base = rows.baseline[members]
            cur = rows.current[members]
            base = base[np.isfinite(base) & (base > 0)]
            cur = cur[np.isfinite(cur) & (cur > 0)]
            if interval_rank(base.size, cur.size, confidence) < 1:
                continue  # too few samples: launch by launch, as a single launch
            found = shift_interval(np.log(base), np.log(cur), confidence)
            if found is None:
                continue
            estimate, low, high = (math.expm1(v) for v in found)
            median_base = median(base)
            shown = judged_groups.setdefault(int(group[rows.launch_id[members[0]]]), len(judged_groups))
            verdicts.group[members] = shown
            verdicts.n_baseline[members] = base.size
            verdicts.n_current[members] = cur.size
            verdicts.median_baseline[members] = median_base
            verdicts.median_current[members] = median(cur)
            verdicts.estimate[members] = estimate
            verdicts.low[members] = low
            verdicts.high[members] = high
            status = group_status(low, high, float(worse_sign[code]),
                                  _limit(float(relative[members[0]]), float(absolute[members[0]]), median_base))
            verdicts.status[members] = status
            found_statuses.add(status)
    for kernel_group, shown in judged_groups.items():
        verdicts.launch_group[group == kernel_group] = shown
    return verdicts._replace(inconclusive=Status.INCONCLUSIVE.value in found_statuses)
