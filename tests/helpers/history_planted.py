"""Planted change points for validating ``perfgate history changes``: seeded series with known steps, creeps,
exact-counter steps and noise only, and the precision and recall of a detector on them.

Run it to print the figures quoted in docs/history.md::

    PYTHONPATH=. python tests/helpers/history_planted.py
"""

from __future__ import annotations

from typing import Callable, Iterator, NamedTuple, Sequence

import numpy as np

COMMITS = 200
TOLERANCE = 2  # a change found within this many commits of the planted one counts as found


class Planted(NamedTuple):
    family: str
    values: np.ndarray
    changes: tuple[int, ...]  # indexes of the first point after each planted change


def planted_series(seed: int = 26, per_family: int = 50) -> Iterator[Planted]:
    rng = np.random.default_rng(seed)
    for _ in range(per_family):
        at = int(rng.integers(20, COMMITS - 20))
        size = float(rng.choice([-1, 1]) * rng.uniform(0.03, 0.10))
        level = np.where(np.arange(COMMITS) < at, 100.0, 100.0 * (1 + size))
        yield Planted("step", level + rng.normal(0, 1.0, COMMITS), (at,))
    for _ in range(per_family):
        steps = tuple(sorted(int(x) for x in rng.choice(np.arange(25, COMMITS - 25, 30), 4, replace=False)))
        level = 100.0 * 1.02 ** np.searchsorted(steps, np.arange(COMMITS), side="right")
        yield Planted("creep", level + rng.normal(0, 0.5, COMMITS), steps)
    for _ in range(per_family):
        at = int(rng.integers(5, COMMITS - 5))
        base = float(rng.integers(1_000, 10_000_000))
        yield Planted("exact", np.where(np.arange(COMMITS) < at, base, base + int(rng.integers(1, 1000))), (at,))
    for _ in range(per_family):
        yield Planted("noise", 100.0 + rng.normal(0, 1.0, COMMITS), ())


def held_out_style_series(seed: int = 35, per_family: int = 40) -> Iterator[Planted]:
    """The shapes issue 35 measured against Apache Otava, written (with each series' expected change points)
    before the detector first ran on them. Noise is 1% of the level unless said.

    * ``flat``: noise only: no change point.
    * ``step2`` ... ``step20``: one step of 2, 3, 5, 10 or 20% (either way) at a random commit in 20..180.
    * ``two-steps``: a 5% step and a 4% step the other way, at least 30 commits apart.
    * ``exact``: an exact counter (no noise) that steps by 1 to 1000 counts at a random commit.
    * ``flicker``: an exact counter whose value is 0.4% higher in a random 10% of runs (another code path now
      and then): no change point.
    * ``flicker-step``: the same, with a real 5% step at a random commit: one change point.
    * ``reverted``: a regression of 5, 10 or 20% that lasts 3 commits and is reverted: two change points, its
      start and its revert.
    * ``drift``: a slow drift of 2% over the 200 commits: no change point (no step to name).
    """
    rng = np.random.default_rng(seed)
    commits = np.arange(COMMITS)

    def noisy(level: np.ndarray) -> np.ndarray:
        return level * (1 + rng.normal(0, 0.01, COMMITS))

    for _ in range(per_family):
        yield Planted("flat", noisy(np.full(COMMITS, 100.0)), ())
    for size in (0.02, 0.03, 0.05, 0.10, 0.20):
        for _ in range(per_family):
            at = int(rng.integers(20, COMMITS - 20))
            sign = float(rng.choice([-1, 1]))
            yield Planted(f"step{round(size * 100)}", noisy(np.where(commits < at, 100.0, 100.0 * (1 + sign * size))),
                          (at,))
    for _ in range(per_family):
        first = int(rng.integers(20, COMMITS - 50))
        second = int(rng.integers(first + 30, COMMITS - 20 + 1))
        level = 100.0 * np.where(commits < first, 1.0, np.where(commits < second, 1.05, 1.05 * 0.96))
        yield Planted("two-steps", noisy(level), (first, second))
    for _ in range(per_family):
        at = int(rng.integers(5, COMMITS - 5))
        base = float(rng.integers(1_000, 10_000_000))
        yield Planted("exact", np.where(commits < at, base, base + int(rng.integers(1, 1000))), (at,))
    for _ in range(per_family):
        base = float(rng.integers(100_000, 10_000_000))
        yield Planted("flicker", np.where(rng.random(COMMITS) < 0.1, np.round(base * 1.004), base), ())
    for _ in range(per_family):
        at = int(rng.integers(20, COMMITS - 20))
        base = np.where(commits < at, 1.0, 1.05) * float(rng.integers(100_000, 10_000_000))
        yield Planted("flicker-step", np.round(np.where(rng.random(COMMITS) < 0.1, base * 1.004, base)), (at,))
    for _ in range(per_family):
        at = int(rng.integers(20, COMMITS - 23))
        size = float(rng.choice([0.05, 0.10, 0.20]))
        yield Planted("reverted", noisy(np.where((commits >= at) & (commits < at + 3), 100.0 * (1 + size), 100.0)),
                      (at, at + 3))
    for _ in range(per_family):
        yield Planted("drift", noisy(100.0 * (1 + 0.02 * commits / COMMITS)), ())


