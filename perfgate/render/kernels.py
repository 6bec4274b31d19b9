"""Kernel rows: a report's launches grouped per kernel (the repeated launches of a loop), with the medians,
the repeated-launch judgement and the "why" every format shows."""

from __future__ import annotations

from collections import Counter
from functools import cached_property
from operator import itemgetter
from typing import Any, Iterable, NamedTuple

import numpy as np

from perfgate.render.common import NOT_AN_EXPLANATION
from perfgate.timeline_why import region_why
from perfgate.quantities import change_for, format_change, format_value, limit_text, pair_texts
from perfgate.render.kernel_names import variant_labels
from perfgate.render.result_arrays import MetricLaunches, ResultArrays, metric_launches
from perfgate.render.roofline import ROOFLINE_METRICS, roofline_lines
from perfgate.columns import factorize, objects
from perfgate.report import KERNEL_COLUMNS, KERNEL_NAME_COLUMNS, ReportView, group_stats, repeated_totals, result_span
from perfgate.vocabulary import KIND_REGION, SOL_COMPUTE_METRIC, SOL_MEMORY_METRIC, STATUS_RANK, Status, bound_of


class MetricSummary(NamedTuple):
    """One metric of a kernel row: one launch's values, or the medians over its launches."""

    metric: str
    label: str
    unit: str
    threshold: str  # the spec, as the report holds it
    direction: str
    gated: bool
    status: str
    before: float | None
    after: float | None
    change: float | None
    launches: int = 1  # launches whose values are summarized (medians when > 1)
    interval: tuple[float, float] | None = None  # the repeated-launch judgement's 95% interval of the change
    judged_as_group: bool = False

    @property
    def limit(self) -> str:
        """The threshold for display, its absolute part in the metric's unit (``5% + 2 µs``)."""
        return limit_text(self.threshold, self.unit)


class KernelRow(NamedTuple):
    """A kernel of a report: its launches of one test, GPU, region (the repeated launches of a loop), with the
    statistics a reader judges it by."""

    launches: list[int]
    status: str
    kind: str
    kernel: str
    baseline_kernel: str | None
    region: str
    test: str | None
    device: str | None
    launch_change: str | None
    findings_appeared: list[str] | None
    findings_gone: list[str] | None
    metrics: list[MetricSummary]
    # The ordinals of the launches that failed on their own while their kernel's launches, judged as one, did not
    # all fail (a launch that moved alone: compare.alone).
    alone: tuple[int, ...] = ()
    lone: tuple[int, ...] = ()  # those that moved alone once, inconclusive while their kernel's launches are not
    variant: str = ""  # what tells it apart from kernels of the same name in its region (kernel_names)
    code_why: str | None = None  # what its machine code says: the same (time unchanged) or changed, and how
    # Of a kernel compared, its launches that were not (missing, new, no data), by status: why a row judged fine
    # is among those that need attention.
    uncompared: tuple[tuple[str, int], ...] = ()

    @property
    def name(self) -> str:
        """The kernel's name and its variant; ``old → new`` for a kernel paired by a rename rule."""
        if self.baseline_kernel and self.baseline_kernel != self.kernel:
            return f"{self.baseline_kernel} → {self.kernel}{self.variant}"
        return self.kernel + self.variant

    def metric(self, name: str) -> MetricSummary | None:
        return next((m for m in self.metrics if m.metric == name), None)

    @property
    def bound(self) -> tuple[str | None, str | None]:
        """(before, after): memory, compute or latency, from the speed-of-light percentages."""
        compute, memory = self.metric(SOL_COMPUTE_METRIC), self.metric(SOL_MEMORY_METRIC)
        if compute is None or memory is None:
            return None, None
        return bound_of(compute.before, memory.before), bound_of(compute.after, memory.after)

    @property
    def moved(self) -> list[MetricSummary]:
        """The gated metrics a reader looks at first: those with the row's status, else every gated one."""
        gated = [m for m in self.metrics if m.gated]
        same = [m for m in gated if m.status == self.status]
        return same or [m for m in gated if m.status in (Status.REGRESSION.value, Status.INCONCLUSIVE.value)] or gated


