"""The noise model of the fifth blind set (README.md: "The noise model"): runner pools shared by their series,
and one series' values from its level and its noise.

Every value is ``base x level x runner offset x exp(sigma x runner multiplier x z) x noise events``, then
rounded the way its tool reports it. The level is the only thing a planted change moves; everything else is
noise by construction, and no noise event moves three consecutive values of a series (``at_most_two_in_a_row``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

SEED = 5_350_2026
COMMITS = 240
FLOOR = 0.0025  # sigma units are at least this: a planted change is |ln factor| >= 4 x max(sigma, FLOOR)

UNITS = {
    "gpu__time_duration.sum": "nsecond",
    "dram__bytes_read.sum": "byte",
    "dram__bytes_write.sum": "byte",
    "smsp__inst_executed.sum": "inst",
    "time.min": "s",
    "timeline.wall_time": "nsecond",
    "timeline.kernel_duration": "nsecond",
    "timeline.gpu_idle_pct": "%",
}
KINDS = {"time.min": "benchmark", "timeline.wall_time": "region", "timeline.gpu_idle_pct": "region"}  # else kernel


@dataclass(frozen=True)
class Pool:
    """A set of CI runners one job runs on: each runner's offset on the level and multiplier on sigma."""

    name: str
    gpu: str
    offsets: tuple[float, ...]
    spread: tuple[float, ...]
    nightly: bool = False
    outages: int = 2  # stretches of commits the pool did not run
    spells: int = 2  # stretches where one runner is sick (thermal, a noisy neighbour)
    refresh: bool = False  # the pool's runners were re-imaged (driver, CUDA) at one commit: a real level shift


POOLS = (
    Pool("ncu-h100", "NVIDIA H100 80GB HBM3", (0.0, 0.002, -0.0015), (1.0, 1.25, 0.8), spells=1),
    Pool("bench-a10g", "NVIDIA A10G", (0.0, 0.008, -0.005, 0.012), (0.6, 1.0, 1.7, 2.4), outages=3, spells=3),
    Pool("nsys-l4", "NVIDIA L4", (0.0, 0.004), (1.0, 1.35), spells=2),
    Pool("nightly-h200", "NVIDIA H200", (0.0, -0.003, 0.003), (1.0, 0.9, 1.3), nightly=True, outages=4, spells=0),
    Pool("bench-t4", "Tesla T4", (0.0, 0.006, -0.004), (0.8, 1.0, 1.5), outages=1, spells=1, refresh=True),
)
POOL_INDEX = {p.name: i for i, p in enumerate(POOLS)}


@dataclass
class Context:
    """What a pool did at each commit, shared by its series: which runner ran, whether it ran at all, which
    runs were the first after an outage, and the sick-runner spells (runner, first commit, last commit, slowdown)."""

    runner: np.ndarray
    ran: np.ndarray
    cold: np.ndarray
    spells: list[tuple[int, int, int, float]]
    refresh: int  # the commit from which the re-imaged runners ran (-1: none)


def pool_context(pool: Pool) -> Context:
    rng = np.random.default_rng([SEED, 1, POOL_INDEX[pool.name]])
    runner = rng.integers(0, len(pool.offsets), COMMITS)
    ran = np.ones(COMMITS, bool)
    if pool.nightly:  # one run a night, at the night's last commit; days of 1 to 4 commits
        ran[:] = False
        at = -1
        while at < COMMITS - 1:
            at = min(at + int(rng.integers(1, 5)), COMMITS - 1)
            ran[at] = True
    cold = np.zeros(COMMITS, bool)
    for _ in range(pool.outages):
        start = int(rng.integers(20, COMMITS - 30))
        end = start + int(rng.integers(3, 14))
        ran[start:end] = False
        after = np.flatnonzero(ran[end:])
        if after.size:
            cold[end + after[0]] = True
    spells = []
    for _ in range(pool.spells):
        start = int(rng.integers(10, COMMITS - 25))
        spells.append((int(rng.integers(0, len(pool.offsets))), start, start + int(rng.integers(6, 20)),
                       float(rng.uniform(0.08, 0.3))))
    refresh = int(rng.integers(70, 170)) if pool.refresh else -1
    return Context(runner, ran, cold, spells, refresh)


