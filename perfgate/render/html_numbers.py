"""The HTML page's numbers in numpy, each distinct text made once: a table of 80,000 rows holds a few thousand
distinct numbers. A value's text is ``perfgate.quantities``' (its unit, at the scale its row shares:
``value_scale``); values that round to the same digits share one rounding key, so one of them is formatted for
all.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Callable, NamedTuple, TypeVar

import numpy as np

from perfgate.columns import objects
from perfgate.quantities import (
    OWN,
    SHARED_LOWEST,
    TIMES_FROM,
    WHOLE,
    _formatter,
    format_change,
    number_style,
    scale_divisors,
    whole_count,
)
from perfgate.render.formatting import html_escape
from perfgate.units import SI_PREFIXES

_escape = html_escape


def row_scales(unit: str, first: np.ndarray, second: np.ndarray) -> np.ndarray:
    """:func:`perfgate.quantities.value_scale` of each row's two values of ``unit`` (NaN: no value), in
    numpy: the step the larger finite one reaches, unless the smaller would read in exponent form there (OWN);
    WHOLE for counts whose finite values are all whole below 1e9."""
    style = number_style(unit)
    if style == "percent":
        return np.zeros(len(first), dtype=np.int64)
    divisors = scale_divisors(unit)
    with np.errstate(invalid="ignore"):
        finite = [np.where(np.isfinite(values), np.abs(values), np.nan) for values in (first, second)]
        reach = np.fmax(*finite)
        scales = np.zeros(len(first), dtype=np.int64)  # the steps, largest first, that the reach falls short of
        for divisor in divisors[:-1]:
            scales += reach < divisor
        nonzero = [np.where(values != 0, values, np.nan) for values in finite]
        smallest = np.fmin(*nonzero)
        smallest = np.where(np.isnan(smallest), reach, smallest)
        scales[~(smallest >= SHARED_LOWEST * np.array(divisors)[scales])] = OWN  # NaN (no finite value) too
        if style == "count":
            whole = np.ones(len(first), dtype=bool)
            for values in finite:
                whole &= np.isnan(values) | ((np.floor(values) == values) & (values < 1e9))
            scales[whole & ~np.isnan(reach)] = WHOLE
    return scales


# ---------------------------------------------------------------- rounding keys: values that share one share a text

def _g_keys(values: np.ndarray, digits: np.ndarray | int) -> tuple[np.ndarray, np.ndarray]:
    """Keys for ``f"{value:.{digits}g}"``: its sign, decimal exponent and the ``digits`` digits it rounds to, and
    where that rounding is certain (not within 1e-6 of a tie, the exponent as ``log10`` says); so values with one
    certain key have one text. Zero (either sign) is certain."""
    magnitude = np.abs(values)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        exponent = np.floor(np.log10(magnitude))
        scaled = magnitude * 10.0 ** (digits - 1 - exponent)  # within a few ulps: far below the 1e-6 asked
        rounded = np.rint(scaled)
        certain = ((np.abs(scaled - np.floor(scaled) - 0.5) > 1e-6) & (rounded >= 10.0 ** (digits - 1))
                   & (rounded < 10.0 ** digits))
        # An exponent of a finite float is within ±400: (exponent + 400) * 1e5 + rounded stays below 1e8.
        keys = np.where(certain, (exponent + 400) * 1e5 + rounded, 0.0) + np.signbit(values) * 1e8
    return keys.astype(np.int64), certain | (magnitude == 0)


_SI_SCALES = np.array([scale for scale, _ in SI_PREFIXES] + [1.0])  # largest first; 1: no prefix


def _percent_keys(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Keys for ``f"{value:.1f}%"``: the tenths it rounds to (certain away from a tie: ``value * 10`` is within
    2**-13 of its own below 2**40) and its sign (``-0.0%``)."""
    with np.errstate(invalid="ignore", over="ignore"):
        tenths = values * 10
        certain = (np.abs(tenths) < 2.0 ** 40) & (np.abs(tenths - np.floor(tenths) - 0.5) > 1e-3)
        keys = 2 * np.where(certain, np.rint(tenths), 0).astype(np.int64) + np.signbit(values)
    return keys, certain


