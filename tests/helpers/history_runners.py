"""Planted series of CI noise the other families lack (issue 35's last false points: heavy tails and shared
runners), written with each series' expected change points before the detector first ran on them.

Run it to print the figures quoted in docs/history.md::

    PYTHONPATH=. python tests/helpers/history_runners.py [seed] [per_family]
"""

from __future__ import annotations

import sys
from typing import Iterator

import numpy as np

from helpers.history_planted import Planted, score


def heavy_tail_series(seed: int = 361, per_family: int = 40) -> Iterator[Planted]:
    """Student's t noise with 2-4 degrees of freedom (scale 0.3-3%, log-uniform) and one-sided slow runs (another
    job on the machine): +5-50% at 2-10% of the commits, a third of them in clusters of 2 or 3 in a row; 100-200
    commits.

    * ``heavy-flat``: no change point.
    * ``heavy-step``: a step of 3-10% (either way) at a commit in 20..n-20, the noise's scale at most a third of
      it: one change point, at the step.
    """
    rng = np.random.default_rng(seed)

    def heavy(n: int, scale: float) -> np.ndarray:
        values = 1 + scale * rng.standard_t(float(rng.uniform(2, 4)), n)
        slow = np.zeros(n, dtype=bool)
        for at in rng.choice(n, max(1, round(n * rng.uniform(0.02, 0.10))), replace=False):
            length = int(rng.choice([1, 1, 1, 1, 2, 3]))
            slow[at:at + length] = True
        return values * np.where(slow, 1 + rng.uniform(0.05, 0.50, n), 1.0)

    for _ in range(per_family):
        n = int(rng.integers(100, 201))
        yield Planted("heavy-flat", 100.0 * heavy(n, float(np.exp(rng.uniform(np.log(0.003), np.log(0.03))))), ())
    for _ in range(per_family):
        n, size = int(rng.integers(100, 201)), float(rng.uniform(0.03, 0.10))
        at = int(rng.integers(20, n - 20))
        level = np.where(np.arange(n) < at, 1.0, 1 + float(rng.choice([-1, 1])) * size)
        scale = float(np.exp(rng.uniform(np.log(0.003), np.log(min(0.03, size / 3)))))
        yield Planted("heavy-step", 100.0 * level * heavy(n, scale), (at,))


def runner_pool_series(seed: int = 362, per_family: int = 40) -> Iterator[Planted]:
    """CI jobs on a pool of 2-5 runners whose speeds span 0.5-3%: each commit's run lands on a random runner, and
    stays on the previous one with a probability of 0-0.7 (sticky for a few commits); Gaussian noise of 0.3-1% on
    top; whole-run contention (another job shares the GPU) of +5-20% at 0-5% of the commits; 100-200 commits.

    * ``runners-flat``: no change point.
    * ``runners-step``: a step of 3-10% (either way) at a commit in 20..n-20, the runners' span at most half of it
      and the noise at most a third: one change point, at the step.
    """
    rng = np.random.default_rng(seed)

    def pooled(n: int, span: float, noise: float) -> np.ndarray:
        count = int(rng.integers(2, 6))
        speeds = np.concatenate(([0.0, span], rng.uniform(0, span, count - 2)))
        stick = float(rng.uniform(0, 0.7))
        runner = np.empty(n, dtype=np.int64)
        runner[0] = rng.integers(count)
        for t in range(1, n):
            runner[t] = runner[t - 1] if rng.random() < stick else rng.integers(count)
        values = (1 + speeds[runner]) * (1 + rng.normal(0, noise, n))
        shared = rng.random(n) < rng.uniform(0, 0.05)
        return values * np.where(shared, 1 + rng.uniform(0.05, 0.20, n), 1.0)

    for _ in range(per_family):
        n = int(rng.integers(100, 201))
        yield Planted("runners-flat", 100.0 * pooled(n, rng.uniform(0.005, 0.03), rng.uniform(0.003, 0.01)), ())
    for _ in range(per_family):
        n, size = int(rng.integers(100, 201)), float(rng.uniform(0.03, 0.10))
        at = int(rng.integers(20, n - 20))
        level = np.where(np.arange(n) < at, 1.0, 1 + float(rng.choice([-1, 1])) * size)
        values = pooled(n, rng.uniform(0.005, min(0.03, size / 2)), rng.uniform(0.003, min(0.01, size / 3)))
        yield Planted("runners-step", 100.0 * level * values, (at,))


