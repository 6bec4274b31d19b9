"""One slow launch among many: a launch of a group that moved alone, past its limit and past the group's spread.

A location test (``repeats``) judges where the bulk of a group's launches lies: one launch made 2x slower among
12 moves the Hodges-Lehmann shift by under 1%. When both sides have the same number of launches of a kernel
identity, the i-th launch of the baseline and the i-th of the current run are the same call site (a loop's i-th
layer), so each launch's own change is known. A launch *moved alone* when

1. its own change is past its limit (the metric's threshold, relative and absolute, as for a single launch),
2. its own change exceeds the group's typical change (the median over its launches) by more than the margin: it
   moved *apart from* its siblings,
3. its value lies beyond every baseline launch of the group by more than the margin: a kernel whose timings have
   two modes (a launch in the slow mode, its baseline launch in the fast one) does not read as a launch that
   moved alone while the baseline holds slow-mode launches too, and
4. its change exceeds the group's typical change by more than ``z`` times the group's measured spread, with ``z``
   the normal quantile at 1% / n (a family-wise 1% over the n launches). The spread is measured on the better
   side of the launches' own changes (``group_spread``), which slow launches do not reach.

The margin is the relative limit for a small group (2 to 5 launches a side: too few to measure a spread worth
the name), half of it from 6 launches a side, where condition 4 measures the spread.

One launch measured once cannot be told from one that another process on the GPU slowed, nor from a draw past 3
sigma. So a launch that moved alone is a regression only with evidence that its *call site* moved
(``call_sites``): the group's launches repeat with a period (a loop's body launching the kernel k times; the
launches at one position of the body, one per iteration, are a call site) and at one position at least 3
launches, most of the call site's, moved alone past their limits while the call site's median change passes
conditions 2 and 4 (a median of 3 or more: one disturbed launch does not move it). A work counter that is exact
(every other launch's own change is 0) needs no such evidence: interference changes timings, not counts. A
launch that moved alone without that evidence is *lone*: the gate says so and calls it inconclusive, never a pass
and never a fail.
"""

from __future__ import annotations

import bisect
import functools
import math
import statistics
from typing import Any, Callable, NamedTuple

import numpy as np

from perfgate.columns import median
from perfgate.compare.arrays import Bools, Floats

FAMILY_ALPHA = 0.01  # the chance, over a whole group of unchanged launches, that one is flagged alone
SMALL_GROUP = 6  # launches a side below which a group is small (``repeats.INTERVAL_LAUNCHES``)


@functools.lru_cache(maxsize=512)
def alone_z(launches: int) -> float:
    """The spreads a launch's change must exceed the group's by: the normal quantile at FAMILY_ALPHA / n."""
    return statistics.NormalDist().inv_cdf(1.0 - FAMILY_ALPHA / max(launches, 1))


def group_spread(worse: Floats) -> float:
    """The measured spread of a group's own changes (log ratios, worse direction positive): the distance from
    their median down to their 15.9% quantile (one standard deviation for normal noise). Measured on the better
    side, which launches that moved alone in the worse direction do not reach: three slow launches of twelve do
    not hide themselves, and a group that moved as a whole is not truncated at its limit."""
    return float(median(worse) - np.quantile(worse, 0.159))


