"""Short excursions: a regression reverted a few commits later (or an improvement undone) judged as one change.

Between two change points a segment shorter than ``changes.SHORT`` must pass a 100 times smaller p-value, and each
of its edges is judged against that short segment and one neighbour alone: the 3-5 commits inside against the 13
before them, say, where a few slow runs swell the spread. When the short segment leaves one level and comes back
to it, its two edges are one event, an "epidemic" change (Levin & Kline 1985; Yao 1993, "Tests for change-points
with epidemic alternatives"), tested as the inside against both outside segments together: a two-sample t-test
with far more reference commits than either edge's own, still at the short segment's p-value (such a segment
could sit in as many places as before). An edge that fails its own test holds when that test passes.

What counts: the inside's median beyond both neighbours' on the same side, those two at one level (their own
t-test does not pass the final p-value: a step and a wiggle after it is no return), each neighbour at least as
long as the inside (a level held longer than the excursion; segments of alike lengths are a wave or a staircase)
and no short segment itself (``short`` commits or more, or reaching the series' first or last commit), and at least ``LEAST_INSIDE`` commits inside nearer its median than the outside's (one or two odd commits, with a
commit of the old level beside them, are spikes, ``perfgate.history.spikes``), at a value the outside never takes
(a counter that flickers too often to count as exact takes its other code path's value for a few commits in a
row: no level, as an exact counter's value seen before must hold 10 commits). The test leaves out the inside's
commit farthest off (one commit far off is a spike the median of 5 kept where spikes crowd, not a level). Exact
counters have their own rules (``changes._passes``) and are not judged here.
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from perfgate.history.segments import Values, by_length, means_and_squares
from perfgate.history.stats import stdtr, t_test

LEAST_INSIDE = 3  # commits a level must hold: what a median of 5 keeps (``spikes``)


def excursion_p(series: np.ndarray, points: Sequence[int], k: int, short: int, p_value: float) -> float:
    """The smallest p-value of the short excursions change point ``k`` bounds (1.0 where it bounds none): of the
    segment that ends at ``k`` and the one that starts there, those of ``LEAST_INSIDE`` to ``short - 1`` commits
    that are excursions (the module's rules; ``p_value`` the final one)."""
    best = 1.0
    for first in (k - 1, k):  # the segment that ends at point k, the one that starts there
        if first < 0 or first + 1 >= len(points):
            continue
        start = points[first - 1] if first > 0 else 0
        stop = points[first + 2] if first + 2 < len(points) else len(series)
        before = series[start:points[first]]
        inside = series[points[first]:points[first + 1]]
        after = series[points[first + 1]:stop]
        if not excursion_shape(start, points[first], points[first + 1], stop, len(series), short):
            continue
        level, outside = float(np.median(inside)), (float(np.median(before)), float(np.median(after)))
        if min(outside) <= level <= max(outside) or t_test(before, after) <= p_value:
            continue
        if np.any(before == level) or np.any(after == level):
            continue  # a value the counter takes now and then (another code path) is no level of its own
        up = level > max(outside)
        if not holds_level(inside, level, max(outside) if up else min(outside)):
            continue  # fewer than LEAST_INSIDE commits at the new level: spikes and the commits beside them
        extreme = np.argmax(inside) if up else np.argmin(inside)
        best = min(best, t_test(np.concatenate((before, after)), np.delete(inside, extreme)))
    return best


def holds_level(segment: np.ndarray, level: float, other: float) -> bool:
    """Whether at least ``LEAST_INSIDE`` of a segment's commits lie nearer its median ``level`` than the ``other``
    level: a level held, not a few odd commits (slow runs, an off mode) with commits of the other level between
    them, whose mean alone moved."""
    return bool(np.count_nonzero(np.abs(segment - level) < np.abs(segment - other)) >= LEAST_INSIDE)


def short_sides_hold(left: np.ndarray, right: np.ndarray, short: int, before: float, after: float) -> bool:
    """Whether each side of a point shorter than ``short`` commits holds its level (``holds_level``; ``before``
    and ``after``: the sides' medians). The t-test pools the two sides' spreads: against many commits of small
    noise, two slow runs of +8% with a commit at the level between them read as a 3-commit regression at p 1e-20,
    their mean moved, their median not."""
    return ((len(left) >= short or holds_level(left, before, after))
            and (len(right) >= short or holds_level(right, after, before)))


def hold_levels(values: Values, starts: np.ndarray, sizes: np.ndarray, level: np.ndarray,
                other: np.ndarray) -> np.ndarray:
    """``holds_level`` of each segment (flat start, size >= 1) of ``values`` at ``level`` against ``other``."""
    result = np.zeros(len(starts), dtype=bool)
    for size, group in by_length(sizes):
        rows = values.rows(starts[group], size)
        nearer = np.abs(rows - level[group, None]) < np.abs(rows - other[group, None])
        result[group] = np.count_nonzero(nearer, axis=1) >= LEAST_INSIDE
    return result


def excursion_shape(start: Any, first: Any, second: Any, stop: Any, length: Any, short: int) -> Any:
    """Whether the segment [first, second) between its neighbours [start, first) and [second, stop), of a series of
    ``length`` commits, has an excursion's lengths: ``LEAST_INSIDE`` to ``short - 1`` commits inside, each neighbour
    at least as long and no short segment itself (``short`` commits or more, or reaching the series' first or last
    commit). Integers or arrays of them (``judge.merge_many``: many nodes at once)."""
    inside, before, after = second - first, first - start, stop - second
    return ((LEAST_INSIDE <= inside) & (inside < short) & (before >= inside) & (after >= inside)
            & ((start == 0) | (before >= short)) & ((stop == length) | (after >= short)))


def may_pass(values: Values, start: np.ndarray, first: np.ndarray, second: np.ndarray, stop: np.ndarray,
              bound: float) -> np.ndarray:
    """Whether each short excursion [first, second) between [start, first) and [second, stop) (flat indexes) may
    pass ``excursions.excursion_p``'s t-test at ``bound``: both neighbours against the inside less its largest
    (or smallest) value, from each segment's mean and squared deviations (close to merge's floats, not the same:
    ``bound`` leaves ``ROOM``)."""
    m1, q1 = means_and_squares(values, start, first - start)
    m2, q2 = means_and_squares(values, second, stop - second)
    n1, n2 = (first - start).astype(np.float64), (stop - second).astype(np.float64)
    n = n1 + n2
    outside = (n1 * m1 + n2 * m2) / n
    squares = q1 + q2 + n1 * n2 / n * (m1 - m2) ** 2
    result = np.zeros(len(first), dtype=bool)
    for size, group in by_length(second - first):
        ordered = np.sort(values.rows(first[group], size), axis=1)
        for kept in (ordered[:, :-1], ordered[:, 1:]):
            mean = kept.mean(axis=1)
            deviations = kept - mean[:, None]
            df = n[group] + size - 3
            with np.errstate(all="ignore"):
                pooled = (squares[group] + (deviations * deviations).sum(axis=1)) / df
                t = np.abs(outside[group] - mean) / np.sqrt(pooled * (1.0 / n[group] + 1.0 / (size - 1)))
                result[group] |= ~(2.0 * stdtr(df, -t) > bound) | ~(pooled > (1e-6 * outside[group]) ** 2)
    return result
