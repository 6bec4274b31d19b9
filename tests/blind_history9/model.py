"""The ninth blind set's noise model (README.md: "The noise model"): runner pools and how each kind of series is
measured. Every random draw comes from a stream named by ``SEED``: a pool's context from (SEED, 1, pool index), a
series from (SEED, 2, series index)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

COMMITS = 240
SEED = 9_240_921
INFRA_COMMIT = 131  # the h100-infra pool's driver R535 -> R550 and CUDA 12.2 -> 12.4 container update

UNITS = {"gpu__time_duration.sum": "nsecond", "timeline.kernel_duration": "ns", "time.min": "s",
         "smsp__inst_executed.sum": "inst", "dram__bytes_read.sum": "byte", "dram__bytes_write.sum": "byte",
         "timeline.gpu_idle_pct": "%"}


@dataclass(frozen=True)
class Pool:
    name: str
    gpu: str
    runners: int
    skip: float  # the share of commits the pool did not run
    runner_offset: float  # the sd of a runner's offset on a series, in the series' noise units
    every: int = 1  # 1: every commit; 6: a nightly run (about one per 6 commits)
    sick_spells: int = 0  # short spells of a sick or shared node (2 to 4 runs)
    thermal: float = 0.0  # the share of a series' noise that is the node's slow thermal / power-cap state
    mix_change: bool = False  # new runners join at about commit 90 and the old ones leave at about 170


POOLS = (
    Pool("h100-ncu", "NVIDIA H100 80GB HBM3", 2, 0.03, 0.3),
    Pool("a100-events", "NVIDIA A100-SXM4-80GB", 3, 0.05, 0.4, sick_spells=4, thermal=0.5),
    Pool("l4-bench", "NVIDIA L4", 4, 0.06, 0.5, sick_spells=3),
    Pool("a10g-mixed", "NVIDIA A10G", 4, 0.08, 0.6, sick_spells=2, thermal=0.3, mix_change=True),
    Pool("h100-infra", "NVIDIA H100 PCIe", 2, 0.04, 0.3, sick_spells=1),
    Pool("h200-nightly", "NVIDIA H200", 2, 0.1, 0.3, every=6),
)
POOL_INDEX = {pool.name: i for i, pool in enumerate(POOLS)}


@dataclass(frozen=True)
class PoolContext:
    ran: np.ndarray  # bool per commit: the pool ran that commit
    runner: np.ndarray  # int per commit: which runner took it
    sick: np.ndarray  # bool per commit: a sick / shared-node spell
    thermal: np.ndarray  # float per commit: the node's slow state, sd 1


def pool_context(pool: Pool) -> PoolContext:
    rng = np.random.default_rng([SEED, 1, POOL_INDEX[pool.name]])
    commits = np.arange(COMMITS)
    ran = rng.random(COMMITS) >= pool.skip
    if pool.every > 1:
        ran &= commits % pool.every == pool.every - 1
    if pool.name == "h100-infra":
        ran[INFRA_COMMIT] = True  # the update's first run is recorded (the driver change is dated by it)
    half = pool.runners // 2
    if pool.mix_change:  # old hosts take everything, then share with new ones, then the new ones take everything
        share_new = np.clip((commits - 90) / 80, 0, 1)
        new = rng.random(COMMITS) < share_new
        runner = np.where(new, half + rng.integers(0, pool.runners - half, COMMITS), rng.integers(0, half, COMMITS))
    else:
        runner = rng.integers(0, pool.runners, COMMITS)
    sick = np.zeros(COMMITS, dtype=bool)
    for start in rng.integers(5, COMMITS - 8, pool.sick_spells):
        sick[start:start + int(rng.integers(2, 5))] = True
    shocks = rng.normal(0, 1, COMMITS)
    thermal = np.zeros(COMMITS)
    for c in range(1, COMMITS):  # AR(1) at 0.8, scaled to sd 1
        thermal[c] = 0.8 * thermal[c - 1] + 0.6 * shocks[c]
    return PoolContext(ran, runner.astype(int), sick, thermal)


def timing_noise(rng: np.random.Generator, how: str, pool: Pool, ctx: PoolContext, commits: np.ndarray,
                 sigma: float) -> np.ndarray:
    """Log-scale noise for a timing series at ``commits`` (or, for ``idle``, additive): ``sigma`` is the sd of its
    Gaussian core (white, thermal and the runner mix), before tails, bursts and sick spells."""
    n = len(commits)
    offsets = rng.normal(0, pool.runner_offset, pool.runners)
    white_share = np.sqrt(1 - pool.thermal ** 2)
    core = white_share * rng.normal(0, 1, n) + pool.thermal * ctx.thermal[commits] + offsets[ctx.runner[commits]]
    if how == "bench":  # min of rounds: right-skewed core, and a heavy tail from GC, page faults, a busy host
        core = white_share * (rng.gamma(2.0, 1.0, n) - 2.0) / np.sqrt(2.0) + offsets[ctx.runner[commits]]
        tail = rng.random(n) < 0.04
        core += tail * np.minimum(2.0 * rng.pareto(1.5, n), 30.0)
    elif how == "events":  # co-tenant bursts on boost clocks
        burst = rng.random(n) < 0.03
        core += burst * rng.exponential(5.0, n)
    else:  # ncu on locked clocks: a rare replay disturbed by a preempted context
        rare = rng.random(n) < 0.01
        core += rare * rng.uniform(4.0, 12.0, n)
    core += ctx.sick[commits] * rng.uniform(4.0, 10.0) * (1 + 0.3 * rng.random(n))
    return sigma * core / np.sqrt(1 + pool.runner_offset ** 2)  # sigma: the sd of the core with its runner mix


def rounded(values: np.ndarray) -> np.ndarray:
    """Values as they are written: 9 significant digits."""
    return np.array([float(f"{v:.9g}") for v in values])