def spiky_series(seed: int = 351, per_family: int = 40) -> Iterator[Planted]:
    """One-sided spikes (issue 35's second blind set): timing series where a few runs read 1.2-2x their value
    (another process on a shared GPU runner), written with each series' expected change points before the
    detector first ran on them. 100 or 200 commits; noise 0.5, 1 or 2% of the level.

    * ``spiky-step``: a step of 3-20% (either way) at a random commit, 2-5% of runs spiked by +20..115%
      anywhere: one change point, at the step.
    * ``spiky-flat``: noise and the same spikes: no change point.
    * ``spike-pairs``: noise with one to three pairs of spikes two commits apart (and a triple i, i+2, i+4 in
      one series of three), at least 10 commits from each other, spikes of +30..115%: no change point (not a
      short regression and its revert).
    * ``spiky-reverted``: a regression of 10 or 20% lasting 3 commits and reverted, among spikes 3 or more
      commits away from it: two change points, its start and its revert.
    """
    rng = np.random.default_rng(seed)

    def spiked(level: np.ndarray, keep_clear: Sequence[int] = ()) -> np.ndarray:
        n = len(level)
        values = level * (1 + rng.normal(0, float(rng.choice([0.005, 0.01, 0.02])), n))
        at = rng.choice(n, max(2, round(n * rng.uniform(0.02, 0.05))), replace=False)
        at = np.array([a for a in at if all(abs(a - c) > 2 for c in keep_clear)], dtype=np.int64)
        values[at] *= 1 + rng.uniform(0.2, 1.15, len(at))
        return values

    for _ in range(per_family):
        n = int(rng.choice([100, 200]))
        at = int(rng.integers(15, n - 15))
        size = float(rng.choice([-1, 1]) * rng.uniform(0.03, 0.20))
        yield Planted("spiky-step", spiked(np.where(np.arange(n) < at, 100.0, 100.0 * (1 + size))), (at,))
    for _ in range(per_family):
        yield Planted("spiky-flat", spiked(np.full(int(rng.choice([100, 200])), 100.0)), ())
    for index in range(per_family):
        n = int(rng.choice([100, 200]))
        values = 100.0 * (1 + rng.normal(0, float(rng.choice([0.005, 0.01, 0.02])), n))
        for first in rng.choice(np.arange(2, n - 7, 10), int(rng.integers(1, 4)), replace=False).tolist():
            spots = [first, first + 2, first + 4] if index % 3 == 0 else [first, first + 2]
            values[spots] *= 1 + rng.uniform(0.3, 1.15, len(spots))
        yield Planted("spike-pairs", values, ())
    for _ in range(per_family):
        n = int(rng.choice([100, 200]))
        at = int(rng.integers(20, n - 23))
        size = float(rng.choice([0.10, 0.20]))
        level = np.where((np.arange(n) >= at) & (np.arange(n) < at + 3), 100.0 * (1 + size), 100.0)
        yield Planted("spiky-reverted", spiked(level, range(at, at + 3)), (at, at + 3))


