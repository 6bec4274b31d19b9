"""The third blind set's families: each draws a series' noise (model.Profile) and the changes planted in it.

A planted change is a persistent move of the true level, sized against the series' own nominal noise
(``Profile.nominal_sd``) and above a floor a user would act on (README.md: what counts as a change).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from tests.blind_history3.model import BYTES, EXACT, Profile

DRIVER_COMMIT = 150  # the runners' driver and CUDA update


@dataclass
class Plan:
    """A series' noise, its planted steps (position, factor on the level from there on) and a creep."""

    profile: Profile
    steps: list[tuple[int, float]] = field(default_factory=list)
    creep: tuple[int, int, float] | None = None  # (first position, positions it takes, total relative rise)
    driver_step: float = 1.0  # the factor the driver update puts on this kernel, from DRIVER_COMMIT


Noise = Callable[[np.random.Generator], Profile]
Changes = Callable[[np.random.Generator, Profile, np.ndarray], Plan]  # (rng, noise, the commits with a value)


def log_uniform(rng: np.random.Generator, low: float, high: float) -> float:
    return float(np.exp(rng.uniform(np.log(low), np.log(high))))


def timing(rng: np.random.Generator) -> Profile:
    """An ordinary kernel: 8 µs to 5 ms, a few to a hundred launches per test, a quiet dedicated runner."""
    level = log_uniform(rng, 8_000, 5_000_000)
    return Profile(level=level, launches=int(rng.choice([1, 3, 10, 20, 100])),
                   launch_cv=rng.uniform(0.02, 0.05) if level < 20_000 else rng.uniform(0.003, 0.015),
                   run_sd=rng.uniform(0.002, 0.008), runner_sd=rng.uniform(0.001, 0.004),
                   clock_sensitivity=rng.uniform(0.2, 1.0), throttle_p=rng.uniform(0.01, 0.05),
                   throttle_mag=rng.uniform(0.02, 0.06), cotenant_p=rng.uniform(0.0, 0.01), quantum=32.0)


def tiny(rng: np.random.Generator) -> Profile:
    """A 2.5-12 µs kernel: launch jitter of several percent, timed by ncu's 32 ns clock or CUDA events' 0.5 µs."""
    profile = timing(rng)
    profile.level = rng.uniform(2_500, 12_000)
    profile.launches = int(rng.choice([1, 20, 200]))
    profile.launch_cv = rng.uniform(0.02, 0.06)
    profile.quantum = float(rng.choice([32.0, 500.0]))
    profile.run_sd = rng.uniform(0.005, 0.015)
    return profile


def noisy(rng: np.random.Generator) -> Profile:
    """An ordinary kernel in one of the rough environments the flat families show one at a time."""
    return [bimodal, heavy, shared, wandering][int(rng.integers(4))](rng)


def bimodal(rng: np.random.Generator) -> Profile:
    """No clock locking: a fifth to nearly half the runs meet a throttled, slower clock."""
    profile = timing(rng)
    profile.throttle_p, profile.throttle_mag = rng.uniform(0.2, 0.45), rng.uniform(0.03, 0.08)
    profile.clock_sensitivity = rng.uniform(0.6, 1.0)
    return profile


def heavy(rng: np.random.Generator) -> Profile:
    """A shared GPU: heavy-tailed run effects, other jobs for whole runs, few launches so preemptions show."""
    profile = timing(rng)
    profile.run_df, profile.run_sd = rng.uniform(2.2, 4.0), rng.uniform(0.004, 0.012)
    profile.cotenant_p, profile.cotenant_scale = rng.uniform(0.02, 0.06), rng.uniform(0.1, 0.4)
    profile.spike_p, profile.launches = 0.01, int(rng.choice([1, 3, 5]))
    return profile


def shared(rng: np.random.Generator) -> Profile:
    """A pool of runners whose GPUs differ (memory clocks, PCIe slots, ECC): each run lands on one."""
    profile = timing(rng)
    profile.runner_sd = rng.uniform(0.006, 0.02)
    return profile


