"""The third blind set's noise model: how one CI run turns a kernel's true cost into the value a history keeps.

A series' value at a commit is the median of the kernel's launches in that run. Each launch's time is the true
level times run-level factors (which runner of the pool took the job, the GPU's clock state, a slow thermal or
ambient wander, another process sharing the GPU for the whole run, a residual per-run effect: cache and memory
placement, warm-up) times a launch-level jitter with rare preemption spikes, read off a timer of finite
resolution. Exact counters (instructions) take the kernel's code path's count; some kernels take another path
in some runs (an autotuner's pick, a split-K or atomics variant), so the count flickers. Near-exact counters
(DRAM bytes) move by a few sectors between runs. README.md says why these parts and not others.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

TIME = "gpu__time_duration.sum"
EXACT = "smsp__inst_executed.sum"
BYTES = "dram__bytes_read.sum"
COMMITS = 200  # commits of main; a run per commit
RUNNER_SHARE = (0.4, 0.3, 0.2, 0.1)  # a pool of four runners with the same GPU model
SECTOR = 32  # bytes: DRAM traffic moves in 32-byte sectors


@dataclass
class Profile:
    """One series' noise, drawn per series by its family (families.py)."""

    metric: str = TIME
    level: float = 100_000.0  # ns, or a count
    launches: int = 20
    launch_cv: float = 0.01  # relative sd of one launch around its run's value
    spike_p: float = 0.002  # chance one launch is preempted or interrupted
    quantum: float = 0.0  # timer resolution, ns (0: none worth modelling)
    run_sd: float = 0.003  # residual per-run effect, relative
    run_df: float = 0.0  # > 0: the per-run effect has Student-t tails with this many degrees of freedom
    runner_sd: float = 0.002  # sd of each runner's own offset for this kernel
    clock_sensitivity: float = 1.0  # 1: compute-bound (follows the SM clock), 0.2: memory-bound
    throttle_p: float = 0.03  # chance a run finds the GPU power- or thermally-throttled
    throttle_mag: float = 0.04  # how much slower a throttled run is at sensitivity 1
    wander_sd: float = 0.0  # stationary sd of a slow mean-reverting wander (room temperature, fan curves)
    wander_rho: float = 0.95
    cotenant_p: float = 0.005  # chance another job shares the GPU for the whole run
    cotenant_scale: float = 0.15  # median slowdown when it does (log-normal, heavy)
    flicker: tuple[tuple[float, float], ...] = ()  # exact counters: (relative offset, chance per run) of other paths
    byte_sd: float = 0.0  # near-exact counters: relative sd between runs
    start: int = 0  # first commit with this test (tests added later)
    skip_p: float = 0.0  # chance a run has no value (test skipped, job cancelled, flaky setup)
    noisier_from: int = -1  # position from which the run and launch noise triple (a change in variance only)

    def nominal_sd(self) -> float:
        """The relative sd of a value from the parts that are always there (no spikes, no co-tenants): the unit
        families size their steps in."""
        if self.metric == EXACT:
            return 0.0
        if self.metric == BYTES:
            return self.byte_sd
        throttle = self.throttle_p * (1 - self.throttle_p) * (self.clock_sensitivity * self.throttle_mag) ** 2
        parts = (self.run_sd ** 2 + self.runner_sd ** 2 + self.wander_sd ** 2 + throttle
                 + 1.57 * self.launch_cv ** 2 / self.launches + (self.quantum / self.level) ** 2 / 12)
        return float(np.sqrt(parts))


@dataclass
class Context:
    """What every series of a run shares: which runner took the job."""

    runner: np.ndarray = field(default_factory=lambda: np.zeros(COMMITS, dtype=int))


def make_context(rng: np.random.Generator) -> Context:
    return Context(runner=rng.choice(len(RUNNER_SHARE), size=COMMITS, p=RUNNER_SHARE))


def present_commits(profile: Profile, rng: np.random.Generator) -> np.ndarray:
    """The commits where the series has a value: from its test's first commit, less the skipped runs (never the
    first or the last two, so a series' ends are where its test ran)."""
    commits = np.arange(profile.start, COMMITS)
    keep = rng.random(len(commits)) >= profile.skip_p
    keep[0] = keep[-2:] = True
    return commits[keep]


def values(profile: Profile, level: np.ndarray, commits: np.ndarray, context: Context,
           rng: np.random.Generator) -> np.ndarray:
    """The series' values at ``commits`` (positions ``0..len-1``) for the true ``level`` per position."""
    if profile.metric == EXACT:
        return exact_values(profile, level, rng)
    if profile.metric == BYTES:
        noisy = level * (1 + profile.byte_sd * rng.standard_normal(len(level)))
        return np.asarray(np.round(noisy / SECTOR) * SECTOR)
    factor = run_factors(profile, commits, context, rng)
    return launch_medians(profile, level * factor, rng)


def exact_values(profile: Profile, level: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """The code path's count; another path's in the runs that take it (its offset rides on the level, so a
    step moves every path)."""
    offset = np.zeros(len(level))
    draw = rng.random(len(level))
    edge = 0.0
    for relative, chance in profile.flicker:
        offset[(draw >= edge) & (draw < edge + chance)] = relative
        edge += chance
    return np.round(level * (1 + offset))


def run_factors(profile: Profile, commits: np.ndarray, context: Context, rng: np.random.Generator) -> np.ndarray:
    """Each run's multiplier on the kernel's true time."""
    n = len(commits)
    runner_offsets = profile.runner_sd * rng.standard_normal(len(RUNNER_SHARE))
    if profile.run_df > 0:
        scale = np.sqrt((profile.run_df - 2) / profile.run_df) if profile.run_df > 2 else 0.5
        residual = profile.run_sd * scale * rng.standard_t(profile.run_df, n)
    else:
        residual = profile.run_sd * rng.standard_normal(n)
    if profile.noisier_from >= 0:
        residual[profile.noisier_from:] *= 3
    wander = np.zeros(n)
    if profile.wander_sd > 0:
        innovations = profile.wander_sd * np.sqrt(1 - profile.wander_rho ** 2) * rng.standard_normal(n)
        wander[0] = profile.wander_sd * rng.standard_normal()
        for i in range(1, n):
            wander[i] = profile.wander_rho * wander[i - 1] + innovations[i]
    throttled = rng.random(n) < profile.throttle_p
    throttle = 1 + throttled * profile.clock_sensitivity * profile.throttle_mag * rng.uniform(0.6, 1.4, n)
    cotenant = rng.random(n) < profile.cotenant_p
    sharing = 1 + cotenant * profile.cotenant_scale * rng.lognormal(0, 0.8, n)
    return np.asarray(np.exp(runner_offsets[context.runner[commits]] + residual + wander) * throttle * sharing)


def launch_medians(profile: Profile, run_level: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """The median over the run's launches of jittered, sometimes preempted, timer-quantized launch times."""
    n, k = len(run_level), profile.launches
    cv = np.full((n, 1), profile.launch_cv)
    if profile.noisier_from >= 0:
        cv[profile.noisier_from:] *= 3
    launches = run_level[:, None] * np.exp(cv * rng.standard_normal((n, k)))
    spikes = rng.random((n, k)) < profile.spike_p
    launches *= 1 + spikes * rng.uniform(0.2, 3.0, (n, k))
    if profile.quantum > 0:
        launches = np.maximum(np.round(launches / profile.quantum), 1) * profile.quantum
    return np.asarray(np.median(launches, axis=1))