def gathered(column: list[Any], rows: list[int]) -> tuple[Any, ...]:
    """``column``'s values at ``rows``, gathered in C (a kernel of a loop has thousands of launches)."""
    return itemgetter(*rows)(column) if len(rows) > 1 else (column[rows[0]],)


_UNCOMPARED = (Status.NEW.value, Status.MISSING.value, Status.NO_DATA.value)


def _row_status(statuses: Counter[str]) -> str:
    """A kernel's status: its worst compared launch (a launch more or less, or one without values, does not make
    a compared kernel new, missing or no data), else its worst."""
    compared = [s for s in statuses if s not in _UNCOMPARED]
    return min(compared or statuses, key=lambda s: STATUS_RANK.get(s, 99))


def kernel_groups(report: ReportView) -> list[list[int]]:
    """Launch indexes grouped by kernel (``KERNEL_COLUMNS``), in report order (worst first), without the region
    totals that only repeat their one kernel."""
    return kernels_of(report, launch_groups(report))


def launch_groups(report: ReportView) -> Any:
    """Each launch's kernel (``KERNEL_COLUMNS``), numbered in order of first appearance."""
    launches: Any = report["launches"]
    count = len(launches["status"])
    codes = np.zeros(count, dtype=np.int64)
    for name in KERNEL_COLUMNS:
        column = launches.get(name) or [None] * count
        if not count or column.count(column[0]) == count:  # one value (one GPU, no test): it parts no kernel from another
            continue
        mine, distinct = factorize(objects(column))
        codes = factorize(codes * len(distinct) + mine)[0]
    return codes


def kernels_of(report: ReportView, groups: Any) -> list[list[int]]:
    """:func:`kernel_groups` from each launch's :func:`launch_groups` (a caller with them already): grouped in numpy,
    not a dict of 500,000 keys."""
    if not len(groups):
        return []
    by_kernel = np.argsort(groups, kind="stable")
    starts = np.flatnonzero(groups[by_kernel][1:] != groups[by_kernel][:-1]) + 1
    return without_repeated_totals(report, [kernel.tolist() for kernel in np.split(by_kernel, starts)])


def without_repeated_totals(report: ReportView, kernels: list[list[int]]) -> list[list[int]]:
    """``kernels`` (launch indexes grouped by kernel) without the region totals that only repeat their one kernel."""
    repeated = repeated_totals(report)
    return [k for k in kernels if not all(i in repeated for i in k)] if repeated else kernels


def kernel_row(report: ReportView, indexes: list[int], stats: dict[tuple[int, int], dict[str, Any]] | None = None,
               metrics: list[MetricLaunches] | None = None) -> KernelRow:
    """The kernel of launches ``indexes`` (one of :func:`kernel_groups`), its metrics summarized; ``metrics`` are
    its :func:`metric_launches` when worked out already (a caller of many kernels makes the report's
    :class:`ResultArrays` once: :class:`KernelRows`)."""
    launches = report["launches"]
    optional: Any = launches
    first = indexes[0]
    statuses: Counter[str] = Counter(gathered(launches["status"], indexes))

    def column(name: str) -> Any:
        values = optional.get(name)
        return values[first] if values else None

    def union(name: str) -> list[str] | None:
        values = optional.get(name)
        picked = gathered(values, indexes) if values else ()
        if picked.count(None) == len(picked):
            return None
        return list(dict.fromkeys(f for found in picked for f in (found or [])))

    group_column = optional.get("group") or []
    group = next((group_column[i] for i in indexes if group_column[i] is not None), None) if group_column else None
    def apart(status: Status, *others: Status) -> tuple[int, ...]:  # launches of a group judged unlike the rest
        if group is None or not statuses.get(status.value) or not any(o.value in statuses for o in others):
            return ()
        return tuple(int(launches["ordinal"][i]) for i in indexes if launches["status"][i] == status.value)

    alone = apart(Status.REGRESSION, Status.UNCHANGED, Status.INCONCLUSIVE, Status.IMPROVEMENT)
    lone = apart(Status.INCONCLUSIVE, Status.UNCHANGED, Status.IMPROVEMENT)
    return KernelRow(launches=indexes, status=_row_status(statuses), kind=str(launches["kind"][first] or ""),
                     kernel=launches["kernel"][first], baseline_kernel=column("baseline_kernel"),
                     region=launches["region"][first] or "", test=launches["test"][first],
                     device=launches["device"][first],
                     launch_change=_first_set(launches["launch_change"], indexes),
                     findings_appeared=union("findings_appeared"), findings_gone=union("findings_gone"),
                     metrics=_summaries(report, _metric_launches(report, indexes) if metrics is None else metrics,
                                        group, group_stats(report) if stats is None else stats),
                     alone=alone, lone=lone, code_why=_first_set(optional.get("code_why"), indexes),
                     uncompared=_uncompared(statuses))


