"""Significance of a change between two sets of raw timings, and the shift between two samples."""

from __future__ import annotations

import functools
import math
import statistics
from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from perfgate.columns import median
from perfgate.compare.arrays import Floats, Ints


def mann_whitney_p(a: Sequence[float], b: Sequence[float]) -> float:
    """Two-sided p-value of the Mann-Whitney U test (normal approximation, tie-corrected)."""
    x, y = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    n1, n2 = x.size, y.size
    if n1 < 3 or n2 < 3:
        return math.nan
    combined = np.concatenate([x, y])
    _, inverse, counts = np.unique(combined, return_inverse=True, return_counts=True)
    ends = np.cumsum(counts)  # tied values share the average of the ranks they span
    ranks = (ends - (counts - 1) / 2.0)[inverse.reshape(-1)]
    u1 = float(ranks[:n1].sum()) - n1 * (n1 + 1) / 2.0
    mean_u = n1 * n2 / 2.0
    _, tie_counts = np.unique(combined, return_counts=True)
    n = n1 + n2
    tie_term = float((tie_counts**3 - tie_counts).sum()) / (n * (n - 1))
    var_u = n1 * n2 / 12.0 * ((n + 1) - tie_term)
    if var_u <= 0:
        return 1.0
    z = (abs(u1 - mean_u) - 0.5) / math.sqrt(var_u)
    return math.erfc(max(z, 0.0) / math.sqrt(2.0))


# --------------------------------------------------------------- the shift between two samples
#
# Repeated launches of one kernel are two samples of its time, one per run. Their difference is judged
# as a shift of location on a log scale (a ratio): the Hodges-Lehmann estimate (the median of every
# pairwise difference current - baseline) with the distribution-free interval that inverts the
# Mann-Whitney test (Moses; Hollander & Wolfe, "Nonparametric Statistical Methods", ch. 4): the k-th
# smallest and k-th largest pairwise differences, k taken from the exact null distribution of U for
# small samples and from its normal approximation for large ones. No seed, no resampling: the same
# samples always give the same interval.

_EXACT_PAIRS = 10_000  # up to this many pairs (n1 * n2) the null distribution of U is computed exactly
_DIRECT_PAIRS = 65_536  # up to this many pairs the differences are formed and partitioned directly
_FORMED_PAIRS = 200_000  # differences formed once a bracket holds no more
_TOLERANCE = 1e-5  # how closely a bound is located otherwise (in log units: 0.001%)


def _u_counts(n1: int, n2: int) -> npt.NDArray[np.float64]:
    """How many arrangements give each value 0..n1*n2 of the Mann-Whitney U (no ties): the coefficients
    of the Gaussian binomial [n1 + n2 choose n1]_q, built as prod (1 - q^(n+i)) / (1 - q^i)."""
    m, n = min(n1, n2), max(n1, n2)
    poly = np.ones(1)
    for i in range(1, m + 1):
        grown = np.zeros(i * n + i + 1)
        grown[:poly.size] += poly
        grown[n + i:n + i + poly.size] -= poly
        pad = (-grown.size) % i
        divided = np.concatenate([grown, np.zeros(pad)]).reshape(-1, i).cumsum(axis=0).ravel()
        poly = divided[:i * n + 1]
    return poly


@functools.lru_cache(maxsize=4096)
def interval_rank(n1: int, n2: int, confidence: float) -> int:
    """k such that [D(k), D(n1*n2 + 1 - k)] of the sorted pairwise differences covers the shift with
    probability >= ``confidence``; 0 when the samples are too few for any such interval (for 95%: fewer
    than 4 launches a side, or fewer than 2 on one side and 8 on the other)."""
    alpha = 1.0 - confidence
    pairs = n1 * n2
    if pairs == 0:
        return 0
    if pairs <= _EXACT_PAIRS:
        counts = _u_counts(n1, n2)
        cumulative = np.cumsum(counts) / counts.sum()
        # P(U <= k - 1) <= alpha / 2: k - 1 is the number of values at or below that level.
        return int(np.searchsorted(cumulative, alpha / 2.0, side="right"))
    z = statistics.NormalDist().inv_cdf(1.0 - alpha / 2.0)
    sigma = math.sqrt(pairs * (n1 + n2 + 1) / 12.0)
    return max(0, math.floor(pairs / 2.0 + 0.5 - z * sigma))


