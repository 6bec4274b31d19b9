"""Whether a change point is a step out of a measured series' own noise, when that noise wanders: the level moves
slowly at random and comes back (a runner's temperature, clocks, neighbours), a random process, not a sine.

Student's t-test between two segments assumes independent values. Under a wandering level the values are
autocorrelated, the variance of a segment's mean is many times what the test assumes, and segments differ by many
standard errors wherever the wander is split: the search places points on its slopes (Otava does the same). The
effective sample size n (1 - rho) / (1 + rho) of an AR(1) noise corrects the test where rho is known; but rho
must come from the values around their segments' levels, and the search's own points on the wander cut it into
pieces whose residuals look white (on our wander family: rho 0.6-0.7 over the whole series, 0-0.4 around the
segments the points bound), so the correction let most of its false points through.

Here each point is judged against the series' **variogram** instead: half the mean square of the differences
between values ``k`` commits apart, from the pairs no change point the t-test passed lies between (a step moves only the pairs that straddle it). A
difference does not see a segment's level, so however finely the search cut the wander, the differences within
its pieces still grow with the lag. DeCAFS (Romano, Rigaill, Runge & Fearnhead 2022, "Detecting abrupt changes in
the presence of local fluctuations and autocorrelated noise") estimates its random-walk drift and AR(1) noise
the same way, from robust variances of k-lag differences; here spikes are out already, and the median absolute
deviation gave no better figures (on our wander family 26 / 15 / 13 false points, the mean square 18 / 15 / 7)
at the cost of a median per lag per series. The difference of the means of ``REACHES`` commits
each side of a point has, for weights w summing to 0, the variance -sum_ij w_i w_j gamma(|i - j|) under any
stationary noise, white or wandering (white: the t-test's sigma^2 (1/n1 + 1/n2)), so the test needs no model of
the wander: a step stands out of it over a few commits, where the wander has hardly moved; a slope of the wander
does not.
"""

from __future__ import annotations

import functools
from typing import Sequence

import numpy as np

from perfgate.history.abrupt import side_groups
from perfgate.history.stats import stdtr

REACHES = (10, 20, 40)  # commits each side whose means a point's test compares
LAGS = 2 * max(REACHES) - 1  # the variogram's lags, 1..LAGS commits: every pair within the widest reach
MIN_PAIRS = 12  # fewest differences a lag is estimated from
MIN_REACH = 5  # commits each side, at the fewest, a short variogram judges a point over
WHOLE = 1 << 16  # differences taken at once for every lag (a few series); more rows go a lag at a time


def variogram(series: np.ndarray, points: Sequence[int]) -> np.ndarray:
    """Half the mean square of the differences ``k`` commits apart (Matheron's estimator), k = 1.. (up to
    ``LAGS``, while at least ``MIN_PAIRS`` pairs that no point in ``points`` separates are left); empty where
    the series does not move within its segments. ``variograms`` of one row."""
    segments = np.searchsorted(np.asarray(points, dtype=np.int64), np.arange(len(series)), side="right")
    return variograms(series[None, :], segments[None, :])[0]


def variograms(rows: np.ndarray, segments: np.ndarray) -> list[np.ndarray]:
    """``variogram`` of each row of equal-length series, ``segments`` their values' segment numbers. Each lag's
    sums run over a row of the full length (0 past its end), so a row's floats are the same alone or among many;
    a few rows take every lag at once (one series goes through here for each point ``merge`` judges), more rows a
    lag at a time, from slices (a gather of every lag's partners costs more than the sums)."""
    count, length = rows.shape
    lags = max(min(LAGS, length - 1), 0)
    if count * lags * length <= WHOLE:
        return _usable(*_lag_sums_at_once(rows, segments, lags))
    squares, pairs = np.zeros((count, lags)), np.zeros((count, lags), dtype=np.int64)
    addends = np.zeros((count, length))  # a lag's squares, 0 where a pair straddles a point or runs past the end
    for lag in range(1, lags + 1):
        same = segments[:, lag:] == segments[:, :-lag]
        with np.errstate(all="ignore"):
            differences = rows[:, lag:] - rows[:, :-lag]
            np.multiply(differences, differences, out=differences)
        addends[:, :length - lag] = np.where(same, differences, 0.0)
        addends[:, length - lag] = 0.0
        squares[:, lag - 1] = addends.sum(axis=1)
        pairs[:, lag - 1] = np.count_nonzero(same, axis=1)
    return _usable(squares, pairs)


def _lag_sums_at_once(rows: np.ndarray, segments: np.ndarray, lags: int) -> tuple[np.ndarray, np.ndarray]:
    """Per row and lag, the squares of the differences that no point separates, summed over the row's full length,
    and how many there are: every lag at once."""
    length = rows.shape[1]
    ahead = np.arange(length)[None, :] + np.arange(1, lags + 1)[:, None]  # per lag, each value's partner
    inside = ahead < length
    ahead = np.minimum(ahead, length - 1)
    same = inside & (segments[:, ahead] == segments[:, None, :])
    with np.errstate(all="ignore"):
        differences = rows[:, ahead] - rows[:, None, :]
        squares: np.ndarray = np.where(same, differences * differences, 0.0).sum(axis=2)
    return squares, np.count_nonzero(same, axis=2)


