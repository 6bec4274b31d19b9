"""Verdict policies: each rule that turns joined values into statuses, as a function of its own.

Every policy is vectorized over the rows of a comparison (one row per launch and metric), their
statuses held as codes (``codes.STATUS_CODE``), and leaves its inputs alone; ``judge_rows`` applies
them in order, each later rule overriding the earlier ones, ``launch_status`` rolls rows up into
launches, and ``refuse_if_nothing_comparable`` stops a comparison that compared nothing.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import NamedTuple

import numpy as np

from perfgate.compare.arrays import Bools, Floats, Ints, Objects, StatusCodes
from perfgate.compare.codes import STATUS_CODE, is_status, status_filled
from perfgate.compare.joining import JoinedRows
from perfgate.compare.matching import BASELINE_ONLY, CURRENT_ONLY, MatchedLaunches
from perfgate.compare.options import BENCHMARK_TIME_METRIC, TIME_METRIC
from perfgate.compare.repeats import GroupVerdicts
from perfgate.compare.series_thresholds import RowLimits
from perfgate.compare.statistics import mann_whitney_p
from perfgate.errors import InputError
from perfgate.metrics import DRAM_BYTE_METRICS, TRAFFIC_FLOOR_SHARE, Direction, Threshold, can_fail, direction_of
from perfgate.vocabulary import KIND_BENCHMARK, STATUS_ORDER, Status

_WORSE_SIGN = {Direction.LOWER_IS_BETTER: 1.0, Direction.HIGHER_IS_BETTER: -1.0}
_UNCOMPARABLE = (Status.NO_DATA, Status.NEW, Status.MISSING)
_COMPARED = (Status.REGRESSION, Status.IMPROVEMENT, Status.UNCHANGED)


class MetricRules(NamedTuple):
    """Per metric code: what the thresholds and directions say. Index with a row's metric code.

    ``worse_sign`` is +1 where a higher value is worse, -1 where a lower one is, 0 for a neutral
    metric; ``gated`` says whether a change can fail the gate; ``relative``/``absolute`` are the
    limits, -1 where not given; ``floor`` the value a row may not fall below, NaN where none.
    """

    worse_sign: Floats
    gated: Bools
    relative: Floats
    absolute: Floats
    floor: Floats | None = None


def metric_rules(names: Sequence[str], thresholds: Mapping[str, Threshold]) -> MetricRules:
    """The rules of each metric in ``names`` (in code order). A metric without a threshold, or with
    a neutral direction, never gates: it is information."""
    found = [thresholds.get(name) for name in names]
    sign = np.array([_WORSE_SIGN.get(direction_of(name), 0.0) for name in names], dtype=float)
    gating = np.array([can_fail(name, t) for name, t in zip(names, found, strict=True)], dtype=bool)
    # A floor alone gates on the floor alone: no change is past a relative limit of infinity.
    floor_only = [t is not None and t.floor is not None and t.relative is None and t.absolute is None for t in found]
    relative = [math.inf if alone else t.relative if t is not None and t.relative is not None else -1.0
                for t, alone in zip(found, floor_only, strict=True)]
    absolute = [t.absolute if t is not None and t.absolute is not None else -1.0 for t in found]
    floor = [t.floor if t is not None and t.floor is not None else math.nan for t in found]
    return MetricRules(worse_sign=sign, gated=gating, relative=np.array(relative, dtype=float),
                       absolute=np.array(absolute, dtype=float), floor=np.array(floor, dtype=float))


def below_floor(status: StatusCodes, gated: Bools, current: Floats, floor: Floats) -> StatusCodes:
    """A compared value below its metric's floor (``>=60``) is a regression, whatever its change."""
    compared = np.isin(status, [STATUS_CODE[s] for s in (*_COMPARED, Status.INCONCLUSIVE)])
    with np.errstate(invalid="ignore"):
        below = gated & compared & (current < floor)  # False where there is no floor (NaN)
    return _override(status, below, Status.REGRESSION)


