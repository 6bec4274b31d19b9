"""A value in its unit, a change and a limit as a reader takes them in: the wording every output shares, the
comparison's notes and every renderer's tables alike (the unit knowledge itself, scales and symbols, is
``perfgate.units``'). Stdlib only."""

from __future__ import annotations

import math
from functools import lru_cache
from typing import Callable, Iterable, Sequence

from perfgate.derived import POINT_METRICS
from perfgate.errors import PerfgateError
from perfgate.metrics import parse_threshold
from perfgate.units import (
    BYTE,
    BYTE_SYMBOL,
    SI_PREFIXES,
    SILENT_UNITS,
    TIME_UNITS,
    scale_time,
    si_step,
    time_scales,
    time_step,
)

# The scales of :func:`value_scale` past the steps of a time (``units.TIME_STEPS``, then ns) or of a quantity
# (``units.SI_PREFIXES``, then none): a count's where every value of a row is a whole number below 1e9, each written
# as it is ("3,429,796 inst"), and each value at its own (no finite value, or values too far apart for one).
WHOLE = len(SI_PREFIXES) + 1
OWN = WHOLE + 1
# Below this in the larger value's unit, Python writes a number in exponent form ("1.2e-05 GB"): past it, a row's
# values are each written at their own scale.
SHARED_LOWEST = 1e-4


def _si(unit: str, step: int | None = None) -> Callable[[float], str]:
    """A value with the largest decimal prefix it reaches (``units.scale_si``'s), or with the prefix of ``step``
    (``units.si_step``), to 3 significant digits; without a prefix to 4. One flat call a value: an HTML report
    formats tens of thousands of them."""
    prefixed = [(scale, f" {prefix}{unit}".rstrip()) for scale, prefix in SI_PREFIXES]
    plain = f" {unit}".rstrip()  # the number never ends in a space: stripping the suffix is stripping the text
    if step is not None and step < len(prefixed):
        scale, suffix = prefixed[step]
        return lambda value: f"{value / scale:.3g}{suffix}"
    if step is not None:
        return lambda value: f"{value:.4g}{plain}"

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


def value_scale(unit: str, values: Iterable[float | None]) -> int:
    """The scale of the values of one metric shown side by side (a row's baseline and current value): the one the
    largest of them reaches, so that a reader compares them at a glance ("3.43 Minst → 3.16 Minst", not
    "3,429,796 inst → 3.16 Minst"). A step of :func:`scale_divisors`, :data:`WHOLE` for counts that are all whole
    numbers below 1e9, :data:`OWN` where each value is written as :func:`format_value` writes it alone (no finite
    value, or the smaller one would read in exponent form at the larger one's scale)."""
    numbers = [abs(v) for v in map(_finite, values) if v is not None]
    if not numbers:
        return OWN
    style = number_style(unit)
    if style == "percent":
        return 0
    if style == "count" and all(v.is_integer() and v < 1e9 for v in numbers):
        return WHOLE
    reach = max(numbers)
    step = time_step(reach, unit) if style == "time" else si_step(reach)
    smallest = min((v for v in numbers if v), default=reach)
    return step if smallest >= SHARED_LOWEST * scale_divisors(unit)[step] else OWN


def _finite(value: float | None) -> float | None:
    """``value`` as a float where it is a finite one (None, NaN, ±inf and an integer past float range are not)."""
    try:
        number = float(value) if value is not None else math.nan
    except OverflowError:
        return None
    return number if math.isfinite(number) else None


@lru_cache(maxsize=16)
def scale_divisors(unit: str) -> tuple[float, ...]:
    """What a value of ``unit`` is divided by at each step of :func:`value_scale`: those of ``units.TIME_STEPS``
    then ns for a time, of ``units.SI_PREFIXES`` then none for a quantity (of one for a percentage)."""
    style = number_style(unit)
    if style == "time":
        return time_scales(unit)
    return (1.0,) if style == "percent" else (*(scale for scale, _ in SI_PREFIXES), 1.0)


