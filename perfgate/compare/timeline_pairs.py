"""A timeline kernel's launches judged in pairs: where both traces hold the same launches of a kernel (the i-th
launch on each side is the same call in the program), the change is the median of the per-launch differences,
with a distribution-free interval (the sign test's: order statistics of the differences, binomial ranks), in
nanoseconds. A trace's time step (whole microseconds in older Kineto traces) is then a floor in nanoseconds, not a
share of a median: a 1 µs launch read as 2 µs is one step of rounding, not +100%.

scipy gives the binomial quantile; the interval is three lines over sorted differences, which no library offers
for paired samples at 100,000 launches (a Walsh-average interval is quadratic)."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
from scipy.stats import binom

Floats = npt.NDArray[np.float64]


def paired_shift(base: Floats, cur: Floats, confidence: float) -> tuple[float, float, float]:
    """(median difference, low, high) of ``cur - base`` launch by launch, in the values' unit; the interval covers
    the median difference with at least ``confidence`` (the whole range where too few pairs for it)."""
    differences = np.sort(cur - base)
    n = differences.size
    estimate = float(np.median(differences))
    rank = int(binom.ppf((1 - confidence) / 2, n, 0.5))
    while rank > 0 and binom.cdf(rank - 1, n, 0.5) * 2 > 1 - confidence:
        rank -= 1
    rank = max(min(rank, (n - 1) // 2), 0)
    return estimate, float(differences[rank]), float(differences[n - 1 - rank])