def beyond_limits(delta: Floats, change: Floats, relative: Floats, absolute: Floats) -> Bools:
    """A change counts only when it exceeds *every* limit given (relative AND absolute; -1: none)."""
    # In place, the magnitude taken once: a row a limit, 7.5M rows at 500k launches with derived metrics.
    magnitude = np.abs(delta)
    beyond: Bools = magnitude > 0
    beyond &= (np.abs(change) > relative) | ~(relative >= 0)  # a NaN limit is none, as a negative one
    beyond &= (magnitude > absolute) | ~(absolute >= 0)
    return beyond


def threshold_status(delta: Floats, change: Floats, worse_sign: Floats, relative: Floats,
                     absolute: Floats) -> StatusCodes:
    """Threshold crossing: beyond the limits in the worse direction is a regression, in the better one
    an improvement; anything else (NaN included) is unchanged."""
    beyond = beyond_limits(delta, change, relative, absolute)
    worse = delta * worse_sign  # > 0 means worse
    status = status_filled(len(delta), Status.UNCHANGED)
    status[beyond & (worse > 0)] = STATUS_CODE[Status.REGRESSION]
    status[beyond & (worse < 0)] = STATUS_CODE[Status.IMPROVEMENT]
    return status


def _override(status: StatusCodes, where: Bools, value: Status) -> StatusCodes:
    """``status`` with ``value`` where ``where`` holds; the input is left alone (and returned if nothing changes)."""
    if not where.any():
        return status
    judged: StatusCodes = status.copy()
    judged[where] = STATUS_CODE[value]
    return judged


def info_never_gates(status: StatusCodes, gated: Bools) -> StatusCodes:
    """A metric that does not gate (threshold off or absent, or neutral direction) is information."""
    return _override(status, ~gated, Status.INFO)


def no_data(status: StatusCodes, baseline: Floats, current: Floats) -> StatusCodes:
    """A value missing on either side cannot be compared: "no data"."""
    return _override(status, np.isnan(baseline) | np.isnan(current), Status.NO_DATA)


def one_sided(status: StatusCodes, side: Objects, launch_id: Ints | None = None) -> StatusCodes:
    """A launch in the baseline only is "missing"; in the current run only, "new". ``side`` is per
    launch; with ``launch_id``, ``status`` is per row of those launches."""
    missing, new = side == BASELINE_ONLY, side == CURRENT_ONLY
    if launch_id is not None:
        missing, new = missing[launch_id], new[launch_id]
    return _override(_override(status, missing, Status.MISSING), new, Status.NEW)


def smallest_p(baseline_rounds: int, current_rounds: int) -> float:
    """The smallest p-value the significance test (``mann_whitney_p``) can give samples of these sizes: that of
    two samples apart, every value of one above every value of the other."""
    return mann_whitney_p(range(baseline_rounds), range(baseline_rounds, baseline_rounds + current_rounds))


def cannot_be_significant(baseline: Sequence[float], current: Sequence[float], significance: float) -> bool:
    """Whether two benchmarks' raw timings are too few for any shift to reach ``significance`` (5 rounds a side:
    the smallest p is 0.0122, above 0.01; 6 a side, 0.0051; pytest-benchmark's minimum is 5 rounds)."""
    return not math.isnan(smallest_p(len(baseline), len(current))) and smallest_p(
        len(baseline), len(current)) >= significance


