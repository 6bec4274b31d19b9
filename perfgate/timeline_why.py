"""What moved in a timeline region, as one line every format shows: which part of its wall time moved (the host
lead before its first GPU work, the idle gaps after it, its own GPU busy time, other GPU work in its window),
its GPU idle share in percentage points, and its kernel time. Durations in the unit a reader expects (µs, ms).

Outside compare and render: both word a region's move, and rendering a report loads no table machinery."""

from __future__ import annotations

from collections.abc import Mapping

from perfgate.units import scale_time

WALL, BUSY, IDLE, IDLE_SHARE, HOST_LEAD = ("timeline.wall_time", "timeline.gpu_busy", "timeline.gpu_idle",
                                           "timeline.gpu_idle_pct", "timeline.host_lead")
KERNEL_TIME = "timeline.kernel_time"
SHARES = (IDLE_SHARE,)  # timeline metrics that are a share of a region's wall time: their change is in points


def duration(ns: float) -> str:
    """3.4 ms, 52.1 µs, 900 ns: three significant digits in the largest unit the value reaches."""
    scaled, symbol = scale_time(ns, "ns")
    return f"{scaled:.3g} {symbol}"


def signed_duration(ns: float) -> str:
    return ("+" if ns >= 0 else "-") + duration(abs(ns))


def points(before: float, after: float) -> str:
    """A share's move: ``0.8% → 60.9% (+60.1 pp)``."""
    return f"{before:.1f}% → {after:.1f}% ({after - before:+.1f} pp)"


def _parts(values: Mapping[str, float]) -> dict[str, float]:
    wall, idle = values.get(WALL, 0.0), values.get(IDLE, 0.0)
    lead = min(values.get(HOST_LEAD, 0.0), idle)
    busy = values.get(BUSY, 0.0)
    return {"host lead": lead, "idle gaps": idle - lead, "GPU busy": busy, "other GPU work": wall - idle - busy}


def moved_parts(then: Mapping[str, float], now: Mapping[str, float]) -> list[tuple[str, float]]:
    """Which part of a region's wall time moved, largest first, each (name, ns); a part that moved less than a
    twentieth of the wall time's move and less than 1 µs is left out."""
    before, after = _parts(then), _parts(now)
    moved = {name: after[name] - before[name] for name in before}
    wall_move = abs(now.get(WALL, 0.0) - then.get(WALL, 0.0))
    shown = [(name, delta) for name, delta in moved.items() if abs(delta) >= max(0.05 * wall_move, 1000.0)]
    return sorted(shown, key=lambda part: -abs(part[1]))


def region_why(then: Mapping[str, float], now: Mapping[str, float]) -> str:
    """One line: the parts that moved (at most three), the idle share in points, the kernel time's change."""
    words = [f"{name} {signed_duration(delta)}" for name, delta in moved_parts(then, now)[:3]]
    if IDLE_SHARE in then and IDLE_SHARE in now and abs(now[IDLE_SHARE] - then[IDLE_SHARE]) >= 0.1:
        words.append(f"GPU idle {points(then[IDLE_SHARE], now[IDLE_SHARE])}")
    kernel_then, kernel_now = then.get(KERNEL_TIME), now.get(KERNEL_TIME)
    if kernel_then and kernel_now is not None and abs(kernel_now - kernel_then) / kernel_then >= 0.01:
        words.append(f"kernel time {(kernel_now - kernel_then) / kernel_then * 100:+.0f}%")
    elif kernel_then and kernel_now is not None:
        words.append("kernel time unchanged")
    return ", ".join(words)
