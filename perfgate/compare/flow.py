"""The comparison, stage by stage: check devices, match launches (renamed kernels paired), join values,
judge repeated launches as groups, judge rows, assemble."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from perfgate.columns import Columns, objects
from perfgate.compare.assemble import display_order, launch_table, result_table
from perfgate.compare.devices import check_devices
from perfgate.compare.replay import not_judged_across_replays, replay_change
from perfgate.compare.findings import finding_changes
from perfgate.compare.joining import JoinedRows, SideValues, join_metrics, metric_codes
from perfgate.compare.lone_single import LoneSingles, lone_single_launches, lone_single_notes
from perfgate.compare.matching import BOTH_SIDES, MatchedLaunches, match_launches
from perfgate.compare.notes import (
    alone_notes,
    lone_notes,
    floor_hidden_notes,
    floor_notes,
    traffic_floor_notes,
    comparison_notes,
    inconclusive_notes,
    launch_change_notes,
    launch_facts,
    rename_notes,
)
from perfgate.compare.arrays import Bools, Ints, StatusCodes
from perfgate.compare.codes import is_status
from perfgate.compare.options import TIME_METRIC, CompareOptions
from perfgate.compare.policies import (
    JudgedRows,
    MetricRules,
    absolute_floors,
    cannot_be_significant,
    smallest_p,
    past_absolute_limits,
    past_relative_limits,
    judge_rows,
    launch_status,
    metric_rules,
    refuse_if_nothing_comparable,
)
from perfgate.compare.repeats import GroupVerdicts, judge_groups
from perfgate.compare.series_thresholds import RowLimits, row_limits, shown_thresholds
from perfgate.compare.statistics import mann_whitney_p
from perfgate.compare.sources import (
    common_regions,
    check_same_source,
    for_measurement,
    is_timeline,
    module_loading_notes,
    region_why,
    time_resolution,
)
from perfgate.compare.outside import needs_outside_total, outside_totals
from perfgate.compare.replaced import (
    Replacement,
    find_replacements,
    judge_through_totals,
    replaced_launches,
    replacement_notes,
    unjudged_replacements,
)
from perfgate.compare.result import Comparison
from perfgate.compare.same_code import (
    CodeFacts,
    code_columns,
    code_facts,
    code_problem_notes,
    drift_judgement,
    same_code_judgement,
)
from perfgate.metrics import LAUNCH_CONFIG_METRICS
from perfgate.derived import REDUNDANT_WORK_RATIO
from perfgate.prepare import counted_flop, with_derived
from perfgate.regions import like_for_like_totals
from perfgate.table import (
    Measurement,
    device_label,
    devices,
    unusable_notes,
    unusable_records,
)
from perfgate.vocabulary import KIND_BENCHMARK, KIND_KERNEL, KIND_REGION, Status, total_label


def significance_notes(launch_frame: Columns, statuses: StatusCodes, baseline: Measurement, current: Measurement,
                       significance: float) -> list[str]:
    """Benchmarks compared without the significance test, because a side has no raw timings, or with too few
    rounds for it to decide a slowdown: say so (``statuses``: the launches' status codes, in ``launch_frame``'s
    order). ``--benchmark-save-data`` is advised only for a side that could have saved them: a baseline that is
    the median of recorded runs (the history's) has none to save."""
    base_samples, cur_samples = baseline.samples, current.samples
    kept = (launch_frame["kind"] == KIND_BENCHMARK) & ~is_status(statuses, Status.MISSING, Status.NEW)
    compared, compared_status = launch_frame[kept], statuses[kept]
    notes = []
    for name in dict.fromkeys(compared["kernel"].tolist()):
        lacking = [side for side, samples in (("baseline", base_samples), ("current run", cur_samples))
                   if len(samples.get(name, ())) < 2 and not (side == "baseline" and name in baseline.run_medians)]
        if lacking:
            notes.append(f"{name}: no significance test (raw timings missing in the {' and the '.join(lacking)}; "
                         "save them with pytest-benchmark's --benchmark-save-data): judged on the threshold alone")
            continue
        if name in baseline.run_medians:
            notes.append(f"{name}: no significance test (the baseline is the median of recorded runs, which keeps "
                         "no rounds): judged on the threshold alone")
            continue
        base, cur = base_samples[name], cur_samples[name]
        slower = is_status(compared_status[compared["kernel"] == name], Status.REGRESSION, Status.INCONCLUSIVE)
        if slower.any() and cannot_be_significant(base, cur, significance):
            notes.append(f"{name}: {len(base)} and {len(cur)} rounds cannot reach the significance limit p < "
                         f"{significance:g} (the smallest p-value they allow is {smallest_p(len(base), len(cur)):.4f}): "
                         "a slowdown past its limit fails only where every current round is slower than every "
                         "baseline round by more than the limit, else it is inconclusive; more rounds "
                         "(--benchmark-min-rounds) let the test decide")
        elif is_status(compared_status[compared["kernel"] == name], Status.INCONCLUSIVE).any():
            p_value = mann_whitney_p(base, cur)
            if p_value >= significance:  # NaN (too few rounds) is not
                notes.append(f"{name}: the median of its rounds moved {float(np.median(cur)) / float(np.median(base)) - 1.0:+.1%}, past "
                             f"its limit, but its rounds overlap (Mann-Whitney p {p_value:.4f}, not below "
                             f"{significance:g}): inconclusive, not passed; rerun it, or more rounds "
                             "(--benchmark-min-rounds) let the test decide")
    return notes


def one_sided_values(rows: JoinedRows, judged: JudgedRows, launches: MatchedLaunches,
                     baseline: Measurement, current: Measurement) -> list[tuple[str, str]]:
    """Gated values of matched launches that one side has and the other has not (ncu's ``n/a``, an unusable
    cell, a metric one input lacks), each as (launch, cause) with the reason the reader gave. Such a launch was not
    judged on that metric, so it must not read as passed."""
    one_sided = judged.gated & (np.isnan(rows.baseline) != np.isnan(rows.current))
    if one_sided.any():  # the side of those rows' launches only: a launch on one side only has no value on the other
        one_sided[one_sided] = launches.side[rows.launch_id[one_sided]] == BOTH_SIDES
    if not one_sided.any():
        return []
    reasons = {(r["kind"], r["kernel"], r["region"], r["ordinal"], r["metric"], side): r["reason"]
               for side, table in (("baseline", baseline), ("current run", current)) for r in unusable_records(table)}
    frame = launches.frame
    lines = []
    for index in np.flatnonzero(one_sided):
        launch = frame.row(int(rows.launch_id[index]))
        lacking = "baseline" if np.isnan(rows.baseline[index]) else "current run"
        kernel = str(launch["baseline_kernel"] if lacking == "baseline" else launch["kernel"])
        ordinal = int(launch["ordinal_b"] if lacking == "baseline" else launch["ordinal"])
        key = (str(launch["kind"]), kernel, str(launch["region"]), ordinal, str(rows.metric[index]), lacking)
        why = reasons.get(key, "not in that input")
        where = (total_label(str(launch["kernel"])) if launch["kind"] == KIND_REGION else
                 str(launch["kernel"]) + (f" [{launch['region']}]" if launch["region"] else "") + f" #{launch['ordinal']}")
        lines.append((where, f"{rows.metric[index]} has no value in the {lacking} ({why}): not judged"))
    return lines


class _Judgement(NamedTuple):
    """What the stages up to the launches' statuses found: the matched launches, the joined rows and their
    verdicts."""

    compared: tuple[str, ...]
    codes: dict[str, int]
    launches: MatchedLaunches
    base_side: SideValues
    cur_side: SideValues
    rows: JoinedRows
    rules: MetricRules
    limits: RowLimits
    floored: RowLimits
    past_relative: Bools  # per row: its own change is past its relative limit (``past_relative_limits``)
    past_floored: Bools  # per row: its own change is past its floored limits (``policies.own_regressions``)
    groups: GroupVerdicts
    judged: JudgedRows
    statuses: StatusCodes  # per launch
    cold_notes: list[str]
    replacements: list[Replacement]  # kernels missing and new in one region, judged through a total where one holds them
    resolution: float  # the traces' time step in ns; 0 where none is known
    code: CodeFacts | None  # each launch's code on both sides (same-code rule); None: no side knows its code
    drift_notes: list[str]  # the machine code's: what a codes file could not read, the same-code rule, the canary
    lone_singles: LoneSingles  # launches at a configuration run once, slower while the same code held (inconclusive)


def _judgement(baseline: Measurement, current: Measurement, options: CompareOptions,
               launches: MatchedLaunches) -> _Judgement:
    """Join the values of the ``launches`` matched and judge them: groups of repeated launches, then rows, then
    launches."""
    compared = options.compared_metrics()
    codes = metric_codes([*compared, *LAUNCH_CONFIG_METRICS])
    base_side = SideValues(baseline.table, launches.base_ids, codes)
    cur_side = SideValues(current.table, launches.cur_ids, codes)
    rows = join_metrics(base_side, cur_side, codes, compared, launches.kinds)
    rules = metric_rules(rows.names, options.effective_thresholds())
    # Each row's limits: its series' own threshold where it has one (``series_thresholds``), else its metric's;
    # ``floored`` raises the absolute ones to the DRAM traffic floors (``absolute_floors``).
    limits = row_limits(rows, rules.relative, rules.absolute, rules.gated, launches.frame["kernel"],
                        launches.frame["region"], options.series_thresholds, rules.floor, options.kernel_thresholds)
    floored = limits._replace(absolute=absolute_floors(rows, rules, limits.absolute))
    past_relative = past_relative_limits(rows, rules, floored.relative)  # ``limits``' relative ones too
    past_floored = past_absolute_limits(rows, floored.absolute, past_relative)
    resolution = time_resolution(baseline, current)
    groups = judge_groups(rows, launches, rules.worse_sign, rules.gated, floored.relative, floored.absolute,
                          past_floored, options.confidence, resolution, pairs=is_timeline(baseline) and is_timeline(current))
    judged = judge_rows(rows, rules, launches, baseline.samples, current.samples, options.significance, groups,
                        floored)
    judged, replacements = judge_through_totals(rows, judged, find_replacements(launches))
    code: CodeFacts | None = None
    drift_notes: list[str] = []
    if bool(baseline.code) != bool(current.code):  # a stored baseline or the history's reference keeps no code
        lacking = "baseline" if current.code else "current run"
        drift_notes.append(f"machine code: the {lacking} carries none (only .ncu-rep files, and traces with a "
                           "codes file beside them, read with --code-identity do): the same-code rule was not applied")
    elif baseline.code and current.code:  # the same-code rule, then the drift canary it feeds
        code = code_facts(launches, baseline, current, launch_facts(launches, base_side, cur_side, codes))
        kernels = launches.frame["kernel"].tolist()
        judged, code, drift_notes = same_code_judgement(rows, judged, code, kernels)
        judged, drift = drift_judgement(rows, judged, code, floored.relative, kernels)
        drift_notes += drift
    drift_notes = code_problem_notes(baseline, current) + drift_notes  # why some kernels carry no code, first
    judged, lone_singles = lone_single_launches(rows, judged, launches, code)
    cold_notes = module_loading_notes(baseline, current)
    statuses = launch_status(judged.status, judged.gated, rows.launch_id, launches.side)
    return _Judgement(compared, codes, launches, base_side, cur_side, rows, rules, limits, floored, past_relative,
                      past_floored, groups, judged, statuses, cold_notes, replacements, resolution, code, drift_notes,
                      lone_singles)


def _for_judging(side: Measurement, options: CompareOptions) -> Measurement:
    """``side`` with its derived metrics, computed from its raw counters at compare time, and without the counters
    only their formulas read (nothing judges those)."""
    return with_derived(side, options.compared_metrics(), options.declared_flops, keep_inputs=False)


def _judged(sides: list[Measurement], options: CompareOptions
            ) -> tuple[_Judgement, Measurement, Measurement, list[str]]:
    """The comparison of ``sides`` ([baseline, current]) with their derived metrics (``_for_judging``) judged
    (``_judgement``), with the sides it was judged on and the notes its total outside every region calls for
    (``_with_outside_totals``). ``sides`` is emptied before the join: the tables as given are no longer needed."""
    base, cur = _for_judging(sides[0], options), _for_judging(sides[1], options)
    launches = match_launches(base.table, cur.table, options.kernel_aliases)
    notes: list[str] = []
    if needs_outside_total(find_replacements(launches)):
        base, cur, launches, notes = _with_outside_totals(sides, base, cur, launches, options)
    sides.clear()
    return _judgement(base, cur, options, launches), base, cur, notes


def _with_outside_totals(sides: list[Measurement], base: Measurement, cur: Measurement, launches: MatchedLaunches,
                         options: CompareOptions) -> tuple[Measurement, Measurement, MatchedLaunches, list[str]]:
    """Where kernels were replaced outside every region and no total holds them: both sides with a total of the
    launches outside every region (``outside``, summed from ``sides`` as given, counters in) and derived again,
    their launches matched again, and the notes that total calls for; ``base`` and ``cur`` where no such total
    compares like with like."""
    baseline, current, notes = outside_totals(sides[0], sides[1])
    if baseline is sides[0] and current is sides[1]:
        return base, cur, launches, notes
    base, cur = _for_judging(baseline, options), _for_judging(current, options)
    # The totals added are regions: the kernel launches, and so the renamed kernels' pairs, are the same.
    return base, cur, match_launches(base.table, cur.table, options.kernel_aliases, launches.renames), notes


def _result_notes(found: _Judgement, results: Columns, order: Ints, options: CompareOptions) -> list[str]:
    """The notes the result rows call for: launches that moved alone, inconclusive groups, floors applied."""
    rows, judged, groups = found.rows, found.judged, found.groups
    notes = alone_notes(results, groups, order) + lone_notes(results, groups, order)
    notes += lone_single_notes(results, order, found.lone_singles)
    notes += inconclusive_notes(results, groups, options.confidence, order, found.resolution)
    notes += floor_notes(results, groups, order)
    excused = (past_absolute_limits(rows, found.limits.absolute, found.past_relative) & ~found.past_floored
               & is_status(judged.status, Status.UNCHANGED) & judged.gated)
    notes += traffic_floor_notes(results, excused, found.floored.absolute, order)
    # A kernel launch's duration judged alone, past the relative part of its limit but not its absolute floor.
    hidden = (found.past_relative & ~found.past_floored & ~groups.grouped() & (found.floored.absolute > 0)
              & (found.floored.relative >= 0) & (found.launches.kinds == KIND_KERNEL)[rows.launch_id]
              & rows.is_metric(TIME_METRIC) & is_status(judged.status, Status.UNCHANGED) & judged.gated)
    notes += floor_hidden_notes(results, hidden, order)
    return notes


def declared_work_notes(current: Measurement, declared: float | None) -> list[str]:
    """Where the test declares its useful work: the current run's kernel launches counted well above it (redundant
    work), or no FLOP counter to tell (the counters of ``+roofline`` were not collected)."""
    if declared is None:
        return []
    counted = counted_flop(current)
    if counted is None:
        return [f"declared work: the test declares {declared:.4g} FLOP but the current run's kernels hold no FLOP "
                "counters to count them by (collect the +roofline metrics)"]
    if counted > REDUNDANT_WORK_RATIO * declared:
        return [f"redundant work: the kernels counted {counted / declared:.2g}× the declared FLOP ({counted:.4g} "
                f"counted, {declared:.4g} declared; more than {REDUNDANT_WORK_RATIO:g}× is a finding)"]
    return []


class _Given(NamedTuple):
    """Both sides as the judgement takes them, and what was found on the way there (``_given``)."""

    sides: list[Measurement]  # [baseline, current]: like for like totals, common regions; ``_judged`` empties it
    options: CompareOptions
    base_devices: list[tuple[str, str]]
    cur_devices: list[tuple[str, str]]
    total_notes: list[str]
    region_notes: list[str]
    not_judged: list[tuple[str, str]]


def _given(sides: list[Measurement], options: CompareOptions | None) -> _Given:
    """``sides`` ([baseline, current], which it empties) checked and made comparable: the same source, like for
    like totals, the devices agreeing, the regions both hold; the options they call for."""
    baseline, current = sides.pop(0), sides.pop(0)
    check_same_source(baseline, current)
    baseline, current, total_notes = like_for_like_totals(baseline, current)
    options = for_measurement(options or CompareOptions(), baseline, current)
    replay = replay_change(baseline.settings, current.settings)
    not_judged: list[tuple[str, str]] = []
    if replay:
        options, not_judged = not_judged_across_replays(options, replay)
    base_devices, cur_devices = devices(baseline.table), devices(current.table)
    check_devices(base_devices, cur_devices, baseline.source, current.source, options.allow_device_mismatch)
    baseline, current, region_notes = common_regions(baseline, current)
    return _Given([baseline, current], options, base_devices, cur_devices, total_notes, region_notes, not_judged)


def compare_tables(baseline: Measurement, current: Measurement, options: CompareOptions | None = None) -> Comparison:
    """Compare two measurements. Raises DeviceMismatchError unless the devices agree, and
    InputError when launches match but no gated metric has values on both sides."""
    return compare_handed([baseline, current], options)


def compare_handed(sides: list[Measurement], options: CompareOptions | None = None) -> Comparison:
    """``compare_tables`` of ``sides`` ([baseline, current]), which it empties: each side's table as given is let
    go once its derived table is made, so that where the caller holds it nowhere else it is freed before the join
    (the command's compare of a raw page: 240 MB a side at 500k launches)."""
    given = _given(sides, options)
    options, base_devices, cur_devices, not_judged = given.options, given.base_devices, given.cur_devices, \
        given.not_judged
    found, baseline, current, outside_notes = _judged(given.sides, options)
    launches, rows, judged, groups, statuses = found.launches, found.rows, found.judged, found.groups, found.statuses
    base_name, cur_name = baseline.source or "baseline", current.source or "current"
    refuse_if_nothing_comparable(statuses, judged.status, judged.gated, found.compared, base_name, cur_name)
    unnamed_device = any(not name for name, _ in (*base_devices, *cur_devices)) and not options.allow_device_mismatch
    thresholds = options.effective_thresholds()
    notes = comparison_notes(base_name, cur_name, unnamed_device, found.compared, thresholds, found.codes,
                             found.base_side, found.cur_side, launches.kinds, statuses,
                             replaced_launches(launches, found.replacements))
    notes += given.total_notes + outside_notes + rename_notes(launches.renames) + given.region_notes
    notes += region_why(baseline, current) if is_timeline(current) else []
    notes += found.cold_notes + found.drift_notes + declared_work_notes(current, options.declared_flops)
    notes += replacement_notes(rows, judged, launches, statuses, found.replacements)

    change_notes = launch_change_notes(launch_facts(launches, found.base_side, found.cur_side, found.codes))
    launch_frame, launch_order = launch_table(launches, statuses, change_notes, groups)
    appeared, gone = finding_changes(launches, baseline, current)
    launch_frame = launch_frame.assign(findings_appeared=objects(appeared), findings_gone=objects(gone))
    launch_frame = launch_frame.assign(**code_columns(found.code))
    order = display_order(rows, judged, launch_order)
    results, result_metric = result_table(rows, judged, launch_frame, thresholds, groups, order)
    if options.series_thresholds or options.kernel_thresholds:
        results, result_metric = shown_thresholds(results, result_metric, found.limits.spec[order])
    notes += _result_notes(found, results, order, options)
    notes += significance_notes(launch_frame, statuses, baseline, current, options.significance)
    notes += unusable_notes(baseline, found.compared) + unusable_notes(current, found.compared)
    unmeasured = one_sided_values(rows, judged, launches, baseline, current)
    if not options.accept_unpaired_kernels:
        unmeasured += unjudged_replacements(found.replacements)
    position = np.empty(len(launch_order), dtype=np.int64)  # each launch id's row in the launches table
    position[launch_order] = np.arange(len(launch_order))
    return Comparison(
        notes=tuple(notes),
        results=results,
        launches=launch_frame[launch_order],
        result_launch=position[rows.launch_id[order]],
        result_metric=result_metric,
        baseline_source=baseline.source,
        current_source=current.source,
        baseline_devices=tuple(device_label(*d) for d in base_devices),
        current_devices=tuple(device_label(*d) for d in cur_devices),
        settings={"baseline": dict(baseline.settings), "current": dict(current.settings)},
        locations={**baseline.locations, **current.locations},
        unmeasured=(*unmeasured, *not_judged),
    )