def insignificant_to_unchanged(status: StatusCodes, is_benchmark_time: Bools, names: Objects, launch_id: Ints,
                               base_samples: Mapping[str, Sequence[float]],
                               cur_samples: Mapping[str, Sequence[float]], significance: float,
                               relative: Floats | None = None) -> StatusCodes:
    """A benchmark's time change with raw timings on both sides must also be significant
    (Mann-Whitney p below ``significance``); otherwise a speed-up is unchanged, and so is a slowdown of the
    fastest round alone (one lucky baseline round). A slowdown is never passed where the rounds cannot tell:
    where the timings are too few for any shift to reach that significance (``cannot_be_significant``), it stays
    a regression when every current round is slower than every baseline round by more than the row's
    ``relative`` limit (complete separation, a large effect: no significance test is needed to see a test 6x
    slower), and is inconclusive otherwise; where the test could decide but did not, it is inconclusive when the
    rounds' median moved past the limit too (one baseline round slowed by load can keep a test 1.5x slower
    above p 0.01 at 7 rounds a side). ``names[launch_id]`` is each row's benchmark name."""
    insignificant = np.zeros(len(status), dtype=bool)
    undecided = np.zeros(len(status), dtype=bool)
    candidates = np.flatnonzero(is_benchmark_time)  # few rows, or none: the statuses of those only are read
    moved = candidates[is_status(status[candidates], Status.REGRESSION, Status.IMPROVEMENT)]
    slower = is_status(status, Status.REGRESSION)
    for index in moved:
        name = names[launch_id[index]]
        if name in base_samples and name in cur_samples:
            base, cur = base_samples[name], cur_samples[name]
            p_value = mann_whitney_p(base, cur)
            if math.isnan(p_value) or p_value < significance:
                continue
            limit = max(float(relative[index]), 0.0) if relative is not None else 0.0
            if not slower[index]:
                insignificant[index] = True
            elif cannot_be_significant(base, cur, significance):
                undecided[index] = not min(cur) > max(base) * (1.0 + limit)
            else:
                undecided[index] = bool(np.median(cur) > np.median(base) * (1.0 + limit))
                insignificant[index] = not undecided[index]
    return _override(_override(status, insignificant, Status.UNCHANGED), undecided, Status.INCONCLUSIVE)


def repeated_launches_as_one(status: StatusCodes, groups: GroupVerdicts) -> StatusCodes:
    """A gated row of a kernel launched repeatedly takes the verdict of its group, judged on the samples
    of all its launches at once (``repeats``), instead of its own n-th launch against the n-th, except a
    launch that moved alone at a call site that moved (``alone``): its own row stays a regression; and a launch
    that moved alone once (``lone``: nothing tells it from interference) is inconclusive where its group is not
    worse. Rows that are not comparable (no data, missing, new) keep their status."""
    grouped = np.flatnonzero(groups.grouped())
    if not grouped.size:
        return status
    where = grouped[is_status(status[grouped], *_COMPARED)]
    judged: StatusCodes = status.copy()
    judged[where] = groups.status[groups.series[where]]
    lone = where[groups.lone[where]]
    judged[lone] = np.minimum(judged[lone], STATUS_CODE[Status.INCONCLUSIVE])  # codes: the worst is the smallest
    judged[where[groups.alone[where]]] = STATUS_CODE[Status.REGRESSION]
    return judged


def absolute_floors(rows: JoinedRows, rules: MetricRules, absolute: Floats | None = None) -> Floats:
    """Per row, its absolute limit: the threshold's (``absolute``, per row, where a series has a threshold of its
    own: ``series_thresholds.row_limits``), and for DRAM bytes at least ``TRAFFIC_FLOOR_SHARE`` of the launch's
    DRAM traffic (read + written, the baseline's where known): a few KB read more by a kernel that writes 241 MB
    is cache and refresh noise, not a new access pattern (docs/matching.md, "Floors")."""
    floors: Floats = (rules.absolute[rows.metric_code] if absolute is None else absolute).copy()
    dram = np.isin(rows.metric_code, [rows.names.index(m) for m in DRAM_BYTE_METRICS if m in rows.names])
    if not dram.any():
        return floors
    traffic = np.zeros(int(rows.launch_id.max(initial=-1)) + 1)
    for side in (rows.current, rows.baseline):  # the baseline's wins where both have the value
        known = dram & np.isfinite(side)
        by_launch = np.zeros_like(traffic)
        np.add.at(by_launch, rows.launch_id[known], side[known])
        has = np.zeros(len(traffic), dtype=bool)
        has[rows.launch_id[known]] = True
        traffic = np.where(has, by_launch, traffic)
    floors[dram] = np.maximum(floors[dram], TRAFFIC_FLOOR_SHARE * traffic[rows.launch_id[dram]])
    return floors


