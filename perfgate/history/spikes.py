"""Spikes taken out of a measured series before its change points are searched and judged: a run that reads far
above (or below) its neighbours, another process on a shared GPU runner, is read as its neighbours' median.

The t-test's pooled variance grows with the square of a spike: a few runs at 1.2-2x their value hide a step of
20%, and two spikes two commits apart read as a three-commit regression and its revert. Otava takes nothing
out; MongoDB's CI flagged outlying results with a Generalized ESD test on MAD-based z-scores; Fearnhead & Rigaill
(2019, "Changepoint detection in the presence of outliers") bound each point's influence. Here each point is compared
with the median of the 5 commits around it (a Hampel identifier): a level that holds 3 commits is its own median
there, so steps and short regressions stay as they are, while one or two spikes within 5 commits are outvoted.
A point is a spike when it is farther from that median than ``SPIKE_SIGMAS`` robust standard deviations of the
array's residuals and than ``SPIKE_FLOOR`` of the median; an array without spread (an exact counter, most
flickering counters) is left alone.

The rule reads only the array it is given: a search window's points (so a window of full length keeps its
candidates as the history grows, ``perfgate.history.cache``) or a whole series (the judgement). Every float is
an order statistic or one elementwise operation, so rows judged together and one array alone give the same.
"""

from __future__ import annotations

import numpy as np

SPIKE_SIGMAS = 5.0  # robust standard deviations (1.4826 x the median absolute residual) from the local median
SPIKE_FLOOR = 0.1  # and this share of the local median: spikes are of 20% and more, a step of 3% is none
MAD_TO_SIGMA = 1.4826  # a normal distribution's standard deviation per median absolute deviation
ROWS = 2048  # rows cleaned at once: the arrays stay in the processor's cache


@np.errstate(all="ignore")  # values so large their differences overflow: inf or NaN, compared as they come
def despike(rows: np.ndarray) -> np.ndarray:
    """``rows`` (one array a row, 2-D) with each spike replaced by the median of the 5 points around it (mirrored
    at the ends); the same array where no point is one."""
    n = rows.shape[1]
    if n < 5 or not len(rows):
        return rows
    if len(rows) > ROWS:
        parts: np.ndarray = np.concatenate([despike(rows[at:at + ROWS]) for at in range(0, len(rows), ROWS)])
        return parts
    maybe = may_hold_spikes(rows.max(axis=1), rows.min(axis=1), np.abs(rows).min(axis=1))
    if not maybe.all():
        if not maybe.any():
            return rows
        cleaned: np.ndarray = rows.copy()
        cleaned[maybe] = despike(rows[maybe])
        return cleaned
    padded = np.concatenate((rows[:, 2:0:-1], rows, rows[:, -2:-4:-1]), axis=1)  # x2 x1 | x0 ... x(n-1) | ...
    local = _median_of_five(padded, n)
    residual = np.abs(rows - local)
    middle = np.partition(residual, n // 2, axis=1)[:, n // 2]  # the upper median: an order statistic
    bound = np.maximum((SPIKE_SIGMAS * MAD_TO_SIGMA) * middle[:, None], SPIKE_FLOOR * np.abs(local))
    spikes = (residual > bound) & (middle > 0.0)[:, None]
    if not spikes.any():
        return rows
    result: np.ndarray = np.where(spikes, local, rows)
    return result


def despike_one(values: np.ndarray) -> np.ndarray:
    """``despike`` of one array."""
    result: np.ndarray = despike(values[None, :])[0]
    return result


def _median_of_five(padded: np.ndarray, n: int) -> np.ndarray:
    """Per row and point, the median of ``padded[:, i:i + 5]`` (i < n), exactly, from minima and maxima: of two
    pairs, the larger of their smaller values and the smaller of their larger ones bound the median with the fifth
    value, whose median of three it is (no sort of every window)."""
    a, b, c, d, e = (padded[:, k:k + n] for k in range(5))
    lower = np.maximum(np.minimum(a, b), np.minimum(c, d))
    upper = np.minimum(np.maximum(a, b), np.maximum(c, d))
    result: np.ndarray = np.maximum(np.minimum(lower, upper), np.minimum(np.maximum(lower, upper), e))
    return result


@np.errstate(all="ignore")
def may_hold_spikes(highest: np.ndarray, lowest: np.ndarray, smallest: np.ndarray) -> np.ndarray:
    """Per array (its largest and smallest value, its smallest magnitude), whether ``despike`` may change it: not
    where its whole range is within ``SPIKE_FLOOR`` of its smallest magnitude (most windows of noise), as no
    point's distance to a median of its values can pass a bound of at least that."""
    result: np.ndarray = ~(highest - lowest <= SPIKE_FLOOR * smallest)
    return result
