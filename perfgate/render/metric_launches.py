"""One metric over a kernel's launches (:class:`MetricLaunches`), worked out in Python: what a kernel row's
summaries are made from (``perfgate.render.kernels``) and what the numpy twin
(``perfgate.render.result_arrays.metric_launches``) falls back to, kept here so that neither imports the other."""

from __future__ import annotations

import statistics
from operator import itemgetter
from typing import Any, NamedTuple

from perfgate.report import ReportView, result_span


class MetricLaunches(NamedTuple):
    """One metric over a kernel's launches, what its summary is made from: the statuses of its results (each once,
    in report order), whether one is gated, its values (medians over several launches) and their change."""

    code: int  # the metric's row of the report's ``metrics``
    launches: int
    statuses: tuple[str, ...]
    gated: bool
    before: float | None
    after: float | None
    change: float | None


def _median(values: list[float]) -> float | None:
    return statistics.median(values) if values else None


def gathered(column: list[Any], rows: list[int]) -> tuple[Any, ...]:
    """``column``'s values at ``rows``, gathered in C (a kernel of a loop has thousands of launches)."""
    return itemgetter(*rows)(column) if len(rows) > 1 else (column[rows[0]],)


def _rows_by_metric(report: ReportView, indexes: list[int]) -> dict[int, list[int]]:
    """The result rows of launches ``indexes`` by metric code, in report order (codes in order of appearance)."""
    codes = report["results"]["metric"]
    spans = [span for span in (result_span(report, index) for index in indexes) if span[1] > span[0]]
    if not spans:
        return {}
    first = codes[spans[0][0]:spans[0][1]]
    if len(set(first)) == len(first) and all(codes[start:stop] == first for start, stop in spans):
        # The launches of a loop hold the same metrics in the same order: each metric's rows are an offset.
        starts = [start for start, _ in spans]
        return {code: [start + offset for start in starts] for offset, code in enumerate(first)}
    by_code: dict[int, list[int]] = {}
    for start, stop in spans:
        for i, code in zip(range(start, stop), codes[start:stop]):
            by_code.setdefault(code, []).append(i)
    return by_code


def metric_launches(report: ReportView, indexes: list[int]) -> list[MetricLaunches]:
    """Each metric of launches ``indexes`` over them, in order of appearance: one launch's values as they are,
    the medians of several (``perfgate.render.result_arrays.metric_launches`` is the same in numpy)."""
    results = report["results"]
    out = []
    for code, rows in _rows_by_metric(report, indexes).items():
        if len(rows) == 1:
            i = rows[0]
            before, after, change = results["baseline"][i], results["current"][i], results["change"][i]
        else:
            before = _median([v for v in gathered(results["baseline"], rows) if v is not None])
            after = _median([v for v in gathered(results["current"], rows) if v is not None])
            change = after / before - 1 if before and after is not None else None
        out.append(MetricLaunches(code=code, launches=len(rows),
                                  statuses=tuple(dict.fromkeys(gathered(results["status"], rows))),
                                  gated=any(gathered(results["gated"], rows)), before=before, after=after,
                                  change=change))
    return out
