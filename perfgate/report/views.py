"""What a human format (text, Markdown, a PR comment, annotations) reads of a report: the ``ReportView`` type, and
row views of the few launches it shows, shaped as version 1 rows."""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections import Counter
from typing import Any, Iterable, Iterator, Mapping, Sequence, cast

from perfgate.report.contract import (
    GROUP_COLUMNS,
    LAUNCH_COLUMNS,
    METRIC_COLUMNS,
    OPTIONAL_LAUNCH_COLUMNS,
    RESULT_VALUES,
    ROW_LAUNCH_FIELDS,
    GroupTable,
    ReportView,
    empty_columns,
)
from perfgate.vocabulary import REGION_SEPARATOR, STATUS_RANK, Status


def launch_count(report: ReportView) -> int:
    return len(report["launches"]["status"])


def launch_row(report: ReportView, index: int) -> dict[str, Any]:
    """One launch as a v1 launch row: ``{"kind", "kernel", ..., "line"}``."""
    launches = cast("dict[str, list[Any]]", report["launches"])
    row = {name: launches[name][index] for name in LAUNCH_COLUMNS}
    for name in OPTIONAL_LAUNCH_COLUMNS:
        column = launches.get(name)
        row[name] = column[index] if column else None
    return row


def launch_rows(report: ReportView) -> list[dict[str, Any]]:
    columns = [report["launches"][name] for name in LAUNCH_COLUMNS]  # type: ignore[literal-required]
    return [dict(zip(LAUNCH_COLUMNS, values)) for values in zip(*columns)]


def group_stats(report: ReportView) -> dict[tuple[int, int], dict[str, Any]]:
    """The ``groups`` table keyed by (group, metric row): the statistics of each repeated-launch judgement."""
    groups = report.get("groups") or cast(GroupTable, empty_columns(GROUP_COLUMNS))
    columns = [groups[name] for name in GROUP_COLUMNS]  # type: ignore[literal-required]
    return {(row[0], row[1]): dict(zip(GROUP_COLUMNS, row)) for row in zip(*columns)}


def result_span(report: ReportView, launch: int) -> tuple[int, int]:
    """The rows of ``results`` that belong to ``launch`` (they are contiguous)."""
    column = report["results"]["launch"]
    return bisect_left(column, launch), bisect_right(column, launch)


def result_rows(report: ReportView, launch: int | None = None) -> list[dict[str, Any]]:
    """Result rows shaped as in version 1: the launch's facts, the metric's, then the result's own.

    ``launch`` limits them to that launch's rows (found by bisection: cheap for a few launches).
    """
    results, metrics, launches = report["results"], report["metrics"], report["launches"]
    start, stop = (0, len(results["launch"])) if launch is None else result_span(report, launch)
    rows: list[dict[str, Any]] = []
    for i in range(start, stop):
        at, code = results["launch"][i], results["metric"][i]
        row = {name: launches[name][at] for name in ROW_LAUNCH_FIELDS}  # type: ignore[literal-required]
        row.update({name: metrics[name][code] for name in METRIC_COLUMNS})  # type: ignore[literal-required]
        row.update({name: results[name][i] for name in RESULT_VALUES})  # type: ignore[literal-required]
        rows.append(row)
    return rows


def repeated_totals(report: ReportView) -> frozenset[int]:
    """Region totals that only repeat their region's one kernel launch: same test, GPU and status.

    A region holding one kernel launch (``perfgate.region("vector_add")`` around one launch) gets a total
    like any other, and it stays compared (a later change that splits the kernel in two still has a total
    to gate), but listing it beside its kernel would show one change twice. Kernels new or missing in the
    region count too: a renamed kernel (one missing, one new) leaves its total listed, the one comparison
    left."""
    launches = report["launches"]
    kinds = launches["kind"]
    if "region" not in kinds:
        return frozenset()
    tests, devices, regions, statuses = launches["test"], launches["device"], launches["region"], launches["status"]
    kernels: Counter[tuple[Any, ...]] = Counter()
    kernel_status: dict[tuple[Any, ...], str] = {}
    for i, kind in enumerate(kinds):
        region = regions[i]
        if kind == "kernel" and region:
            top: tuple[Any, ...] = (tests[i], devices[i], region.split(REGION_SEPARATOR, 1)[0])
            kernels[top] += 1
            kernel_status[top] = statuses[i]
    repeated: set[int] = set()
    for i, kind in enumerate(kinds):
        if kind != "region" or not regions[i]:
            continue  # the overall total (region "") sums several regions
        key = (tests[i], devices[i], regions[i])
        if kernels[key] == 1 and kernel_status[key] == statuses[i]:
            repeated.add(i)
    return frozenset(repeated)


def listed_summary(report: ReportView) -> dict[str, int]:
    """The report's launch counts by status without the region totals that repeat their one kernel: what the
    human formats list and count (the JSON ``summary`` counts every compared launch)."""
    summary = dict(report["summary"])
    statuses = report["launches"]["status"]
    for index in repeated_totals(report):
        summary[statuses[index]] -= 1
    return summary


def kernel_summary(report: ReportView) -> dict[str, int]:
    """``listed_summary`` with each kernel judged as one (its repeated launches: one ``group``) counted once, at
    the worst status of its compared launches (its others when none was compared): what the headline counts.
    Launches are counted by (group, status) pair first: a report may hold 500k launches of a few kernels."""
    summary = listed_summary(report)
    launches: Any = report["launches"]
    worst: dict[int, str] = {}
    for (group, status), count in Counter(zip(launches.get("group") or [], launches["status"])).items():
        if group is None:
            continue
        summary[status] -= count
        held = worst.get(group)
        if held is None or _kernel_rank(status) < _kernel_rank(held):
            worst[group] = status
    for status in worst.values():
        summary[status] += 1
    return summary


def _kernel_rank(status: str) -> int:
    """A compared status before new, missing or no data; the worst first."""
    uncompared = status in (Status.NEW.value, Status.MISSING.value, Status.NO_DATA.value)
    return STATUS_RANK.get(status, 99) + (len(STATUS_RANK) if uncompared else 0)


# What a kernel row is called by: its test, GPU, kind, name (and the name it was paired from), region.
KERNEL_NAME_COLUMNS = ("test", "device", "kind", "kernel", "baseline_kernel", "region")
# A kernel as the human formats group its launches: those, one full name (template arguments included:
# ``reduce_kernel<512, 1>`` and ``reduce_kernel<128, 4>`` are two kernels, as compare judges them) and one
# repeated-launch group (the same name with another launch configuration is judged, and shown, apart).
KERNEL_COLUMNS = (*KERNEL_NAME_COLUMNS, "demangled", "group")


def kernel_keys(launches: Mapping[str, Any]) -> Iterator[tuple[Any, ...]]:
    """Per launch, the kernel it belongs to as the human formats group launches (``KERNEL_COLUMNS``)."""
    return zip(*_kernel_columns(launches))


def _kernel_columns(launches: Mapping[str, Any]) -> list[Sequence[Any]]:
    count = len(launches["status"])
    return [launches.get(name) or [None] * count for name in KERNEL_COLUMNS]


def iter_launches(report: ReportView, statuses: Iterable[str] | None = None) -> Iterator[int]:
    """Indexes of the launches to list, in report order (worst first), optionally only those with ``statuses``;
    without the region totals that only repeat their one kernel (``repeated_totals``)."""
    column = report["launches"]["status"]
    repeated = repeated_totals(report)
    wanted = set(statuses) if statuses is not None else None
    return (i for i, status in enumerate(column)
            if (wanted is None or status in wanted) and i not in repeated)

