"""One slow launch among many: a launch of a group that moved alone, past its limit and past the group's spread.

A location test (``repeats``) judges where the bulk of a group's launches lies: one launch made 2x slower among
12 moves the Hodges-Lehmann shift by under 1%. When both sides have the same number of launches of a kernel
identity, the i-th launch of the baseline and the i-th of the current run are the same call site (a loop's i-th
layer), so each launch's own change is known. A launch *moved alone* when

1. its own change is past its limit (the metric's threshold, relative and absolute, as for a single launch), and
2. its own change exceeds the group's typical change (the median over its launches) by more than ``z`` times the
   group's measured spread, with ``z`` the normal quantile at 0.1% / n (a family-wise 0.1% over the n launches).

The spread is the larger of the robust spread of the launches' own changes (1.4826 x their median absolute
deviation) and that of the baseline's values themselves (half their 15.9%-84.1% quantile range, times sqrt 2 for a
difference of two launches): the second keeps a kernel whose timings have two modes (a launch now in the slow mode,
its baseline in the fast one) from reading as a launch that moved alone. Exact counters have no spread: a launch
whose count moved past its limit while its siblings did not is flagged.
"""

from __future__ import annotations

import functools

import numpy as np

from perfgate.columns import median
from perfgate.compare.arrays import Bools, Floats

FAMILY_ALPHA = 0.001  # the chance, over a whole group of unchanged launches, that one is flagged alone


@functools.lru_cache(maxsize=512)
def alone_z(launches: int) -> float:
    """The spreads a launch's change must exceed the group's by: the normal quantile at FAMILY_ALPHA / n."""
    import statistics  # here: decimal and fractions cost start-up time

    return statistics.NormalDist().inv_cdf(1.0 - FAMILY_ALPHA / max(launches, 1))


def group_spread(worse: Floats, base_log: Floats) -> float:
    """The measured spread of a group's own changes (log ratios, worse direction positive) and its baseline."""
    centre = median(worse)
    spread = 1.4826 * median(np.abs(worse - centre))
    if base_log.size >= 2:
        low, high = np.quantile(base_log, [0.159, 0.841])
        spread = max(spread, float(high - low) / 2.0 * np.sqrt(2.0))
    return float(spread)


def moved_alone(base: Floats, cur: Floats, worse_sign: float, past_limit: Bools) -> Bools:
    """Which launches of a group (paired by occurrence: ``base[i]`` with ``cur[i]``, values > 0) moved alone in
    the worse direction; ``past_limit``: each launch's own change is past its limit in the worse direction."""
    found = np.zeros(base.size, dtype=bool)
    if base.size < 2 or not past_limit.any():
        return found
    worse = worse_sign * (np.log(cur) - np.log(base))
    spread = group_spread(worse, np.log(base))
    found = past_limit & (worse - median(worse) > alone_z(base.size) * spread)
    return found
