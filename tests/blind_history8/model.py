"""The noise model of the eighth blind change-point set (README.md: "The noise model", why each part is real).

Each runner pool has a context shared by its series (which runner took each commit, the commits it did not run,
thermal state, co-tenant bursts, a sick runner's spells); each series adds its own noise on top, in log space for
times and bytes (a factor on the level), and as exact integers for counters.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

SEED = 2026_1207_8
COMMITS = 240

UNITS = {
    "gpu__time_duration.sum": "nsecond",
    "timeline.kernel_duration": "nsecond",
    "time.min": "second",
    "smsp__inst_executed.sum": "inst",
    "launch__registers_per_thread": "register/thread",
    "dram__bytes_read.sum": "byte",
    "dram__bytes_write.sum": "byte",
    "timeline.gpu_idle_pct": "%",
}


@dataclass(frozen=True)
class Pool:
    name: str
    gpu: str
    clocks: str  # "locked" (ncu), "boost" (CUDA events / nsys), "host" (pytest-benchmark)
    runners: int
    miss: float  # share of commits the pool did not run (queue timeouts, cancelled runs, broken runners)
    runner_spread: float  # sd of the runners' own log offsets (silicon lottery, instance types)
    nightly: bool = False  # runs only the last commit of each day
    capped_runner: bool = False  # one runner sits under a lower power limit
    joins_at: int | None = None  # a new, slower runner joins the pool at this commit
    infra_at: int | None = None  # a driver, toolkit or image change on this pool at this commit


POOLS = (
    Pool("h100-ncu", "NVIDIA H100 80GB HBM3", "locked", 3, 0.04, 0.0015, infra_at=150),
    Pool("a100-ncu", "NVIDIA A100-SXM4-80GB", "locked", 2, 0.08, 0.002),
    Pool("l4-events", "NVIDIA L4", "boost", 4, 0.06, 0.012, joins_at=170, infra_at=95),
    Pool("h100-nsys", "NVIDIA H100 PCIe", "boost", 2, 0.05, 0.006, capped_runner=True),
    Pool("a10g-bench", "NVIDIA A10G", "host", 6, 0.05, 0.03, infra_at=130),
    Pool("cpu-bench", "NVIDIA RTX A4000", "host", 5, 0.03, 0.04),
    Pool("h200-nightly", "NVIDIA H200", "locked", 2, 0.05, 0.002, nightly=True),
)
POOL_BY_NAME = {p.name: p for p in POOLS}


@dataclass(frozen=True)
class Context:
    """What a pool's runs share: ``runner[c]`` is -1 where the pool has no run at commit c."""

    runner: np.ndarray
    offset: np.ndarray  # each runner's log offset
    thermal: np.ndarray  # standardised AR(1) thermal / ambient state per commit
    cotenant: np.ndarray  # True where another job shared the GPU or host
    sick: np.ndarray  # log slowdown of the run at commit c (a runner's bad spell: throttling, a noisy neighbour)


def nightly_commits(rng: np.random.Generator) -> np.ndarray:
    """The last commit of each day: days hold 1 to ~14 commits (weekends few, release weeks many)."""
    ends, at = [], -1
    while at < COMMITS - 1:
        at = min(at + 1 + int(rng.poisson(6)), COMMITS - 1)
        ends.append(at)
    return np.array(ends)


def context(pool: Pool, rng: np.random.Generator) -> Context:
    runners = pool.runners + (1 if pool.joins_at is not None else 0)
    runner = rng.integers(0, pool.runners, COMMITS)
    if pool.joins_at is not None:
        late = np.arange(COMMITS) >= pool.joins_at
        runner[late] = rng.integers(0, runners, int(late.sum()))
    offset = rng.normal(0.0, pool.runner_spread, runners)
    if pool.joins_at is not None:
        offset[-1] = abs(offset[-1]) + pool.runner_spread  # the newcomer is a slower SKU bin
    if pool.capped_runner:
        offset[0] += 0.035
    ran = rng.random(COMMITS) >= pool.miss
    for _ in range(int(rng.integers(1, 3))):  # an outage: the pool ran nothing for a few commits
        start = int(rng.integers(10, COMMITS - 10))
        ran[start:start + int(rng.integers(2, 6))] = False
    if pool.nightly:
        night = np.zeros(COMMITS, bool)
        night[nightly_commits(rng)] = True
        ran &= night
    runner[~ran] = -1
    thermal = np.zeros(COMMITS)
    for c in range(1, COMMITS):
        thermal[c] = 0.85 * thermal[c - 1] + np.sqrt(1 - 0.85 ** 2) * rng.normal()
    cotenant = rng.random(COMMITS) < (0.05 if pool.clocks != "locked" else 0.0)
    sick = np.zeros(COMMITS)
    for _ in range(int(rng.integers(1, 3))):
        bad, start = int(rng.integers(0, pool.runners)), int(rng.integers(0, COMMITS - 12))
        spell = np.arange(start, start + int(rng.integers(4, 12)))
        slow = {"locked": 0.004, "boost": 0.05, "host": 0.12}[pool.clocks] * rng.uniform(0.5, 1.0)
        sick[spell[runner[spell] == bad]] = slow
    return Context(runner, offset, thermal, cotenant, sick)


