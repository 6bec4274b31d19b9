"""Thresholds of single series: a (kernel, region, metric) with a threshold of its own, where the metric's applies
to every other kernel (``CompareOptions.series_thresholds``; the history learns them from each series' spread).

Where the per-metric limits are read (``policies.judge_rows`` for each row, ``repeats.judge_groups`` for each
group of repeated launches and its per-launch "moved alone" test, ``policies.own_regressions``), the per-row
limits made here are read instead; the DRAM traffic floors (``policies.absolute_floors``) apply on top. A series threshold applies only to
a metric that gates: it sizes a gate, it never turns one on or off.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import NamedTuple

import numpy as np

from perfgate.columns import Columns, factorize, filled
from perfgate.compare.arrays import Floats, Ints, Objects
from perfgate.compare.joining import JoinedRows
from perfgate.metrics import Threshold

SeriesThresholds = Mapping[tuple[str, str, str], Threshold]  # (kernel, region, metric) -> its threshold


class RowLimits(NamedTuple):
    """Per joined row: its relative and absolute limit (-1: none), and its own threshold's spec ("" where the
    metric's applies)."""

    relative: Floats
    absolute: Floats
    spec: Objects


def row_limits(rows: JoinedRows, relative: Floats, absolute: Floats, gated: np.ndarray, kernels: Objects,
               regions: Objects, series: SeriesThresholds) -> RowLimits:
    """``relative``/``absolute``/``gated`` are per metric code (``policies.MetricRules``); ``kernels`` and
    ``regions`` per launch id (the current run's names)."""
    code = rows.metric_code
    limits = RowLimits(relative[code], absolute[code], filled(len(rows), ""))
    if not series or not len(rows):
        return limits
    metrics = {metric for _, _, metric in series}
    wanted = np.array([name in metrics for name in rows.names], dtype=bool)
    for index in np.flatnonzero(wanted[code] & gated[code]).tolist():
        launch = int(rows.launch_id[index])
        found = series.get((str(kernels[launch]), str(regions[launch]), rows.names[int(code[index])]))
        if found is None or not found.gating:
            continue
        limits.relative[index] = -1.0 if found.relative is None else found.relative
        limits.absolute[index] = -1.0 if found.absolute is None else found.absolute
        limits.spec[index] = found.spec
    return limits


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