def _uncompared(statuses: Counter[str]) -> tuple[tuple[str, int], ...]:
    """A compared kernel's launches of each status not compared, the worst first; none for a kernel not compared."""
    if all(s in _UNCOMPARED for s in statuses):
        return ()
    return tuple((s, statuses[s]) for s in sorted(statuses, key=_rank) if s in _UNCOMPARED)


def _first_set(column: Any, indexes: list[int]) -> Any:
    """The first of ``indexes``' values in ``column`` that is set (not None or empty); None where none is, or where
    the report has no such column (then without a look at each launch: a kernel may have 100,000)."""
    if column is None or not len(column):
        return None
    return next((column[i] for i in indexes if column[i]), None)


def _metric_launches(report: ReportView, indexes: list[int]) -> list[MetricLaunches]:
    """:func:`metric_launches` of launches ``indexes`` from the result rows between the first's and the last's."""
    span = result_span(report, min(indexes))[0], result_span(report, max(indexes))[1]
    return metric_launches(ResultArrays(report, span), indexes)


def _rank(status: str) -> int:
    return STATUS_RANK.get(status, 99) + (len(STATUS_RANK) if status in _UNCOMPARED else 0)


def worst_status(statuses: Iterable[str]) -> str:
    """A metric's status over its launches: the first worst compared one; new, missing or no data only when
    none is compared."""
    return min(statuses, key=_rank)


class KernelRows:
    """A report's kernels (``kernel_groups``; ``kernels`` where the caller has them), each summarized once
    (:func:`kernel_row`) over all its launches, for the formats that show a row per kernel, from the report's
    :class:`ResultArrays` (``arrays`` where the caller has them, made at the first row else)."""

    def __init__(self, report: ReportView, kernels: list[list[int]] | None = None,
                 arrays: ResultArrays | None = None) -> None:
        self.report = report
        self.kernels = kernel_groups(report) if kernels is None else kernels
        self.stats = group_stats(report)
        if arrays is not None:
            self.arrays = arrays
        self._rows: dict[int, KernelRow] = {}
        self._metrics: dict[int, tuple[list[int], list[MetricLaunches]]] = {}  # by first launch
        self._variants = kernel_variants(report, self.kernels)

    @cached_property
    def arrays(self) -> ResultArrays:
        return ResultArrays(self.report)

    def row(self, indexes: list[int]) -> KernelRow:
        found = self._rows.get(indexes[0])  # kernels do not share launches: the first one names a kernel
        if found is None:
            found = kernel_row(self.report, indexes, self.stats, self._metric_launches(indexes))
            variant = self._variants.get(indexes[0])
            found = self._rows[indexes[0]] = found._replace(variant=variant) if variant else found
        return found

    def variant(self, first: int) -> str:
        """What tells the kernel of first launch ``first`` from others of its name in its region ("" where none)."""
        return self._variants.get(first, "")

    def part(self, indexes: list[int]) -> KernelRow:
        """The row of some of a kernel's launches (those a page summarizes rather than lists): their own statuses,
        medians and change, not the repeated-launch judgement, which is of all its launches; made each time."""
        return kernel_row(self.report, indexes, {}, self._metric_launches(indexes))

    def _metric_launches(self, indexes: list[int]) -> list[MetricLaunches]:
        """:func:`metric_launches` of ``indexes``, made once for a kernel's launches: a page summarizes every
        launch of the kernels it lists none of, whose kernel table already summed them up."""
        made = self._metrics.get(indexes[0])
        if made is None or made[0] != indexes:
            made = self._metrics[indexes[0]] = (indexes, metric_launches(self.arrays, indexes))
        return made[1]

    def with_status(self, statuses: Iterable[str]) -> list[list[int]]:
        """The kernels with a launch in one of ``statuses``."""
        wanted = set(statuses)
        column = self.report["launches"]["status"]
        found = np.fromiter(map(wanted.__contains__, column), dtype=bool, count=len(column))
        return [k for k in self.kernels if found[k].any()]


