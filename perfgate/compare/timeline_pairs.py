"""A timeline kernel's launches judged in pairs: where both traces hold the same launches of a kernel (the i-th
launch on each side is the same call in the program), the change is the median of the per-launch differences,
with a distribution-free interval (the sign test's: order statistics of the differences at binomial ranks), in
nanoseconds. A trace's time step (whole microseconds in older Kineto traces) is then a floor in nanoseconds, not a
share of a median: a 1 µs launch read as 2 µs is one step of rounding, not +100%.

Hand-written on the stdlib: the binomial ranks are a few lines (exact below 1,000 pairs, the normal approximation
above), and scipy.stats would cost every comparison 0.6 s of import."""

from __future__ import annotations

import math
from statistics import NormalDist

import numpy as np
import numpy.typing as npt

Floats = npt.NDArray[np.float64]
EXACT_PAIRS = 1000


def _lower_rank(n: int, confidence: float) -> int:
    """The largest k with P(X < k) <= (1 - confidence) / 2 for X ~ Binomial(n, 1/2): the interval's lower order
    statistic (0-based), so that [d(k), d(n-1-k)] covers the median with at least ``confidence``."""
    tail = (1 - confidence) / 2
    if n > EXACT_PAIRS:
        z = NormalDist().inv_cdf(1 - tail)
        return max(int(math.floor((n - z * math.sqrt(n)) / 2)) - 1, 0)
    cumulative, rank = 0.0, 0
    log_half = n * math.log(0.5)
    for k in range(n):
        cumulative += math.exp(math.lgamma(n + 1) - math.lgamma(k + 1) - math.lgamma(n - k + 1) + log_half)
        if cumulative > tail:
            break
        rank = k + 1
    return rank


def paired_shift(base: Floats, cur: Floats, confidence: float) -> tuple[float, float, float]:
    """(median difference, low, high) of ``cur - base`` launch by launch, in the values' unit; the interval covers
    the median difference with at least ``confidence`` (the whole range where too few pairs for it)."""
    differences = np.sort(cur - base)
    n = differences.size
    rank = min(_lower_rank(n, confidence), (n - 1) // 2)
    return float(np.median(differences)), float(differences[rank]), float(differences[n - 1 - rank])
