"""The fourth blind set's families: what runs where, and which changes are planted (README.md, "Families" and
"What counts as a change"). A plan gives a series' planted changes as (position, factor on the level)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from tests.blind_history4.model import EVENT, HOST, INST, READ, TIME, WRITE

FLAT_PREFIX = "flat_"
FLICKER_FAMILIES = ("flat_flicker", "step_flicker")
REVERTED_FAMILIES = ("reverted_short", "reverted_long")
UNSCORED_FAMILIES = ("creep",)
DRIVER_COMMIT = 150  # the runners' driver and CUDA update
SWAP_COMMIT = 120  # the host-l4-swap pool's runners replaced by a newer host generation
HEAD, TAIL = 8, 6  # values before a series' first change, at the new level after its last

Changes = list[tuple[int, float]]
Plan = Callable[[np.random.Generator, np.ndarray, float, float], Changes]  # rng, commits, noise sd, flicker gap


@dataclass(frozen=True)
class Family:
    name: str
    count: int
    runs_on: tuple[tuple[str, str], ...]  # (metric, pool) choices
    plan: Plan
    first: tuple[int, int] = (0, 1)  # the commit the test was added at, drawn in [low, high)
    presence: float = 1.0  # share of commits the test runs at (a path filter), beside outages and flaky skips
    removed: float = 0.0  # chance the test is removed before the end of the history
    flicker: bool = False
    creep: bool = False
    bases: tuple[float, float] | None = None  # the level's range, when not the metric's usual one


def size(rng: np.random.Generator, low: float, high: float, sd: float, regression: float = 0.65) -> float:
    """A factor on the level: a relative move drawn log-uniformly, at least 5 noise spreads; up or down."""
    move = max(float(np.exp(rng.uniform(np.log(low), np.log(high)))), 5 * sd)
    return 1 + move if rng.random() < regression else 1 / (1 + move)


def positions(rng: np.random.Generator, n: int, k: int, gap: int, head: int = HEAD, tail: int = TAIL) -> list[int]:
    """k positions in [head, n - tail) at least ``gap`` apart (fewer when the series is too short for k)."""
    for want in range(k, 0, -1):
        for _ in range(200):
            picked = sorted(int(p) for p in rng.choice(np.arange(head, n - tail), want, replace=False))
            if all(b - a >= gap for a, b in zip(picked, picked[1:])):
                return picked
    return []


def none(rng: np.random.Generator, commits: np.ndarray, sd: float, gap: float) -> Changes:
    return []


def steps(low: float, high: float, k: tuple[int, int] = (1, 2), gap: int = 12, regression: float = 0.65,
          head: int = HEAD, tail: int = TAIL) -> Plan:
    def plan(rng: np.random.Generator, commits: np.ndarray, sd: float, flicker_gap: float) -> Changes:
        at = positions(rng, len(commits), int(rng.integers(*k)), gap, head, tail)
        return [(p, size(rng, max(low, 3 * flicker_gap), max(high, 6 * flicker_gap), sd, regression)) for p in at]
    return plan


def small_step(rng: np.random.Generator, commits: np.ndarray, sd: float, flicker_gap: float) -> Changes:
    """A step of 4 to 6 noise spreads, with at least 30 runs on each side."""
    at = positions(rng, len(commits), 1, 1, 30, 30)
    move = sd * rng.uniform(4, 6)
    return [(p, 1 + move if rng.random() < 0.65 else 1 / (1 + move)) for p in at]


def reverted(short_counter: tuple[int, ...], short_timing: tuple[int, ...]) -> Plan:
    """A regression and its revert (both edges planted): counters at any duration, timings at the durations
    given, larger than their runners' slow spells."""
    def plan(rng: np.random.Generator, commits: np.ndarray, sd: float, flicker_gap: float) -> Changes:
        counter = sd == 0
        duration = int(rng.choice(short_counter if counter else short_timing))
        start = int(rng.integers(HEAD, len(commits) - TAIL - duration))
        low, high = (0.003, 0.2) if counter else (max(0.12, 6 * sd), 0.4)
        move = float(np.exp(rng.uniform(np.log(low), np.log(high))))
        return [(start, 1 + move), (start + duration, 1 / (1 + move))]
    return plan


