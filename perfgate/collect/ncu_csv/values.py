"""Cells to numbers, and units to the base units the table holds.

Thousands separators (``"1,215,000,000.00"``) are removed; ``n/a`` becomes NaN (row kept: "no
data"); an empty cell is an absent metric (no row); a string value (device name, cache
configuration) is no number (no row; the device name feeds ``device`` elsewhere), unless it stands
where a number belongs (``flag_unusable``: kept as NaN with the reason). Units are reduced
to ``ncu_report``'s base units through ``perfgate.units`` (``"usecond"`` -> ``ns``, ``"Kbyte/block"``
-> ``byte/block``), so CSV and ``.ncu-rep`` tables compare. Not handled: locales that swap the
decimal and thousands marks.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from perfgate.collect.ncu_csv.arrays import BoolArray, FloatArray, IntArray, ObjectArray
from perfgate.collect.screen import no_value_reason, not_a_number_reason
from perfgate.units import to_base

NA_STRINGS = frozenset({"n/a", "N/A", "nan", "NaN", "-nan"})
_NUMBER_START = frozenset("0123456789+-.")


def numbers(cells: ObjectArray, suspects: BoolArray | None = None,
            groups: IntArray | None = None) -> tuple[FloatArray, BoolArray]:
    """(values, keep) for an object array of cells: numbers parsed, n/a kept as NaN, others dropped.

    Empty cells (NaN from the parser) are absent metrics and strings are non-numeric metrics: both
    are not kept. When the one vectorized conversion fails, only ``suspects`` (cells that may hold
    a string: ncu gives string metrics no unit) are converted again, one ``groups`` value (metric)
    at a time, so a string-valued metric costs a probe instead of a Python call per cell.
    """
    try:
        cleaned = np.array([c.replace(",", "") for c in cells], dtype=object)
    except AttributeError:  # empty cells (float NaN), or numbers the parser already converted
        cleaned = np.array([c.replace(",", "") if isinstance(c, str) else c for c in cells], dtype=object)
    try:
        values: FloatArray = cleaned.astype(np.float64)
    except (TypeError, ValueError):
        values = _numbers_by_group(cleaned, suspects, groups)
    keep = ~np.isnan(values)
    missing = np.flatnonzero(~keep)
    if missing.size:
        keep[missing] = pd.Series(cells[missing], dtype=object).isin(NA_STRINGS).to_numpy()
    return values, keep


def _numbers_by_group(cleaned: ObjectArray, suspects: BoolArray | None, groups: IntArray | None) -> FloatArray:
    """The slow conversion: sure cells at once, then suspects one group (metric) at a time."""
    values = np.empty(len(cleaned))
    if suspects is None:
        suspects = np.ones(len(cleaned), dtype=bool)
    sure = np.flatnonzero(~suspects)
    try:
        values[sure] = cleaned[sure].astype(np.float64)
    except (TypeError, ValueError):
        suspects = np.ones(len(cleaned), dtype=bool)
    slow = np.flatnonzero(suspects)
    if groups is None:
        parts = [slow]
    else:
        order = slow[np.argsort(groups[slow], kind="stable")]
        bounds = np.flatnonzero(np.diff(groups[order])) + 1
        parts = np.split(order, bounds)
    for part in parts:
        values[part] = _convert(cleaned[part])
    return values


def _to_float(value: object) -> float:
    """float(cell), NaN where float() refuses it (cells are text, NaN, or numbers the parser made)."""
    if not isinstance(value, (str, int, float, np.number)):
        return np.nan
    try:
        return float(value)
    except (TypeError, ValueError):
        return np.nan


def _convert(cleaned: ObjectArray) -> FloatArray:
    """Cells of one metric to float: vectorized when all are numbers, else only those that look so."""
    try:
        return cleaned.astype(np.float64)
    except (TypeError, ValueError):
        pass
    # Names, enums and n/a start with a letter: NaN without a Python float() call each.
    numeric = np.fromiter((not isinstance(c, str) or c[:1] in _NUMBER_START for c in cleaned), bool, len(cleaned))
    values = np.full(len(cleaned), np.nan)
    index = np.flatnonzero(numeric)
    if index.size:
        try:
            values[index] = cleaned[index].astype(np.float64)
        except (TypeError, ValueError):
            values[index] = np.fromiter(map(_to_float, cleaned[index]), np.float64, index.size)
    return values


def column_numbers(column: pd.Series) -> tuple[FloatArray, BoolArray]:
    """(values, keep) of one raw-page metric column, which the parser may already have made numeric."""
    if column.dtype.kind in "fiub":
        values = column.to_numpy(dtype=np.float64, na_value=np.nan)
        return values, ~np.isnan(values)
    return numbers(column.to_numpy(dtype=object))


def unit_scale(units: Sequence[str]) -> tuple[list[str], FloatArray]:
    """The base unit of each unit and the factor that turns its values into the base unit's."""
    names: list[str] = []
    factors = np.ones(len(units))
    for i, unit in enumerate(units):
        base, factor = to_base(unit)
        names.append(base)
        factors[i] = factor
    return names, factors


def flag_unusable(cells: ObjectArray, values: FloatArray, keep: BoolArray,
                  numeric: BoolArray) -> tuple[BoolArray, ObjectArray | None]:
    """Keep the cells that stand where a number belongs but hold none, and say why (``perfgate.collect.screen``).

    ``numbers`` keeps ``n/a`` as NaN and drops text; text in a metric that is ``numeric`` (per cell: it has a
    unit, other cells of it are numbers, or it was asked for) is kept here as NaN too. Returns (keep, reasons):
    reasons per cell, None where the cell is fine; None instead of the array when every cell is.
    """
    with np.errstate(invalid="ignore"):
        no_value = keep & np.isnan(values)
    text = ~keep & numeric & np.fromiter((isinstance(c, str) and c.strip() != "" for c in cells), bool, len(cells)) \
        if (~keep & numeric).any() else np.zeros(len(cells), dtype=bool)
    if not no_value.any() and not text.any():
        return keep, None
    reasons: ObjectArray = np.full(len(cells), None, dtype=object)
    for index in np.flatnonzero(no_value):
        reasons[index] = no_value_reason(cells[index])
    for index in np.flatnonzero(text):
        reasons[index] = not_a_number_reason(cells[index])
    return keep | text, reasons