def mixed_pool_kernels(seed: int = 511, count: int = 40, commits: int = 160, warm: tuple[int, int] | None = (120, 128),
                       rise: float = 0.06, held_from: int | None = None) -> list[np.ndarray]:
    """``count`` kernel durations of one GPU whose runs land on 5 runners of mixed speeds (+0, +5, +2.5, +0, -2%,
    one at random per commit: instance types, as a pool of host benchmarks has), 0.5% noise, ``commits`` commits.
    ``warm``: every run in those commits (first, end) is ``rise`` slower on every kernel (a hot rack, a sick runner
    taking the pool's jobs), each kernel feeling 0.6-1.2 of it, then back; ``held_from``: every kernel ``rise``
    slower from that commit on, and holds (a driver update).

    Expected, written before the detector ran on them: with ``warm`` of 8 runs at +6% (each run's move within the
    runners' usual spread, 8 runs together beyond it), no change point and one runner-spell note; with
    ``held_from`` and no ``warm``, one change point at ``held_from`` in every kernel; with ``warm`` of 20 runs
    (longer than a spell spans), its two edges in most kernels.
    """
    rng = np.random.default_rng(seed)
    speeds = np.array([0.0, 0.05, 0.025, 0.0, -0.02])
    runner = rng.integers(0, len(speeds), commits)
    pool = np.zeros(commits)
    if warm is not None:
        pool[warm[0]:warm[1]] = rise
    if held_from is not None:
        pool[held_from:] += rise
    made = []
    for _ in range(count):
        feel = rng.uniform(0.6, 1.2) if warm is not None else 1.0
        made.append(rng.uniform(1e4, 1e6) * (1 + speeds[runner]) * (1 + feel * pool) * (1 + rng.normal(0, 0.005, commits)))
    return made


def host_stall_pool(seed: int = 521, count: int = 30, commits: int = 160, stall: tuple[int, int] | None = (90, 94),
                    held_from: int | None = None) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """One GPU's history: ``count`` regions' GPU-idle shares (percent, 12-35% idle, 0.6-1.2 points of noise) and
    ``count`` kernel durations (0.5% noise). ``stall``: in those runs (first, end) the runner's host stalls before
    each step (a sick node, a noisy neighbour on its CPUs): every region's idle share is 6-10 points higher, the
    kernels' times do not move, then back. ``held_from``: every region's idle share 6-10 points higher from that
    commit on, and holds (a data loader made slower). Returns (idle shares, kernel durations).

    Expected, written before the detector ran on them: with ``stall`` of 4 runs, no change point on any series and
    one runner-spell note for the idle shares; with ``held_from`` and no ``stall``, one change point at
    ``held_from`` in every idle share and none on the kernels.
    """
    rng = np.random.default_rng(seed)
    shares, kernels = [], []
    for _ in range(count):
        level = rng.uniform(12.0, 35.0) + np.zeros(commits)
        rise = rng.uniform(6.0, 10.0)
        if stall is not None:
            level[stall[0]:stall[1]] += rise
        if held_from is not None:
            level[held_from:] += rise
        shares.append(level + rng.normal(0.0, rng.uniform(0.6, 1.2), commits))
        kernels.append(rng.uniform(1e4, 1e6) * (1 + rng.normal(0.0, 0.005, commits)))
    return shares, kernels


