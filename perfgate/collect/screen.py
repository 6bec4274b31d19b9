"""Values that are no measurement: kept as "no value" (NaN) with the reason, never dropped, never compared.

ncu prints ``n/a`` for a metric it could not collect; a hand-edited or broken file can hold ``nan``,
``inf``, ``1e400`` (beyond float range: read as infinity), text, hex, or a negative byte count. Compared
as numbers they would pass silently: an infinite current duration has no finite change, a negative one
reads as a 250% improvement, and a dropped row reads as "not measured". So every reader keeps such a
cell as a row with value NaN and records why in the measurement's ``unusable`` (``perfgate.table``),
which the compare stage turns into notes.

Readers record what only they can see (the cell's text: ``n/a``, ``fast``, ``0x1F``); ``screen_values``
then judges the numbers every reader produced alike:

* not finite (``inf``, ``-inf``, ``1e400``);
* negative, for a metric with a unit (times, bytes, instructions, cycles, sectors, percentages...: no
  metric with a unit was negative in any real report seen, ncu 2019-2025) and for the curated metrics;
* zero or negative, for a time a launch or benchmark round took (``gpu__time_duration.*``, pytest-benchmark's
  min/max/mean/median/quartiles): nothing runs in no time. (A standard deviation or IQR of 0 is fine.)
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from perfgate.columns import factorize
from perfgate.metrics import CATALOG_BY_NAME
from perfgate.table import Measurement, Unusable

# Times a launch or a round took: a value of 0 is a broken measurement, not a fast one.
_POSITIVE_PREFIXES = ("gpu__time_duration.",)
_POSITIVE_METRICS = frozenset({"time.min", "time.max", "time.mean", "time.median", "time.q1", "time.q3"})

MAX_SHOWN_CHARS = 40  # of a cell quoted in a reason


def must_be_positive(metric: str) -> bool:
    return metric in _POSITIVE_METRICS or metric.startswith(_POSITIVE_PREFIXES)


def must_be_non_negative(metric: str, unit: str) -> bool:
    return bool(unit) or metric in CATALOG_BY_NAME or must_be_positive(metric)


def shown(cell: object) -> str:
    """A cell as quoted in a reason: a string repr'd (control characters escaped) and cut to about
    ``MAX_SHOWN_CHARS``; a JSON value by its kind (``true``, ``a list``), never its whole text."""
    if isinstance(cell, str):
        text = repr(cell[:MAX_SHOWN_CHARS])
        return text if len(cell) <= MAX_SHOWN_CHARS else text[:-1] + "…" + text[-1]
    if isinstance(cell, bool):
        return "true" if cell else "false"
    if isinstance(cell, (list, tuple)):
        return "a list"
    if isinstance(cell, dict):
        return "an object"
    text = str(cell)
    return text if len(text) <= MAX_SHOWN_CHARS else text[: MAX_SHOWN_CHARS - 1] + "…"


NO_VALUE = "no value was recorded"


def no_value_reason(cell: object) -> str:
    """The reason for a cell ncu (or pytest-benchmark) wrote as "no value": ``n/a``, ``nan``, null."""
    return f"{shown(cell)}: {NO_VALUE}"


def is_no_value(reason: str) -> bool:
    """Whether a reason says the tool recorded no value (``n/a``), as opposed to a value that is broken (text,
    infinite, negative): ncu does the first for real (a launch it could not measure), never the second."""
    return reason.endswith(NO_VALUE)


def not_a_number_reason(cell: object) -> str:
    return f"{shown(cell)} is not a number"


def value_problem(metric: str, unit: str, value: float) -> str | None:
    """Why a parsed number cannot be a value of ``metric``; None when it can."""
    if np.isnan(value):
        return f"nan: {NO_VALUE}"
    if not np.isfinite(value):
        return f"{'-' if value < 0 else ''}infinite (inf, or a number too large to hold)"
    if value <= 0 and must_be_positive(metric):
        return f"{value:g}{' ' + unit if unit else ''} is not a time anything ran for"
    if value < 0 and must_be_non_negative(metric, unit):
        return f"{value:g}{' ' + unit if unit else ''} is negative"
    return None


def screen_values(measurement: Measurement, recorded: Iterable[Unusable] = ()) -> Measurement:
    """Set the values that are no measurement to NaN, and record every unusable value with its reason.

    ``recorded``: what the reader already found (``{"launch", "metric", "reason"}``, for rows it kept as
    NaN). Returns the measurement with those values NaN in a new table (a Columns is never changed in place)
    and ``unusable`` holding those plus the ones found here.
    Vectorized: only the rows found bad cost a Python step.
    """
    frame = measurement.table
    records: list[Unusable] = [*measurement.unusable, *recorded]
    values = np.asarray(frame["value"], dtype=np.float64)
    with np.errstate(invalid="ignore"):
        bad = np.isinf(values)
        non_positive = values <= 0
    if non_positive.any():
        # Only the rows of 0 or less can break these rules: judge their metrics and units, not the whole table's.
        at = np.flatnonzero(non_positive)
        metric_codes, metric_names = factorize(frame["metric"][at])
        unit_codes, unit_names = factorize(frame["unit"][at])
        positive = np.array([must_be_positive(str(m)) for m in metric_names], dtype=bool)[metric_codes]
        curated = np.array([str(m) in CATALOG_BY_NAME for m in metric_names], dtype=bool)[metric_codes]
        has_unit = np.array([bool(str(u)) for u in unit_names], dtype=bool)[unit_codes]
        bad[at] |= positive | ((values[at] < 0) & (has_unit | curated))
    rows = np.flatnonzero(bad)
    if rows.size:
        launches = frame["launch"][rows]
        metrics = frame["metric"][rows]
        units = frame["unit"][rows]
        for row, launch, metric, unit in zip(rows, launches, metrics, units, strict=True):
            problem = value_problem(str(metric), str(unit), float(values[row]))
            records.append({"launch": int(launch), "metric": str(metric), "reason": problem or "unusable"})
        screened = values.copy()  # the table's own array may be shared with other tables
        screened[rows] = np.nan
        frame = frame.assign(value=screened)
    return measurement._replace(table=frame, unusable=tuple(records))
