"""Assembling: the judged rows and launches as the two tables of a Comparison, in display order.

Launches come worst status first, then by kind, kernel, region and ordinal; result rows follow
their launch's order, gated metrics before information, catalog metrics in catalog order
(duration first).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

import numpy as np

from perfgate.columns import Array, Columns, Gather, factorize, objects, sort_ranks, sorted_order
from perfgate.compare.arrays import Ints, Objects, StatusCodes
from perfgate.compare.codes import is_status, status_column
from perfgate.compare.joining import JoinedRows
from perfgate.compare.matching import MatchedLaunches
from perfgate.compare.policies import JudgedRows
from perfgate.compare.repeats import GroupVerdicts
from perfgate.metrics import CATALOG_BY_NAME, Threshold, direction_of, label_of
from perfgate.vocabulary import STATUS_ORDER, Status


def launch_table(launches: MatchedLaunches, statuses: StatusCodes, launch_change: Objects,
                 groups: GroupVerdicts) -> tuple[Columns, Ints]:
    """One row per launch, in launch-id order, and the display order of those rows (``statuses``: their codes)."""
    frame = launches.frame
    table = Columns({
        "kind": frame["kind"], "kernel": frame["kernel"], "region": frame["region"], "ordinal": frame["ordinal"],
        "demangled": launches.either("demangled"), "status": status_column(statuses),
        "device": launches.either("device"), "grid": launches.either("grid"), "block": launches.either("block"),
        "launch_change": launch_change, "baseline_kernel": frame["baseline_kernel"],
        "matched_by": frame["matched_by"], "group": groups.launch_group,
    }, launches.count)
    # A status's code is its place in STATUS_ORDER: what needs attention first.
    order: Ints = sorted_order((statuses.astype(np.int64), len(STATUS_ORDER)), _text_ranks(table["kind"]),
                               _text_ranks(table["kernel"]), _text_ranks(table["region"]), sort_ranks(table["ordinal"]))
    return table, order


def _text_ranks(column: Objects) -> tuple[Ints, int]:
    """``sort_ranks`` of the values as text (what sorting ``column.astype(str)`` compares); only the distinct
    values are made text."""
    codes, distinct = factorize(column)
    ranks, count = sort_ranks(objects([str(value) for value in distinct.tolist()]))
    return ranks[codes], count


def result_table(rows: JoinedRows, judged: JudgedRows, launches: Columns, thresholds: Mapping[str, Threshold],
                 groups: GroupVerdicts, order: Ints | None = None) -> tuple[Columns, Ints]:
    """One row per joined (launch, metric), in join order, or the joined rows ``order`` gives (the display
    order). ``launches`` is the launch table, in launch-id order.

    Its columns are ``Gather``s (made when read): of the 400,000 results of 50k launches, a report reads few
    columns whole (status, values), the rest (a launch's names, a metric's facts, the group columns) of a few rows.

    Also returns, per row, a code that only rows with the same metric, label, unit, threshold and direction
    share (``Comparison.result_metric``): its metric code and unit, which the report's metrics table is made of.
    """
    take = np.arange(len(rows), dtype=np.int64) if order is None else order.astype(np.int64, copy=False)
    lid = rows.launch_id[take]
    code = rows.metric_code[take]
    no_value = np.isnan(rows.baseline) | np.isnan(rows.current)
    series = groups.series[take]  # one array shared by the group columns: ``take`` picks it once
    names = rows.names

    def per_metric(describe: Callable[[str], str]) -> Gather:
        return Gather(objects([describe(m) for m in names]), code)  # described once per metric code

    def per_launch(name: str) -> Gather:
        return Gather(launches[name], lid)

    def per_row(values: Array | Gather) -> Gather:
        return Gather(values, take)

    table = Columns({
        "kind": per_launch("kind"),
        "kernel": per_launch("kernel"),
        "demangled": per_launch("demangled"),
        "region": per_launch("region"),
        "ordinal": per_launch("ordinal"),
        "metric": per_metric(str),
        "label": per_metric(label_of),
        "unit": Gather(rows.units[1], rows.units[0][take]),
        "baseline": per_row(rows.baseline),
        "current": per_row(rows.current),
        "change": per_row(np.where(no_value, np.nan, judged.change)),
        "delta": per_row(np.where(no_value, np.nan, judged.delta)),
        "status": per_row(status_column(judged.status)),  # the statuses' strings made only if read
        "gated": per_row(judged.gated),
        "threshold": per_metric(lambda m: thresholds[m].spec if m in thresholds else "off"),
        "direction": per_metric(lambda m: direction_of(m).value),
        "device": per_launch("device"),
        **{name: Gather(values, series) for name, values in (
            ("group", groups.group), ("n_baseline", groups.n_baseline), ("n_current", groups.n_current),
            ("median_baseline", groups.median_baseline), ("median_current", groups.median_current),
            ("estimate", groups.estimate), ("ci_low", groups.low), ("ci_high", groups.high))},
    }, len(take))
    return table, _metric_facts(rows.metric_code, rows.units[0], len(names))[take]


def _metric_facts(code: Ints, unit: Ints, codes: int) -> Ints:
    """Per row, a number only rows of the same metric and unit share (``unit``: codes into distinct units): the
    metric code where each metric has one unit, else with the unit's code."""
    unit_of = np.empty(codes, dtype=np.int64)
    unit_of[code] = unit  # one row's unit of each metric: any is fine
    if (unit == unit_of[code]).all():
        return code
    unit_codes, units = factorize(unit)
    facts: Ints = code * len(units) + unit_codes
    return facts


def display_order(rows: JoinedRows, judged: JudgedRows, launch_order: Ints) -> Ints:
    """Result rows in their launch's display order, gated before info, then catalog order, then code."""
    position = np.empty(len(launch_order), dtype=np.int64)
    position[launch_order] = np.arange(len(launch_order))
    catalog = {name: i for i, name in enumerate(CATALOG_BY_NAME)}
    metric_rank = np.array([catalog.get(m, len(catalog)) for m in rows.names], dtype=np.int64)[rows.metric_code]
    info = is_status(judged.status, Status.INFO).astype(np.int64)
    order: Ints = sorted_order((position[rows.launch_id], len(position)), (info, 2), (metric_rank, len(catalog) + 1),
                               (rows.metric_code, len(rows.names)))
    return order
