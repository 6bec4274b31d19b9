"""The thirteenth blind set's families: which noise each draws from, what is planted in it, and how its series
sit in tests (README.md: "Families" and "What counts as a change")."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tests.blind_history13.model import EDGE, FLOOR

RULES = {"flicker_families": ["flat_flicker", "step_flicker"],
         "reverted_families": ["reverted_short", "reverted_long"],
         "unscored_families": ["creep"]}
MAX_LOG = float(np.log(100.0))  # no planted change moves a level more than 100-fold
GAP = 30  # values between two changes of one multi-change series
SHARED_TESTS = {"ncu": 18, "timeline": 16}  # tests whose series are each drawn from any family of that source


@dataclass(frozen=True)
class Family:
    name: str
    count: int
    noises: tuple[str, ...]  # a series takes the noise at its index in the family, cycling
    shape: str  # flat, step, layer, multi, reverted_short, reverted_long, creep
    per_test: int = 0  # layer families: the kernels of one test, all changed at that test's one commit


FAMILIES = (
    Family("flat_ncu", 80, ("ncu",), "flat"),
    Family("flat_cupti", 45, ("cupti",), "flat"),
    Family("flat_launch", 35, ("launch",), "flat"),
    Family("flat_dram", 30, ("dram",), "flat"),
    Family("flat_inst", 20, ("inst",), "flat"),
    Family("flat_idle", 20, ("idle",), "flat"),
    Family("flat_host", 35, ("host",), "flat"),
    Family("flat_flicker", 40, ("flicker",), "flat"),
    Family("step_ncu", 20, ("ncu",), "step"),
    Family("step_cupti", 12, ("cupti",), "step"),
    Family("step_launch", 12, ("launch",), "step"),
    Family("step_dram", 8, ("dram",), "step"),
    Family("step_inst", 6, ("inst",), "step"),
    Family("step_idle", 8, ("idle",), "step"),
    Family("step_host", 12, ("host",), "step"),
    Family("step_flicker", 15, ("flicker",), "step"),
    Family("layer_ncu", 36, ("ncu",), "layer", per_test=6),
    Family("layer_cupti", 24, ("cupti",), "layer", per_test=6),
    Family("multi_ncu", 10, ("ncu",), "multi"),
    Family("multi_host", 8, ("host",), "multi"),
    Family("reverted_short", 16, ("ncu", "cupti", "launch", "host"), "reverted_short"),
    Family("reverted_long", 12, ("ncu", "cupti", "launch", "host"), "reverted_long"),
    Family("creep", 10, ("ncu", "host", "cupti"), "creep"),
)


def smallest(noise_scale: float) -> float:
    """The smallest change that counts, in |log ratio|: 4 noise scales, at least 1%."""
    return max(4.0 * noise_scale, FLOOR)


def change_size(noise_scale: float, rng: np.random.Generator, sign: float = 0.0) -> float:
    """A planted change's log ratio: from the smallest that counts to three times that, log-uniform, at most
    100-fold; up (slower, more) three times in five unless ``sign`` fixes it."""
    size = min(smallest(noise_scale) * float(np.exp(rng.uniform(0.0, np.log(3.0)))), MAX_LOG)
    up = rng.random() < 0.6
    return size if (sign > 0 if sign else up) else -size


def positions(shape: str, length: int, rng: np.random.Generator) -> list[int]:
    """Where a series' own changes go (the first value at each new level), each at least EDGE values from either
    end. A layer's one position is its test's (``layer_position``)."""
    last = length - EDGE
    if shape == "step":
        return [int(rng.integers(EDGE, last + 1))]
    if shape == "multi":
        count = int(rng.integers(2, 4))
        while True:
            chosen = sorted(int(p) for p in rng.integers(EDGE, last + 1, size=count))
            if all(b - a >= GAP for a, b in zip(chosen, chosen[1:])):
                return chosen
    if shape in ("reverted_short", "reverted_long"):
        spell = int(rng.integers(8, 15)) if shape == "reverted_short" else int(rng.integers(25, 61))
        start = int(rng.integers(EDGE, last - spell + 1))
        return [start, start + spell]
    return []


def layer_position(length: int, rng: np.random.Generator) -> tuple[int, float]:
    """A layer test's change: its position in the test's runs and its direction (a regression 4 times in 5)."""
    return int(rng.integers(EDGE, length - EDGE + 1)), (1.0 if rng.random() < 0.8 else -1.0)
