"""The fourth blind set's model of a GPU team's CI: runner pools shared by the series that run on them, and each
metric's own noise (README.md, "The noise model"). Every draw comes from the generator it is handed."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

COMMITS = 220  # commits of main; one CI run per commit

TIME = "gpu__time_duration.sum"  # ncu, locked base clocks
EVENT = "timeline.kernel_duration"  # the GPU's own clocks, beside other work
HOST = "time.min"  # pytest-benchmark's fastest round, in seconds
INST = "smsp__inst_executed.sum"
READ = "dram__bytes_read.sum"
WRITE = "dram__bytes_write.sum"
TIMINGS = (TIME, EVENT, HOST)
COUNTERS = (INST, READ, WRITE)
UNITS = {TIME: "ns", EVENT: "ns", HOST: "s", INST: "inst", READ: "byte", WRITE: "byte"}
BASES = {TIME: (15e3, 3e6), EVENT: (8e3, 2e6), HOST: (2e-4, 0.5), INST: (1e5, 5e8), READ: (1e6, 4e9),
         WRITE: (1e6, 2e9)}


@dataclass(frozen=True)
class PoolSpec:
    gpu: str
    runners: int
    runner_sd: float  # spread of the runners' speeds (same model, different boards, cooling, hosts)
    episode_rate: float  # chance per run that a runner goes bad and keeps the next 2-4 runs
    episode: tuple[float, float]  # the slowdown while it is bad
    slow_clock: float  # chance per run of the lower of two clock states (unlocked clocks)
    outage: float  # chance per run that the pool's job did not run (runner down, cancelled)
    load: float  # how strongly queue load (slow, correlated) reaches host timings


POOLS: dict[str, PoolSpec] = {
    "ncu-h100": PoolSpec("NVIDIA H100 80GB HBM3", 6, 0.002, 1 / 70, (0.008, 0.025), 0.0, 0.015, 0.0),
    "ncu-h100-driver": PoolSpec("NVIDIA H100 SXM5 80GB", 4, 0.002, 1 / 70, (0.008, 0.025), 0.0, 0.015, 0.0),
    "events-a100": PoolSpec("NVIDIA A100-SXM4-40GB", 5, 0.008, 1 / 50, (0.04, 0.12), 0.15, 0.02, 0.0),
    "host-l4": PoolSpec("NVIDIA L4", 8, 0.015, 1 / 40, (0.08, 0.25), 0.0, 0.03, 1.0),
    "host-l4-swap": PoolSpec("NVIDIA L4 (pool b)", 8, 0.015, 1 / 40, (0.08, 0.25), 0.0, 0.03, 1.0),
    "busy-h100": PoolSpec("NVIDIA H100 PCIe", 4, 0.01, 1 / 25, (0.05, 0.15), 0.10, 0.02, 0.7),
}


@dataclass(frozen=True)
class Pool:
    name: str
    spec: PoolSpec
    up: np.ndarray  # per commit: the pool's job ran
    runner: np.ndarray  # per commit: the runner's slowdown (1: the pool's usual speed)
    clock: np.ndarray  # per commit: 1, or the lower clock state's slowdown
    load: np.ndarray  # per commit: queue load, an AR(1) process (0: quiet)


def make_pool(name: str, rng: np.random.Generator) -> Pool:
    spec = POOLS[name]
    speeds = 1 + rng.normal(0, spec.runner_sd, spec.runners)
    runner = speeds[rng.integers(0, spec.runners, COMMITS)]
    at = 0
    while at < COMMITS:
        if rng.random() < spec.episode_rate:
            length = int(rng.integers(2, 5))
            slow = rng.uniform(*spec.episode)
            runner[at:at + length] = 1 + slow * rng.uniform(0.8, 1.1, len(runner[at:at + length]))
            at += length
        at += 1
    clock = np.where(rng.random(COMMITS) < spec.slow_clock, rng.uniform(1.04, 1.08, COMMITS), 1.0)
    load = np.zeros(COMMITS)
    for c in range(1, COMMITS):
        load[c] = 0.85 * load[c - 1] + rng.normal(0, 0.5)
    up = rng.random(COMMITS) >= spec.outage
    for _ in range(int(rng.poisson(1.0))):  # a longer outage: the runners' image broke, a holiday freeze
        start = int(rng.integers(10, COMMITS - 10))
        up[start:start + int(rng.integers(2, 6))] = False
    return Pool(name, spec, up, runner, clock, load)


def noise_sd(metric: str, base: float, rng: np.random.Generator) -> float:
    """A series' typical run-to-run spread (relative), before heavy tails and the runner's share."""
    if metric == TIME:  # short kernels move more under ncu: 20 us about 1.2%, 2 ms 0.2%
        return float(np.clip(0.012 * np.sqrt(20e3 / base), 0.002, 0.02))
    low, high = {EVENT: (0.005, 0.02), HOST: (0.01, 0.03), READ: (0.0002, 0.003), WRITE: (0.01, 0.03),
                 INST: (0.0, 0.0)}[metric]
    return float(rng.uniform(low, high))


@dataclass(frozen=True)
class Flicker:
    """An exact counter that alternates between fixed offsets of its level (atomics' retries, an autotuner that
    picks between configurations); ``stick``: how long a state tends to hold (an autotuning cache on a runner)."""
    offsets: tuple[float, ...]  # relative, the first 0
    share: float  # the stationary share of the runs off the first value
    stick: float


def flicker_states(flicker: Flicker, n: int, rng: np.random.Generator) -> np.ndarray:
    states = np.zeros(n, dtype=int)
    off = rng.random() < flicker.share
    for i in range(n):
        if rng.random() >= flicker.stick:
            off = rng.random() < flicker.share
        states[i] = int(rng.integers(1, len(flicker.offsets))) if off else 0
    return states


def timing(metric: str, level: np.ndarray, commits: np.ndarray, pool: Pool, sd: float,
           rng: np.random.Generator) -> np.ndarray:
    """A timing's values: its level slowed by the runner, the clock state and load, with heavy-tailed noise."""
    n = len(level)
    feel = rng.uniform(0.5, 1.2)  # how much of a slow runner this kernel feels (compute- or memory-bound)
    runner = 1 + feel * (pool.runner[commits] - 1)
    clock = 1 + rng.uniform(0.3, 1.0) * (pool.clock[commits] - 1)
    load = pool.load[commits]
    if metric == HOST:  # the fastest round: skewed upward, queue load adds time and spread
        spread = sd * (1 + 0.3 * np.abs(load))
        noise = rng.gamma(2.0, spread / np.sqrt(2), n) - sd * np.sqrt(2)
        noise += 0.01 * pool.spec.load * np.maximum(load, 0)
        spikes = rng.random(n) < 0.04  # a co-tenant through every round
        noise += spikes * rng.uniform(0.10, 0.60, n)
    else:
        noise = sd * rng.standard_t(5 if metric == TIME else 4, n) / np.sqrt(5 / 3 if metric == TIME else 2)
        if metric == TIME:  # one slow launch among the few ncu replayed
            launches = int(rng.integers(1, 9))
            noise += (rng.random(n) < 0.03) * rng.uniform(0.2, 0.8, n) / launches
        else:
            noise += (rng.random(n) < 0.02) * rng.uniform(0.05, 0.30, n)
            noise += 0.005 * pool.spec.load * np.maximum(load, 0)
    values = level * runner * clock * (1 + noise)
    return values if metric == HOST else np.round(values)


def counter(metric: str, level: np.ndarray, sd: float, flicker: Flicker | None,
            rng: np.random.Generator) -> np.ndarray:
    """A work counter's values: exact (instructions, with a flicker if any), or bytes in 32-byte sectors."""
    n = len(level)
    if metric == INST:
        offsets = np.zeros(n) if flicker is None else np.array(flicker.offsets)[flicker_states(flicker, n, rng)]
        return np.round(level * (1 + offsets))
    if metric == READ:  # caches flushed: only ever a little more than the code asks for
        jitter = np.abs(rng.normal(0, sd, n)) * (rng.random(n) < 0.6)
    else:  # write-back depends on L2 evictions
        jitter = rng.normal(0, sd, n) + (rng.random(n) < 0.03) * rng.uniform(0.03, 0.10, n)
    return np.round(level * (1 + jitter) / 32) * 32
