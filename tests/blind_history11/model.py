"""The eleventh blind set's noise model (README.md: "The noise model"): the commit schedule, the runner pools and
how one series' values are drawn around its level.

Every draw comes from its own stream of ``SEED``: the schedule from (SEED, 3), pool ``i`` from (SEED, 1, i) and
series ``i`` from (SEED, 2, i), so a series' values do not depend on the order or number of the others.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from scipy import stats

SEED = 1111_2026
COMMITS = 260  # commits of main, one CI run each (where the pool did not skip it)
EDGE = 15  # every planted change keeps at least this many values on either side
MIN_RATIO = 0.02  # the change rule (README.md: "What counts as a change"): |new / old - 1| >= 2 % ...
MIN_UNITS = 3.0  # ... and >= 3 noise units
MIN_HOLD = 6  # ... and the new level holds for at least 6 values

UNITS = {"gpu__time_duration.sum": "us", "dram__bytes_read.sum": "byte", "smsp__inst_executed.sum": "inst"}
POOLS = (("a100", 4), ("h100", 3), ("l4", 2), ("a10g", 3))  # GPU model, runners in its pool


def stream(*key: int) -> np.random.Generator:
    return np.random.default_rng([SEED, *key])


@dataclass(frozen=True)
class Schedule:
    hours: np.ndarray  # each commit's time, hours after Monday 00:00 of the first week
    load: np.ndarray  # the shared runners' load at each commit: zero mean, unit standard deviation


def mean_gap(hour: float) -> float:
    """Hours to the next commit: busy working days, quiet nights and weekends."""
    day, clock = int(hour // 24) % 7, hour % 24
    if day >= 5:
        return 9.0
    return 1.1 if 8 <= clock < 20 else 5.0


def schedule() -> Schedule:
    rng = stream(3)
    hours = np.empty(COMMITS)
    t = 9.0
    for c in range(COMMITS):
        hours[c] = t
        t += rng.exponential(mean_gap(t))
    clock, weekend = hours % 24, (hours // 24) % 7 >= 5
    # Other jobs share the hosts: busiest mid-afternoon on working days, quiet at night and at weekends.
    raw = np.where(weekend, -1.2, np.cos(2 * np.pi * (clock - 15) / 24)) + rng.normal(0, 0.15, COMMITS)
    return Schedule(hours, (raw - raw.mean()) / raw.std())


@dataclass(frozen=True)
class Pool:
    gpu: str
    ran: np.ndarray  # bool per commit: the pool ran this commit
    runner: np.ndarray  # which runner took each commit's run
    speed: np.ndarray  # each runner's speed offset, zero mean and unit standard deviation over the runners
    spell: tuple[int, int]  # commits [start, end) during which one runner took every run (the others drained)


def pool(index: int, when: Schedule) -> Pool:
    gpu, runners = POOLS[index]
    rng = stream(1, index)
    # A queue coalesces: a commit whose successor landed before its run started is skipped, often.
    gaps = np.append(np.diff(when.hours), np.inf)
    skipped = ((gaps < 0.4) & (rng.random(COMMITS) < 0.6)) | (rng.random(COMMITS) < 0.02)
    runner = rng.integers(runners, size=COMMITS)
    start = int(rng.integers(40, COMMITS - 90))
    end = start + int(rng.integers(25, 46))
    runner[start:end] = int(rng.integers(runners))
    speed = rng.normal(size=runners)
    speed = (speed - speed.mean()) / speed.std()
    return Pool(gpu, ~skipped, runner, speed, (start, end))


@dataclass(frozen=True)
class Noise:
    """One series' noise, relative to its level unless said otherwise."""

    level: float  # the value at ratio 1 (us for timings, a count for counters)
    sigma: float = 0.0  # the run-to-run scale (for Student-t noise: the scale that gives a normal's quartiles)
    df: float | None = None  # Student-t degrees of freedom; None: normal
    runner: float = 0.0  # the runner offset, in sigmas per unit of runner speed
    load: float = 0.0  # the shared-host load effect, in sigmas per unit of load
    mode_p: float = 0.0  # the share of runs in the slow mode (autotune's other config, a cold L2)
    mode_gap: float = 0.0  # how much slower the slow mode is
    spike_p: float = 0.0  # the share of runs that hit a one-off stall
    grid: float = 0.0  # the timer's resolution in us (values are on its grid); 0: none
    flicker: tuple[tuple[int, float], ...] = ()  # an exact counter's (offset, share) alternatives to its level


def unit(noise: Noise, pool_: Pool, when: Schedule, commits: list[int]) -> float:
    """The series' noise unit, relative to its level: the standard deviation of everything that moves a value
    run to run except one-off stalls (spikes), over the series' own commits."""
    if noise.flicker:
        offsets = np.array([o for o, _ in noise.flicker], dtype=float)
        shares = np.array([p for _, p in noise.flicker])
        return float(np.sqrt(shares @ offsets**2 - (shares @ offsets) ** 2) / noise.level)
    c = np.array(commits)
    env = noise.sigma * (noise.runner * pool_.speed[pool_.runner[c]] + noise.load * when.load[c])
    variance = (noise.sigma**2 + env.var() + noise.mode_p * (1 - noise.mode_p) * noise.mode_gap**2
                + (noise.grid / noise.level) ** 2 / 12)
    return float(np.sqrt(variance))


def body(noise: Noise, n: int, rng: np.random.Generator) -> np.ndarray:
    if noise.df is None:
        return rng.normal(size=n)
    # scaled so the quartiles are a standard normal's: the body matches sigma, the tails are heavier
    return rng.standard_t(noise.df, size=n) * (stats.norm.ppf(0.75) / stats.t.ppf(0.75, noise.df))


def draw(noise: Noise, pool_: Pool, when: Schedule, commits: list[int], level: np.ndarray,
         rng: np.random.Generator) -> np.ndarray:
    """The values at ``commits``, ``level`` the true level at each (1 before any change)."""
    n = len(commits)
    if noise.flicker:
        offsets = np.array([o for o, _ in noise.flicker])
        picks = rng.choice(len(offsets), size=n, p=[p for _, p in noise.flicker])
        return np.round(noise.level * level / 32) * 32 + offsets[picks]
    c = np.array(commits)
    relative = noise.sigma * (body(noise, n, rng) + noise.runner * pool_.speed[pool_.runner[c]]
                              + noise.load * when.load[c])
    relative += noise.mode_gap * (rng.random(n) < noise.mode_p)
    stalls = rng.random(n) < noise.spike_p
    relative += stalls * rng.uniform(4, 12, n) * unit(noise, pool_, when, commits)
    values = noise.level * level * (1 + relative)
    if noise.grid:
        values = np.maximum(np.round(values / noise.grid), 1) * noise.grid
    return values


@dataclass
class Change:
    position: int  # the first value at the new level, in the series' own values
    commit: int
    ratio: float  # the new level over the old


@dataclass
class Series:
    name: str
    family: str
    gpu: str
    test: str
    kind: str
    metric: str
    commits: list[int]
    values: np.ndarray
    sigma: float  # the noise unit (``unit``)
    changes: list[Change] = field(default_factory=list)
    creep: tuple[int, int] | None = None  # positions [start, end) of a gradual drift
    skipped: list[int] = field(default_factory=list)  # commits inside its span where it has no value
