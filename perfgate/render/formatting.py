"""Number formatting and escaping every renderer shares. Stdlib only."""

from __future__ import annotations

import math
from functools import lru_cache
from typing import Any, Callable

from perfgate.render.untrusted import MAX_NAME, html_text, md_inline
from perfgate.units import BYTE, BYTE_SYMBOL, SI_PREFIXES, SILENT_UNITS, TIME_UNITS, scale_time



# ---------------------------------------------------------------- number formatting

def _si(unit: str) -> Callable[[float], str]:
    """A value with the largest decimal prefix it reaches (``units.scale_si``'s), to 3 significant digits; below
    1000 to 4, without one. One flat call a value: an HTML report formats tens of thousands of them."""
    prefixed = [(scale, f" {prefix}{unit}".rstrip()) for scale, prefix in SI_PREFIXES]
    plain = f" {unit}".rstrip()  # the number never ends in a space: stripping the suffix is stripping the text

    def si(value: float) -> str:
        magnitude = abs(value)
        for scale, suffix in prefixed:
            if magnitude >= scale:
                return f"{value / scale:.3g}{suffix}"
        return f"{value:.4g}{plain}"

    return si


def _percent(value: float) -> str:
    return f"{value:.1f}%"


def number_style(unit: str) -> str:
    """How a value of ``unit`` is written: ``time`` (in the largest time unit it reaches), ``si`` (with the largest
    decimal prefix it reaches), ``percent``, or ``count`` (a whole number below 1e9 as it is, else as ``si``)."""
    if unit in TIME_UNITS:
        return "time"
    if unit == BYTE:
        return "si"
    return "percent" if unit == "%" else "count"


@lru_cache(maxsize=256)
def _formatter(unit: str) -> Callable[[float], str]:
    """One function per unit, so a table of thousands of values does not re-decide the unit each time.
    The unit knowledge (scales, symbols) is ``perfgate.units``'."""
    style = number_style(unit)
    if style == "time":
        def time(value: float) -> str:
            scaled, symbol = scale_time(value, unit)
            return f"{scaled:.4g} {symbol}"

        return time
    if style == "si":
        return _si(BYTE_SYMBOL)
    if style == "percent":
        return _percent
    si = _si("" if unit in SILENT_UNITS else unit)
    whole = whole_count(unit)

    def count(value: float) -> str:
        if float(value).is_integer() and abs(value) < 1e9:
            return whole(int(value))
        return si(value)

    return count


def whole_count(unit: str) -> Callable[[int], str]:
    """How a count of ``unit`` writes a whole number below 1e9: ``12,345 inst``, ``16`` (a unit not printed). A
    bound ``str.format``, for an HTML report's tens of thousands of them."""
    if unit in SILENT_UNITS:
        return str
    return ("{:,}" + f" {unit}".rstrip().replace("{", "{{").replace("}", "}}")).format


def format_value(value: float | None, unit: str | None) -> str:
    """Human-readable value in the metric's unit: 151328 ns -> '151.3 µs'."""
    if value is None or value != value:  # None or NaN
        return "—"
    return _formatter(unit or "")(value)


def limit_text(spec: str | None, unit: str | None) -> str:
    """A threshold as a reader takes it in: ``5%+2000`` of a time in ns reads ``5% + 2 µs``, the absolute part
    in the metric's own unit. The report keeps the spec as written (``--threshold`` takes it)."""
    from perfgate.errors import PerfgateError
    from perfgate.metrics import parse_threshold  # stdlib only

    if not spec:
        return ""
    try:
        threshold = parse_threshold(spec)
    except PerfgateError:  # ConfigError: a spec from an old or hand-made report, shown as it is
        return spec
    if not threshold.gating:
        return "off"
    parts = [f"{threshold.relative * 100:g}%"] if threshold.relative is not None else []
    if threshold.absolute is not None:
        parts.append(format_value(threshold.absolute, unit))
    return " + ".join(parts) or spec


def format_change(change: float | None) -> str:
    if change is None or (isinstance(change, float) and math.isnan(change)):
        return "—"
    if abs(change) < 0.0005:
        return "±0.0%" if change else "0%"
    return f"{change * 100:+.1f}%"


# ---------------------------------------------------------------- escaping (perfgate.render.untrusted)

def md_escape(text: Any, limit: int = MAX_NAME) -> str:
    """Untrusted text as one line of GitHub Markdown: :func:`perfgate.render.untrusted.md_inline`."""
    return md_inline(text, limit)


def html_escape(text: object) -> str:
    """Untrusted text in HTML: :func:`perfgate.render.untrusted.html_text`."""
    return html_text(text)


def text_length(text: str) -> int:
    """Length in UTF-16 code units, as GitHub counts a comment's characters."""
    return len(text.encode("utf-16-le")) // 2
