"""The second blind set's families: (name, how many, maker). A maker draws one series from the shared generator.

Every series ends at the newest commit (``MAX_COMMITS``): a shorter one is a test added later. Steps are 1.5-30%
(a reverted regression 3-30% of a timing, 1.5-30% of a counter), regressions three in five.
"""

from __future__ import annotations

from typing import Callable, Sequence

import numpy as np

from tests.blind_history2.model import (BYTES, INSTRUCTIONS, TIME, Series, bimodal, counter_base, drift, flicker,
                                        gauss, heavy, log_uniform, noise_for, positions, step_sizes, stepped,
                                        timing_base)

MAX_COMMITS = 160
Rng = np.random.Generator


def build(name: str, metric: str, values: np.ndarray, at: Sequence[int] = (), sizes: Sequence[float] = (),
          kinds: Sequence[str] = (), missing: Sequence[int] = ()) -> Series:
    """A series over the last ``len(values)`` commits, less ``missing`` (indexes into ``values``); each planted
    change at the first value it keeps at or after the change's commit."""
    offset = MAX_COMMITS - len(values)
    dropped = set(missing)
    keep = [i for i in range(len(values)) if i not in dropped]
    changes: list[dict[str, object]] = []
    for commit, size, kind in zip(at, sizes, kinds):
        position = next(j for j, i in enumerate(keep) if i >= commit)
        changes.append({"position": position, "commit": offset + keep[position], "kind": kind,
                        "size": round(float(size), 5)})
    family = name.rsplit("_", 1)[0]
    return Series(name, family, metric, metric != TIME, offset, [offset + i for i in keep],
                  np.asarray(values, dtype=float)[keep], changes)


def kinds_of(sizes: Sequence[float]) -> list[str]:
    return ["regression" if s > 0 else "improvement" for s in sizes]


def timing_noise(rng: Rng, n: int, sigma: float) -> np.ndarray:
    return gauss(rng, n, sigma) if rng.random() < 0.5 else heavy(rng, n, sigma)


# --- flat series: any change point found in them is false --------------------------------------------------

def flat_gauss(rng: Rng, name: str) -> Series:
    n = int(rng.integers(40, 161))
    return build(name, TIME, timing_base(rng) * gauss(rng, n, log_uniform(rng, 0.003, 0.05)))


def flat_heavy(rng: Rng, name: str) -> Series:
    n = int(rng.integers(40, 161))
    return build(name, TIME, timing_base(rng) * heavy(rng, n, log_uniform(rng, 0.003, 0.03)))


def flat_bimodal(rng: Rng, name: str) -> Series:
    n = int(rng.integers(40, 161))
    return build(name, TIME, timing_base(rng) * bimodal(rng, n, rng.uniform(0.003, 0.01), rng.uniform(0.02, 0.08)))


def flat_drift(rng: Rng, name: str) -> Series:
    n = int(rng.integers(40, 161))
    return build(name, TIME, timing_base(rng) * drift(rng, n, rng.uniform(0.003, 0.02), rng.uniform(0.003, 0.015)))


def flat_exact(rng: Rng, name: str) -> Series:
    n = int(rng.integers(40, 161))
    return build(name, INSTRUCTIONS if rng.random() < 0.5 else BYTES, np.full(n, counter_base(rng)))


def flat_flicker(rng: Rng, name: str) -> Series:
    n = int(rng.integers(40, 161))
    level = np.full(n, counter_base(rng))
    return build(name, INSTRUCTIONS if rng.random() < 0.5 else BYTES, flicker(rng, level, rng.uniform(0.03, 0.15)))


# --- planted changes ---------------------------------------------------------------------------------------

def step_gauss(rng: Rng, name: str) -> Series:
    n, sizes = int(rng.integers(40, 161)), step_sizes(rng, 1)
    at = positions(rng, n, 1, 0)
    values = stepped(n, timing_base(rng), at, sizes) * gauss(rng, n, noise_for(rng, sizes))
    return build(name, TIME, values, at, sizes, kinds_of(sizes))


def step_heavy(rng: Rng, name: str) -> Series:
    n, sizes = int(rng.integers(40, 161)), step_sizes(rng, 1)
    at = positions(rng, n, 1, 0)
    values = stepped(n, timing_base(rng), at, sizes) * heavy(rng, n, noise_for(rng, sizes))
    return build(name, TIME, values, at, sizes, kinds_of(sizes))


def step_bimodal(rng: Rng, name: str) -> Series:
    n, gap = int(rng.integers(40, 161)), rng.uniform(0.02, 0.08)
    sizes = step_sizes(rng, 1, low=max(0.015, gap))
    at = positions(rng, n, 1, 0)
    values = stepped(n, timing_base(rng), at, sizes) * bimodal(rng, n, rng.uniform(0.003, 0.01), gap)
    return build(name, TIME, values, at, sizes, kinds_of(sizes))


def step_drift(rng: Rng, name: str) -> Series:
    n, amplitude = int(rng.integers(40, 161)), rng.uniform(0.003, 0.015)
    sizes = step_sizes(rng, 1, low=max(0.015, 2 * amplitude))
    at = positions(rng, n, 1, 0)
    sigma = min(noise_for(rng, sizes), 0.02)
    values = stepped(n, timing_base(rng), at, sizes) * drift(rng, n, sigma, amplitude)
    return build(name, TIME, values, at, sizes, kinds_of(sizes))