def at_commit(commit: int, chance: float, low: float, high: float, regression: float) -> Plan:
    """A change of the whole pool at one commit (a driver update, a runner swap), felt per kernel."""
    def plan(rng: np.random.Generator, commits: np.ndarray, sd: float, flicker_gap: float) -> Changes:
        if rng.random() >= chance:
            return []
        move = float(rng.uniform(low, high))
        return [(int(np.searchsorted(commits, commit)), 1 + move if rng.random() < regression else 1 / (1 + move))]
    return plan


NCU, NCU_DRIVER, A100, L4, L4_SWAP, BUSY = "ncu-h100", "ncu-h100-driver", "events-a100", "host-l4", "host-l4-swap", \
    "busy-h100"
LATE = (150, 200)

FAMILIES: tuple[Family, ...] = (
    Family("flat_ncu_time", 50, ((TIME, NCU),), none, removed=0.15),
    Family("flat_event_time", 30, ((EVENT, A100),), none),
    Family("flat_host_time", 30, ((HOST, L4),), none),
    Family("flat_bytes", 25, ((READ, NCU), (WRITE, NCU)), none),
    Family("flat_exact", 20, ((INST, NCU),), none, removed=0.1),
    Family("flat_flicker", 25, ((INST, NCU),), none, flicker=True),
    Family("flat_bad_runner", 20, ((EVENT, BUSY), (HOST, BUSY)), none),
    Family("flat_short", 15, ((TIME, NCU), (HOST, L4)), none, first=LATE),
    Family("flat_sparse", 15, ((TIME, NCU), (INST, NCU)), none, presence=0.3),
    Family("step_ncu", 40, ((TIME, NCU),), steps(0.03, 0.30, (1, 2))),
    Family("step_event", 25, ((EVENT, A100),), steps(0.06, 0.35, (1, 2))),
    Family("step_host", 25, ((HOST, L4),), steps(0.08, 0.50, (1, 2))),
    Family("step_exact", 25, ((INST, NCU),), steps(0.002, 0.20, (1, 3))),
    Family("step_bytes", 20, ((READ, NCU),), steps(0.01, 1.0, (1, 2), regression=0.8)),
    Family("step_flicker", 20, ((INST, NCU),), steps(0.005, 0.20, (1, 2)), flicker=True),
    Family("multi_step", 25, ((TIME, NCU), (EVENT, A100)), steps(0.04, 0.30, (2, 5), gap=12)),
    Family("reverted_short", 25, ((INST, NCU), (TIME, NCU)), reverted((1, 2, 3), (2, 3))),
    Family("reverted_long", 20, ((TIME, NCU), (EVENT, A100), (HOST, L4), (INST, NCU)),
           reverted(tuple(range(4, 21)), tuple(range(4, 21)))),
    Family("driver_update", 30, ((TIME, NCU_DRIVER),), at_commit(DRIVER_COMMIT, 2 / 3, 0.03, 0.12, 0.6)),
    Family("runner_swap", 15, ((HOST, L4_SWAP),), at_commit(SWAP_COMMIT, 1.0, 0.14, 0.39, 0.0)),
    Family("step_sparse", 15, ((TIME, NCU), (INST, NCU)), steps(0.05, 0.30, (1, 2)), presence=0.3),
    Family("step_late_test", 10, ((TIME, NCU), (EVENT, A100)), steps(0.05, 0.30, (1, 2)), first=(100, 160)),
    Family("step_small", 20, ((TIME, NCU),), small_step, bases=(15e3, 60e3)),
    Family("step_on_bad_runner", 15, ((EVENT, BUSY), (HOST, BUSY)), steps(0.10, 0.35, (1, 2))),
    Family("creep", 15, ((TIME, NCU), (HOST, L4)), none, creep=True),
)