def speed_up_trade_off(status: StatusCodes, gated: Bools, launch_id: Ints,
                       is_time: Bools) -> tuple[StatusCodes, Bools]:
    """A kernel that got clearly faster does not fail on a work counter that grew: more instructions
    for less time is a trade-off its author made. Those rows turn into information, ungated.
    ``is_time`` marks the rows of the kernel time metric."""
    time_rows = np.flatnonzero(is_time)
    faster = launch_id[time_rows[is_status(status[time_rows], Status.IMPROVEMENT)]]
    if not faster.size:
        return status, gated
    traded = np.isin(launch_id, faster)
    traded[traded] = is_status(status[traded], Status.REGRESSION)
    return _override(status, traded, Status.INFO), gated & ~traded


def launch_status(status: StatusCodes, gated: Bools, launch_id: Ints, side: Objects) -> StatusCodes:
    """A launch's status is the worst of its comparable gated rows; "no data" when it has gated rows
    but none comparable; "unchanged" when nothing about it gates; "missing"/"new" by side."""
    count = len(side)
    gated_rows = np.flatnonzero(gated)  # only gated rows count: their statuses are the only ones read
    gated_status = status[gated_rows]
    comparable = ~is_status(gated_status, *_UNCOMPARABLE)
    # A code is its status's place in STATUS_ORDER: the worst status is the smallest code.
    worst = np.full(count, len(STATUS_ORDER), dtype=np.int8)
    np.minimum.at(worst, launch_id[gated_rows[comparable]], gated_status[comparable])
    has_gated = np.zeros(count, dtype=bool)
    has_gated[launch_id[gated_rows]] = True
    judged = np.where(worst < len(STATUS_ORDER), worst,
                      np.where(has_gated, STATUS_CODE[Status.NO_DATA], STATUS_CODE[Status.UNCHANGED])).astype(np.int8)
    return one_sided(judged, side)


def refuse_if_nothing_comparable(launch_statuses: StatusCodes, status: StatusCodes, gated: Bools,
                                 compared: Sequence[str], base_name: str, cur_name: str) -> None:
    """A comparison that compared nothing is refused, whatever the shape of its inputs (never a silent pass):

    - both sides have launches but none matches (different programs, or every kernel renamed past the rules);
    - launches match but no compared metric gates (every threshold off, or only launch facts asked for);
    - launches match and metrics gate, yet no gated metric has values on both sides (wrong metric names,
      or a CSV page without them).

    A side with no launch at all is not refused: that is a first run against no baseline ("new")."""
    matched = ~is_status(launch_statuses, Status.MISSING, Status.NEW)
    if not matched.any():
        missing = int(is_status(launch_statuses, Status.MISSING).sum())
        new = int(is_status(launch_statuses, Status.NEW).sum())
        if missing and new:
            raise InputError(cur_name, f"nothing to compare: no launch matches one of the baseline {base_name} "
                                       f"({missing} missing, {new} new: different kernels, or renamed kernels "
                                       "that no rule paired)",
                             "compare runs of the same program; for renamed kernels add [tool.perfgate] "
                             "kernel_aliases, or make a new baseline")
        return
    gated_status = status[gated]
    if not gated_status.size:
        names = ", ".join(compared)
        raise InputError(cur_name, f"nothing to compare: none of the compared metrics ({names}) gates "
                                   f"(baseline {base_name})",
                         "compare a metric with a threshold: see --metrics and --threshold METRIC=SPEC")
    if is_status(gated_status, Status.NO_DATA).all():
        names = ", ".join(compared)
        raise InputError(cur_name, f"nothing to compare: none of the metrics ({names}) has values on both sides "
                                   f"(baseline {base_name})",
                         "check --metrics/--threshold names; for ncu CSV use --page raw or --print-metric-name name, "
                         "or compare the .ncu-rep")