@lru_cache(maxsize=256)
def _formatter(unit: str, scale: int = OWN) -> Callable[[float], str]:
    """One function per unit and scale (:func:`value_scale`'s; :data:`OWN`: each value at its own), so a table of
    thousands of values does not re-decide the unit each time. The unit knowledge (scales, symbols) is
    ``perfgate.units``'."""
    style = number_style(unit)
    step = None if scale in (WHOLE, OWN) else scale
    if style == "time":
        def time(value: float) -> str:
            scaled, symbol = scale_time(value, unit, step)
            return f"{scaled:.4g} {symbol}"

        return time
    if style == "si":
        return _si(BYTE_SYMBOL, step)
    if style == "percent":
        return _percent
    if step is not None:
        return _si("" if unit in SILENT_UNITS else unit, step)
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


def format_values(values: Sequence[float | None], unit: str | None) -> list[str]:
    """Values of one metric shown side by side (a baseline and a current value, a limit) on one scale,
    :func:`value_scale`'s: 3,429,796 and 3,160,000.5 inst read "3.43 Minst" and "3.16 Minst"."""
    text = _formatter(unit or "", value_scale(unit or "", values))
    return ["—" if value is None or value != value else text(value) for value in values]


# Bounded shares (a region's idle share of its wall time, a kernel's share of its roof): their change is told in
# percentage points.
TIMELINE_SHARES = frozenset({"timeline.gpu_idle_pct"}) | POINT_METRICS


def pair_texts(before: float | None, after: float | None, unit: str | None, metric: str) -> list[str]:
    """A baseline and a current value of ``metric``: a timeline duration each in the unit it reaches ("9.184 µs →
    1.784 ms", a region's times span microseconds to seconds), any other metric on one scale (:func:`format_values`)."""
    if metric.startswith("timeline.") and (unit or "") in TIME_UNITS:
        return [format_value(before, unit), format_value(after, unit)]
    return format_values([before, after], unit)


def in_points(metric: str, threshold: str | None = None) -> bool:
    """Whether a share's change reads in percentage points: the timeline's idle share and the roofline's (judged in
    points) always, a share of a peak ncu reports (``*pct_of_peak*``: throughput, occupancy) unless its limit is
    relative, which judges its change in percent ("-40.9 pp" beside "roofline % -46.1 pp", not "-45.0%")."""
    return metric in TIMELINE_SHARES or ("pct_of_peak" in metric and "%" not in (threshold or ""))


def change_for(metric: str, before: float | None, after: float | None, change: float | None,
               threshold: str | None = None) -> str:
    """A change as a reader takes it in: a share in percentage points (``in_points``: "+60.1 pp", not "+7450.0%")."""
    if in_points(metric, threshold) and _finite(before) is not None and _finite(after) is not None:
        assert before is not None and after is not None
        return f"{after - before:+.1f} pp"
    return format_change(change)


def limit_text(spec: str | None, unit: str | None) -> str:
    """A threshold as a reader takes it in: ``5%+2000`` of a time in ns reads ``5% + 2 µs``, the absolute part
    in the metric's own unit. The report keeps the spec as written (``--threshold`` takes it)."""
    if not spec:
        return ""
    try:
        threshold = parse_threshold(spec)
    except PerfgateError:  # ConfigError: a spec from an old or hand-made report, shown as it is
        return spec
    if not threshold.gating:
        return "off"
    parts = [f"{threshold.relative * 100:g}%"] if threshold.relative is not None else []
    if threshold.absolute is not None:  # of a percentage: points
        parts.append(f"{threshold.absolute:g} pp" if unit == "%" else format_value(threshold.absolute, unit))
    if threshold.floor is not None:
        parts.append(f"at least {format_value(threshold.floor, unit)}")
    return " + ".join(parts) or spec


TIMES_FROM = 9.0  # a change of +900% or more reads as a ratio: "226×", not "+22531.1%"


def format_change(change: float | None) -> str:
    """``+5.3%``; ``226×`` where the value grew tenfold or more (a GPU idle time of 9.184 µs → 2.078 ms read
    "+22531.1%": five digits and a decimal that say less than the ratio)."""
    if change is None or (isinstance(change, float) and math.isnan(change)):
        return "—"
    if abs(change) < 0.0005:
        return "±0.0%" if change else "0%"
    if change >= TIMES_FROM and math.isfinite(change):
        ratio = change + 1
        return f"{ratio:.3g}×" if ratio < 100 else f"{ratio:,.0f}×"
    return f"{change * 100:+.1f}%"