def kernel_variants(report: ReportView, kernels: list[list[int]]) -> dict[int, str]:
    """For the kernels (``kernel_groups``) that share their name with another in one test, GPU and region, by
    first launch: what tells them apart (``kernel_names.variant_labels``)."""
    launches: Any = report["launches"]
    named: dict[tuple[Any, ...], list[int]] = {}
    for indexes in kernels:
        first = indexes[0]
        key = tuple(launches[n][first] if launches.get(n) else None for n in KERNEL_NAME_COLUMNS)
        named.setdefault(key, []).append(first)
    variants: dict[int, str] = {}
    for firsts in named.values():
        if len(firsts) > 1:
            demangled = [str(launches["demangled"][i] or "") for i in firsts]
            variants.update(zip(firsts, variant_labels(demangled, str(launches["kernel"][firsts[0]] or ""))))
    return variants


def _summaries(report: ReportView, aggregated: list[MetricLaunches], group: int | None,
               stats: dict[tuple[int, int], dict[str, Any]]) -> list[MetricSummary]:
    metrics = report["metrics"]
    out = []
    for values in aggregated:
        code = values.code
        summary = MetricSummary(
            metric=str(metrics["metric"][code] or ""), label=str(metrics["label"][code] or metrics["metric"][code]),
            unit=str(metrics["unit"][code] or ""), threshold=str(metrics["threshold"][code] or ""),
            direction=str(metrics["direction"][code] or ""), gated=values.gated,
            status=worst_status(values.statuses),
            before=values.before, after=values.after, change=values.change, launches=values.launches)
        judged = stats.get((group, code)) if group is not None else None
        if judged is not None:  # the group's medians and interval stand for its launches
            summary = summary._replace(
                before=judged["median_baseline"] if judged["median_baseline"] is not None else summary.before,
                after=judged["median_current"] if judged["median_current"] is not None else summary.after,
                launches=max(int(judged["n_baseline"]), int(judged["n_current"])), judged_as_group=True,
                change=judged["estimate"] if judged["estimate"] is not None else summary.change,
                interval=((judged["ci_low"], judged["ci_high"])
                          if judged["ci_low"] is not None and judged["ci_high"] is not None else None))
        out.append(summary)
    return out


def launches_label(row: KernelRow) -> str:
    """``×40`` for a kernel launched 40 times (``×10,000``), ``×19 (2 missing)`` where some were not compared;
    "" for one launch."""
    if len(row.launches) <= 1:
        return ""
    others = ", ".join(f"{count:,} {status}" for status, count in row.uncompared)
    return f"×{len(row.launches):,}" + (f" ({others})" if others else "")


