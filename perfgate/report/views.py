"""Row views of a report: the few launches a human format shows, shaped as version 1 rows."""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from typing import Any, Iterable, Iterator, cast

from perfgate.report.contract import (
    GROUP_COLUMNS,
    LAUNCH_COLUMNS,
    METRIC_COLUMNS,
    OPTIONAL_LAUNCH_COLUMNS,
    RESULT_VALUES,
    ROW_LAUNCH_FIELDS,
    GroupTable,
    Report,
    empty_columns,
)


def launch_count(report: Report) -> int:
    return len(report["launches"]["status"])


def launch_row(report: Report, index: int) -> dict[str, Any]:
    """One launch as a v1 launch row: ``{"kind", "kernel", ..., "line"}``."""
    launches = cast("dict[str, list[Any]]", report["launches"])
    row = {name: launches[name][index] for name in LAUNCH_COLUMNS}
    for name in OPTIONAL_LAUNCH_COLUMNS:
        column = launches.get(name)
        row[name] = column[index] if column else None
    return row


def launch_rows(report: Report) -> list[dict[str, Any]]:
    columns = [report["launches"][name] for name in LAUNCH_COLUMNS]  # type: ignore[literal-required]
    return [dict(zip(LAUNCH_COLUMNS, values)) for values in zip(*columns)]


def group_stats(report: Report) -> dict[tuple[int, int], dict[str, Any]]:
    """The ``groups`` table keyed by (group, metric row): the statistics of each repeated-launch judgement."""
    groups = report.get("groups") or cast(GroupTable, empty_columns(GROUP_COLUMNS))
    columns = [groups[name] for name in GROUP_COLUMNS]  # type: ignore[literal-required]
    return {(row[0], row[1]): dict(zip(GROUP_COLUMNS, row)) for row in zip(*columns)}


def result_span(report: Report, launch: int) -> tuple[int, int]:
    """The rows of ``results`` that belong to ``launch`` (they are contiguous)."""
    column = report["results"]["launch"]
    return bisect_left(column, launch), bisect_right(column, launch)


def result_rows(report: Report, launch: int | None = None) -> list[dict[str, Any]]:
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


def iter_launches(report: Report, statuses: Iterable[str] | None = None) -> Iterator[int]:
    """Indexes of launches, in report order (worst first), optionally only those with ``statuses``."""
    column = report["launches"]["status"]
    if statuses is None:
        return iter(range(len(column)))
    wanted = set(statuses)
    return (i for i, status in enumerate(column) if status in wanted)