def wandering(rng: np.random.Generator) -> Profile:
    """A slow mean-reverting wander: machine-room temperature, fan curves, neighbours' load over days."""
    profile = timing(rng)
    profile.wander_sd, profile.wander_rho = rng.uniform(0.004, 0.012), rng.uniform(0.9, 0.98)
    return profile


def late(rng: np.random.Generator) -> Profile:
    """A test added after the history began, skipped in some runs."""
    profile = timing(rng)
    profile.start, profile.skip_p = int(rng.integers(60, 161)), rng.uniform(0.03, 0.15)
    return profile


def exact(rng: np.random.Generator) -> Profile:
    return Profile(metric=EXACT, level=float(round(log_uniform(rng, 1e5, 1e9))))


def flickering(rng: np.random.Generator) -> Profile:
    """An exact counter whose kernel takes another code path in some runs (one or two other paths)."""
    profile = exact(rng)
    paths = [(float(rng.choice([-1, 1]) * rng.uniform(0.001, 0.02)), rng.uniform(0.04, 0.25))]
    if rng.random() < 1 / 3:
        paths.append((float(rng.choice([-1, 1]) * rng.uniform(0.001, 0.02)), rng.uniform(0.03, 0.1)))
    profile.flicker = tuple(paths)
    return profile


def near_exact(rng: np.random.Generator) -> Profile:
    return Profile(metric=BYTES, level=log_uniform(rng, 1e6, 1e9), byte_sd=rng.uniform(1e-4, 5e-4))


def sized(rng: np.random.Generator, profile: Profile, sigmas: tuple[float, float], floor: float) -> float:
    """A relative step of ``sigmas`` nominal sds, at least ``floor`` (and a timer quantum and a half of the
    level's share for coarse timers: smaller moves do not reach the median of quantized launches)."""
    quantum = 1.5 * profile.quantum / profile.level if profile.quantum >= 500 else 0.0
    return max(rng.uniform(*sigmas) * profile.nominal_sd(), floor, quantum)


def direction(rng: np.random.Generator, rel: float, regress: float = 0.7) -> float:
    """The factor for a relative move: a regression (slower, more) or an improvement by the same ratio."""
    return 1 + rel if rng.random() < regress else 1 / (1 + rel)


def spaced(rng: np.random.Generator, length: int, count: int, gap: int, margin: int = 10) -> list[int]:
    """``count`` positions in ``[margin, length - margin)``, at least ``gap`` apart."""
    while True:
        positions = sorted(int(p) for p in rng.integers(margin, length - margin, count))
        if all(b - a >= gap for a, b in zip(positions, positions[1:])):
            return positions


def none(rng: np.random.Generator, profile: Profile, commits: np.ndarray) -> Plan:
    return Plan(profile)


def one_step(sigmas: tuple[float, float], floor: float, margin: int = 10) -> Changes:
    def plan(rng: np.random.Generator, profile: Profile, commits: np.ndarray) -> Plan:
        rel = sized(rng, profile, sigmas, floor)
        return Plan(profile, [(spaced(rng, len(commits), 1, 0, margin)[0], direction(rng, rel))])
    return plan


def large_step(rng: np.random.Generator, profile: Profile, commits: np.ndarray) -> Plan:
    rel = max(log_uniform(rng, 0.10, 1.0), 6 * profile.nominal_sd())
    return Plan(profile, [(spaced(rng, len(commits), 1, 0)[0], direction(rng, rel))])


def exact_step(low: float, high: float) -> Changes:
    """A step in an exact count, clear of the counter's own other paths by at least 0.5%."""
    def plan(rng: np.random.Generator, profile: Profile, commits: np.ndarray) -> Plan:
        while True:
            factor = direction(rng, log_uniform(rng, low, high), 0.6)
            if all(abs((factor - 1) - offset) > 0.005 for offset, _ in profile.flicker):
                return Plan(profile, [(spaced(rng, len(commits), 1, 0)[0], factor)])
    return plan