def _positions(x: Floats, y: Floats, values: npt.NDArray[np.floating[Any]]) -> Ints:
    """For each value t (a row) and each x[i] (a column), how many y[j] are <= x[i] + t: summed over a row,
    how many differences y[j] - x[i] are <= t (one binary search per x)."""
    found: Ints = np.searchsorted(y, (x[None, :] + values[:, None]).ravel(), side="right").reshape(values.size, -1)
    return found


def _starting_brackets(x: Floats, y: Floats, ranks: Ints) -> tuple[Floats, Floats, Ints, Ints]:
    """Per rank, (lo, hi) with count(lo) < rank <= count(hi) and their ``_positions``: narrow ones guessed from
    a normal approximation of the shift and checked, the whole range of differences where a guess fails."""
    width = float(y[-1] - x[0]) - float(y[0] - x[-1])
    whole_lo, whole_hi = float(y[0] - x[-1]) - max(width, 1.0) * 1e-9, float(y[-1] - x[0])
    x_mid, y_mid = median(x), median(y)
    spread = 1.4826 * median(np.abs(np.concatenate([x - x_mid, y - y_mid])))
    n1, n2 = x.size, y.size
    pairs = n1 * n2
    error = spread * math.sqrt(math.pi / 3.0 * (1.0 / n1 + 1.0 / n2))  # of the shift, for normal noise
    guess = (y_mid - x_mid) + (ranks - pairs / 2.0) / math.sqrt(pairs * (n1 + n2 + 1) / 12.0) * error
    guess_lo, guess_hi = guess - 2.0 * error - _TOLERANCE, guess + 2.0 * error + _TOLERANCE
    at_lo, at_hi = _positions(x, y, guess_lo), _positions(x, y, guess_hi)
    lo_fails, hi_fails = at_lo.sum(axis=1) >= ranks, at_hi.sum(axis=1) < ranks
    lo: Floats = np.where(lo_fails, whole_lo, guess_lo)
    hi: Floats = np.where(hi_fails, whole_hi, guess_hi)
    if lo_fails.any():
        at_lo[lo_fails] = _positions(x, y, lo[lo_fails])
    if hi_fails.any():
        at_hi[hi_fails] = _positions(x, y, hi[hi_fails])
    return lo, hi, at_lo, at_hi


class _RankSearch:
    """What is known of count(t) = #{differences <= t} around one rank: count(lo) < rank <= count(hi), with
    each x's position among y at both ends. Once few differences lie in (lo, hi], they are formed, and
    count(t) for t inside is counted over them alone (the others are <= lo or > hi)."""

    def __init__(self, x: Floats, y: Floats, rank: int, lo: float, hi: float, at_lo: Ints, at_hi: Ints) -> None:
        self.x, self.y, self.rank = x, y, rank
        self.lo, self.hi, self.at_lo, self.at_hi = lo, hi, at_lo, at_hi
        self.count_lo, self.count_hi = int(at_lo.sum()), int(at_hi.sum())
        self.inside: tuple[Floats, Floats] | None = None

    @property
    def open_pairs(self) -> int:
        return self.count_hi - self.count_lo

    def learn(self, t: float, at_t: Ints) -> None:
        """Narrow to what a full search at ``t`` found."""
        count = int(at_t.sum())
        if count >= self.rank and t < self.hi:
            self.hi, self.at_hi, self.count_hi, self.inside = t, at_t, count, None
        elif count < self.rank and t > self.lo:
            self.lo, self.at_lo, self.count_lo, self.inside = t, at_t, count, None

    def reached(self, t: float) -> bool | None:
        """count(t) >= rank, or None when only a full search can tell."""
        if t <= self.lo or t >= self.hi:
            return t >= self.hi
        if self.open_pairs > _FORMED_PAIRS:
            return None
        if self.inside is None:
            widths = self.at_hi - self.at_lo
            starts = np.repeat(self.at_lo - np.cumsum(widths) + widths, widths)
            self.inside = np.repeat(self.x, widths), self.y[starts + np.arange(starts.size)]
        x_inside, y_inside = self.inside
        return self.count_lo + int(np.count_nonzero(y_inside <= x_inside + t)) >= self.rank


