"""The noise model of the tenth blind change-point set (README.md: "The noise model", why each ingredient is real).

Every value is ``level(commit) * noise``, drawn per series from its own stream; the runner pools (which runner
took each run, the commits a pool did not run, a throttled runner's spell, a runner image that made timings
noisier, a driver update) come from each pool's own stream, shared by the series of that pool.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

SEED = 20261207
COMMITS = 240
UNITS = {"gpu__time_duration.sum": "ns", "smsp__inst_executed.sum": "inst", "dram__bytes_read.sum": "byte",
         "time.min": "s", "timeline.gpu_idle_pct": "%", "timeline.kernel_duration": "ns"}
POOL_GPUS = ("H100-SXM", "A100-40GB", "L4", "A10G")
NOISIER_POOL = 1  # its runner image update made event and host timings noisier; the level held (not a change)
DRIVER_POOL = 3  # its driver update moved every timing it measures (a change: family infra_update)


@dataclass(frozen=True)
class Pool:
    """One GPU model's runner pool over the 240 commits of main."""

    gpu: str
    runner: np.ndarray  # which runner took each commit's run
    runs: np.ndarray  # False where the pool did not run the commit (queue timeouts, cancelled runs)
    offsets: np.ndarray  # each runner's persistent speed offset (relative: clocks and cooling)
    sick: np.ndarray  # True where the run landed on a throttled runner during its sick spell
    noisier_from: int  # from this commit event and host timings are noisier; the level holds
    driver_update: int  # from this commit every timing of the pool is at a new level
    driver_factor: float


def rng(*key: int) -> np.random.Generator:
    return np.random.default_rng([SEED, *key])


def make_pool(index: int) -> Pool:
    r = rng(1, index)
    size = int(r.integers(3, 7))
    offsets = r.normal(0.0, 0.004, size + 1)
    joined = int(r.integers(60, 180))  # a runner joins the pool here: its composition changes
    runner = r.integers(0, size, COMMITS)
    late = np.arange(COMMITS) >= joined
    runner[late] = np.where(r.random(int(late.sum())) < 1 / (size + 1), size, runner[late])
    runs = r.random(COMMITS) > r.uniform(0.02, 0.08)
    runs[[0, COMMITS - 1]] = True
    sick = np.zeros(COMMITS, bool)
    for _ in range(int(r.integers(1, 3))):
        start, who = int(r.integers(10, COMMITS - 20)), int(r.integers(0, size))
        span = np.arange(start, start + int(r.integers(4, 15)))
        sick[span[runner[span] == who]] = True
    return Pool(gpu=POOL_GPUS[index], runner=runner, runs=runs, offsets=offsets, sick=sick,
                noisier_from=int(r.integers(60, 180)) if index == NOISIER_POOL else COMMITS,
                driver_update=int(r.integers(60, 180)) if index == DRIVER_POOL else COMMITS,
                driver_factor=float(r.choice([-1, 1]) * r.uniform(0.06, 0.10)))


POOLS = tuple(make_pool(i) for i in range(len(POOL_GPUS)))
# the commits a nightly job ran at: the head of main once a day, a few commits apart
NIGHTLY = np.cumsum(rng(3).integers(3, 9, COMMITS))
NIGHTLY = NIGHTLY[NIGHTLY < COMMITS]


def noise(kind: str, pool: Pool, r: np.random.Generator, sigma: float, commits: np.ndarray) -> np.ndarray:
    """Multiplicative noise (1 = the level) for one series of ``kind`` at ``commits``; sigma is its noise unit."""
    n = len(commits)
    gauss = r.normal(0.0, 1.0, n)
    noisier = np.where(commits >= pool.noisier_from, 1.8, 1.0)
    runner = pool.offsets[pool.runner[commits]]
    if kind == "ncu":  # locked clocks, caches flushed: tight, with a rare replay outlier
        out = 1 + sigma * gauss + 0.15 * runner
        hit = r.random(n) < 0.01
        out[hit] *= r.uniform(1.03, 1.15, int(hit.sum()))
    elif kind == "event":  # boost clocks and thermals: runner offsets, throttled runs, a sick runner's spell
        out = 1 + sigma * noisier * gauss + runner
        throttled = r.random(n) < 0.04
        out[throttled] *= r.uniform(1.03, 1.08, int(throttled.sum()))
        sick = pool.sick[commits]
        out[sick] *= r.uniform(1.08, 1.18, int(sick.sum()))
    elif kind == "host":  # pytest-benchmark's min: a right-skewed floor, GC pauses and noisy neighbours
        out = np.exp(sigma * noisier * (0.8 * np.abs(gauss) + 0.6 * r.normal(0.0, 1.0, n)))
        pause = r.random(n) < 0.03
        out[pause] *= r.uniform(1.1, 1.6, int(pause.sum()))
    elif kind == "idle":  # nsys GPU-idle share of a region: skewed, with bursts of host stalls
        out = np.exp(sigma * gauss)
        stall = r.random(n) < 0.05
        out[stall] *= r.uniform(1.2, 1.8, int(stall.sum()))
    elif kind == "dram":  # DRAM bytes: near-exact, a little from refresh and other clients
        out = 1 + sigma * gauss
    elif kind in ("counter", "flicker"):  # exact counters: the same integer(s) every run of the same code
        out = np.ones(n)
    else:
        raise ValueError(kind)
    result: np.ndarray = out
    return result


def flicker(r: np.random.Generator, n: int) -> np.ndarray:
    """A flickering counter's extra over its base, relative: two or three exact values (split-K, atomics, or a
    tail wave taking another path), the same ones all along."""
    steps = np.array([0.0, 1.0, 2.0])[: int(r.integers(2, 4))]
    share = r.dirichlet(np.array([6.0, 2.0, 1.0])[: len(steps)])
    return 1 + r.uniform(0.002, 0.012) * r.choice(steps, n, p=share)