def multi(rng: np.random.Generator, profile: Profile, commits: np.ndarray) -> Plan:
    """Two or three steps at least 20 runs apart, each way."""
    count = int(rng.choice([2, 2, 3]))
    return Plan(profile, [(p, direction(rng, sized(rng, profile, (5, 12), 0.03), 0.6))
                          for p in spaced(rng, len(commits), count, 20)])


def reverted(sigmas: tuple[float, float], floor: float) -> Changes:
    """A regression reverted after 3 to 8 runs: up, then back to exactly the level before."""
    def plan(rng: np.random.Generator, profile: Profile, commits: np.ndarray) -> Plan:
        rel = sized(rng, profile, sigmas, floor) if profile.metric != EXACT else log_uniform(rng, 0.005, 0.1)
        start = spaced(rng, len(commits), 1, 0, 15)[0]
        back = start + int(rng.choice([3, 3, 4, 5, 6, 8]))
        return Plan(profile, [(start, 1 + rel), (back, 1 / (1 + rel))])
    return plan


def driver(rng: np.random.Generator, profile: Profile, commits: np.ndarray) -> Plan:
    """The driver update moves some kernels (by 3-10%, either way) and leaves the others exactly as they were."""
    if rng.random() < 0.4:
        return Plan(profile)
    factor = direction(rng, max(rng.uniform(0.03, 0.10), 5 * profile.nominal_sd()), 0.5)
    return Plan(profile, [(int(np.searchsorted(commits, DRIVER_COMMIT)), factor)])


def creep(rng: np.random.Generator, profile: Profile, commits: np.ndarray) -> Plan:
    """A slow rise of 3-8% spread evenly over 60-140 runs (no commit to name: scored apart, README.md)."""
    span = int(rng.integers(60, 141))
    return Plan(profile, creep=(int(rng.integers(10, len(commits) - span - 5)), span, rng.uniform(0.03, 0.08)))


def noisier(rng: np.random.Generator, profile: Profile, commits: np.ndarray) -> Plan:
    """From some run on, three times the run and launch noise, the same median: not a change (README.md)."""
    profile.noisier_from = int(rng.integers(50, 151))
    return Plan(profile)


# (family, series, noise, changes); flat_* have no change, creep is scored apart
FAMILIES: tuple[tuple[str, int, Noise, Changes], ...] = (
    ("flat_quiet", 25, timing, none),
    ("flat_tiny_quantized", 20, tiny, none),
    ("flat_bimodal_clock", 20, bimodal, none),
    ("flat_heavy_tail", 25, heavy, none),
    ("flat_shared_runners", 25, shared, none),
    ("flat_wander", 20, wandering, none),
    ("flat_late_skipped", 20, late, none),
    ("flat_exact", 15, exact, none),
    ("flat_flicker", 25, flickering, none),
    ("flat_near_exact", 15, near_exact, none),
    ("step_small", 35, timing, one_step((3, 5), 0.015)),
    ("step_medium", 35, timing, one_step((6, 12), 0.03)),
    ("step_large", 30, timing, large_step),
    ("step_tiny_kernel", 20, tiny, one_step((4, 8), 0.08)),
    ("step_noisy_env", 30, noisy, one_step((4, 8), 0.03)),
    ("step_multi", 25, noisy, multi),
    ("step_late_test", 15, late, one_step((5, 10), 0.03)),
    ("step_exact", 15, exact, exact_step(0.002, 0.2)),
    ("step_flicker", 20, flickering, exact_step(0.01, 0.15)),
    ("step_near_exact", 10, near_exact, one_step((5, 20), 0.005)),
    ("reverted", 30, timing, reverted((5, 15), 0.04)),
    ("reverted_noisy", 10, noisy, reverted((6, 12), 0.05)),
    ("reverted_exact", 10, exact, reverted((0, 0), 0)),
    ("driver_update", 25, timing, driver),
    ("noisier_after", 10, timing, noisier),
    ("creep", 15, timing, creep),
)
FLAT_PREFIX = "flat_"
FLICKER_FAMILIES = ("flat_flicker", "step_flicker")
REVERTED_FAMILIES = ("reverted", "reverted_noisy", "reverted_exact")
UNSCORED_FAMILIES = ("creep",)