def _si_keys(values: np.ndarray, step: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Keys for ``quantities._si``'s text: the prefix the value reaches (or that of ``step``), then the 3 digits it
    rounds to (4 without a prefix)."""
    magnitude = np.abs(values)
    prefix: Any = (sum((magnitude < scale).astype(np.int64) for scale in _SI_SCALES[:-1].tolist()) if step is None
                   else np.full(len(values), step, dtype=np.int64))
    keys, certain = _g_keys(values / _SI_SCALES[prefix], np.where(prefix < len(_SI_SCALES) - 1, 3, 4))
    return prefix * 10 ** 9 + keys, certain


class Writer(NamedTuple):
    """How a metric's values are written: ``text`` of a value, ``keys`` (values with one key have one text: those
    that round to the same digits) and ``whole`` (a whole number's text below 1e9: a count's) where its unit has
    them. A unit from the report is untrusted: its numbers are escaped, unless escaping leaves the unit as it is."""

    text: Callable[[float], str]
    keys: Callable[[np.ndarray], tuple[np.ndarray, np.ndarray]] | None = None
    whole: Callable[[int], str] | None = None

    @staticmethod
    def of(unit: str, scale: int = OWN) -> Writer:
        """``unit``'s values at ``scale`` (``quantities.value_scale``'s; OWN: each value at its own)."""
        style = number_style(unit)
        own = scale in (WHOLE, OWN)
        text, whole = _formatter(unit, scale), whole_count(unit) if style == "count" and own else None
        if _escape(unit) != unit:
            text, whole = _escaped(text), _escaped(whole) if whole is not None else None
        keys: Callable[[np.ndarray], tuple[np.ndarray, np.ndarray]] | None = None
        if style == "percent":
            keys = _percent_keys
        elif style in ("si", "count"):
            keys = _si_keys if own else (lambda values: _si_keys(values, scale))
        return Writer(text, keys, whole)


_T = TypeVar("_T")


def distinct(keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each key's index among the distinct ``keys``, and a row of each distinct key: by a table over the keys'
    range where it is small (tenths of a percent), else by sorting them. Not ``columns.factorize``: its codes
    follow first appearance, which costs a second sort here for nothing (twice the time on wide keys)."""
    low, high = int(keys.min()), int(keys.max())
    if high - low <= 2 * len(keys) + 1024:
        shifted = keys - low
        seen = np.zeros(high - low + 1, dtype=bool)
        seen[shifted] = True
        inverse: np.ndarray = (np.cumsum(seen) - 1)[shifted]
    else:
        inverse = np.unique(keys, return_inverse=True)[1]
    one = np.empty(int(inverse.max()) + 1, dtype=np.intp)
    one[inverse] = np.arange(len(keys))
    return inverse, one


def _escaped(text_of: Callable[[_T], str]) -> Callable[[_T], str]:
    return lambda value: _escape(text_of(value))


def value_texts(values: np.ndarray, rows: np.ndarray, writer: Writer, column: Sequence[Any], odd: Callable[[Any], str],
           suffix: str = "") -> Any:
    """``writer.text(v) + suffix`` for each of ``values[rows]``, each text made once: a whole number's, one
    value's of each key, else each distinct value's; a NaN (None in the report) is ``odd`` of the report's own
    value. The suffix (the markup that follows) spares the table a part in each row."""
    picked = values[rows]
    out = np.empty(len(rows), dtype=object)
    # Beyond 2**53 a float does not hold every integer: such a value (an int in a report read back) is
    # formatted from the report's own value.
    with np.errstate(invalid="ignore"):
        number = np.abs(picked) < 2.0 ** 53
        whole = (np.floor(picked) == picked) & (np.abs(picked) < 1e9)
    left = number
    if writer.whole is not None and whole.any():
        integers = picked[whole].astype(np.int64)
        inverse, one = distinct(integers)
        out[whole] = objects([text + suffix for text in map(writer.whole, integers[one].tolist())])[inverse]
        left = number & ~whole
    keys, certain = writer.keys(picked) if writer.keys is not None else (None, np.zeros(len(rows), dtype=bool))
    # by bits where the key is the value, so -0.0 and 0.0 (shown "-0" and "0") stay apart
    for kept, key in ((left & certain, keys), (left & ~certain, picked.view(np.int64))):
        if key is not None and kept.any():
            inverse, one = distinct(key[kept])
            out[kept] = objects([writer.text(v) + suffix for v in picked[kept][one].tolist()])[inverse]
    for at in np.flatnonzero(~number).tolist():
        out[at] = odd(column[rows[at]]) + suffix
    return out


def _tenths(k: int) -> str:
    return f"{'+' if k > 0 else '-'}{abs(k) // 10}.{abs(k) % 10}%"


def change_texts(changes: np.ndarray, column: Sequence[Any], rows: np.ndarray, suffix: str = "") -> Any:
    """:func:`format_change` of each of ``changes[rows]``. Changes hardly repeat, their texts do (``+5.2%``):
    a change is rounded to tenths of a percent in numpy where that rounding is certain, and each distinct
    text made once; the rest (no change, near a tie, huge, missing) go through :func:`format_change`."""
    picked = changes[rows]
    with np.errstate(invalid="ignore", over="ignore"):
        tenths = picked * 100 * 10  # what f"{change * 100:+.1f}" rounds, within 2**-13 below 2**40
        rounded = np.rint(tenths)
        certain = ((np.abs(picked) >= 0.0005) & (np.abs(tenths) < 2.0 ** 40)
                   & (np.abs(tenths - np.floor(tenths) - 0.5) > 1e-3) & (rounded != 0)
                   & (picked < TIMES_FROM))  # a ratio's text (226×) is format_change's
    out = np.empty(len(rows), dtype=object)
    if certain.any():
        kept = rounded[certain].astype(np.int64)
        inverse, one = distinct(kept)
        out[certain] = objects([_tenths(k) + suffix for k in kept[one].tolist()])[inverse]
    rest = np.flatnonzero(~certain)
    if len(rest):
        out[rest] = value_texts(changes, rows[rest], Writer(format_change), column, format_change, suffix)
    return out
