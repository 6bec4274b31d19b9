"""Assembling: the judged rows and launches as the two tables of a Comparison, in display order.

Launches come worst status first, then by kind, kernel, region and ordinal; result rows follow
their launch's order, gated metrics before information, catalog metrics in catalog order
(duration first).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
import pandas as pd  # type: ignore[import-untyped, unused-ignore]

from perfgate.compare.arrays import Ints, Objects
from perfgate.compare.joining import JoinedRows
from perfgate.compare.matching import MatchedLaunches
from perfgate.compare.policies import JudgedRows, status_ranks
from perfgate.compare.repeats import GroupVerdicts
from perfgate.metrics import CATALOG_BY_NAME, Threshold, direction_of, label_of
from perfgate.vocabulary import Status


def launch_table(launches: MatchedLaunches, statuses: Objects, launch_change: Objects,
                 groups: GroupVerdicts) -> tuple[pd.DataFrame, Ints]:
    """One row per launch, in launch-id order, and the display order of those rows."""
    frame = launches.frame
    demangled = frame["demangled_c"].fillna(frame["demangled_b"]).fillna(frame["kernel"]).to_numpy()
    device = frame["device_c"].fillna(frame["device_b"]).fillna("").to_numpy()
    table = pd.DataFrame({
        "kind": frame["kind"].to_numpy(), "kernel": frame["kernel"].to_numpy(),
        "region": frame["region"].to_numpy(), "ordinal": frame["ordinal"].to_numpy(dtype=np.int64),
        "demangled": demangled, "status": statuses, "device": device, "launch_change": launch_change,
        "baseline_kernel": frame["baseline_kernel"].to_numpy(), "matched_by": frame["matched_by"].to_numpy(),
        "group": groups.launch_group,
    })
    order: Ints = np.lexsort((table["ordinal"].to_numpy(), table["region"].to_numpy(dtype=str),
                              table["kernel"].to_numpy(dtype=str), table["kind"].to_numpy(dtype=str),
                              status_ranks(statuses)))
    return table, order


def _per_row(column: pd.Series, rows: Ints) -> Any:
    """A launch column's value for each result row; a string column stays one (pandas would otherwise check
    every string of the object array again to infer the same dtype)."""
    if isinstance(column.dtype, pd.StringDtype):
        return column.array.take(rows)
    return column.to_numpy()[rows]


def _strings(values: Objects, rows: Ints) -> Any:
    """``values[rows]`` as a string column, when ``values`` are the few distinct strings of a column (one per
    metric code, status...): each is checked once, not once per row as pandas would infer them."""
    return pd.array(np.asarray(values, dtype=object), dtype="str").take(rows)


def _coded(values: Objects) -> tuple[Objects, Ints]:
    """The distinct values of an object column of strings and each row's index into them."""
    codes, uniques = pd.factorize(values, use_na_sentinel=False)
    return np.asarray(uniques, dtype=object), codes


def result_table(rows: JoinedRows, judged: JudgedRows, launches: pd.DataFrame,
                 thresholds: Mapping[str, Threshold], groups: GroupVerdicts, order: Ints | None = None) -> pd.DataFrame:
    """One row per joined (launch, metric), in join order, or the joined rows ``order`` gives (the display
    order: taking them here copies each column once, where reordering the finished table would copy it again).
    ``launches`` is the launch table, in launch-id order."""
    take = np.arange(len(rows), dtype=np.int64) if order is None else order
    lid = rows.launch_id[take]
    code = rows.metric_code[take]
    no_value = np.isnan(rows.baseline) | np.isnan(rows.current)
    names = rows.names

    def per_metric(describe: Callable[[str], str]) -> Any:
        # Described once per metric code; with no rows this gives the float64 columns it always gave.
        if not len(take):
            return np.zeros(0)
        return _strings(np.array([describe(m) for m in names], dtype=object), code)

    status_values, status_codes = _coded(judged.status)
    unit_values, unit_codes = _coded(rows.unit)
    return pd.DataFrame({
        "kind": _per_row(launches["kind"], lid),
        "kernel": _per_row(launches["kernel"], lid),
        "demangled": _per_row(launches["demangled"], lid),
        "region": _per_row(launches["region"], lid),
        "ordinal": launches["ordinal"].to_numpy(dtype=np.int64)[lid],
        "metric": per_metric(str) if len(take) else rows.metric,
        "label": per_metric(label_of),
        "unit": _strings(unit_values, unit_codes[take]) if len(take) else rows.unit,
        "baseline": rows.baseline[take],
        "current": rows.current[take],
        "change": np.where(no_value, np.nan, judged.change)[take],
        "delta": np.where(no_value, np.nan, judged.delta)[take],
        "status": _strings(status_values, status_codes[take]) if len(take) else judged.status,
        "gated": judged.gated[take],
        "threshold": per_metric(lambda m: thresholds[m].spec if m in thresholds else "off"),
        "direction": per_metric(lambda m: direction_of(m).value),
        "device": _per_row(launches["device"], lid),
        "group": groups.group[take],
        "n_baseline": groups.n_baseline[take],
        "n_current": groups.n_current[take],
        "median_baseline": groups.median_baseline[take],
        "median_current": groups.median_current[take],
        "estimate": groups.estimate[take],
        "ci_low": groups.low[take],
        "ci_high": groups.high[take],
    }, copy=False)  # every column is a new array already: the frame may keep them as they are


def display_order(rows: JoinedRows, judged: JudgedRows, launch_order: Ints) -> Ints:
    """Result rows in their launch's display order, gated before info, then catalog order, then code."""
    position = np.empty(len(launch_order), dtype=np.int64)
    position[launch_order] = np.arange(len(launch_order))
    catalog = {name: i for i, name in enumerate(CATALOG_BY_NAME)}
    metric_rank = np.array([catalog.get(m, len(catalog)) for m in rows.names], dtype=np.int64)[rows.metric_code]
    info = judged.status == Status.INFO.value
    order: Ints = np.lexsort((rows.metric_code, metric_rank, info, position[rows.launch_id]))
    return order