@dataclass
class Noise:
    """One series' noise: sigma (log scale, on a runner of multiplier 1), one-run spikes, other modes (autotune
    picks, clock states: (probability, factor)), a flicker (counters: values step by ``quantum`` up to
    ``flicker`` times), skewed z (input-dependent time), whether sick runners and cold runs touch it."""

    sigma: float
    spikes: float = 0.0
    spike_size: tuple[float, float] = (0.05, 0.3)
    modes: tuple[tuple[float, float], ...] = ()
    flicker: int = 0
    quantum: float = 0.0
    skewed: bool = False
    sick: bool = False
    cold: float = 0.0
    exact: bool = field(default=False)

    def scale(self, pool: Pool, base: float) -> float:
        """The sigma the rule of change is stated in (README.md): the runners' sigmas and offsets as one, or
        half a counter's flicker span."""
        if self.exact:
            return self.flicker * self.quantum / base / 2
        offsets = np.asarray(pool.offsets)
        spread = np.asarray(pool.spread)
        return float(np.sqrt(np.mean((self.sigma * spread) ** 2 + (offsets - offsets.mean()) ** 2)))


def at_most_two_in_a_row(hit: np.ndarray) -> np.ndarray:
    """A noise event's mask with every third consecutive hit cleared, so no event moves three values in a row."""
    out: np.ndarray = hit.copy()
    for i in range(2, len(out)):
        if out[i] and out[i - 1] and out[i - 2]:
            out[i] = False
    return out


def events(rng: np.random.Generator, noise: Noise, pool: Pool, context: Context, commits: np.ndarray) -> np.ndarray:
    """The multiplicative noise events on each value: spikes, other modes, sick runners and cold runs."""
    n = len(commits)
    factor = np.ones(n)
    spike = at_most_two_in_a_row(rng.random(n) < noise.spikes)
    factor[spike] *= 1 + rng.uniform(*noise.spike_size, n)[spike]
    pick = rng.random(n)
    edge = 0.0
    for probability, size in noise.modes:
        taken = at_most_two_in_a_row((pick >= edge) & (pick < edge + probability))
        factor[taken] *= size
        edge += probability
    if noise.sick:
        runners = context.runner[commits]
        sick = np.zeros(n)
        for runner, start, end, slowdown in context.spells:
            inside = (commits >= start) & (commits <= end) & (runners == runner)
            sick[at_most_two_in_a_row(inside)] = slowdown
        factor *= 1 + sick
    if noise.cold:
        factor[context.cold[commits]] *= 1 + noise.cold
    return factor


def values(rng: np.random.Generator, noise: Noise, pool: Pool, context: Context, commits: np.ndarray,
           base: float, level: np.ndarray) -> np.ndarray:
    """A series' values at its commits, from its level (1.0 before any change) and its noise."""
    n = len(commits)
    if noise.exact:  # a counter: the same work each run, bar its flicker and rare one-run bumps (spikes)
        steps = rng.integers(0, noise.flicker + 1, n) if noise.flicker else np.zeros(n)
        work = base * level * events(rng, noise, pool, context, commits)
        counted: np.ndarray = np.round(work / noise.quantum) * noise.quantum + steps * noise.quantum
        return counted
    runners = context.runner[commits]
    offsets = np.asarray(pool.offsets)[runners]
    spread = np.asarray(pool.spread)[runners]
    z = (rng.gamma(3.0, 1.0, n) - 3.0) / np.sqrt(3.0) if noise.skewed else rng.standard_normal(n)
    out: np.ndarray = base * level * (1 + offsets) * np.exp(noise.sigma * spread * z) * events(rng, noise, pool, context,
                                                                                    commits)
    if noise.quantum:
        out = np.maximum(np.round(out / noise.quantum), 1) * noise.quantum
    return out
