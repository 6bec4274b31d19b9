"""Significance of a change between two sets of raw timings, and the shift between two samples."""

from __future__ import annotations

import functools
import math
import statistics
from collections.abc import Sequence

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


class _Sample:
    """A sorted sample as its distinct values and how many times each occurs: timings repeat (a clock's
    resolution), so a count over the distinct values costs a few hundred binary searches, not one per launch."""

    def __init__(self, values: Floats) -> None:
        self.sorted = values
        starts = np.flatnonzero(np.r_[True, values[1:] != values[:-1]])
        self.values: Floats = values[starts]
        self.times: Ints = np.diff(np.r_[starts, values.size])
        self.below: Ints = np.r_[0, np.cumsum(self.times)]  # below[k]: how many values precede the k-th distinct


def _counts_at_or_below(x: _Sample, y: _Sample, values: Floats) -> Ints:
    """For each value t, how many differences y[j] - x[i] are <= t (one binary search per distinct x)."""
    found = np.searchsorted(y.values, (x.values[None, :] + values[:, None]).ravel(), side="right")
    counts: Ints = (y.below[found].reshape(values.size, -1) * x.times).sum(axis=1)
    return counts


def _starting_brackets(x_sample: _Sample, y_sample: _Sample, ranks: Ints) -> tuple[Floats, Floats]:
    """Per rank, (lo, hi) with count(lo) < rank <= count(hi): narrow ones guessed from a normal
    approximation of the shift and checked, the whole range of differences where a guess fails."""
    x, y = x_sample.sorted, y_sample.sorted
    width = float(y[-1] - x[0]) - float(y[0] - x[-1])
    whole_lo, whole_hi = float(y[0] - x[-1]) - max(width, 1.0) * 1e-9, float(y[-1] - x[0])
    x_mid, y_mid = median(x), median(y)
    spread = 1.4826 * median(np.abs(np.concatenate([x - x_mid, y - y_mid])))
    n1, n2 = x.size, y.size
    pairs = n1 * n2
    error = spread * math.sqrt(math.pi / 3.0 * (1.0 / n1 + 1.0 / n2))  # of the shift, for normal noise
    guess = (y_mid - x_mid) + (ranks - pairs / 2.0) / math.sqrt(pairs * (n1 + n2 + 1) / 12.0) * error
    lo, hi = guess - 2.0 * error - _TOLERANCE, guess + 2.0 * error + _TOLERANCE
    counts = _counts_at_or_below(x_sample, y_sample, np.concatenate([lo, hi]))
    return (np.where(counts[:ranks.size] < ranks, lo, whole_lo),
            np.where(counts[ranks.size:] >= ranks, hi, whole_hi))


def _pairwise_order_statistics(x: Floats, y: Floats, ranks: Ints) -> Floats:
    """The ``ranks``-th smallest (1-based) of the differences y[j] - x[i]; ``x`` and ``y`` sorted.

    Few pairs: formed and partitioned. Many: located within ``_TOLERANCE`` by bisection on the value,
    without forming them (count(t) = #{differences <= t} costs one binary search per x).
    """
    if x.size * y.size <= _DIRECT_PAIRS:
        differences = np.subtract.outer(y, x).ravel()
        found: Floats = np.partition(differences, ranks - 1)[ranks - 1]
        return found
    x_sample, y_sample = _Sample(x), _Sample(y)
    lo, hi = _starting_brackets(x_sample, y_sample, ranks)
    while float((hi - lo).max()) > _TOLERANCE:
        mid = (lo + hi) / 2.0
        reached = _counts_at_or_below(x_sample, y_sample, mid) >= ranks
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
