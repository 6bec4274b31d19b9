"""The sixth blind set's families (README.md: families): how many series each has, of which kinds, over which
span, and where its changes are planted, by the rule of change README.md fixed before truth was generated."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from tests.blind_history6.model import FLOOR, HEAD, MIN_RUNS, MIN_UNITS, TAIL

Planted = list[tuple[int, float]]  # (position, factor on the level)
Creep = tuple[int, int, float]  # (first position of the ramp, its length, its factor at the end)
Maker = Callable[[np.random.Generator, int, float, int], tuple[Planted, Creep | None]]

MIXED = ("ncu", "ncu", "ncu", "inst", "dram", "host", "host", "event", "event", "idle")
SHARED = {0: 96, 1: 171}  # a pool's commit that shifts many of its kernels (a toolkit bump, a driver update)
RULES = {"flicker_families": ["flat_flicker", "step_flicker"], "reverted_families": ["reverted_short", "reverted_long"],
         "unscored_families": ["creep"]}


def magnitude(rng: np.random.Generator, sigma: float, low: float = 4.2, high: float = 40.0,
              up: float = 0.6) -> float:
    """A planted factor: at least MIN_UNITS noise units, log-uniform in units, at most about ±65 %."""
    unit = max(sigma, FLOOR)
    size = min(unit * float(np.exp(rng.uniform(np.log(low), np.log(high)))), 0.5)
    size = max(size, MIN_UNITS * unit)
    return float(np.exp(size if rng.random() < up else -size))


def place(rng: np.random.Generator, n: int, k: int, gap: int) -> list[int]:
    """k sorted positions in the series' middle, at least ``gap`` apart."""
    for _ in range(10_000):
        at = np.sort(rng.integers(HEAD, n - TAIL + 1, k))
        if np.all(np.diff(at) >= gap):
            return [int(a) for a in at]
    raise ValueError(f"no room for {k} changes in {n} runs")


def flat(rng: np.random.Generator, n: int, sigma: float, shared: int) -> tuple[Planted, Creep | None]:
    return [], None


def steps(count: tuple[int, int], low: float = 4.2, high: float = 40.0, up: float = 0.6) -> Maker:
    def make(rng: np.random.Generator, n: int, sigma: float, shared: int) -> tuple[Planted, Creep | None]:
        at = place(rng, n, int(rng.integers(count[0], count[1] + 1)), 8)
        return [(p, magnitude(rng, sigma, low, high, up)) for p in at], None
    return make


def reverted(shortest: int, longest: int) -> Maker:
    """A regression (now and then an improvement) reverted after ``shortest`` to ``longest`` runs."""
    def make(rng: np.random.Generator, n: int, sigma: float, shared: int) -> tuple[Planted, Creep | None]:
        runs = int(rng.integers(shortest, longest + 1))
        start = int(rng.integers(HEAD, n - TAIL - runs + 1))
        factor = magnitude(rng, sigma, up=0.85)
        return [(start, factor), (start + runs, 1 / factor)], None
    return make


def shared_step(rng: np.random.Generator, n: int, sigma: float, shared: int) -> tuple[Planted, Creep | None]:
    """The pool's shared commit (either way: a new compiler helps some kernels and hurts others), now and then
    another change of the kernel's own."""
    planted = [(shared, magnitude(rng, sigma, up=0.5))]
    if rng.random() < 0.4:
        before = shared - HEAD >= 8 and (n - TAIL - shared < 8 or rng.random() < 0.5)
        other = int(rng.integers(HEAD, shared - 7) if before else rng.integers(shared + 8, n - TAIL + 1))
        planted = sorted(planted + [(other, magnitude(rng, sigma))])
    return planted, None


def creep(rng: np.random.Generator, n: int, sigma: float, shared: int) -> tuple[Planted, Creep | None]:
    """A slow drift, scored apart: a ramp of 25 to 70 runs to 6 to 20 noise units."""
    runs = int(rng.integers(25, 71))
    start = int(rng.integers(HEAD, n - TAIL - runs + 1))
    return [], (start, runs, magnitude(rng, sigma, 6.0, 20.0, up=0.8))


@dataclass(frozen=True)
class Family:
    name: str
    count: int
    kinds: tuple[str, ...]
    maker: Maker
    span: str = "any"  # any: the whole history, or added late, or removed early; short: 30-80 runs; whole


FAMILIES = (
    Family("flat_ncu", 50, ("ncu",), flat),
    Family("flat_counter", 30, ("inst", "dram"), flat),
    Family("flat_flicker", 30, ("flicker",), flat),
    Family("flat_host", 40, ("host",), flat),
    Family("flat_event", 30, ("event",), flat),
    Family("flat_idle", 20, ("idle",), flat),
    Family("flat_short", 20, MIXED, flat, "short"),
    Family("step_single", 50, MIXED, steps((1, 1))),
    Family("step_small", 30, MIXED, steps((1, 1), 4.0, 5.0)),
    Family("step_multi", 35, MIXED, steps((2, 4), up=0.5)),
    Family("step_flicker", 25, ("flicker",), steps((1, 2))),
    Family("step_shared", 24, MIXED, shared_step, "whole"),
    Family("reverted_short", 30, MIXED, reverted(MIN_RUNS, 10)),
    Family("reverted_long", 25, MIXED, reverted(11, 60)),
    Family("creep", 15, ("ncu", "host", "event", "dram"), creep),
)