def _interpolate(searches: list[_RankSearch]) -> None:
    """Narrow each search holding too many differences with two searches around where count(t) = rank
    falls if the differences spread evenly in (lo, hi] (bisection alone halves them per search)."""
    wide = [s for s in searches if s.open_pairs > _FORMED_PAIRS]
    if not wide:
        return
    probes = []
    for s in wide:
        guess = s.lo + (s.rank - s.count_lo) / s.open_pairs * (s.hi - s.lo)
        half = (s.hi - s.lo) * _FORMED_PAIRS / 4.0 / s.open_pairs
        probes += [guess - half, guess + half]
    found = _positions(wide[0].x, wide[0].y, np.array(probes))
    for i, s in enumerate(wide):
        s.learn(probes[2 * i], found[2 * i])
        s.learn(probes[2 * i + 1], found[2 * i + 1])


def _pairwise_order_statistics(x: Floats, y: Floats, ranks: Ints) -> Floats:
    """The ``ranks``-th smallest (1-based) of the differences y[j] - x[i]; ``x`` and ``y`` sorted.

    Few pairs: formed and partitioned. Many: located within ``_TOLERANCE`` by bisection on the value,
    without forming them all (count(t) = #{differences <= t} costs one binary search per x, or a count over
    the few differences left inside what earlier searches bracketed: ``_RankSearch``).
    """
    if x.size * y.size <= _DIRECT_PAIRS:
        differences = np.subtract.outer(y, x).ravel()
        found: Floats = np.partition(differences, ranks - 1)[ranks - 1]
        return found
    lo, hi, at_lo, at_hi = _starting_brackets(x, y, ranks)
    searches = [_RankSearch(x, y, int(ranks[r]), float(lo[r]), float(hi[r]), at_lo[r], at_hi[r])
                for r in range(ranks.size)]
    for _ in range(2):
        _interpolate(searches)
    while float((hi - lo).max()) > _TOLERANCE:
        mid = (lo + hi) / 2.0
        known = [s.reached(float(t)) for s, t in zip(searches, mid)]
        unknown = [r for r, k in enumerate(known) if k is None]
        if unknown:
            for r, at_mid in zip(unknown, _positions(x, y, mid[unknown])):
                searches[r].learn(float(mid[r]), at_mid)
                known[r] = searches[r].reached(float(mid[r]))
        reached = np.array(known, dtype=bool)
        hi = np.where(reached, mid, hi)
        lo = np.where(reached, lo, mid)
    return hi


def shift_interval(baseline: Sequence[float] | Floats, current: Sequence[float] | Floats,
                   confidence: float) -> tuple[float, float, float] | None:
    """``(estimate, low, high)`` of the shift current - baseline: the Hodges-Lehmann estimate and its
    distribution-free interval at ``confidence``. None when the samples are too few for one."""
    x = np.sort(np.asarray(baseline, dtype=float))
    y = np.sort(np.asarray(current, dtype=float))
    k = interval_rank(x.size, y.size, confidence)
    if k < 1:
        return None
    pairs = x.size * y.size
    middle = [(pairs + 1) // 2, pairs // 2 + 1]
    if pairs > _DIRECT_PAIRS:
        # The lower median when the count is even: far within the tolerance of the average of the two
        # middle differences for samples this large, for one search less.
        middle = middle[:1]
    found = _pairwise_order_statistics(x, y, np.array([k, pairs + 1 - k, *middle], dtype=np.int64)).tolist()
    return sum(found[2:]) / len(found[2:]), found[0], found[1]