def loguniform(rng: np.random.Generator, low: float, high: float) -> float:
    return float(np.exp(rng.uniform(np.log(low), np.log(high))))


def time_noise(pool: Pool, ctx: Context, commits: np.ndarray, rng: np.random.Generator,
               widen_at: int | None = None) -> np.ndarray:
    """Log noise of a time at the given commits on the pool (README.md: each ingredient and why it is real)."""
    n = len(commits)
    who = ctx.runner[commits]
    if pool.clocks == "locked":
        s = loguniform(rng, 0.0008, 0.006)
        eps = s * rng.normal(size=n) + 0.3 * ctx.offset[who]
        replay = rng.random(n) < 0.012  # a replay pass that overlapped another process's launch
        eps[replay] += np.log1p(rng.uniform(0.03, 0.3, int(replay.sum())))
    elif pool.clocks == "boost":
        s = loguniform(rng, 0.004, 0.015)
        eps = s * rng.normal(size=n) + ctx.offset[who] + rng.uniform(0.3, 1.0) * s * ctx.thermal[commits]
        hit = ctx.cotenant[commits] & (rng.random(n) < 0.7)
        eps[hit] += rng.uniform(0.04, 0.15, int(hit.sum()))
    else:
        s = loguniform(rng, 0.008, 0.035)
        eps = s * (rng.normal(size=n) + rng.exponential(0.6, n)) + ctx.offset[who]
        gc = rng.random(n) < 0.03  # a collection or a page-fault storm inside every round
        eps[gc] += np.log1p(rng.uniform(0.1, 0.8, int(gc.sum())))
        eps[ctx.cotenant[commits]] += rng.uniform(0.02, 0.1, int(ctx.cotenant[commits].sum()))
    eps = eps + ctx.sick[commits]
    if widen_at is not None:
        late = commits >= widen_at
        eps[late] += 1.5 * s * rng.normal(size=int(late.sum()))
    return np.asarray(eps)


def bytes_noise(metric: str, commits: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """DRAM bytes with caches flushed: reads move little, writes with L2's evictions."""
    s = loguniform(rng, 0.0004, 0.004) if metric == "dram__bytes_read.sum" else loguniform(rng, 0.008, 0.04)
    return s * rng.normal(size=len(commits))


def idle_noise(ctx: Context, commits: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """An nsys region's GPU-idle share: skewed upward by host stalls (page faults, a slow data-loader step)."""
    n = len(commits)
    s = loguniform(rng, 0.02, 0.07)
    eps = s * rng.normal(size=n) + 0.5 * ctx.offset[ctx.runner[commits]]
    stall = rng.random(n) < 0.04
    eps[stall] += rng.uniform(0.1, 0.5, int(stall.sum()))
    return np.asarray(eps)


def flicker_offsets(rng: np.random.Generator, sectors: bool) -> tuple[np.ndarray, np.ndarray]:
    """The few values a counter flickers over (instructions: spin-waits, atomics' retries, split-K semaphores;
    DRAM bytes: a 32-byte sector or two read or not, by which SM's request wins) and how often."""
    unit = 32 if sectors else int(rng.choice([1, 4, 32, 128]))
    offsets = unit * np.sort(rng.choice(np.arange(1, 9), int(rng.integers(1, 4)), replace=False))
    offsets = np.concatenate([[0], offsets])
    weights = rng.dirichlet(np.full(len(offsets), 1.5))
    weights[0] += 0.3
    return offsets, weights / weights.sum()


def robust_scale(eps: np.ndarray) -> float:
    """The noise unit: 1.4826 × the median absolute deviation (what the eye reads as the band's width)."""
    if len(eps) == 0:
        return 0.0
    return float(1.4826 * np.median(np.abs(eps - np.median(eps))))