def slow_launch_series(seed: int = 491, per_family: int = 40) -> Iterator[Planted]:
    """Kernel times on locked clocks (ncu replays a few launches): Student's t noise (5 degrees of freedom) of
    0.2-1%, and at 2-6% of the commits one slow launch among the few replayed, +5-9.5% (under the spike rule's 10%
    floor), each commit on its own, so that two land one or two commits apart now and then; in every series one
    such pair is placed two commits apart (slow, at the level, slow); 120-200 commits.

    * ``launch-flat``: no change point.
    * ``launch-reverted``: a regression of 4-8 noise units (the t noise's scale) that holds 4-8 commits, then comes
      back, starting at a commit in 20..n-30: two change points, its edges.
    * ``launch-step``: a step of 4-6 noise units (either way) at a commit in 20..n-20: one change point.
    """
    rng = np.random.default_rng(seed)

    def launches(n: int, scale: float) -> np.ndarray:
        values = 1 + scale * rng.standard_t(5.0, n)
        slow = rng.random(n) < rng.uniform(0.02, 0.06)
        pair = int(rng.integers(5, n - 8))
        slow[[pair, pair + 2]] = True
        return values * np.where(slow, 1 + rng.uniform(0.05, 0.095, n), 1.0)

    def scale() -> float:
        return float(np.exp(rng.uniform(np.log(0.002), np.log(0.01))))

    for _ in range(per_family):
        yield Planted("launch-flat", 1e5 * launches(int(rng.integers(120, 201)), scale()), ())
    for _ in range(per_family):
        n, noise = int(rng.integers(120, 201)), scale()
        at, width = int(rng.integers(20, n - 30)), int(rng.integers(4, 9))
        level = np.where((np.arange(n) >= at) & (np.arange(n) < at + width), 1 + rng.uniform(4, 8) * noise, 1.0)
        yield Planted("launch-reverted", 1e5 * level * launches(n, noise), (at, at + width))
    for _ in range(per_family):
        n, noise = int(rng.integers(120, 201)), scale()
        at = int(rng.integers(20, n - 20))
        level = np.where(np.arange(n) < at, 1.0, 1 + float(rng.choice([-1, 1])) * rng.uniform(4, 6) * noise)
        yield Planted("launch-step", 1e5 * level * launches(n, noise), (at,))


def rare_mode_series(seed: int = 494, per_family: int = 40) -> Iterator[Planted]:
    """CUDA-event times on unlocked clocks: Gaussian noise of 0.3-1%, and at 2-5% of the runs a low clock state,
    +5-12% (one factor per series, each run on its own), a mode rarer than a twentieth of the runs; in every series
    4 low-clock runs among 7 in a row (chance does that in a long history); 150-220 commits.

    * ``rare-flat``: no change point.
    * ``rare-reverted``: a regression of 4-8 noise units (not the low clock's level) that holds 4-8 runs, starting at
      a commit in 20..n-30 away from the low-clock cluster: two change points, its edges.
    * ``rare-at-mode``: a regression to the low clock's own level that holds 6-10 runs (every run there at it):
      two change points, its edges.
    """
    rng = np.random.default_rng(seed)

    def clocks(n: int, noise: float, low: float) -> tuple[np.ndarray, int]:
        slow = rng.random(n) < rng.uniform(0.02, 0.05)
        cluster = int(rng.integers(10, n - 17))
        slow[cluster:cluster + 7] = [False, True, True, False, True, False, True]
        return np.where(slow, 1 + low, 1.0) * (1 + rng.normal(0, noise, n)), cluster

    for _ in range(per_family):
        n = int(rng.integers(150, 221))
        yield Planted("rare-flat", 1e3 * clocks(n, rng.uniform(0.003, 0.01), rng.uniform(0.05, 0.12))[0], ())
    for family in ("rare-reverted", "rare-at-mode"):
        for _ in range(per_family):
            n, noise, low = int(rng.integers(150, 221)), float(rng.uniform(0.003, 0.01)), float(rng.uniform(0.05, 0.12))
            values, cluster = clocks(n, noise, low)
            width = int(rng.integers(4, 9)) if family == "rare-reverted" else int(rng.integers(6, 11))
            at = int(rng.integers(20, n - 30))
            while abs(at - cluster) < 20:
                at = int(rng.integers(20, n - 30))
            size = rng.uniform(4, 8) * noise if family == "rare-reverted" else low
            inside = (np.arange(n) >= at) & (np.arange(n) < at + width)
            if family == "rare-at-mode":
                values[inside] /= np.where(values[inside] > 1 + low / 2, 1 + low, 1.0)  # each run there at the mode
            yield Planted(family, 1e3 * np.where(inside, 1 + size, 1.0) * values, (at, at + width))