def _usable(squares: np.ndarray, pairs: np.ndarray) -> list[np.ndarray]:
    """Each row's variogram from its lags' sums: the lags up to the first with fewer than ``MIN_PAIRS`` pairs; empty
    where the row does not move within its segments or a lag's mean is no number."""
    count, lags = squares.shape
    with np.errstate(all="ignore"):
        gamma = squares / pairs / 2.0
    few = pairs < MIN_PAIRS
    usable = np.where(few.any(axis=1), np.argmax(few, axis=1), lags)
    moves = gamma[:, 0] > 0.0 if lags else np.zeros(count, dtype=bool)
    return [gamma[row, :usable[row]] if moves[row] and np.isfinite(gamma[row, :usable[row]]).all() else np.zeros(0)
            for row in range(count)]


@functools.cache
def _lag_weights(before: int, after: int) -> np.ndarray:
    """Per lag d = 1..before + after - 1, the weight of the variogram at d in the variance of (mean of ``after``
    values) - (mean of the ``before`` values just before them): -sum_ij w_i w_j gamma(|i - j|) counted by lag,
    the pairs within a side and the pairs across."""
    lag = np.arange(1, before + after, dtype=np.float64)
    across = np.minimum.reduce([lag, np.full_like(lag, before), np.full_like(lag, after), before + after - lag])
    within = np.maximum(before - lag, 0) / before ** 2 + np.maximum(after - lag, 0) / after ** 2
    weights: np.ndarray = 2.0 * (across / (before * after) - within)
    return weights


@np.errstate(all="ignore")
def step_p(gamma: np.ndarray, series: np.ndarray, start: int, at: int, stop: int) -> float:
    """The p-value of a step at ``at`` (its segments [start, at) and [at, stop)) out of the noise whose variogram
    is ``gamma``: per reach of ``REACHES`` (no farther than its segments, nor than the variogram holds), the
    difference of the means each side over the variance the variogram gives it (at least white noise's), its
    p-value with the degrees of freedom of the series; the smallest, times the number of reaches. 0.0 where the
    variogram is too short for any reach of ``MIN_REACH`` (the t-test's verdict stands)."""
    smallest, judged = 1.0, False
    for reach in sorted({min(reach, (len(gamma) + 1) // 2) for reach in REACHES}):
        if reach < MIN_REACH:
            continue
        before, after = series[max(start, at - reach):at], series[at:min(stop, at + reach)]
        weights = _lag_weights(len(before), len(after))
        variance = max(float(weights @ gamma[:len(weights)]), float(gamma[0]) * (1 / len(before) + 1 / len(after)))
        z = abs(float(after.mean()) - float(before.mean())) / np.sqrt(variance)
        smallest, judged = min(smallest, 2.0 * stdtr(max(len(series) - 2, 1), -z)), True
    return min(1.0, smallest * len(REACHES)) if judged else 0.0


@np.errstate(all="ignore")
def step_ps(flat: np.ndarray, gammas: Sequence[np.ndarray], lengths: np.ndarray, start: np.ndarray, at: np.ndarray,
            stop: np.ndarray) -> np.ndarray:
    """``step_p`` of many points at once (flat indexes of each point's segments: their start, the point, their
    end), ``gammas[i]`` and ``lengths[i]`` the variogram and length of point i's series: the same floats (each side's
    mean a row's sum, each variance a stacked ``matmul`` of two vectors, BLAS's ``ddot`` of ``weights @ gamma``)."""
    sizes = np.array([len(gamma) for gamma in gammas], dtype=np.int64)
    smallest, judged = np.ones(len(at)), np.zeros(len(at), dtype=bool)
    df = np.maximum(lengths - 2, 1).astype(np.float64)
    previous = np.full(len(at), -1, dtype=np.int64)
    for reach in sorted(REACHES):
        reaches = np.minimum(reach, (sizes + 1) // 2)  # the set of reaches: one already taken is not taken again
        taken = np.flatnonzero((reaches >= MIN_REACH) & (reaches != previous))
        previous = reaches
        low, high = np.maximum(start[taken], at[taken] - reaches[taken]), np.minimum(stop[taken], at[taken] + reaches[taken])
        before, after = at[taken] - low, high - at[taken]
        for (n_before, n_after), group in side_groups(before, after):
            points = taken[group]
            weights = _lag_weights(n_before, n_after)
            lags = np.stack([gammas[i][:len(weights)] for i in points.tolist()])
            spread = np.matmul(lags[:, None, :], weights[:, None])
            first = np.array([gammas[i][0] for i in points.tolist()])
            variance = np.maximum(spread[:, 0, 0], first * (1 / n_before + 1 / n_after))
            means = [flat[index[:, None] + np.arange(size)].sum(axis=1) / size
                     for index, size in ((low[group], n_before), (at[points], n_after))]
            z = np.abs(means[1] - means[0]) / np.sqrt(variance)
            p = 2.0 * stdtr(df[points], -z)
            smallest[points] = np.where(p < smallest[points], p, smallest[points])
            judged[points] = True
    tripled = smallest * len(REACHES)
    result: np.ndarray = np.where(judged, np.where(tripled < 1.0, tripled, 1.0), 0.0)
    return result

