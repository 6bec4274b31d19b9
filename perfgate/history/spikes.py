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

Three or four slow runs in a row (a busy runner for a while) hold the median of 5: it then reads the smallest of
them as a level and the others as spikes of it, and the search finds a short regression and its revert (issue
35's heavy-tailed families: 93 false points on 40 series of Student's t noise with clusters of slow runs). Where
a row's spikes keep to one side, such a run is judged against the median of 9 commits instead, and is spikes too
when its values hold no level: a regression's commits lie within its noise of each other, slow runs land
anywhere in +5..50%. Rows whose spikes are not one-sided (heavy tails alone, a Gaussian step) keep the median of 5.

Where three slow runs crowd the 5 commits around one at the level (+39%, 0%, +20%, +16%), the median of 5 breaks
down twice: it is a slow run, so the commit at the level reads as a spike, and a spike replaced by it makes the
slow runs a level of two or three commits. So in a row whose spikes keep to one side no commit on the other side of
its median is a spike, and a spike is read as the median of the commits around it that are no spikes themselves.

The rule reads only the array it is given: a search window's points (so a window of full length keeps its
candidates as the history grows, ``perfgate.history.cache``) or a whole series (the judgement). Every float is
an order statistic or one elementwise operation, so rows judged together and one array alone give the same.
"""

from __future__ import annotations

import numpy as np

SPIKE_SIGMAS = 5.0  # robust standard deviations (1.4826 x the median absolute residual) from the local median
SPIKE_FLOOR = 0.1  # and this share of the local median: spikes are of 20% and more, a step of 3% is none
MAD_TO_SIGMA = 1.4826  # a normal distribution's standard deviation per median absolute deviation
# Clusters of slow runs (``_clusters``): where a row's lone spikes keep to one side (at least ONE_SIDED of them,
# more than on the other side), CLUSTER commits in a row on that side (what a median of 5 cannot outvote and a
# median of 9 can) whose values hold no level are spikes too.
ONE_SIDED = 2
CLUSTER = (3, 4)
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
    above, below = rows > local, rows < local
    slow = _one_sided(spikes, above, below)
    # where slow runs crowd a median of 5, the commit at the level is the odd one out: no spike on the other side
    spikes &= ~((slow > 0)[:, None] & below | (slow < 0)[:, None] & above)
    clusters, wide = _clusters(rows, slow)
    if not spikes.any() and not clusters.any():
        return rows
    result: np.ndarray = np.where(clusters, wide, np.where(spikes, _clean_medians(padded, spikes, local), rows))
    return result


def _clean_medians(padded: np.ndarray, spikes: np.ndarray, local: np.ndarray) -> np.ndarray:
    """``local`` with each spike's median of 5 read from the commits around it that are no spikes themselves
    (``padded``: the rows mirrored at their ends as ``despike`` pads them): where slow runs crowd, the median of 5
    is one of them, and a spike read as it makes a level of them."""
    rows_at, at = np.nonzero(spikes)
    if not len(at):
        return local
    marked = np.concatenate((spikes[:, 2:0:-1], spikes, spikes[:, -2:-4:-1]), axis=1)
    near = at[:, None] + np.arange(5)
    kept = ~marked[rows_at[:, None], near]
    count = kept.sum(axis=1)
    ordered = np.sort(np.where(kept, padded[rows_at[:, None], near], np.inf), axis=1)  # the kept ones first
    index = np.arange(len(at))
    lower, upper = ordered[index, np.maximum(count - 1, 0) // 2], ordered[index, count // 2]
    clean: np.ndarray = local.copy()
    clean[rows_at, at] = np.where(count > 0, (lower + upper) / 2.0, local[rows_at, at])
    return clean


def _one_sided(spikes: np.ndarray, above: np.ndarray, below: np.ndarray) -> np.ndarray:
    """Per row, the side its lone spikes (none beside them) keep to: 1 where at least ``ONE_SIDED`` lie above the
    local median and more than below it (slow runs), -1 the other way round, 0 where they keep to neither."""
    lone = spikes.copy()
    lone[:, 1:] &= ~spikes[:, :-1]
    lone[:, :-1] &= ~spikes[:, 1:]
    up, down = (lone & above).sum(axis=1), (lone & below).sum(axis=1)
    result: np.ndarray = np.where((up >= ONE_SIDED) & (up > down), 1, 0) - np.where(
        (down >= ONE_SIDED) & (down > up), 1, 0)
    return result


def _clusters(rows: np.ndarray, side: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Where a row's lone spikes keep to one side (``side``: 1 above, -1 below), its runs of ``CLUSTER`` commits
    in a row farther than ``SPIKE_SIGMAS`` standard deviations from the median of the 9 commits around each
    (mirrored at the ends) on that side, no 3 of whose values lie within ``SPIKE_SIGMAS`` standard deviations of
    neighbouring commits' differences of each other: slow runs in a row, no level. The noise here is the robust
    spread of consecutive differences (1.4826 x their median magnitude: sqrt(2) standard deviations of white noise;
    a step or a spike moves one or two of them), not the residuals around the median of 5, which that median's own
    point shrinks. The mask of their commits, and the medians of 9 (``rows`` where there are none)."""
    n = rows.shape[1]
    if n < 9 or not side.any():
        return np.zeros(rows.shape, dtype=bool), rows
    padded = np.concatenate((rows[:, 4:0:-1], rows, rows[:, -2:-6:-1]), axis=1)
    wide = np.partition(np.lib.stride_tricks.sliding_window_view(padded, 9, axis=1), 4, axis=2)[:, :, 4]
    half = (n - 1) // 2
    apart = MAD_TO_SIGMA * np.partition(np.abs(np.diff(rows, axis=1)), half, axis=1)[:, half:half + 1]
    far = (side[:, None] * (rows - wide) > SPIKE_SIGMAS / np.sqrt(2.0) * apart) & ((side != 0)[:, None] & (apart > 0.0))
    edges = np.diff(np.pad(far, ((0, 0), (1, 1))).astype(np.int8), axis=1)
    rows_at, starts = np.nonzero(edges == 1)
    stops = np.nonzero(edges == -1)[1]  # each run's end, in the order of the starts
    found = np.zeros(rows.shape, dtype=bool)
    for row, start, stop in zip(rows_at.tolist(), starts.tolist(), stops.tolist()):
        if stop - start in CLUSTER:
            run = np.sort(rows[row, start:stop])
            if (run[2:] - run[:-2]).min() > SPIKE_SIGMAS * apart[row, 0]:
                found[row, start:stop] = True
    return found, wide


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
