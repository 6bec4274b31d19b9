"""The eleventh blind set's families (README.md: "Families"): each a noise style, a span and a shape of change.

A family's parameters are drawn from the series' own stream, in a fixed order (noise, span, changes).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from tests.blind_history11.model import EDGE, MIN_HOLD, MIN_RATIO, MIN_UNITS, Noise

RULES = {"flicker_families": ["flat_flicker", "step_flicker"],
         "reverted_families": ["reverted_short", "reverted_long"],
         "unscored_families": ["creep"]}


def timing_level(rng: np.random.Generator) -> float:
    return float(np.exp(rng.uniform(np.log(8.0), np.log(5000.0))))


def plain(rng: np.random.Generator) -> Noise:
    return Noise(timing_level(rng), sigma=rng.uniform(0.004, 0.015), runner=rng.uniform(0, 0.5),
                 load=rng.uniform(0, 0.4), spike_p=rng.uniform(0, 0.015))


def bimodal(rng: np.random.Generator) -> Noise:
    return Noise(timing_level(rng), sigma=rng.uniform(0.003, 0.01), runner=rng.uniform(0, 0.4),
                 load=rng.uniform(0, 0.3), mode_p=rng.uniform(0.1, 0.45), mode_gap=rng.uniform(0.03, 0.10),
                 spike_p=rng.uniform(0, 0.01))


def quantized(rng: np.random.Generator) -> Noise:
    level = rng.uniform(5, 40)
    return Noise(level, sigma=rng.uniform(0.25, 0.7) / level, runner=rng.uniform(0, 0.4), load=rng.uniform(0, 0.3),
                 spike_p=rng.uniform(0, 0.01), grid=float(rng.choice([1.0, 0.5])))


def periodic(rng: np.random.Generator) -> Noise:
    return Noise(timing_level(rng), sigma=rng.uniform(0.004, 0.012), runner=rng.uniform(0, 0.3),
                 load=rng.uniform(0.9, 1.6), spike_p=rng.uniform(0, 0.01))


def heavy(rng: np.random.Generator) -> Noise:
    return Noise(timing_level(rng), sigma=rng.uniform(0.004, 0.012), df=rng.uniform(2.1, 4.0),
                 runner=rng.uniform(0, 0.3), load=rng.uniform(0, 0.3))


def one_runner(rng: np.random.Generator) -> Noise:
    return Noise(timing_level(rng), sigma=rng.uniform(0.004, 0.012), runner=rng.uniform(0.4, 0.7),
                 load=rng.uniform(0, 0.3), spike_p=rng.uniform(0, 0.01))


def flicker(rng: np.random.Generator) -> Noise:
    level = float(np.round(np.exp(rng.uniform(np.log(2e5), np.log(5e7))) / 32) * 32)
    step = int(rng.choice([32, 64, 128, 4096]))
    pattern = int(rng.integers(3))
    if pattern == 0:  # mostly exact, a rare extra few sectors
        rare = rng.uniform(0.03, 0.15)
        return Noise(level, flicker=((0, 1 - rare), (step, rare)))
    if pattern == 1:  # two counts about half and half
        half = rng.uniform(0.35, 0.65)
        return Noise(level, flicker=((0, half), (step, 1 - half)))
    low, high = rng.uniform(0.1, 0.25, 2)
    return Noise(level, flicker=((-step, low), (0, 1 - low - high), (step, high)))


# A shape of change: (rng, series length, the noise unit, the positions of one-runner spell edges) ->
# [(position, ratio of the new level to the one before)]
Planted = list[tuple[int, float]]


def size(rng: np.random.Generator, sigma: float, low: float = 1.25, high: float = 3.0) -> float:
    """A change's |ratio - 1|: between ``low`` and ``high`` times the rule's smallest change."""
    return min(rng.uniform(low, high) * max(MIN_RATIO, MIN_UNITS * sigma), 0.5)


def signed(rng: np.random.Generator, d: float) -> float:
    return 1 + d if rng.random() < 0.7 else 1 - d


def none(rng: np.random.Generator, n: int, sigma: float, edges: list[int]) -> Planted:
    return []


def one(rng: np.random.Generator, n: int, sigma: float, edges: list[int]) -> Planted:
    return [(int(rng.integers(EDGE, n - EDGE + 1)), signed(rng, size(rng, sigma)))]


def small(rng: np.random.Generator, n: int, sigma: float, edges: list[int]) -> Planted:
    return [(int(rng.integers(EDGE, n - EDGE + 1)), signed(rng, size(rng, sigma, 1.0, 1.15)))]


def counter_step(rng: np.random.Generator, n: int, sigma: float, edges: list[int]) -> Planted:
    return [(int(rng.integers(EDGE, n - EDGE + 1)), signed(rng, rng.uniform(0.025, 0.2)))]


def pair(rng: np.random.Generator, n: int, gap: tuple[int, int]) -> tuple[int, int]:
    between = int(rng.integers(gap[0], gap[1] + 1))
    first = int(rng.integers(EDGE, n - EDGE - between + 1))
    return first, first + between


def two_close(rng: np.random.Generator, n: int, sigma: float, edges: list[int]) -> Planted:
    first, second = pair(rng, n, (10, 15))
    up = rng.random() < 0.7
    d1, d2 = size(rng, sigma), size(rng, sigma)
    return [(first, 1 + d1 if up else 1 - d1), (second, 1 + d2 if up else 1 - d2)]


def regress_improve(rng: np.random.Generator, n: int, sigma: float, edges: list[int]) -> Planted:
    """A regression, then an unrelated improvement soon after that takes the level below where it started."""
    first, second = pair(rng, n, (6, 12))
    d1, d2 = size(rng, sigma), size(rng, sigma)
    return [(first, 1 + d1), (second, (1 - d2) / (1 + d1))]


def reverted(gap: tuple[int, int]) -> Callable[[np.random.Generator, int, float, list[int]], Planted]:
    def shape(rng: np.random.Generator, n: int, sigma: float, edges: list[int]) -> Planted:
        first, second = pair(rng, n, gap)
        ratio = 1 + size(rng, sigma)
        return [(first, ratio), (second, 1 / ratio)]
    return shape


def near_spell(rng: np.random.Generator, n: int, sigma: float, edges: list[int]) -> Planted:
    """A step 2 to 8 values from where the pool went down to one runner or came back."""
    room = [e + o for e in edges for o in (*range(-8, -1), *range(2, 9)) if EDGE <= e + o <= n - EDGE]
    return [(int(rng.choice(room)), signed(rng, size(rng, sigma)))]


@dataclass(frozen=True)
class Family:
    name: str
    count: int
    noise: Callable[[np.random.Generator], Noise]
    shape: Callable[[np.random.Generator, int, float, list[int]], Planted]
    span: str = "long"  # long: the whole history or most of it; short: 20-40 values; short30: 30-40 values
    pools: tuple[int, ...] = (0, 1, 2, 3)
    metric: str = "gpu__time_duration.sum"
    creep: bool = False


COUNTER = "dram__bytes_read.sum"
FAMILIES = (
    Family("flat_plain", 40, plain, none),
    Family("flat_bimodal", 35, bimodal, none),
    Family("flat_quantized", 30, quantized, none),
    Family("flat_periodic", 30, periodic, none),
    Family("flat_heavy", 30, heavy, none),
    Family("flat_short", 25, plain, none, span="short"),
    Family("flat_one_runner", 25, one_runner, none),
    Family("flat_sibling", 20, plain, none, pools=(0,)),  # the kernels of step_one_gpu, on the A100s
    Family("flat_flicker", 25, flicker, none, metric=COUNTER),
    Family("step_plain", 30, plain, one),
    Family("step_bimodal", 25, bimodal, one),
    Family("step_quantized", 20, quantized, one),
    Family("step_periodic", 20, periodic, one),
    Family("step_heavy", 20, heavy, one),
    Family("step_short", 20, plain, one, span="short30"),
    Family("step_small", 30, plain, small),
    Family("step_one_gpu", 20, plain, one, pools=(1,)),  # visible on the H100s only
    Family("step_one_runner", 10, one_runner, near_spell),
    Family("two_close", 20, plain, two_close),
    Family("regress_improve", 15, plain, regress_improve),
    Family("reverted_short", 15, plain, reverted((MIN_HOLD, 10))),
    Family("reverted_long", 12, plain, reverted((20, 45))),
    Family("step_flicker", 15, flicker, counter_step, metric=COUNTER),
    Family("creep", 15, plain, none, creep=True),
)
