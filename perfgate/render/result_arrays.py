"""A report's results as numpy arrays (:class:`ResultArrays`), the one in-memory shape every renderer reads a
compared report's results in: made once per render for the HTML page's table of launches
(``perfgate.render.html_table``) and for the kernel rows of every format (:func:`metric_launches`, whose kernels
of a loop have thousands of launches). The results may be lists (a report read back) or numpy arrays
(``build_report(result_arrays=True)``, which ``perfgate compare`` builds: 400,000 results are not made Python
lists only to be made arrays again).
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from typing import Any, NamedTuple

import numpy as np

from perfgate.columns import factorize, median
from perfgate.report import ReportView

_EXACT = 2.0 ** 53  # below it a float holds every integer: a median of ints is the median of their floats


def floats(column: Sequence[Any]) -> np.ndarray:
    """A number column as floats, None as NaN; a value no float holds (an integer beyond float range) is NaN
    too: its users format or summarize such a value from the report's own."""
    try:
        return np.array(column, dtype=float)
    except (OverflowError, TypeError, ValueError):
        return np.array([_float_or_nan(v) for v in column], dtype=float)


def _float_or_nan(value: Any) -> float:
    try:
        return float(value) if value is not None else math.nan
    except (OverflowError, TypeError, ValueError):
        return math.nan


class ReportedValues(Sequence[Any]):
    """A float column of numpy results read as the report's lists hold it: None for NaN and ±inf (JSON has
    neither), Python floats else."""

    def __init__(self, values: np.ndarray) -> None:
        self._values = values

    def __len__(self) -> int:
        return len(self._values)

    def __getitem__(self, at: Any) -> Any:
        if not isinstance(at, (int, np.integer)):
            raise TypeError("one value at a time")
        value = float(self._values[at])
        return value if math.isfinite(value) else None


def _finite(values: np.ndarray) -> np.ndarray:
    """A float column of numpy results with ±inf as NaN, as the report's lists read (None: NaN)."""
    values = np.asarray(values, dtype=float)
    if not np.isinf(values).any():  # the usual case: the column as it is, not a copy of 7.5M rows
        unchanged: np.ndarray = values.view()
        unchanged.flags.writeable = False
        return unchanged
    finite: np.ndarray = np.where(np.isfinite(values), values, np.nan)
    return finite


_RESULT_COLUMNS = ("status", "launch", "metric", "gated", "baseline", "current", "change")


class ResultArrays:
    """The results columns as arrays: statuses as codes into ``names``, None as NaN; ``values``: the baseline,
    current and change columns as the report's lists hold them, for the values a float does not hold.

    ``span``: only the result rows ``start:stop`` (a few launches' rows: ``result_span``), numbered from 0, and no
    launch statuses (``launch_status`` is empty): a kernel row of one launch does not cost the whole report."""

    def __init__(self, report: ReportView, span: tuple[int, int] | None = None) -> None:
        results: Any = report["results"]  # lists, or numpy arrays (build_report(result_arrays=True))
        launches: Any = report["launches"]
        if span is not None:
            start, stop = span
            results = {name: results[name][start:stop] for name in _RESULT_COLUMNS}
            launches = {"status": []}
        self.names: list[str]
        self.status: np.ndarray
        if isinstance(results["status"], np.ndarray):
            status, found = factorize(results["status"])
            self.names = list(dict.fromkeys([*found.tolist(), *dict.fromkeys(launches["status"])]))
            self.status = np.asarray(status, dtype=np.intp)
        else:
            self.names = list(dict.fromkeys([*dict.fromkeys(results["status"]),
                                             *dict.fromkeys(launches["status"])]))
            code_of = {name: code for code, name in enumerate(self.names)}
            self.status = np.fromiter(map(code_of.__getitem__, results["status"]), dtype=np.intp,
                                      count=len(results["status"]))
        code_of = {name: code for code, name in enumerate(self.names)}
        self.launch_status = np.fromiter(map(code_of.__getitem__, launches["status"]), dtype=np.intp,
                                         count=len(launches["status"]))
        self.launch = np.asarray(results["launch"], dtype=np.intp)
        self.metric = np.asarray(results["metric"], dtype=np.intp)
        self.gated = np.asarray(results["gated"], dtype=bool)  # null reads as not gated
        self.in_arrays = isinstance(results["baseline"], np.ndarray)
        names = ("baseline", "current", "change")
        self.values: dict[str, Sequence[Any]]
        if self.in_arrays:
            self.baseline, self.current, self.change = (_finite(results[name]) for name in names)
            self.values = {name: ReportedValues(results[name]) for name in names}
        else:
            self.baseline, self.current, self.change = (floats(results[name]) for name in names)
            self.values = {name: results[name] for name in names}

    def statuses(self, *names: str) -> np.ndarray:
        """Which status codes are one of ``names`` (a mask indexed by code)."""
        return np.array([name in names for name in self.names], dtype=bool)

    def of_status(self, name: str) -> np.ndarray:
        """Which result rows have status ``name``."""
        mask: np.ndarray = self.status == (self.names.index(name) if name in self.names else -1)
        return mask

    def rows_of(self, launches: list[int]) -> np.ndarray:
        """The result rows of ``launches`` (ascending), in report order: each launch's rows are contiguous."""
        wanted = np.array(launches, dtype=np.intp)
        starts = np.searchsorted(self.launch, wanted, side="left")
        sizes = np.searchsorted(self.launch, wanted, side="right") - starts
        rows: np.ndarray = np.repeat(starts - np.cumsum(sizes) + sizes, sizes) + np.arange(int(sizes.sum()))
        return rows


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


