"""The sixth blind set's noise model (README.md: the noise model): runner pools shared by their series, and
each kind of measurement's own noise around a level."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

SEED = 60_6_35
COMMITS = 240
FLOOR = 0.003  # the noise unit's floor (README.md: what counts as a change)
MIN_UNITS = 4.0
MIN_RUNS = 4  # a level holds at least this many runs
HEAD, TAIL = 12, 8  # no change in a series' first HEAD or last TAIL runs
POOLS = ("h100-sxm", "a100-pcie", "l4")
RUNNERS = 3
UNITS = {"gpu__time_duration.sum": "ns", "smsp__inst_executed.sum": "inst", "dram__bytes_read.sum": "byte",
         "time.min": "s", "event.time": "ms", "gpu_idle.share": "fraction"}
KINDS = ("ncu", "inst", "dram", "flicker", "host", "event", "idle")


@dataclass(frozen=True)
class Pool:
    gpu: str
    ran: np.ndarray  # bool per commit: the pool ran it
    runner: np.ndarray  # the runner per commit
    sick: np.ndarray  # the log slowdown of a sick runner's run per commit (mostly 0)


def pool_context(index: int) -> Pool:
    rng = np.random.default_rng([SEED, 1, index])
    ran = rng.random(COMMITS) > 0.03
    outage = int(rng.integers(20, COMMITS - 10))
    ran[outage:outage + int(rng.integers(2, 6))] = False
    ran[0] = True
    runner = rng.integers(0, RUNNERS, COMMITS)
    sick = np.zeros(COMMITS)
    for _ in range(int(rng.integers(2, 5))):
        start = int(rng.integers(0, COMMITS - 2))
        sick[start:start + int(rng.integers(1, 3))] = rng.uniform(0.04, 0.09)
    return Pool(POOLS[index], ran, runner, sick)


@dataclass
class Noise:
    kind: str
    metric: str
    level: float
    sigma: float  # the noise unit, in log terms (README.md)
    params: dict[str, float] = field(default_factory=dict)
    offsets: np.ndarray = field(default_factory=lambda: np.zeros(RUNNERS))
    flicker: np.ndarray = field(default_factory=lambda: np.zeros(1))
    weights: np.ndarray = field(default_factory=lambda: np.ones(1))


def draw_noise(kind: str, rng: np.random.Generator) -> Noise:
    """A series' own noise of one kind, with its level."""
    u = rng.uniform
    if kind == "ncu":
        core = u(0.0015, 0.006)
        runner = core * u(0.2, 0.5)
        return Noise(kind, "gpu__time_duration.sum", float(np.exp(u(np.log(3e3), np.log(4e5)))),
                     float(np.hypot(core, runner)), {"core": core}, rng.normal(0, runner, RUNNERS))
    if kind == "inst":
        return Noise(kind, "smsp__inst_executed.sum", float(np.exp(u(np.log(1e6), np.log(5e9)))), 0.0)
    if kind == "dram":
        jitter = u(0.00005, 0.0003)
        return Noise(kind, "dram__bytes_read.sum", float(np.exp(u(np.log(1e6), np.log(4e9)))), jitter,
                     {"core": jitter})
    if kind == "flicker":
        gap = u(0.002, 0.012)
        three = rng.random() < 0.3
        steps = np.array([-gap, 0.0, gap * u(0.6, 1.0)]) if three else np.array([0.0, gap])
        weights = rng.dirichlet(np.full(len(steps), 2.0))
        metric = "dram__bytes_read.sum" if rng.random() < 0.5 else "smsp__inst_executed.sum"
        return Noise(kind, metric, float(np.exp(u(np.log(1e6), np.log(4e9)))), float(np.ptp(steps) / 2),
                     flicker=steps, weights=weights)
    if kind == "host":
        core = u(0.008, 0.03)
        runner = core * u(0.3, 1.0)
        return Noise(kind, "time.min", float(np.exp(u(np.log(2e-5), np.log(5e-2)))),
                     float(np.hypot(core, runner)), {"core": core}, rng.normal(0, runner, RUNNERS))
    if kind == "event":
        core = u(0.004, 0.015)
        return Noise(kind, "event.time", float(np.exp(u(np.log(0.05), np.log(40.0)))),
                     float(np.hypot(core, core / 2)), {"core": core, "low": u(0.02, 0.08)},
                     rng.normal(0, core / 2, RUNNERS))
    level, spread = u(0.06, 0.35), u(0.002, 0.008)
    return Noise("idle", "gpu_idle.share", level, float(np.hypot(spread, 0.3 * spread) / level), {"core": spread},
                 rng.normal(0, 0.3 * spread, RUNNERS))


def values(noise: Noise, level: np.ndarray, commits: np.ndarray, pool: Pool, rng: np.random.Generator) -> np.ndarray:
    """The measured values at these commits around ``level`` (one level per value)."""
    n = len(level)
    offset = noise.offsets[pool.runner[commits]]
    sick = pool.sick[commits]
    core = noise.params.get("core", 0.0)
    if noise.kind == "ncu":
        preempted = (rng.random(n) < 0.02) * rng.uniform(3, 8, n) * core
        return np.asarray(np.round(level * np.exp(rng.normal(0, core, n) + offset + preempted + sick / 3)), dtype=float)
    if noise.kind == "inst":
        return np.asarray(np.round(level), dtype=float)
    if noise.kind == "dram":
        return np.asarray(np.round(level * np.exp(rng.normal(0, core, n)) / 32) * 32, dtype=float)
    if noise.kind == "flicker":
        picked = rng.choice(len(noise.flicker), n, p=noise.weights)
        return np.asarray(np.round(level * (1 + noise.flicker[picked])), dtype=float)
    if noise.kind == "host":
        tail = (rng.random(n) < 0.05) * rng.exponential(3 * core, n)
        return np.asarray(level * np.exp(rng.normal(0, core, n) + offset + tail + sick), dtype=float)
    if noise.kind == "event":
        low = (rng.random(n) < noise.params["low"]) * rng.uniform(0.04, 0.09, n)
        return np.asarray(level * np.exp(rng.normal(0, core, n) + offset + low + sick), dtype=float)
    spikes = (rng.random(n) < 0.03) * rng.uniform(0.01, 0.04, n)
    return np.asarray(np.round(np.clip(level + rng.normal(0, core, n) + offset + spikes, 0.0, 1.0), 5), dtype=float)