def wave_series(seed: int = 353, per_family: int = 40) -> Iterator[Planted]:
    """A runner's slow thermal wave (issue 35's second blind set counted it as no change), written with each
    series' expected change points before the detector first ran on them. 120 or 200 commits; a sine of 0.5-2%
    with a period of 24-90 commits; noise 0.25-0.5% of the level.

    * ``wave``: the wave and noise only: no change point (a slope is no step, however far it moves).
    * ``wave-step``: the same wave with a step of 3-10% (either way, at least twice the wave's amplitude) at a
      random commit: one change point, at the step.
    """
    rng = np.random.default_rng(seed)

    def waving(n: int, amplitude: float) -> np.ndarray:
        t = np.arange(n)
        wave = amplitude * np.sin(2 * np.pi * t / rng.uniform(24, 90) + rng.uniform(0, 2 * np.pi))
        return (1 + wave) * (1 + rng.normal(0, rng.uniform(0.0025, 0.005), n))

    for _ in range(per_family):
        n = int(rng.choice([120, 200]))
        yield Planted("wave", 100.0 * waving(n, rng.uniform(0.005, 0.02)), ())
    for _ in range(per_family):
        n = int(rng.choice([120, 200]))
        size = float(rng.uniform(0.03, 0.10))
        at = int(rng.integers(20, n - 20))
        level = np.where(np.arange(n) < at, 100.0, 100.0 * (1 + float(rng.choice([-1, 1])) * size))
        yield Planted("wave-step", level * waving(n, rng.uniform(0.005, size / 2)), (at,))


def wander_series(seed: int = 357, per_family: int = 40) -> Iterator[Planted]:
    """A runner's slow random wander (not a sine): an AR(1) level (an Ornstein-Uhlenbeck process sampled once a
    commit) with a correlation time of 10-60 commits and a stationary standard deviation of 0.5-2%, white noise of
    0.3-2% on top, 100-200 commits. Written with each series' expected change points before the detector first ran
    on them.

    * ``wander``: the wander and noise only: no change point (it drifts and comes back).
    * ``wander-step``: a step of 3-10% (either way) at a random commit in 20..n-20, the wander's and the noise's
      standard deviations each at most a third of it (so at most 2%): one change point, at the step.
    """
    rng = np.random.default_rng(seed)

    def wandering(n: int, spread: float, noise: float) -> np.ndarray:
        phi = float(np.exp(-1.0 / rng.uniform(10, 60)))
        shocks = rng.normal(0, spread * np.sqrt(1 - phi * phi), n)
        level = np.zeros(n)
        level[0] = rng.normal(0, spread)
        for t in range(1, n):
            level[t] = phi * level[t - 1] + shocks[t]
        return (1 + level) * (1 + rng.normal(0, noise, n))

    for _ in range(per_family):
        n = int(rng.integers(100, 201))
        yield Planted("wander", 100.0 * wandering(n, rng.uniform(0.005, 0.02), rng.uniform(0.003, 0.02)), ())
    for _ in range(per_family):
        n = int(rng.integers(100, 201))
        size = float(rng.uniform(0.03, 0.10))
        at = int(rng.integers(20, n - 20))
        level = np.where(np.arange(n) < at, 100.0, 100.0 * (1 + float(rng.choice([-1, 1])) * size))
        values = wandering(n, rng.uniform(0.005, min(0.02, size / 3)), rng.uniform(0.003, min(0.02, size / 3)))
        yield Planted("wander-step", level * values, (at,))