def change_text(summary: MetricSummary) -> str:
    """``+8.1% [+7.4%, +8.8%]`` for a group judged as one, ``+123.3%`` otherwise; a share in points, its interval
    too (``-0.3 pp [-0.4, -0.2]``: the relative interval of the change times the baseline's median)."""
    text = change_for(summary.metric, summary.before, summary.after, summary.change, summary.threshold)
    if summary.interval:
        low, high = summary.interval
        if text.endswith(" pp") and summary.before is not None:
            return f"{text} [{low * summary.before:+.1f}, {high * summary.before:+.1f}]"
        text += f" [{format_change(low)}, {format_change(high)}]"
    return text


def bound_text(row: KernelRow) -> str:
    """``bound: memory → latency (compute 17.3% → 6.2%, memory 90.9% → 50.0% of peak)``; ``bound: memory in the
    baseline (...)`` where only one side holds the speed-of-light percentages (a kernel missing or new); "" where
    neither does."""
    before, after = row.bound
    if before is None and after is None:
        return ""
    compute, memory = row.metric(SOL_COMPUTE_METRIC), row.metric(SOL_MEMORY_METRIC)
    assert compute is not None and memory is not None
    if after is None:  # one side only: nothing moved
        return (f"bound: {before} in the baseline (compute {format_value(compute.before, '%')}, "
                f"memory {format_value(memory.before, '%')} of peak)")
    if before is None:
        return (f"bound: {after} in the current run (compute {format_value(compute.after, '%')}, "
                f"memory {format_value(memory.after, '%')} of peak)")
    moved = f"{before} → {after}" if before != after else f"{after} (unchanged)"
    return (f"bound: {moved} (compute {format_value(compute.before, '%')} → {format_value(compute.after, '%')}, "
            f"memory {format_value(memory.before, '%')} → {format_value(memory.after, '%')} of peak)")


def findings_text(row: KernelRow, limit: int = 4) -> list[str]:
    """``ncu findings appeared: Bottleneck: Latency Issue, ...`` and ``... gone: ...``."""
    lines = []
    for word, found in (("appeared", row.findings_appeared), ("gone", row.findings_gone)):
        if found:
            more = f" and {len(found) - limit} more" if len(found) > limit else ""
            lines.append(f"ncu findings {word}: {', '.join(found[:limit])}{more}")
    return lines


def why_lines(row: KernelRow, others: int = 3) -> list[str]:
    """The "why" of a kernel's change, in every format, the most specific cause first: the rule findings that
    appeared or went (ncu names the cause: "Uncoalesced Global Accesses"), its bound before and after, the launch
    configuration change, the launches that moved alone, then the explanatory metrics that moved most. A timeline
    region's: one line, which part of its wall time moved (``timeline_why``)."""
    if row.kind == KIND_REGION and any(m.metric.startswith("timeline.") for m in row.metrics):
        line = region_why({m.metric: m.before for m in row.metrics if m.before is not None},
                          {m.metric: m.after for m in row.metrics if m.after is not None})
        return [line] if line else []
    bound = bound_text(row)
    roofline = roofline_lines(row)
    lines = ([row.code_why] if row.code_why else []) + findings_text(row) + ([bound] if bound else []) + roofline
    if row.launch_change:
        lines.append(f"launch config: {row.launch_change}")
    for ordinals, what in ((row.alone, "moved alone, past its limit"), (row.lone, "moved alone once, inconclusive")):
        if ordinals:
            shown = ", ".join(f"#{ordinal}" for ordinal in ordinals[:5]) + (" …" if len(ordinals) > 5 else "")
            lines.append(f"{what}: {shown} (see the notes)")
    sol = {*((SOL_COMPUTE_METRIC, SOL_MEMORY_METRIC) if bound else ()), *(ROOFLINE_METRICS if roofline else ())}
    moved = [m for m in row.metrics if not m.gated and m.status == Status.INFO.value and m.change is not None
             and abs(m.change) >= 0.01 and m.metric not in sol and not NOT_AN_EXPLANATION.match(m.metric)]
    moved.sort(key=lambda m: -abs(m.change or 0.0))
    lines += [f"{m.label} {' → '.join(pair_texts(m.before, m.after, m.unit, m.metric))} ({change_text(m)})"
              for m in moved[:others]]
    return lines
