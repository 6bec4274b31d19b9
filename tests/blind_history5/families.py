"""The families of the fifth blind set (README.md: "Families"): each says which pool and metric a series has,
its noise, and where its level changes (positions in the series' own values, factors on the level)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from tests.blind_history5.model import FLOOR, Noise

Rng = np.random.Generator
Changes = list[tuple[int, float]]  # (position of the first value at the new level, factor on the level)
Planter = Callable[[Rng, int, float], Changes]  # (rng, series length, sigma unit) -> changes
HEAD, TAIL = 10, 8  # no change before the 10th value or among the last 8


@dataclass
class Spec:
    pool: str
    metric: str
    base: float
    noise: Noise
    plant: Planter = field(default=lambda rng, n, unit: [])
    creep: tuple[float, float] = (0.0, 0.0)  # (ln of the whole creep, its length as a share of the series)


def loguniform(rng: Rng, low: float, high: float) -> float:
    return float(np.exp(rng.uniform(np.log(low), np.log(high))))


def positions(rng: Rng, n: int, count: int, gap: int, head: int = HEAD, tail: int = TAIL) -> list[int]:
    """``count`` sorted positions in [head, n - tail], each at least ``gap`` after the one before."""
    room = n - tail - head - gap * (count - 1)
    picks = np.sort(rng.integers(0, room + 1, count))
    return [int(head + p + gap * i) for i, p in enumerate(picks)]


def factor(rng: Rng, unit: float, low: float, high: float, up: float = 0.75) -> float:
    """A level factor of ``low``..``high`` sigma units, a slowdown with probability ``up``."""
    size = rng.uniform(low, high) * max(unit, FLOOR)
    return float(np.exp(size if rng.random() < up else -size))


def steps(count: tuple[int, int], low: float, high: float, gap: int = 15, head: int = HEAD) -> Planter:
    def plant(rng: Rng, n: int, unit: float) -> Changes:
        k = int(rng.integers(count[0], count[1] + 1))
        side = min(head, n // 3)  # a short series (nightly) keeps a third of its values each side
        return [(p, factor(rng, unit, low, high)) for p in positions(rng, n, k, gap, side, max(TAIL, side))]
    return plant


def two_stage(rng: Rng, n: int, unit: float) -> Changes:
    first, gap = positions(rng, n, 1, 0, tail=TAIL + 8)[0], int(rng.integers(3, 9))
    sign = 1 if rng.random() < 0.8 else -1
    return [(first, float(np.exp(sign * rng.uniform(6, 14) * max(unit, FLOOR)))),
            (first + gap, float(np.exp(sign * rng.uniform(6, 14) * max(unit, FLOOR))))]


def give_back(rng: Rng, n: int, unit: float) -> Changes:
    gap = int(rng.integers(5, 41))
    first = positions(rng, n, 1, 0, tail=TAIL + gap)[0]
    gain = rng.uniform(12, 30)
    back = max(rng.uniform(0.3, 0.6) * gain, 5.0)
    return [(first, float(np.exp(-gain * max(unit, FLOOR)))), (first + gap, float(np.exp(back * max(unit, FLOOR))))]


def reverted(lengths: tuple[int, int], low: float, high: float) -> Planter:
    def plant(rng: Rng, n: int, unit: float) -> Changes:
        length = int(rng.integers(lengths[0], lengths[1] + 1))
        first = positions(rng, n, 1, 0, tail=TAIL + length)[0]
        f = factor(rng, unit, low, high, up=0.9)
        return [(first, f), (first + length, 1 / f)]
    return plant


def ncu_time(rng: Rng, low: float = 0.002, high: float = 0.012) -> Spec:
    return Spec("ncu-h100", "gpu__time_duration.sum", round(loguniform(rng, 8e3, 4e6)),
                Noise(loguniform(rng, low, high), spikes=0.01, spike_size=(0.03, 0.15), quantum=1.0, sick=True))


def bench_time(rng: Rng, pool: str = "bench-a10g") -> Spec:
    return Spec(pool, "time.min", loguniform(rng, 2e-5, 2e-2),
                Noise(loguniform(rng, 0.006, 0.025), spikes=0.04, spike_size=(0.1, 0.6), sick=True))


def autotuned(rng: Rng) -> Spec:
    spec = ncu_time(rng, 0.003, 0.01) if rng.random() < 0.5 else clocked(rng, modes=False)
    slow = (float(rng.uniform(0.1, 0.25)), float(rng.uniform(1.04, 1.25)))
    fast = (float(rng.uniform(0.03, 0.1)), float(rng.uniform(0.9, 0.96)))
    spec.noise.modes = (slow, fast) if rng.random() < 0.5 else (slow,)
    return spec


def counter(rng: Rng, metric: str = "smsp__inst_executed.sum") -> Spec:
    return Spec("ncu-h100", metric, float(round(loguniform(rng, 1e6, 5e9))), Noise(0.0, exact=True, quantum=1.0))


def flickering(rng: Rng) -> Spec:
    base = loguniform(rng, 2e6, 2e8)
    flicker = int(rng.integers(1, 7))
    quantum = 32.0 * max(1, round(loguniform(rng, 0.0005, 0.006) * base / flicker / 32))
    return Spec("ncu-h100", "dram__bytes_read.sum", round(base / 32) * 32.0,
                Noise(0.0, exact=True, flicker=flicker, quantum=quantum))


def mostly_identical(rng: Rng) -> Spec:
    return Spec("ncu-h100", "dram__bytes_write.sum", round(loguniform(rng, 1e6, 1e8) / 32) * 32.0,
                Noise(0.0, exact=True, quantum=32.0, spikes=0.03, spike_size=(0.005, 0.03)))


def nightly(rng: Rng) -> Spec:
    metric, base = (("time.min", loguniform(rng, 1e-4, 5e-2)) if rng.random() < 0.5
                    else ("gpu__time_duration.sum", round(loguniform(rng, 2e4, 8e6))))
    return Spec("nightly-h200", metric, base, Noise(loguniform(rng, 0.004, 0.02), spikes=0.02,
                                                    cold=float(rng.uniform(0.1, 0.3))))


def sick_prone(rng: Rng) -> Spec:
    if rng.random() < 0.5:
        return Spec("bench-a10g", "time.min", loguniform(rng, 1e-4, 1e-2), Noise(loguniform(rng, 0.004, 0.012),
                                                                                 sick=True))
    return Spec("nsys-l4", "timeline.wall_time", round(loguniform(rng, 2e5, 5e7)),
                Noise(loguniform(rng, 0.004, 0.012), sick=True))


def near_floor(rng: Rng) -> Spec:
    if rng.random() < 0.5:  # GPU idle share of a step, a few tenths of a percent, two decimals
        return Spec("nsys-l4", "timeline.gpu_idle_pct", loguniform(rng, 0.2, 1.5),
                    Noise(loguniform(rng, 0.08, 0.2), skewed=True, quantum=0.01))
    return Spec("ncu-h100", "gpu__time_duration.sum", float(rng.uniform(1800, 3500)),  # a launch-bound kernel
                Noise(loguniform(rng, 0.006, 0.012), quantum=32.0, spikes=0.02, spike_size=(0.02, 0.1)))


def input_dependent(rng: Rng) -> Spec:
    return Spec("bench-a10g", "time.min", loguniform(rng, 1e-4, 5e-2),
                Noise(loguniform(rng, 0.03, 0.07), skewed=True, spikes=0.03, spike_size=(0.1, 0.4)))


def clocked(rng: Rng, modes: bool = True) -> Spec:
    metric, base = (("timeline.kernel_duration", round(loguniform(rng, 5e3, 2e6))) if rng.random() < 0.6
                    else ("timeline.wall_time", round(loguniform(rng, 2e5, 5e7))))
    throttled = ((float(rng.uniform(0.1, 0.3)), float(rng.uniform(1.06, 1.15))),) if modes else ()
    return Spec("nsys-l4", metric, base, Noise(loguniform(rng, 0.006, 0.015), modes=throttled, spikes=0.01))


def any_noise(rng: Rng) -> Spec:
    makers: list[Callable[[Rng], Spec]] = [ncu_time, bench_time, clocked, counter, sick_prone, nightly]
    return makers[int(rng.integers(0, 6))](rng)


def with_plant(make: Callable[[Rng], Spec], plant: Planter) -> Callable[[Rng], Spec]:
    def family(rng: Rng) -> Spec:
        spec = make(rng)
        spec.plant = plant
        return spec
    return family


def refreshed(rng: Rng) -> Spec:
    spec = bench_time(rng, "bench-t4")
    spec.plant = lambda rng, n, unit: [(-1, factor(rng, unit, 5, 20, up=0.6))]  # -1: the re-image (generate.py)
    return spec


def creeping(rng: Rng) -> Spec:
    spec = ncu_time(rng, 0.003, 0.01) if rng.random() < 0.5 else bench_time(rng)
    spec.creep = (float(rng.uniform(0.08, 0.25)), float(rng.uniform(0.2, 0.45)))
    return spec


FAMILIES: tuple[tuple[str, int, Callable[[Rng], Spec]], ...] = (
    ("flat_ncu", 30, ncu_time),
    ("flat_bench_runners", 30, bench_time),
    ("flat_autotune", 25, autotuned),
    ("flat_counter_exact", 20, counter),
    ("flat_flicker", 25, flickering),
    ("flat_nightly", 20, nightly),
    ("flat_sick_runner", 25, sick_prone),
    ("flat_floor", 20, near_floor),
    ("flat_input_dependent", 20, input_dependent),
    ("flat_clock_states", 20, clocked),
    ("flat_mostly_identical", 20, mostly_identical),
    ("step_ncu", 30, with_plant(ncu_time, steps((1, 1), 5, 30))),
    ("step_just_above_floor", 30, with_plant(any_noise, steps((1, 1), 4.0, 5.0, head=40))),
    ("staircase", 25, with_plant(lambda rng: ncu_time(rng) if rng.random() < 0.5 else bench_time(rng),
                                 steps((2, 4), 5, 20))),
    ("two_stage", 25, with_plant(any_noise, two_stage)),
    ("give_back", 20, with_plant(any_noise, give_back)),
    ("reverted_short", 30, with_plant(any_noise, reverted((3, 6), 8, 25))),
    ("reverted_long", 20, with_plant(any_noise, reverted((8, 40), 6, 20))),
    ("step_flicker", 20, with_plant(flickering, steps((1, 2), 4, 16, gap=20))),
    ("step_counter", 20, with_plant(counter, steps((1, 2), 4, 40, gap=20))),
    ("step_autotune", 20, with_plant(autotuned, steps((1, 1), 8, 20))),
    ("step_nightly", 20, with_plant(nightly, steps((1, 2), 6, 20, gap=10))),
    ("step_runner_refresh", 15, refreshed),
    ("step_input_size", 15, with_plant(input_dependent, steps((1, 1), 6, 20))),
    ("step_floor", 15, with_plant(near_floor, steps((1, 1), 5, 12))),
    ("step_sick_runner", 15, with_plant(sick_prone, steps((1, 1), 6, 15))),
    ("creep", 15, creeping),
)
RULES = {"flicker_families": ["flat_flicker", "step_flicker"], "reverted_families": ["reverted_short",
                                                                                     "reverted_long"],
         "unscored_families": ["creep"]}
