"""Whether a change point is a step, an abrupt shift of level, or a gradual movement that a straight line through
its neighbourhood explains as well (a runner's slow thermal wave, a slow drift).

E-divisive and the t-test compare the two sides' levels only: a wave of 1-2% over tens of commits in 0.3% noise
has sides whose means differ by many standard errors wherever it is split, so the search places a point on each
of its slopes (Otava does the same). A step is a jump between neighbouring commits; a wave is a slope. Around a
change point, within ``REACHES`` commits each side (and no farther than its neighbouring change points), the
values are fitted by y = a + b t + c [t >= 0] (a line with a step at the point: the two-phase regression with a
shared slope of climate-record homogenisation, Lund & Reeves 2002, "Detection of undocumented changepoints: a
revision of the two-phase regression model"; DeCAFS, Romano et al. 2022, models the same local fluctuation
around abrupt changes as a random walk). The point is **gradual** when the slope is significant and the step,
beside it, is not (both at ``ABRUPT_P``): the line explains the movement. A step in flat noise has no significant
slope and stays, however few commits it has on a side; a step on a wave's slope stands out of the line and stays.
Two reaches: a wave is nearly straight over a few commits only (its bend would read as a step over many), a
step in heavier noise needs more commits to stand out of the line.

Every float is per row (sums along a row, elementwise operations), so points judged together and one series'
points alone give the same.
"""

from __future__ import annotations

import functools

import numpy as np

from perfgate.history.stats import stdtr

REACHES = (8, 15)  # commits each side of a point its line and step are fitted over
ABRUPT_P = 0.001  # the weak change points' p-value (changes.WEAK_FACTOR x the default p-value)


def gradual_scores(flat: np.ndarray, left: np.ndarray, at: np.ndarray, right: np.ndarray) -> np.ndarray:
    """Per change point (flat indexes: the start of its left segment, itself, the end of its right segment), the
    largest p-value of its step among the reaches where the slope beside it is significant (0.0 where none is):
    the point is gradual when that is above ``ABRUPT_P``."""
    scores, _ = judged_points(flat, left, at, right)
    return scores


def judged_points(flat: np.ndarray, left: np.ndarray, at: np.ndarray,
                  right: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``gradual_scores``, and per point whether its step passes ``ABRUPT_P`` beside the line at every reach (a
    step, whatever its neighbours turn out to be)."""
    scores, steps = np.zeros(len(at)), np.ones(len(at), dtype=bool)
    for reach in REACHES:
        low, high = np.maximum(left, at - reach), np.minimum(right, at + reach)
        before, after = at - low, high - at
        for (n_before, n_after), group in side_groups(before, after):
            if n_before + n_after < 4:  # no degree of freedom left beside a line and a step
                continue
            rows = flat[low[group, None] + np.arange(n_before + n_after)]
            p_step, p_slope = _step_beside_slope(rows, n_before, n_after)
            scores[group] = np.maximum(scores[group], np.where(p_slope <= ABRUPT_P, p_step, 0.0))
            steps[group] &= p_step <= ABRUPT_P
    return scores, steps


def side_groups(before: np.ndarray, after: np.ndarray) -> list[tuple[tuple[int, int], np.ndarray]]:
    """Indexes grouped by (commits before, commits after), each group in index order."""
    keys = before * (1 << 32) + after
    order = np.argsort(keys, kind="stable")
    bounds = np.flatnonzero(np.diff(keys[order])) + 1
    return [((int(before[part[0]]), int(after[part[0]])), part) for part in np.split(order, bounds) if len(part)]


@functools.cache
def _inverse(n_before: int, n_after: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The commits' offsets from the point, the step's indicator, and the inverse of the design's Gram matrix
    (intercept, slope, step)."""
    t = np.arange(-n_before, n_after, dtype=np.float64)
    step = (t >= 0).astype(np.float64)
    design = np.column_stack((np.ones(len(t)), t, step))
    return t, step, np.linalg.inv(design.T @ design)


@np.errstate(all="ignore")
def _step_beside_slope(rows: np.ndarray, n_before: int, n_after: int) -> tuple[np.ndarray, np.ndarray]:
    """Per row, the step's and the slope's p-values (0 and 1 where the line and step fit exactly), by least squares
    from the rows' sums: the rows centred first, so that large values keep their digits."""
    n = n_before + n_after
    t, step, inverse = _inverse(n_before, n_after)
    centred = rows - (rows.sum(axis=1) / n)[:, None]
    sums = (centred.sum(axis=1), (centred * t).sum(axis=1), (centred * step).sum(axis=1))
    coef = [inverse[j, 0] * sums[0] + inverse[j, 1] * sums[1] + inverse[j, 2] * sums[2] for j in range(3)]
    residual = (centred * centred).sum(axis=1) - (coef[0] * sums[0] + coef[1] * sums[1] + coef[2] * sums[2])
    variance = np.maximum(residual, 0.0) / (n - 3)
    slope_t = np.abs(coef[1]) / np.sqrt(variance * inverse[1, 1])
    step_t = np.abs(coef[2]) / np.sqrt(variance * inverse[2, 2])
    p_slope = 2.0 * stdtr(n - 3, -slope_t)
    p_step = 2.0 * stdtr(n - 3, -step_t)
    spread = variance > 0.0
    return np.where(spread, p_step, 0.0), np.where(spread, p_slope, 1.0)

