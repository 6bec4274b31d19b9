"""The twelfth blind set's families: which noise each draws from and what is planted in it (README.md:
"Families" and "What counts as a change")."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tests.blind_history12.model import EDGE, FLOOR

RULES = {"flicker_families": ["flat_flicker", "step_flicker"],
         "reverted_families": ["reverted_short", "reverted_long"],
         "unscored_families": ["creep"]}
MAX_LOG = float(np.log(100.0))  # no planted change moves a level more than 100-fold
GAP = 30  # values between two changes of one multi-change series


@dataclass(frozen=True)
class Family:
    name: str
    count: int
    noises: tuple[str, ...]  # a series takes the noise at its index in the family, cycling
    shape: str  # flat, step, multi, reverted_short, reverted_long, creep


FAMILIES = (
    Family("flat_ncu", 60, ("ncu",), "flat"),
    Family("flat_cupti", 40, ("cupti",), "flat"),
    Family("flat_launch", 35, ("launch",), "flat"),
    Family("flat_dram", 25, ("dram",), "flat"),
    Family("flat_inst", 15, ("inst",), "flat"),
    Family("flat_idle", 20, ("idle",), "flat"),
    Family("flat_host", 30, ("host",), "flat"),
    Family("flat_flicker", 40, ("flicker",), "flat"),
    Family("step_ncu", 45, ("ncu",), "step"),
    Family("step_cupti", 25, ("cupti",), "step"),
    Family("step_launch", 25, ("launch",), "step"),
    Family("step_dram", 15, ("dram",), "step"),
    Family("step_inst", 10, ("inst",), "step"),
    Family("step_idle", 12, ("idle",), "step"),
    Family("step_host", 20, ("host",), "step"),
    Family("step_flicker", 25, ("flicker",), "step"),
    Family("multi_ncu", 15, ("ncu",), "multi"),
    Family("multi_host", 10, ("host",), "multi"),
    Family("reverted_short", 20, ("ncu", "cupti", "launch", "host"), "reverted_short"),
    Family("reverted_long", 15, ("ncu", "cupti", "launch", "host"), "reverted_long"),
    Family("creep", 15, ("ncu", "host", "cupti"), "creep"),
)


def change_size(noise_scale: float, rng: np.random.Generator) -> float:
    """A planted change's |log ratio|: from the smallest that counts (4 noise scales, at least 1%) to three times
    that, log-uniform, at most 100-fold; up (slower, more) three times in five."""
    smallest = max(4.0 * noise_scale, FLOOR)
    size = min(smallest * float(np.exp(rng.uniform(0.0, np.log(3.0)))), MAX_LOG)
    return size if rng.random() < 0.6 else -size


def positions(shape: str, length: int, rng: np.random.Generator) -> list[int]:
    """Where the changes go (the first value at each new level), each at least EDGE values from either end."""
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