def excursion_series(seed: int = 353, per_family: int = 40) -> Iterator[Planted]:
    """Short regressions and their reverts beside flat series with heavy tails and spikes (issue 35: regressions
    reverted after 3-5 commits were missed), written with each series' expected change points before the
    detector first ran on them. 100 or 200 commits; Gaussian noise in even series, Student's t (3 dof, scaled to
    the same standard deviation) in odd ones.

    * ``excursion``: a regression of 3-20% (log-uniform) lasting 3, 4, 5 or 6 commits, then reverted exactly; the
      noise makes it 4-12 standard deviations: two change points, its start and its revert.
    * ``excursion-early``: the same, starting 8-14 commits into the series (a test added shortly before): the
      segment before it is short.
    * ``heavy-flat``: noise of 0.5-2% and one-sided spikes (+20..100%) at 2-5% of the commits, one pair of them
      two commits apart in every other series: no change point.
    * ``gauss-flat``: Gaussian noise of 0.3-3%: no change point.
    """
    rng = np.random.default_rng(seed)

    def noise(index: int, n: int, sigma: float) -> np.ndarray:
        if index % 2 == 0:
            return rng.normal(0, sigma, n)
        return sigma * rng.standard_t(3, n) / np.sqrt(3.0)

    for index in range(per_family):
        n, held = int(rng.choice([100, 200])), 3 + index % 4
        size = float(np.exp(rng.uniform(np.log(0.03), np.log(0.20))))
        at = int(rng.integers(15, n - 15 - held))
        level = np.where((np.arange(n) >= at) & (np.arange(n) < at + held), 1 + size, 1.0)
        yield Planted("excursion", 100.0 * level * (1 + noise(index, n, size / rng.uniform(4, 12))), (at, at + held))
    for index in range(per_family):
        n, held = int(rng.choice([100, 200])), 3 + index % 4
        size = float(np.exp(rng.uniform(np.log(0.03), np.log(0.20))))
        at = int(rng.integers(8, 15))
        level = np.where((np.arange(n) >= at) & (np.arange(n) < at + held), 1 + size, 1.0)
        yield Planted("excursion-early", 100.0 * level * (1 + noise(index, n, size / rng.uniform(4, 12))),
                      (at, at + held))
    for index in range(per_family):
        n = int(rng.choice([100, 200]))
        values = 100.0 * (1 + noise(index, n, rng.uniform(0.005, 0.02)))
        spots = rng.choice(n, max(2, round(n * rng.uniform(0.02, 0.05))), replace=False)
        if index % 2:
            first = int(rng.integers(0, n - 2))
            spots = np.concatenate((spots, [first, first + 2]))
        values[spots] *= 1 + rng.uniform(0.2, 1.0, len(spots))
        yield Planted("heavy-flat", values, ())
    for _ in range(per_family):
        yield Planted("gauss-flat", 100.0 * (1 + rng.normal(0, np.exp(rng.uniform(np.log(0.003), np.log(0.03))),
                                                            200)), ())


class Score(NamedTuple):
    family: str
    planted: int
    found: int
    true_positives: int

    @property
    def precision(self) -> float:
        return self.true_positives / self.found if self.found else 1.0

    @property
    def recall(self) -> float:
        return self.true_positives / self.planted if self.planted else 1.0


def matched(planted: Sequence[int], found: Sequence[int], tolerance: int = TOLERANCE) -> int:
    """How many planted changes a found one lies within ``tolerance`` of (each found one counts once)."""
    left = list(found)
    hits = 0
    for at in planted:
        near = [f for f in left if abs(f - at) <= tolerance]
        if near:
            left.remove(min(near, key=lambda f: abs(f - at)))
            hits += 1
    return hits


def score(detect: Callable[[np.ndarray], Sequence[int]], series: Sequence[Planted]) -> dict[str, Score]:
    totals: dict[str, list[int]] = {}
    for item in series:
        found = detect(item.values)
        counts = totals.setdefault(item.family, [0, 0, 0])
        counts[0] += len(item.changes)
        counts[1] += len(found)
        counts[2] += matched(item.changes, found)
    return {family: Score(family, *counts) for family, counts in totals.items()}


if __name__ == "__main__":
    from perfgate.history.changes import change_points

    results = score(lambda v: [c.position for c in change_points(v)], list(planted_series()))
    for s in results.values():
        print(f"{s.family:6} planted {s.planted:4} found {s.found:4} precision {s.precision:.3f} recall {s.recall:.3f}")