def metric_launches(arrays: ResultArrays, indexes: list[int]) -> list[MetricLaunches]:
    """Each metric of a kernel's launches ``indexes`` over them, in order of appearance: one launch's values as the
    report holds them, the medians of several (``statistics.median``'s, None left out; of the launches with a value
    on both sides where some have one: ``_paired``)."""
    results = arrays.values
    codes, by_metric, grid = _metric_rows(arrays, arrays.rows_of(indexes), len(indexes))
    befores, afters = (_grid_medians(values, grid) for values in (arrays.baseline, arrays.current))
    out = []
    for at, (code, mine) in enumerate(zip(codes, by_metric)):
        if len(mine) == 1:
            i = int(mine[0])
            before, after, change = results["baseline"][i], results["current"][i], results["change"][i]
        else:
            paired = _paired(arrays, mine)
            if paired is not None:  # medians of the same launches on both sides, not of a launch more or less
                before = _median(arrays.baseline, paired, results["baseline"])
                after = _median(arrays.current, paired, results["current"])
            else:
                before = befores[at] if at in befores else _median(arrays.baseline, mine, results["baseline"])
                after = afters[at] if at in afters else _median(arrays.current, mine, results["current"])
            change = after / before - 1 if before and after is not None else None
        statuses = factorize(arrays.status[mine])[1].tolist()
        out.append(MetricLaunches(code=code, launches=len(mine), statuses=tuple(arrays.names[s] for s in statuses),
                                  gated=bool(arrays.gated[mine].any()), before=before, after=after, change=change))
    return out


def _paired(arrays: ResultArrays, rows: np.ndarray) -> np.ndarray | None:
    """Of a metric's ``rows``, those with a value on both sides, where some but not all have one: a kernel that
    lost or gained launches (missing, new) is summarized by the launches compared, else its medians would set the
    baseline's launches against others (``9 µs → 30 µs`` of a kernel whose every compared launch is unchanged)."""
    both = ~np.isnan(arrays.baseline[rows]) & ~np.isnan(arrays.current[rows])
    if both.all() or not both.any():
        return None
    found: np.ndarray = rows[both]
    return found


def _metric_rows(arrays: ResultArrays, rows: np.ndarray, count: int) -> tuple[list[int], list[np.ndarray], Any]:
    """The metrics of result ``rows`` (of ``count`` launches) in order of appearance: each one's code and rows;
    and the rows as a grid of a row per launch where every launch holds the same metrics in the same order (the
    launches of a loop), else None."""
    by_code, codes = factorize(arrays.metric[rows])
    width = len(codes)
    if width and len(rows) == count * width and (by_code.reshape(count, width) == np.arange(width)).all():
        grid = rows.reshape(count, width)
        return codes.tolist(), list(grid.T), grid
    return codes.tolist(), [rows[by_code == code] for code in range(width)], None


def _grid_medians(values: np.ndarray, grid: Any) -> dict[int, float]:
    """The median of ``values`` over each column of ``grid`` (a metric's rows) without NaN and with every value
    below 2**53 (``_median`` takes the others), by column number: the checks made for every column at once."""
    if grid is None or len(grid) < 2:
        return {}
    # A row per metric, sorted (in half the time np.median's selection takes): NaN last, the extremes at the ends,
    # and each median read at the middle as np.median takes it (the mean of the middle one or two). A zero there is
    # np.median's own: which of 0.0 and -0.0 its selection leaves in the middle depends on the values' order.
    ordered = values[grid.T]
    ordered.sort(axis=1)
    lowest, highest = ordered[:, 0], ordered[:, -1]
    usable = np.flatnonzero(~np.isnan(highest) & (np.abs(lowest) < _EXACT) & (np.abs(highest) < _EXACT))
    count = ordered.shape[1]
    middles = ordered[usable, (count - 1) // 2:count // 2 + 1].mean(axis=1).tolist()
    return {at: found if found else median(values[grid[:, at]])
            for at, found in zip(usable.tolist(), middles, strict=True)}


def _median(values: np.ndarray, rows: np.ndarray, column: Sequence[Any]) -> float | None:
    """``statistics.median`` of ``column``'s values at ``rows`` without the None (NaN in ``values``); from the
    report's own values where a float does not hold them."""
    picked = values[rows]
    known = picked[~np.isnan(picked)]
    overflowed = len(known) < len(picked) and any(column[i] is not None for i in rows[np.isnan(picked)].tolist())
    if overflowed or (np.abs(known) >= _EXACT).any():
        exact = [v for v in map(column.__getitem__, rows.tolist()) if v is not None]
        return statistics.median(exact) if exact else None
    return median(known) if len(known) else None  # as statistics.median: the mean of the middle two
