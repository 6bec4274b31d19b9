"""A kernel on the roofline, in words for every format: achieved FLOP/s against the roof at its intensity, and its
regime (memory- or compute-bound by the ridge point) with the change of regime called out.

The numbers are the derived metrics of the report (``perfgate.derived``): the roof is achieved / roofline % x 100,
so a report read back draws the same line as the one just compared.
"""

from __future__ import annotations

import math
from typing import NamedTuple, Protocol

from perfgate.derived import REDUNDANT_WORK_RATIO
from perfgate.errors import PerfgateError
from perfgate.metrics import parse_threshold
from perfgate.quantities import format_value

FLOP_RATE, ROOF_PCT, RIDGE = "derived.flop_per_s", "derived.roofline_pct", "derived.ridge_ratio"
DECLARED_WORK = "derived.declared_work"
ROOFLINE_METRICS = frozenset({FLOP_RATE, ROOF_PCT, RIDGE, "derived.arithmetic_intensity", "derived.dram_bytes_per_s",
                              "derived.peak_flop_per_s", "derived.peak_dram_bytes_per_s", "derived.flop",
                              DECLARED_WORK})


class _Summary(Protocol):
    @property
    def before(self) -> float | None: ...

    @property
    def after(self) -> float | None: ...

    @property
    def threshold(self) -> str: ...


class _Row(Protocol):
    def metric(self, name: str) -> _Summary | None: ...


def _finite(value: float | None) -> float | None:
    return value if value is not None and math.isfinite(value) else None


def regime_of(ridge_ratio: float | None) -> str | None:
    """``memory-bound`` below the ridge point, ``compute-bound`` at or above it; None without a value."""
    ratio = _finite(ridge_ratio)
    return None if ratio is None else ("compute-bound" if ratio >= 1.0 else "memory-bound")


def _side(rate: float | None, pct: float | None) -> str | None:
    rate, pct = _finite(rate), _finite(pct)
    if rate is None or pct is None or pct <= 0:
        return None
    return f"{format_value(rate, 'FLOP/s')} of a {format_value(rate / pct * 100.0, 'FLOP/s')} roof ({pct:.1f}%)"


def roofline_lines(row: _Row) -> list[str]:
    """``roofline: 19 GFLOP/s of a 21.5 GFLOP/s roof (88.4%) → 14.8 GFLOP/s of a 16.3 GFLOP/s roof (90.8%),
    memory-bound`` and, where the kernel crossed the ridge point, ``regime: memory-bound → compute-bound
    (intensity 0.5 → 2.1 x the ridge point)``; where it counted well above the FLOP its test declares, ``counted
    2.1x the declared FLOP: redundant work``; none without the derived metrics."""
    rate, pct, ridge = row.metric(FLOP_RATE), row.metric(ROOF_PCT), row.metric(RIDGE)
    lines = _redundant_work(row.metric(DECLARED_WORK))
    if ridge is not None:  # the finding first: the kernel's limit changed
        before, after = regime_of(ridge.before), regime_of(ridge.after)
        if before and after and before != after:
            assert ridge.before is not None and ridge.after is not None
            lines.append(f"regime: {before} → {after} (intensity {ridge.before:.3g} → {ridge.after:.3g} x the ridge "
                         "point)")
    if rate is not None and pct is not None:
        sides = [_side(rate.before, pct.before), _side(rate.after, pct.after)]
        if any(sides):
            regime = regime_of(ridge.after if ridge is not None else None)
            lines.append(f"roofline: {sides[0] or '—'} → {sides[1] or '—'}" + (f", {regime}" if regime else ""))
        floor = _floor(pct.threshold)
        share = _finite(pct.after)
        if floor is not None and share is not None and share < floor:
            lines.insert(0, f"below its floor: {share:.1f}% of the roof, at least {floor:g}% required")
    return lines


def _redundant_work(declared: _Summary | None) -> list[str]:
    """``counted 2.1× the declared FLOP: redundant work (1× in the baseline)`` where the current side counted more
    than ``REDUNDANT_WORK_RATIO`` x the test's declared useful work."""
    after = _finite(declared.after) if declared is not None else None
    if declared is None or after is None or after <= REDUNDANT_WORK_RATIO:
        return []
    before = _finite(declared.before)
    was = f" ({before:.2g}× in the baseline)" if before is not None else ""
    return [f"counted {after:.2g}× the declared FLOP: redundant work{was}"]