def multi_step(rng: Rng, name: str) -> Series:
    n, count = int(rng.integers(60, 161)), int(rng.integers(2, 4))
    sizes = step_sizes(rng, count)
    at = positions(rng, n, count, 10)
    values = stepped(n, timing_base(rng), at, sizes) * timing_noise(rng, n, noise_for(rng, sizes))
    return build(name, TIME, values, at, sizes, kinds_of(sizes))


def reverted(rng: Rng, name: str) -> Series:
    """A timing regression reverted (exactly, back to the old level) after 1-10 commits."""
    n, duration, size = int(rng.integers(40, 161)), int(rng.integers(1, 11)), log_uniform(rng, 0.03, 0.30)
    start = int(rng.integers(10, n - 8 - duration + 1))
    sizes = [size, -size / (1 + size)]
    values = stepped(n, timing_base(rng), [start, start + duration], sizes)
    values = values * timing_noise(rng, n, noise_for(rng, [size], 4, 12))
    return build(name, TIME, values, [start, start + duration], sizes, ["regression", "revert"])


def exact_step(rng: Rng, name: str) -> Series:
    n, count = int(rng.integers(40, 161)), int(rng.integers(1, 3))
    sizes = step_sizes(rng, count)
    at = positions(rng, n, count, 10)
    values = np.round(stepped(n, counter_base(rng), at, sizes))
    return build(name, INSTRUCTIONS if rng.random() < 0.5 else BYTES, values, at, sizes, kinds_of(sizes))


def exact_flicker_step(rng: Rng, name: str) -> Series:
    n, sizes = int(rng.integers(40, 161)), step_sizes(rng, 1)
    at = positions(rng, n, 1, 0)
    values = flicker(rng, stepped(n, counter_base(rng), at, sizes), rng.uniform(0.03, 0.15))
    return build(name, INSTRUCTIONS if rng.random() < 0.5 else BYTES, values, at, sizes, kinds_of(sizes))


def exact_reverted(rng: Rng, name: str) -> Series:
    n, duration, size = int(rng.integers(40, 161)), int(rng.integers(1, 11)), log_uniform(rng, 0.015, 0.30)
    start = int(rng.integers(10, n - 8 - duration + 1))
    sizes = [size, -size / (1 + size)]
    values = np.round(stepped(n, counter_base(rng), [start, start + duration], sizes))
    return build(name, INSTRUCTIONS, values, [start, start + duration], sizes, ["regression", "revert"])


def short(rng: Rng, name: str) -> Series:
    """A test added late: 30-60 commits, one or two steps."""
    n, count = int(rng.integers(30, 61)), int(rng.integers(1, 3))
    sizes = step_sizes(rng, count)
    at = positions(rng, n, count, 10)
    values = stepped(n, timing_base(rng), at, sizes) * timing_noise(rng, n, noise_for(rng, sizes))
    return build(name, TIME, values, at, sizes, kinds_of(sizes))


def missing_commits(rng: Rng, name: str) -> Series:
    """A test not run at 10-25% of the commits (skipped, its job failed): one or two steps; a step whose commit
    has no value shows at the next value the series has."""
    n, count = int(rng.integers(60, 161)), int(rng.integers(1, 3))
    sizes = step_sizes(rng, count)
    at = positions(rng, n, count, 12)
    values = stepped(n, timing_base(rng), at, sizes) * gauss(rng, n, noise_for(rng, sizes))
    share = rng.uniform(0.10, 0.25)
    while True:  # keep at least 4 values between changes and after the last one
        missing = [i for i in range(1, n) if rng.random() < share]
        kept = [i for i in range(n) if i not in set(missing)]
        edges = [next(j for j, i in enumerate(kept) if i >= a) for a in at] + [len(kept)]
        if all(b - a >= 4 for a, b in zip(edges, edges[1:])):
            return build(name, TIME, values, at, sizes, kinds_of(sizes), missing)


Maker = Callable[[Rng, str], Series]
FAMILIES: tuple[tuple[str, int, Maker], ...] = (
    ("flat_gauss", 60, flat_gauss), ("flat_heavy", 40, flat_heavy), ("flat_bimodal", 25, flat_bimodal),
    ("flat_drift", 25, flat_drift), ("flat_exact", 10, flat_exact), ("flat_flicker", 40, flat_flicker),
    ("step_gauss", 45, step_gauss), ("step_heavy", 30, step_heavy), ("step_bimodal", 20, step_bimodal),
    ("step_drift", 20, step_drift), ("multi_step", 25, multi_step), ("reverted", 30, reverted),
    ("exact_step", 25, exact_step), ("exact_flicker_step", 20, exact_flicker_step),
    ("exact_reverted", 15, exact_reverted), ("short", 30, short), ("missing_commits", 25, missing_commits),
)
FLICKER_FAMILIES = ("flat_flicker", "exact_flicker_step")
REVERTED_FAMILIES = ("reverted", "exact_reverted")
