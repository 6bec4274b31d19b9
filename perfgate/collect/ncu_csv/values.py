"""Cells to numbers, and units to the base units the table holds.

Thousands separators (``"1,215,000,000.00"``) are removed; ``n/a`` becomes NaN (row kept: "no
data"); an empty cell is an absent metric (no row); a string value (device name, cache
configuration) is no number (no row; the device name feeds ``device`` elsewhere), unless it stands
where a number belongs (``flag_unusable``: kept as NaN with the reason). Units are reduced
to ``ncu_report``'s base units through ``perfgate.units`` (``"usecond"`` -> ``ns``, ``"Kbyte/block"``
-> ``byte/block``), so CSV and ``.ncu-rep`` tables compare. Not handled: locales that swap the
decimal and thousands marks.

A raw-page column (``column_numbers``) is parsed as text and read cell by cell like the details page's
cells, with Python's ``float`` (correctly rounded), and typed as a whole where the column says how: true/false
only is 1 and 0, and ``-0`` in a column of integers only is 0.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np

from perfgate.collect.ncu_csv.arrays import BoolArray, FloatArray, IntArray, ObjectArray
from perfgate.collect.screen import no_value_reason, not_a_number_reason
from perfgate.units import to_base

NA_STRINGS = frozenset({"n/a", "N/A", "nan", "NaN", "-nan"})
_NUMBER_START = frozenset("0123456789+-.")

# Raw-page columns pandas typed as a whole (see ``column_numbers``): integers (thousands separators after the
# first digit, spaces around) and true/false.
_INTEGER = re.compile("[ \t\n\v\f\r]*[+-]?[0-9][0-9,]*[ \t\n\v\f\r]*")
_BOOLEAN = re.compile("(?i:true|false)")


def numbers(cells: ObjectArray, suspects: BoolArray | None = None,
            groups: IntArray | None = None) -> tuple[FloatArray, BoolArray]:
    """(values, keep) for an object array of cells: numbers parsed, n/a kept as NaN, others dropped.

    Empty cells ("", or NaN from pandas) are absent metrics and strings are non-numeric metrics: both
    are not kept. When the one vectorized conversion fails, only ``suspects`` (cells that may hold
    a string: ncu gives string metrics no unit) are converted again, one ``groups`` value (metric)
    at a time, so a string-valued metric costs a probe instead of a Python call per cell.
    """
    cleaned = _without_separators(cells)
    try:
        values: FloatArray = cleaned.astype(np.float64)
    except (TypeError, ValueError):
        values = _numbers_by_group(cleaned, suspects, groups)
    keep = ~np.isnan(values)
    missing = np.flatnonzero(~keep)
    if missing.size:
        keep[missing] = [isinstance(cell, str) and cell in NA_STRINGS for cell in cells[missing].tolist()]
    return values, keep


def _without_separators(cells: ObjectArray) -> ObjectArray:
    """The cells without thousands separators: three C-speed passes over all the text at once when every cell
    is a string, else cell by cell (NaN: an empty cell pandas parsed; a number)."""
    try:
        text = "\x00".join(cells.tolist())
    except TypeError:
        return np.array([c.replace(",", "") if isinstance(c, str) else c for c in cells.tolist()], dtype=object)
    if "," not in text:
        return cells
    parts = text.replace(",", "").split("\x00")
    if len(parts) != len(cells):  # a cell held the NUL that joined them
        return np.array([c.replace(",", "") for c in cells.tolist()], dtype=object)
    return np.array(parts, dtype=object)


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


def column_numbers(cells: ObjectArray) -> tuple[FloatArray, BoolArray]:
    """(values, keep) of one raw-page metric column of text cells ("" where empty).

    The filled cells as ``numbers`` reads them, but where the whole column says how to read it: a column of
    true/false only is 1 and 0, and ``-0`` in a column of integers only is 0.
    """
    filled: BoolArray = cells != ""
    if filled.all():
        values, keep = numbers(cells)
    else:
        values, keep = np.full(len(cells), np.nan), np.zeros(len(cells), dtype=bool)
        values[filled], keep[filled] = numbers(cells[filled])
    if not keep[filled].all():
        texts = cells[filled].tolist()
        if all(_BOOLEAN.fullmatch(text) for text in texts):
            values[filled] = [text.lower() == "true" for text in texts]
            keep = filled
    elif np.signbit(values[values == 0]).any() and all(_INTEGER.fullmatch(text) for text in cells[filled].tolist()):
        values = values + 0.0  # -0.0 + 0.0 is 0.0
    return values, keep


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
    text = np.zeros(len(cells), dtype=bool)
    dropped = np.flatnonzero(~keep & numeric)  # only these can hold text: look at them alone
    if dropped.size:
        text[dropped] = [isinstance(c, str) and c.strip() != "" for c in cells[dropped].tolist()]
    if not no_value.any() and not text.any():
        return keep, None
    reasons: ObjectArray = np.full(len(cells), None, dtype=object)
    for index in np.flatnonzero(no_value):
        reasons[index] = no_value_reason(cells[index])
    for index in np.flatnonzero(text):
        reasons[index] = not_a_number_reason(cells[index])
    return keep | text, reasons