class JudgedRows(NamedTuple):
    """The verdict on each joined row: its status (a code), whether it gates, and the change behind it."""

    status: StatusCodes
    gated: Bools
    delta: Floats
    change: Floats


def past_relative_limits(rows: JoinedRows, rules: MetricRules, relative: Floats) -> Bools:
    """Per row, whether its own change is past its relative limit (``relative``, per row; -1 or NaN: none) in the
    worse direction (as a single launch's), whatever its absolute limit: the part of ``own_regressions`` that its
    callers share, made once (three calls over 7.5M rows at 500k launches with derived metrics)."""
    delta, change = rows.changes()
    # ``beyond_limits``'s test that the change is not nothing is implied: a change in the worse direction is not 0.
    past: Bools = np.abs(change) > relative
    past |= ~(relative >= 0)  # a NaN limit is none, as a negative one
    past &= delta * rules.worse_sign[rows.metric_code] > 0
    return past


def past_absolute_limits(rows: JoinedRows, absolute: Floats, past_relative: Bools) -> Bools:
    """``own_regressions`` from its shared part: the rows ``past_relative`` (``past_relative_limits``) whose change is
    past ``absolute`` (per row; -1 or NaN: none) too."""
    delta, _ = rows.changes()
    past: Bools = np.abs(delta) > absolute
    past |= ~(absolute >= 0)
    past &= past_relative
    return past


def own_regressions(rows: JoinedRows, rules: MetricRules, limits: RowLimits) -> Bools:
    """Per row, whether its own change is past its limits (``limits``, per row) in the worse direction (as a
    single launch's): ``threshold_status``'s regression, without its statuses."""
    return past_absolute_limits(rows, limits.absolute, past_relative_limits(rows, rules, limits.relative))


def judge_rows(rows: JoinedRows, rules: MetricRules, launches: MatchedLaunches,
               base_samples: Mapping[str, Sequence[float]], cur_samples: Mapping[str, Sequence[float]],
               significance: float, groups: GroupVerdicts | None = None,
               limits: RowLimits | None = None) -> JudgedRows:
    """Apply the row policies in order; a later one overrides an earlier one. ``groups``: the verdicts on
    repeated launches (``repeats.judge_groups``), if any; ``limits``: each row's relative limit and absolute floor
    (a series' own threshold where it has one, ``series_thresholds``; the floors of ``absolute_floors``), else
    the metric's thresholds."""
    delta, change = rows.changes()
    code = rows.metric_code
    relative, absolute = (limits.relative, limits.absolute) if limits is not None else (rules.relative[code],
                                                                                        rules.absolute[code])
    status = threshold_status(delta, change, rules.worse_sign[code], relative, absolute)
    gated = rules.gated[code]
    status = info_never_gates(status, gated)
    status = no_data(status, rows.baseline, rows.current)
    status = one_sided(status, launches.side, rows.launch_id)
    is_benchmark_time = (launches.kinds == KIND_BENCHMARK)[rows.launch_id] & rows.is_metric(BENCHMARK_TIME_METRIC)
    status = insignificant_to_unchanged(status, is_benchmark_time, launches.frame["kernel"],
                                        rows.launch_id, base_samples, cur_samples, significance, relative)
    if groups is not None:
        status = repeated_launches_as_one(status, groups)
    status, gated = speed_up_trade_off(status, gated, rows.launch_id, rows.is_metric(TIME_METRIC))
    floor = limits.floor if limits is not None and limits.floor is not None else (
        rules.floor[code] if rules.floor is not None else None)
    if floor is not None:
        status = below_floor(status, gated, rows.current, floor)
    return JudgedRows(status=status, gated=gated, delta=delta, change=change)
