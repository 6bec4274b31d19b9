"""The seventh blind set's families and how each plants its changes (README.md: "Families")."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tests.blind_history7.model import DRIVER_UPDATE, HOST_SWAP


@dataclass(frozen=True)
class Family:
    name: str
    count: int
    metrics: tuple[str, ...]  # metric classes, one drawn per series
    plan: str  # none, step, late, multi, reverted, env, creep
    units: tuple[float, float] = (0.0, 0.0)  # a change's size in noise units (flickers: in spreads)
    margin: int = 10  # values each side of a step at least
    held: tuple[int, int] = (0, 0)  # a reverted regression's values


FAMILIES = (
    Family("flat_ncu", 50, ("ncu",), "none"),
    Family("flat_event", 50, ("event",), "none"),
    Family("flat_bench", 40, ("bench",), "none"),
    Family("flat_idle", 25, ("idle",), "none"),
    Family("flat_exact", 25, ("exact",), "none"),
    Family("flat_flicker", 30, ("flicker", "flicker", "flicker_atom"), "none"),
    Family("flat_dram", 20, ("dram",), "none"),
    Family("step_ncu", 40, ("ncu",), "step", (5.0, 25.0)),
    Family("step_event", 40, ("event",), "step", (5.0, 25.0)),
    Family("step_bench", 30, ("bench",), "step", (5.0, 25.0)),
    Family("step_idle", 15, ("idle",), "step", (5.0, 25.0)),
    Family("step_small", 25, ("ncu", "event", "bench", "dram"), "step", (4.02, 5.5), margin=30),
    Family("step_exact", 20, ("exact",), "step", (0.0001, 0.05)),  # the count's relative move
    Family("step_flicker", 20, ("flicker", "flicker", "flicker_atom"), "step", (2.02, 6.0)),
    Family("step_env", 30, ("event", "event", "bench"), "env", (5.0, 20.0)),
    Family("step_late", 20, ("ncu", "event", "bench", "idle", "dram"), "late", (6.02, 12.0)),
    Family("multi", 25, ("ncu", "event", "bench", "idle"), "multi", (5.0, 15.0)),
    Family("reverted_short", 25, ("ncu", "event", "bench", "idle"), "reverted", (6.02, 20.0), held=(4, 7)),
    Family("reverted_long", 25, ("ncu", "event", "bench", "idle", "dram"), "reverted", (4.52, 15.0),
           held=(15, 60)),
    Family("creep", 15, ("ncu", "event"), "creep", (4.0, 15.0)),
)

RULES = {
    "flicker_families": ["flat_flicker", "step_flicker"],
    "reverted_families": ["reverted_short", "reverted_long"],
    "unscored_families": ["creep"],
}
REGRESSION_SHARE = 0.6


def env_event(metric_class: str) -> tuple[str, int]:
    """The environment event a step_env series of this metric moves with: (pool, commit)."""
    return HOST_SWAP if metric_class == "bench" else DRIVER_UPDATE


def log_uniform(rng: np.random.Generator, low: float, high: float) -> float:
    return float(np.exp(rng.uniform(np.log(low), np.log(high))))


def sign(rng: np.random.Generator) -> float:
    return 1.0 if rng.random() < REGRESSION_SHARE else -1.0


def room(family: Family, length: int) -> bool:
    """Whether a series of this many values has room for the family's changes."""
    need = {"none": 20, "creep": 110, "step": 2 * family.margin + 1, "late": 30, "multi": 50, "env": 20,
            "reverted": family.held[1] + 21}
    return length >= need[family.plan]


def plan(family: Family, rng: np.random.Generator, length: int, event_position: int) -> list[tuple[int, float]]:
    """The planted changes as (position, signed size: noise units, or a counter's own measure) in order."""
    low, high = family.units
    if family.plan == "none" or family.plan == "creep":
        return []
    if family.plan == "step":
        position = int(rng.integers(family.margin, length - family.margin + 1))
        return [(position, sign(rng) * log_uniform(rng, low, high))]
    if family.plan == "late":
        return [(length - int(rng.integers(4, 8)), sign(rng) * log_uniform(rng, low, high))]
    if family.plan == "env":
        return [(event_position, log_uniform(rng, low, high))]  # the caller gives the event's direction
    if family.plan == "reverted":
        held = int(rng.integers(family.held[0], family.held[1] + 1))
        start = int(rng.integers(10, length - held - 10 + 1))
        size = log_uniform(rng, low, high)
        return [(start, size), (start + held, -size)]
    while True:  # multi: 2 or 3 steps, every level at least 10 values
        count = int(rng.integers(2, 4))
        positions = sorted(int(p) for p in rng.choice(np.arange(10, length - 9), size=count, replace=False))
        if all(b - a >= 10 for a, b in zip(positions, positions[1:])):
            return [(p, sign(rng) * log_uniform(rng, low, high)) for p in positions]


def creep_span(rng: np.random.Generator, length: int) -> tuple[int, int, float]:
    """A creep's first and last position and its total size in noise units (mostly slower)."""
    span = int(rng.integers(30, 81))
    start = int(rng.integers(10, length - span - 10 + 1))
    return start, start + span, sign(rng) * float(rng.uniform(4.0, 15.0))