@functools.lru_cache(maxsize=512)
def loop_periods(count: int) -> tuple[int, ...]:
    """The loop bodies ``count`` launches can form: each period p >= 2 dividing ``count`` with at least
    MIN_ITERATIONS iterations."""
    divisors = {d for low in range(1, math.isqrt(count) + 1) if count % low == 0 for d in (low, count // low)}
    return tuple(sorted(p for p in divisors if 2 <= p and count // p >= MIN_ITERATIONS))


class MovedAlone(NamedTuple):
    """Per launch of a group: ``alone``, it moved alone at a call site that moved (a regression); ``lone``, it moved
    alone once, with nothing to tell it from interference (inconclusive)."""

    alone: Bools
    lone: Bools


MIN_ITERATIONS = 3  # launches of one call site needed to take their median


def call_sites(worse: Floats, moved: Bools, eligible: Bools, margin: float, z: float) -> Bools:
    """Which launches sit at a call site that moved: for each period p dividing the group's launch count with at
    least MIN_ITERATIONS iterations, the launches at one position (i = r mod p, one per iteration) moved when at
    least MIN_ITERATIONS of them, and more than half, ``moved``, and their median own change (``worse``) exceeds
    the other launches' median by more than the ``margin`` and ``z`` times the other launches' spread (a robust
    standard deviation: launches a third of which moved do not widen it). Returns the launches of those call sites
    that are ``eligible`` (past their own limits, beyond the baseline) and apart from the others by the margin."""
    count = worse.size
    found = np.zeros(count, dtype=bool)
    # The others of a call site are read from the values sorted once, the site's own skipped in place: a group of
    # 100,000 launches has thousands of call sites that vote, and a copy of the others each took most of the time.
    order = np.argsort(worse, kind="stable")
    ordered, rank = worse[order], np.empty(count, dtype=np.intp)
    rank[order] = np.arange(count)
    for period in loop_periods(count):
        at = np.arange(count).reshape(-1, period)  # one row per iteration, one column per position
        votes = moved[at].sum(axis=0)
        for site in np.flatnonzero((votes >= MIN_ITERATIONS) & (2 * votes > at.shape[0])):
            members = at[:, site]
            placed = np.sort(rank[members])  # the site's own values' places among all sorted: theirs, sorted
            others = Others(ordered, placed)
            center = _sorted_median(others)
            spread = 1.4826 * _sorted_deviation(others, center)
            if float(_sorted_median(ordered[placed])) - center > max(margin, z * spread):
                found[members] |= eligible[members] & (worse[members] - center > margin)
    return found


class Others:
    """Sorted values without those at ``removed`` (their positions, ascending), read in place: ``np.delete(ordered,
    removed)`` without the copy."""

    def __init__(self, ordered: Floats, removed: Any) -> None:
        self._ordered = ordered
        self._removed = removed.tolist()
        # A kept value's position among the others is its position less the removed ones before it; the removed
        # ones' positions so shifted tell how many come before a kept position.
        self._shifted = [at - before for before, at in enumerate(self._removed)]
        self.size = ordered.size - len(self._removed)

    def __getitem__(self, index: int) -> float:
        return float(self._ordered[index + bisect.bisect_right(self._shifted, index)])

    def not_above(self, value: float) -> int:
        """How many of the values are <= ``value`` (``np.searchsorted(..., side="right")``)."""
        found = int(np.searchsorted(self._ordered, value, side="right"))
        return found - bisect.bisect_left(self._removed, found)


def _sorted_median(values: Others | Floats) -> float:
    """``np.median`` of sorted values (NaN sorts last), read at the middle: the same number (the mean of the two
    middle values of an even count is their sum halved, as numpy takes it; NaN where one is NaN)."""
    if not values.size or math.isnan(values[values.size - 1]):
        return math.nan
    middle = values.size // 2
    if values.size % 2:
        return values[middle]
    return (values[middle - 1] + values[middle]) / 2.0


def _sorted_deviation(values: Others, center: float) -> float:
    """``np.median(np.abs(values - center))`` of sorted values, without a selection: the distances below the center
    and those above it are each sorted already, so the middle ones are found by bisection over the two."""
    if math.isnan(center):
        return math.nan
    split = values.not_above(center)
    below = _Distances(lambda i: center - values[split - 1 - i], split)  # each ascending: |value - center|
    above = _Distances(lambda i: values[split + i] - center, values.size - split)
    middle = values.size // 2
    if values.size % 2:
        return _kth_of_two(below, above, middle)
    return (_kth_of_two(below, above, middle - 1) + _kth_of_two(below, above, middle)) / 2.0


class _Distances(NamedTuple):
    at: Callable[[int], float]
    size: int


def _kth_of_two(first: _Distances, second: _Distances, k: int) -> float:
    """The k-th smallest (from 0) of two sorted sequences together."""
    low, high = max(0, k + 1 - second.size), min(k + 1, first.size)
    while low < high:  # the fewest taken from ``first`` such that the rest from ``second`` are not larger
        taken = (low + high) // 2
        if taken < first.size and k + 1 - taken > 0 and second.at(k - taken) > first.at(taken):
            low = taken + 1
        else:
            high = taken
    rest = k + 1 - low
    return max(first.at(low - 1) if low else -math.inf, second.at(rest - 1) if rest else -math.inf)


def moved_alone(base: Floats, cur: Floats, worse_sign: float, relative: float, past_limit: Bools,
                absolute: float = -1.0, counted: bool = False) -> MovedAlone:
    """Which launches of a group (paired by occurrence: ``base[i]`` with ``cur[i]``, values > 0) moved alone in
    the worse direction, and of those which sit at a call site that moved (``call_sites``); ``past_limit``: each
    launch's own change is past its limit in the worse direction; ``relative``: the relative limit (-1: none);
    ``absolute``: the absolute one, which sizes the margin where there is no relative one (5 points of a share:
    the change of 5 points at the group's median, not a margin of nothing); ``counted``: the metric counts work
    (instructions, bytes), which interference does not move, where a time does."""
    none = np.zeros(base.size, dtype=bool)
    if base.size < 2 or not past_limit.any():
        return MovedAlone(none, none)
    base_log, cur_log = np.log(base), np.log(cur)
    worse = worse_sign * (cur_log - base_log)
    apart = worse - median(worse)
    center = median(base)
    limit = (np.log1p(relative) if relative >= 0 else
             np.log1p(absolute / center) if absolute > 0 and center > 0 else 0.0)
    # Small groups measure no spread worth the name: there a launch must move apart by the whole limit.
    margin = limit if base.size < SMALL_GROUP else limit / 2.0
    beyond_baseline = worse_sign * cur_log - float(np.max(worse_sign * base_log)) > margin
    spread = group_spread(worse)
    moved = past_limit & (apart > margin) & beyond_baseline
    if not moved.any():
        return MovedAlone(none, none)
    found: Bools = moved & (apart > alone_z(base.size) * spread)
    # An exact count (every other launch's own change 0): no interference moves it. Not a time whose other launches
    # came out equal on both sides: ncu's durations step by 32 ns, so many repeat while one launch was disturbed.
    if counted and not worse[~moved].any():
        return MovedAlone(found, none)
    sited = call_sites(worse, moved, past_limit & beyond_baseline, margin, alone_z(max(sum(loop_periods(base.size)), 1)))
    return MovedAlone(sited, found & ~sited)