def _floor(spec: str) -> float | None:
    """The floor of a threshold spec as the report holds it (``5+>=60``); None without one."""
    try:
        return parse_threshold(spec).floor if spec else None
    except PerfgateError:  # a spec of an old or hand-made report
        return None


INTENSITY, PEAK_FLOP, PEAK_DRAM = "derived.arithmetic_intensity", "derived.peak_flop_per_s", "derived.peak_dram_bytes_per_s"
_WIDTH, _HEIGHT, _LEFT, _RIGHT, _TOP, _BOTTOM = 520, 300, 84, 16, 12, 40


def _decades(low: float, high: float) -> tuple[int, int]:
    return math.floor(math.log10(low)), math.ceil(math.log10(high))


def roofline_chart(row: _Row) -> dict[str, object] | None:
    """A kernel on the roofline of its device, both sides, as coordinates for the page's inline SVG (the template's
    ``roofline_chart`` macro draws it): log-log axes, FLOP per DRAM byte against FLOP/s; the memory roof (intensity
    x peak DRAM bytes/s) up to the ridge point, the FP32 roof past it. None without the derived metrics."""
    sides = [point for point in (_point(row, "before"), _point(row, "after")) if point is not None]
    if not sides:
        return None
    peak, bandwidth = sides[-1].peak, sides[-1].bandwidth  # the current run's roofs (the baseline's if it alone)
    ridge = peak / bandwidth
    xs = [s.intensity for s in sides] + [ridge]
    ys = [s.rate for s in sides] + [peak]
    x_lo, x_hi = _decades(min(xs) / 3, max(xs) * 3)
    y_lo, y_hi = _decades(min(ys) / 3, max(ys) * 1.5)
    plot_w, plot_h = _WIDTH - _LEFT - _RIGHT, _HEIGHT - _TOP - _BOTTOM

    def x(value: float) -> float:
        return round(_LEFT + (math.log10(value) - x_lo) / (x_hi - x_lo) * plot_w, 1)

    def y(value: float) -> float:
        return round(_TOP + (y_hi - math.log10(value)) / (y_hi - y_lo) * plot_h, 1)

    start = max(10.0 ** x_lo, 10.0 ** y_lo / bandwidth)  # where the memory roof enters the plot
    roof = [(x(start), y(start * bandwidth)), (x(ridge), y(peak)), (x(10.0 ** x_hi), y(peak))]
    titles = [f"{s.side}: {rate_text(s.rate)} at {s.intensity:.3g} FLOP/byte" for s in sides]
    points = [{"side": s.side, "x": x(s.intensity), "y": y(s.rate), "title": title} for s, title in zip(sides, titles)]
    return {"width": _WIDTH, "height": _HEIGHT, "left": _LEFT, "top": _TOP, "right": _WIDTH - _RIGHT,
            "bottom": _HEIGHT - _BOTTOM, "roof": " ".join(f"{a},{b}" for a, b in roof), "points": points,
            "ridge": {"x": x(ridge), "y": y(peak), "text": f"ridge {ridge:.3g} FLOP/byte"},
            "peak_text": f"FP32 {rate_text(peak)}", "memory_text": f"DRAM {format_value(bandwidth, 'byte/s')}",
            "x_ticks": [{"at": x(10.0 ** k), "text": f"{10.0 ** k:g}"} for k in range(x_lo, x_hi + 1)],
            "y_ticks": [{"at": y(10.0 ** k), "text": rate_text(10.0 ** k)} for k in range(y_lo, y_hi + 1)],
            "label": f"roofline: {' → '.join(titles)}"}


class _Point(NamedTuple):
    side: str  # baseline or current
    intensity: float
    rate: float
    peak: float
    bandwidth: float


def _point(row: _Row, side: str) -> _Point | None:
    """One side of a kernel on the roofline: its intensity and FLOP/s, the roofs; None without them all."""
    values = []
    for name in (INTENSITY, FLOP_RATE, PEAK_FLOP, PEAK_DRAM):
        summary = row.metric(name)
        value = _finite(summary.before if side == "before" else summary.after) if summary is not None else None
        if value is None or value <= 0:
            return None
        values.append(value)
    return _Point("baseline" if side == "before" else "current", *values)


def rate_text(value: float) -> str:
    return format_value(value, "FLOP/s")