def warm_spell_series(seed: int = 501, per_family: int = 40) -> Iterator[Planted]:
    """CUDA-event times on boost clocks: right-skewed noise (gamma, shape 4, scale 1-3% of the level: a run is
    slowed more often than sped up), and one or two warm spells a series (the room or the chassis warms, clocks
    settle lower): the level 0.6-1.2 noise units higher for 12-40 commits, reached and left over 1-3 commits, a
    shift the t-test passes over so many runs and a person does not see in the noise; 120-220 commits.

    * ``warm-flat``: no change point.
    * ``warm-step``: a step of 4-6 noise units (either way; the blind sets' rule is 4) at a commit in 20..n-20, away
      from the spells: one change point, at the step.
    * ``warm-reverted``: a regression of 6-10 noise units that holds 4-8 commits (the blind sets' rule for a short
      level is 6), then comes back, away from the spells: two change points, its edges.
    """
    rng = np.random.default_rng(seed)

    def warm(n: int, scale: float, clear: tuple[int, int]) -> np.ndarray:
        level = np.zeros(n)
        for _ in range(int(rng.integers(1, 3))):
            width, ramp = int(rng.integers(12, 41)), int(rng.integers(1, 4))
            start = int(rng.integers(0, n - width))
            while clear[0] - 3 < start + width and start < clear[1] + 3:
                start = int(rng.integers(0, n - width))
            shape = np.clip(np.minimum(np.arange(n) - start + 1, start + width - np.arange(n)) / ramp, 0.0, 1.0)
            level = np.maximum(level, rng.uniform(0.6, 1.2) * shape)
        return 1 + scale * (rng.gamma(4.0, 0.5, n) - 2.0 + level)

    def scale() -> float:
        return float(np.exp(rng.uniform(np.log(0.01), np.log(0.03))))

    for _ in range(per_family):
        n = int(rng.integers(120, 221))
        yield Planted("warm-flat", 0.5 * warm(n, scale(), (-10, -10)), ())
    for _ in range(per_family):
        n, noise = int(rng.integers(120, 221)), scale()
        at = int(rng.integers(20, n - 20))
        level = np.where(np.arange(n) < at, 1.0, np.exp(float(rng.choice([-1, 1])) * rng.uniform(4, 6) * noise))
        yield Planted("warm-step", 0.5 * level * warm(n, noise, (at, at)), (at,))
    for _ in range(per_family):
        n, noise = int(rng.integers(120, 221)), scale()
        at, width = int(rng.integers(20, n - 30)), int(rng.integers(4, 9))
        inside = (np.arange(n) >= at) & (np.arange(n) < at + width)
        level = np.where(inside, np.exp(rng.uniform(6, 10) * noise), 1.0)
        yield Planted("warm-reverted", 0.5 * level * warm(n, noise, (at, at + width)), (at, at + width))


if __name__ == "__main__":
    from perfgate.history.changes import change_points

    seed, per_family = (int(sys.argv[1]), int(sys.argv[2])) if len(sys.argv) > 2 else (361, 40)
    every = list(heavy_tail_series(seed, per_family)) + list(runner_pool_series(seed + 1, per_family))
    every += list(slow_launch_series(seed + 130, per_family)) + list(rare_mode_series(seed + 133, per_family))
    every += list(warm_spell_series(seed + 140, per_family))
    for s in score(lambda v: [c.position for c in change_points(v)], every).values():
        print(f"{s.family:12} planted {s.planted:4} found {s.found:4} true {s.true_positives:4} "
              f"extra {s.found - s.true_positives:4}")
