"""Repeated launches: a kernel launched many times is one kernel with many samples of each gated metric.

Launches of the same kernel identity (the identity both sides were matched by: demangled name, grid, block,
shared memory), in the same NVTX region, form a *group*. For every gated metric, time and work counters alike,
the group's baseline values and current values are two samples, and the group is judged once, as a whole, on
the shift between them (``statistics.shift_interval``, on log values so the shift is a ratio):

- 6 or more launches a side (an interval rule): a regression when the whole interval lies beyond the metric's
  limit in the worse direction, an improvement when it lies beyond it in the better direction, *inconclusive*
  when it reaches beyond the limit in the worse direction without lying beyond it, else unchanged;
- 2 to 5 launches on the smaller side (the small-group rule): the Hodges-Lehmann estimate itself against the
  limit, as a single launch's change would be (an interval at 95% needs 4 a side and is too wide below 6 to
  decide; the estimate of a few launches is already steadier than one launch);
- one launch a side: launch by launch.

The limit is the threshold's relative part, or its absolute part (the floor) relative to the baseline's median,
whichever is larger (the threshold is a series' own where it has one: ``series_thresholds``); for a group the
floor is divided by the square root of the smaller side's launch count: it guards against one launch's jitter,
which averages out over n launches, so a tightly measured shift on a short kernel is judged by its interval. A DRAM
byte floor says what size of change matters and stands whole (``metrics.RELEVANCE_FLOOR_METRICS``). Exact counters compare exactly: identical values give an interval of
one point. When both sides hold the same number of launches, each launch is also tested alone (``alone``).
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from perfgate.columns import Array, factorize, median
from perfgate.compare.arrays import Bools, Floats, Ints, StatusCodes
from perfgate.compare.codes import distinct_coded, status_codes
from perfgate.compare.joining import JoinedRows
from perfgate.compare.matching import MATCH_KERNEL, MatchedLaunches
from perfgate.compare.timeline_pairs import paired_shift
from perfgate.compare.alone import moved_alone
from perfgate.compare.statistics import shift_interval
from perfgate.metrics import RELEVANCE_FLOOR_METRICS, is_time_like
from perfgate.vocabulary import KIND_KERNEL, Status

INTERVAL_LAUNCHES = 6  # from this many launches on the smaller side, the interval decides; below, the estimate


class GroupVerdicts(NamedTuple):
    """The groups judged as a whole: one verdict per judged series (a group on one gated metric), and per joined
    row the series it was judged in.

    ``series``: per joined row, its series' index into the per-series arrays; a row judged with no group points
    at the last entry, which holds "not judged" (group -1, no samples, NaN, status code -1). Per series: ``group``
    (the group's id, shown in reports), the sample sizes, the medians of both sides, the estimated relative change
    with its interval, ``status`` (a code: ``codes.STATUS_CODE``) and ``excused`` (the interval reaches beyond the
    relative limit but not beyond the floor).
    Per joined row: ``alone`` (the launch moved alone at a call site that moved: its own row is a regression whatever
    the group's verdict) and ``lone`` (it moved alone once, with nothing to tell it from interference: inconclusive).
    Per launch id: ``launch_group``, the group of every launch of a judged kernel (one-sided launches included),
    else -1. A series' verdict is held once, not on each of its rows (a kernel launched 100,000 times is one entry).
    """

    series: Ints
    group: Ints
    n_baseline: Ints
    n_current: Ints
    median_baseline: Floats
    median_current: Floats
    estimate: Floats
    low: Floats
    high: Floats
    status: StatusCodes
    excused: Bools
    alone: Bools
    lone: Bools
    launch_group: Ints
    inconclusive: bool = False  # some group's verdict is inconclusive

    @classmethod
    def of(cls, series: Ints, judged: list[_Series], alone: Bools, lone: Bools, launch_group: Ints) -> GroupVerdicts:
        """The verdicts of the ``judged`` series, and the "not judged" entry after them."""
        def column(values: list[float] | list[int] | list[bool], missing: float | int | bool, dtype: type) -> Array:
            return np.array([*values, missing], dtype=dtype)

        statuses = [s.judged.status for s in judged]
        return cls(series=series, group=column([s.group for s in judged], -1, np.int64),
                   n_baseline=column([s.n_baseline for s in judged], 0, np.int64),
                   n_current=column([s.n_current for s in judged], 0, np.int64),
                   median_baseline=column([s.median_baseline for s in judged], np.nan, np.float64),
                   median_current=column([s.median_current for s in judged], np.nan, np.float64),
                   estimate=column([s.judged.estimate for s in judged], np.nan, np.float64),
                   low=column([s.judged.low for s in judged], np.nan, np.float64),
                   high=column([s.judged.high for s in judged], np.nan, np.float64),
                   status=np.append(status_codes(statuses), np.int8(-1)),
                   excused=column([s.judged.excused for s in judged], False, bool),
                   alone=alone, lone=lone, launch_group=launch_group,
                   inconclusive=Status.INCONCLUSIVE.value in statuses)

    @classmethod
    def none(cls, rows: int, launches: int) -> GroupVerdicts:
        return cls.of(np.zeros(rows, dtype=np.int64), [], np.zeros(rows, dtype=bool), np.zeros(rows, dtype=bool),
                      np.full(launches, -1, dtype=np.int64))

    def grouped(self) -> Bools:
        """Per joined row: judged with its group."""
        grouped: Bools = self.series < len(self.group) - 1
        return grouped

    @property
    def any(self) -> bool:
        return bool((self.launch_group >= 0).any())


def kernel_groups(launches: MatchedLaunches) -> Ints:
    """Per launch id, its group: same kernel, region, grid and block (the current run's configuration
    where the launch is in it); -1 for a launch that is not a kernel's."""
    frame = launches.frame
    codes = np.zeros(launches.count, dtype=np.int64)
    for coded, _ in (distinct_coded(frame, MATCH_KERNEL), distinct_coded(frame, "region"),
                     launches.either_coded("grid"), launches.either_coded("block")):
        found, uniques = factorize(coded)  # numbered in order of first appearance, as the values would be
        codes = codes * (len(uniques) + 1) + found
    _, group = np.unique(codes, return_inverse=True)
    grouped: Ints = np.where(launches.kinds == KIND_KERNEL, group.astype(np.int64), -1)
    return grouped


def launch_spread(base: Floats, cur: Floats) -> float:
    """The measured spread of one launch's value in a group: a robust standard deviation (1.4826 x the median
    absolute deviation, each side's values from their own median, both sides pooled), which one disturbed launch
    does not move."""
    deviations = np.concatenate([np.abs(base - np.median(base)), np.abs(cur - np.median(cur))])
    return 1.4826 * float(np.median(deviations))


def _limit(relative: float, absolute: float, baseline: float, launches: int, resolution: float = 0.0,
           spread: float | None = None, averaged: bool = True) -> float:
    """The relative change a group must exceed: the relative limit, or the floor relative to the baseline's median,
    whichever is larger (-1: not given). The floor guards against one launch's jitter, which averages out over n
    launches: the absolute limit, or the jitter the group's launches showed (``spread``) where smaller, over the
    square root of the launch count, never below the values' ``resolution``. The measured spread is used from
    INTERVAL_LAUNCHES launches a side, where the interval carries the noise too; a smaller group is judged on its
    estimate alone, and there the absolute limit stands. A shift of one step of the resolution is rounding, which
    no launch count averages out; the slack keeps a shift of exactly one step (3 against 2 µs) from passing it by
    float rounding. A floor that says what size of change matters (``averaged`` False: ``RELEVANCE_FLOOR_METRICS``)
    stands whole: a shift measured ever so well is still too small to matter below it."""
    limit = max(relative, 0.0)
    if baseline > 0:
        jitter = absolute
        if averaged and spread is not None and absolute >= 0 and launches >= INTERVAL_LAUNCHES:
            jitter = min(absolute, spread)
        floor = jitter / np.sqrt(max(launches, 1) if averaged else 1) if absolute >= 0 else 0.0
        limit = max(limit, max(floor, resolution * (1 + 1e-9)) / baseline)
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


class _Judged(NamedTuple):
    """One group's verdict on one metric."""

    status: str
    estimate: float
    low: float
    high: float
    excused: bool


def _judge(base: Floats, cur: Floats, worse_sign: float, relative: float, floor: float,
           confidence: float, resolution: float = 0.0, averaged: bool = True) -> _Judged | None:
    """A group's verdict on one metric from its positive values, in any order (every statistic of them is of the
    samples as sets); None when too few (launch by launch)."""
    smaller = min(base.size, cur.size)
    if smaller < 2:
        return None
    found = shift_interval(np.log(base), np.log(cur), confidence)
    if found is None:
        estimate = float(np.median(np.subtract.outer(np.log(cur), np.log(base))))
        low = high = estimate
    else:
        estimate, low, high = found
    estimate, low, high = (math.expm1(v) for v in (estimate, low, high))
    limit = _limit(relative, floor, median(base), smaller, resolution, launch_spread(base, cur), averaged)
    decisive = (estimate, estimate) if smaller < INTERVAL_LAUNCHES or found is None else (low, high)
    status = group_status(*decisive, worse_sign, limit)
    floor_passed = status == Status.INCONCLUSIVE.value and estimate * worse_sign <= limit and group_status(
        *decisive, worse_sign, _limit(relative, floor, median(base), smaller, resolution, averaged=averaged)) != status
    if floor_passed:
        # The measured jitter set a floor below the absolute one (a short kernel), and the interval reaches past
        # it while the estimate does not: nothing was seen to move, and the absolute floor passes it (said).
        status = Status.UNCHANGED.value
    if base.size == cur.size and base.min() == cur.min() and base.max() == cur.max() and np.array_equal(
            np.sort(base), np.sort(cur)):  # the extremes first: two runs' 100,000 launches are not sorted
        # The same values read twice (a trace against its own baseline): no shift, whatever the interval, which is
        # as wide as the launches' spread (a kernel's 6 launches of 479-604 µs: ±14%) and would say inconclusive.
        status = Status.UNCHANGED.value
    worse_low = min(decisive[0] * worse_sign, decisive[1] * worse_sign)
    excused = floor_passed or (status != Status.REGRESSION.value and relative >= 0 and worse_low > relative)
    return _Judged(status, estimate, low, high, excused)


def _series(rows: JoinedRows, group: Ints, repeated: Bools, metrics: list[int]) -> list[Ints]:
    """The rows of each (gated metric, group of repeated launches), in the order they are judged: by metric code,
    then group; within one, in occurrence order."""
    gated = np.zeros(len(rows.names), dtype=bool)
    gated[metrics] = True
    selected = np.flatnonzero(gated[rows.metric_code] & repeated[rows.launch_id])
    if not selected.size:
        return []
    key = rows.metric_code[selected] * (int(group.max()) + 1) + group[rows.launch_id[selected]]
    order = np.argsort(key, kind="stable")
    selected, key = selected[order], key[order]
    starts = np.flatnonzero(np.r_[True, key[1:] != key[:-1]])
    return np.split(selected, starts[1:])


class _Series(NamedTuple):
    """A judged series: its group's shown id, its samples' sizes and medians, and its verdict."""

    group: int
    n_baseline: int
    n_current: int
    median_baseline: float
    median_current: float
    judged: _Judged


def _judge_pairs(base: Floats, cur: Floats, worse_sign: float, relative: float, floor: float, confidence: float,
                 resolution: float) -> _Judged:
    """A timeline group whose launches pair up, judged on the per-launch differences (``timeline_pairs``): the
    limit in nanoseconds is the relative one of the baseline's median, the floor or one time step, whichever is
    larger, so rounding to a whole microsecond is never a change."""
    center = median(base)
    estimate, low, high = (value / center for value in paired_shift(base, cur, confidence))
    limit = _limit(relative, floor, center, base.size, resolution)
    status = group_status(low, high, worse_sign, limit)
    worse_low = min(low * worse_sign, high * worse_sign)
    excused = status != Status.REGRESSION.value and relative >= 0 and worse_low > relative
    return _Judged(status, estimate, low, high, excused)


def judge_groups(rows: JoinedRows, launches: MatchedLaunches, worse_sign: Floats, gated: Bools,
                 relative: Floats, floors: Floats, past_limit: Bools, confidence: float,
                 resolution: float = 0.0, pairs: bool = False) -> GroupVerdicts:
    """Judge every group of repeated kernel launches on each gated metric. ``worse_sign`` and ``gated`` are per
    metric code (``policies.MetricRules``); ``relative`` and ``floors`` (the limits: a series may have a threshold
    of its own, ``series_thresholds.row_limits``; the floors of ``policies.absolute_floors``) and ``past_limit``
    (the row's own change is past its limits in the worse direction) are per row."""
    metrics = [code for code in range(len(rows.names)) if code < len(gated) and gated[code]]
    if not metrics or launches.count < 2:
        return GroupVerdicts.none(len(rows), launches.count)
    group = kernel_groups(launches)
    sizes = np.bincount(group[group >= 0], minlength=1)
    if not (sizes >= 2).any():
        return GroupVerdicts.none(len(rows), launches.count)
    repeated = np.where(group >= 0, sizes[np.maximum(group, 0)] >= 2, False)
    judged_groups: dict[int, int] = {}  # kernel group -> the id shown (in order of judging)
    judged: list[_Series] = []
    series = np.full(len(rows), -1, dtype=np.int64)
    alone = np.zeros(len(rows), dtype=bool)
    lone = np.zeros(len(rows), dtype=bool)
    for members in _series(rows, group, repeated, metrics):
        code = int(rows.metric_code[members[0]])
        base_all, cur_all = rows.baseline[members], rows.current[members]
        base_ok = np.isfinite(base_all) & (base_all > 0)
        cur_ok = np.isfinite(cur_all) & (cur_all > 0)
        base, cur = base_all[base_ok], cur_all[cur_ok]
        sign = float(worse_sign[code])
        floor = float(np.median(floors[members]))
        group_relative = float(relative[members[0]])  # one series: the same kernel, region and metric
        paired = base_ok & cur_ok
        # The statistics of a group's samples are of them as sets: sorted once, each median is quickly found.
        base_sorted, cur_sorted = np.sort(base), np.sort(cur)
        if pairs and base.size == cur.size == int(paired.sum()) >= 2:  # timeline: the same launches on both sides
            verdict: _Judged | None = _judge_pairs(base, cur, sign, group_relative, floor, confidence, resolution)
        else:
            verdict = _judge(base_sorted, cur_sorted, sign, group_relative, floor, confidence, resolution,
                             averaged=rows.names[code] not in RELEVANCE_FLOOR_METRICS)
        if verdict is None:
            continue
        shown = judged_groups.setdefault(int(group[rows.launch_id[members[0]]]), len(judged_groups))
        series[members] = len(judged)
        judged.append(_Series(shown, base.size, cur.size, median(base_sorted), median(cur_sorted), verdict))
        if base.size == cur.size == int(paired.sum()):  # the i-th launch of each side is the same call site
            moved = moved_alone(base_all[paired], cur_all[paired], sign, group_relative, past_limit[members[paired]],
                                floor, counted=not is_time_like(rows.names[code]))
            alone[members[paired]], lone[members[paired]] = moved.alone, moved.lone
    series[series < 0] = len(judged)  # the "not judged" entry, after the judged ones
    launch_group = np.full(launches.count, -1, dtype=np.int64)
    for kernel_group, shown in judged_groups.items():
        launch_group[group == kernel_group] = shown
    return GroupVerdicts.of(series, judged, alone, lone, launch_group)
