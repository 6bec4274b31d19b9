"""Thresholds of single series: a (kernel, region, metric) with a threshold of its own, where the metric's applies
to every other kernel (``CompareOptions.series_thresholds``; the history learns them from each series' spread), and
of the kernels matching a glob pattern (``CompareOptions.kernel_thresholds``, ``[tool.perfgate] kernel_thresholds``:
``{"sgemm*" = {"derived.roofline_pct" = ">=60"}}``), which win over both: what a person wrote for a kernel.

Where the per-metric limits are read (``policies.judge_rows`` for each row, ``repeats.judge_groups`` for each
group of repeated launches and its per-launch "moved alone" test, ``policies.own_regressions``), the per-row
limits made here are read instead; the DRAM traffic floors (``policies.absolute_floors``) apply on top. A series threshold applies only to
a metric that gates: it sizes a gate, it never turns one on or off. A row's floor (``>=60``) is its own
threshold's where it has one (a spec of a floor alone gates on the floor alone, as the metric's does).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from fnmatch import fnmatchcase
from typing import NamedTuple

import numpy as np

from perfgate.columns import Columns, factorize, filled
from perfgate.compare.arrays import Floats, Ints, Objects
from perfgate.compare.joining import JoinedRows
from perfgate.metrics import Threshold

SeriesThresholds = Mapping[tuple[str, str, str], Threshold]  # (kernel, region, metric) -> its threshold


class RowLimits(NamedTuple):
    """Per joined row: its relative and absolute limit (-1: none), its own threshold's spec ("" where the
    metric's applies) and its floor (NaN: none)."""

    relative: Floats
    absolute: Floats
    spec: Objects
    floor: Floats | None = None


KernelThresholds = Mapping[str, Mapping[str, Threshold]]  # glob pattern -> {metric: its threshold}


def row_limits(rows: JoinedRows, relative: Floats, absolute: Floats, gated: np.ndarray, kernels: Objects,
               regions: Objects, series: SeriesThresholds, floor: Floats | None = None,
               per_kernel: KernelThresholds | None = None) -> RowLimits:
    """``relative``/``absolute``/``gated``/``floor`` are per metric code (``policies.MetricRules``); ``kernels``
    and ``regions`` per launch id (the current run's names)."""
    code = rows.metric_code
    if per_kernel and len(rows):
        series = {**series, **_kernel_series(rows, kernels, regions, per_kernel)}
    if not series or not len(rows):  # every row the metric's: no spec of its own, no floor where no metric has one
        floors = _every_row(math.nan, len(rows)) if floor is None or bool(np.isnan(floor).all()) else floor[code]
        return RowLimits(relative[code], absolute[code], _every_row("", len(rows)), floors)
    floors = floor[code] if floor is not None else np.full(len(rows), math.nan)
    limits = RowLimits(relative[code], absolute[code], filled(len(rows), ""), floors)
    metrics = {metric for _, _, metric in series}
    wanted = np.array([name in metrics for name in rows.names], dtype=bool)
    for index in np.flatnonzero(wanted[code] & gated[code]).tolist():
        launch = int(rows.launch_id[index])
        found = series.get((str(kernels[launch]), str(regions[launch]), rows.names[int(code[index])]))
        if found is None or not found.gating:
            continue
        floor_only = found.floor is not None and found.relative is None and found.absolute is None
        limits.relative[index] = math.inf if floor_only else -1.0 if found.relative is None else found.relative
        limits.absolute[index] = -1.0 if found.absolute is None else found.absolute
        limits.spec[index] = found.spec
        floors[index] = math.nan if found.floor is None else found.floor
    return limits


def _every_row(value: object, count: int) -> np.ndarray:
    """``value`` on each of ``count`` rows, as a read-only view of one: a column of 7.5M rows at 500k launches with
    derived metrics, which no one writes where no series has a threshold of its own."""
    return np.broadcast_to(np.array([value], dtype=object if isinstance(value, str) else np.float64), (count,))


def _kernel_series(rows: JoinedRows, kernels: Objects, regions: Objects,
                   per_kernel: KernelThresholds) -> dict[tuple[str, str, str], Threshold]:
    """The (kernel, region, metric) thresholds ``per_kernel``'s patterns give the rows' launches: each kernel name
    takes the first pattern it matches (in the configuration's order)."""
    found: dict[tuple[str, str, str], Threshold] = {}
    names = {rows.names[int(c)] for c in np.unique(rows.metric_code).tolist()}
    for launch in np.unique(rows.launch_id).tolist():
        kernel = str(kernels[launch])
        pattern = next((p for p in per_kernel if fnmatchcase(kernel, p)), None)
        if pattern is None:
            continue
        for metric, threshold in per_kernel[pattern].items():
            if metric in names:
                found[(kernel, str(regions[launch]), metric)] = threshold
    return found


def shown_thresholds(results: Columns, result_metric: Ints, spec: Objects) -> tuple[Columns, Ints]:
    """The results with each series' own threshold in their threshold column (``spec`` in the results' order),
    and their metric codes told apart by it (the report's metrics table has a row per metric and threshold)."""
    own = spec != ""
    if not own.any():
        return results, result_metric
    shown: Objects = np.where(own, spec, results["threshold"])
    spec_codes, distinct = factorize(shown)
    codes: Ints = result_metric * len(distinct) + spec_codes
    return results.assign(threshold=shown), codes
