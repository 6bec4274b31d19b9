"""A kernel on the roofline, in words for every format: achieved FLOP/s against the roof at its intensity, and its
regime (memory- or compute-bound by the ridge point) with the change of regime called out.

The numbers are the derived metrics of the report (``perfgate.derived``): the roof is achieved / roofline % x 100,
so a report read back draws the same line as the one just compared.
"""

from __future__ import annotations

import math
from typing import Protocol

from perfgate.render.formatting import format_value

FLOP_RATE, ROOF_PCT, RIDGE = "derived.flop_per_s", "derived.roofline_pct", "derived.ridge_ratio"
ROOFLINE_METRICS = frozenset({FLOP_RATE, ROOF_PCT, RIDGE, "derived.arithmetic_intensity", "derived.dram_bytes_per_s",
                              "derived.peak_flop_per_s", "derived.peak_dram_bytes_per_s"})


class _Summary(Protocol):
    before: float | None
    after: float | None


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
    (intensity 0.5 → 2.1 x the ridge point)``; none without the derived metrics."""
    rate, pct, ridge = row.metric(FLOP_RATE), row.metric(ROOF_PCT), row.metric(RIDGE)
    lines = []
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
    return lines
