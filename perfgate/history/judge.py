"""``changes.merge`` for many series at once: the candidates that hold, the weakest dropped while any fails, with
the same t-tests, medians and order of removal, every float the same as one series at a time gives.

One call per series cost most of an update of the change cache (20,000 series with candidates, 20-100 µs of numpy
calls each). Here every triple (previous point, point, next point) a round judges is one row of a few arrays,
the rows of one segment length stacked: a row's sum is numpy's pairwise sum of that row (``ndarray.sum`` of one
segment), a stacked ``matmul`` of vectors is BLAS's ``ddot`` of each (``np.dot`` of one segment), a median is
the segment's order statistics (the values ``np.partition`` picks), so each p-value and median is the float
``t_test`` and ``median`` give. A series whose p-values are not all numbers (values so large their squares
overflow) is judged by ``merge`` itself.
"""

from __future__ import annotations

import itertools
from typing import Sequence

import numpy as np

from perfgate.history.changes import (
    MIN_SIDE,
    P_VALUE,
    SEEN_HOLD,
    SHORT,
    SHORT_FACTOR,
    ChangePoint,
    exact_starts,
    sides,
    median,
    merge,
)
from perfgate.history.excursions import excursion_shape
from perfgate.history.spikes import despike, may_hold_spikes
from perfgate.history.stats import stdtr, t_test


CELLS = 1 << 18  # values a batch of segments gathers at once (2 MB)
# An excursion's p-value computed here from per-segment sums may be this much larger than the limit and still go to
# merge: the floats differ from merge's by rounding (a t of 1e-12 relative), a factor 2 in p is a t 1% apart. A
# spread under a millionth of the level (where rounding could move t that far) goes to merge whatever its p-value.
ROOM = 2.0


class Values:
    """Every series' values end to end, with where each starts."""

    def __init__(self, series: Sequence[np.ndarray]) -> None:
        lengths = np.array([len(values) for values in series], dtype=np.int64)
        self.flat = np.concatenate([np.zeros(0), *series]).astype(np.float64, copy=False)
        self.lengths = lengths
        self.offsets = np.cumsum(lengths) - lengths

    def rows(self, starts: np.ndarray, length: int) -> np.ndarray:
        """The segments of ``length`` values from each flat index in ``starts``, a row each."""
        result: np.ndarray = self.flat[starts[:, None] + np.arange(length)]
        return result

    def despiked(self, starts: np.ndarray, sizes: np.ndarray, cleaned: np.ndarray | None = None) -> Values:
        """The segments (flat start, size) end to end, each an entry of its own, with its spikes out where
        ``cleaned`` (per segment; all where None) says so: ``despike_one`` of each, the segments of a size
        cleaned as the rows of one array (those whose range rules out a spike left as they are)."""
        result = Values([])
        result.lengths = np.asarray(sizes, dtype=np.int64)
        result.offsets = np.cumsum(result.lengths) - result.lengths
        if np.array_equal(starts, self.offsets) and np.array_equal(result.lengths, self.lengths):
            result.flat = self.flat.copy()  # every series whole, as they lie
        else:
            result.flat = self.flat[np.repeat(starts - result.offsets, result.lengths)
                                    + np.arange(int(result.lengths.sum()))]
        chosen = np.flatnonzero((result.lengths >= 5) if cleaned is None else cleaned & (result.lengths >= 5))
        chosen = chosen[may_hold_spikes(*_extremes(result.flat, result.offsets[chosen], result.lengths[chosen]))]
        for size, group in by_length(result.lengths[chosen]):
            at = result.offsets[chosen[group]]
            rows = result.rows(at, size)
            clean = despike(rows)
            if clean is not rows:
                result.flat[at[:, None] + np.arange(size)] = clean
        return result


def _extremes(flat: np.ndarray, starts: np.ndarray, sizes: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per segment of ``flat`` (ascending starts, sizes >= 1, none overlapping): its largest and smallest value and
    its smallest magnitude, each segment and the gap after it reduced in turn (the gaps' results dropped)."""
    edges = np.stack((starts, starts + sizes), axis=1).ravel()
    edges = edges[:-1] if len(edges) and edges[-1] == len(flat) else edges
    if not len(edges):
        return np.zeros(0), np.zeros(0), np.zeros(0)
    return (np.maximum.reduceat(flat, edges)[::2], np.minimum.reduceat(flat, edges)[::2],
            np.minimum.reduceat(np.abs(flat), edges)[::2])

def by_length(sizes: np.ndarray) -> list[tuple[int, np.ndarray]]:
    """Indexes of ``sizes`` grouped by size (each group in index order), a group at most ``CELLS`` values long in
    all: the arrays of a batch stay a few MB however many segments are judged."""
    order = np.argsort(sizes, kind="stable")
    ordered = sizes[order]
    bounds = np.flatnonzero(np.diff(ordered)) + 1
    groups: list[tuple[int, np.ndarray]] = []
    for start, stop in zip([0, *bounds.tolist()], [*bounds.tolist(), len(order)]) if len(order) else ():
        size = int(ordered[start])
        step = max(CELLS // max(size, 1), 1)
        groups += [(size, order[at:min(at + step, stop)]) for at in range(start, stop, step)]
    return groups


def _means_and_squares(values: Values, starts: np.ndarray, sizes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per segment (flat start, size >= 1): its mean and its squared deviations from it summed, as ``t_test``
    computes them (``sum() / n``, then ``np.dot`` of the deviations)."""
    means, squares = np.zeros(len(starts)), np.zeros(len(starts))
    for size, group in by_length(sizes):
        rows = values.rows(starts[group], size)
        mean = rows.sum(axis=1) / size
        deviations = rows - mean[:, None]
        means[group] = mean
        squares[group] = np.matmul(deviations[:, None, :], deviations[:, :, None])[:, 0, 0]
    return means, squares


def _medians(values: Values, starts: np.ndarray, sizes: np.ndarray) -> np.ndarray:
    """Per segment (size >= 1), ``changes.median``: the same order statistics, summed the same way."""
    result = np.zeros(len(starts))
    for size, group in by_length(sizes):
        ordered = np.sort(values.rows(starts[group], size), axis=1)
        half = size // 2
        if size % 2:
            result[group] = ordered[:, half] + 0.0
        else:
            result[group] = (ordered[:, half - 1] + (0.0 + ordered[:, half])) / 2.0
    return result


def t_tests(values: Values, left: np.ndarray, split: np.ndarray, right: np.ndarray) -> np.ndarray:
    """``t_test(values[left:split], values[split:right])`` per triple of flat indexes, the same floats (NaN where
    ``t_test`` would divide by zero: ``merge_many`` leaves such a series to ``merge``)."""
    n1, n2 = split - left, right - split
    p = np.ones(len(left))
    judged = np.flatnonzero((n1 >= 1) & (n2 >= 1) & (n1 + n2 >= 3))
    n1, n2 = n1[judged], n2[judged]
    m1, q1 = _means_and_squares(values, left[judged], n1)
    m2, q2 = _means_and_squares(values, split[judged], n2)
    with np.errstate(all="ignore"):
        pooled = (q1 + q2) / (n1 + n2 - 2)
        scale = np.sqrt(pooled * (1.0 / n1 + 1.0 / n2))
        t = np.abs(m1 - m2) / scale
        tested = 2.0 * stdtr((n1 + n2 - 2).astype(np.float64), -t)
    tested[(scale == 0.0) & (pooled > 0.0)] = np.nan  # a spread so small its scale underflows: t_test divides by 0
    flat = pooled <= 0.0
    tested[flat] = np.where(m1[flat] != m2[flat], 0.0, 1.0)
    p[judged] = tested
    return p


def merge_many(series: Sequence[np.ndarray], candidates: Sequence[Sequence[int]], p_value: float = P_VALUE,
               min_change: float = 0.0) -> list[list[ChangePoint]]:
    """``[merge(s, c, p_value, min_change) for s, c in zip(series, candidates)]``, the rounds of many series at
    once: each round drops every series' weakest failing candidate and judges again its two neighbours."""
    values = Values(series)
    results: list[list[ChangePoint]] = [[] for _ in series]
    counts = np.array([len(c) for c in candidates], dtype=np.int64)
    positions = np.fromiter(itertools.chain.from_iterable(candidates), dtype=np.int64, count=int(counts.sum()))
    owner = np.repeat(np.arange(len(series)), counts)
    lowest, highest = np.zeros(len(series)), np.zeros(len(series))
    filled = np.flatnonzero(values.lengths > 0)
    if len(filled):
        lowest[filled] = np.minimum.reduceat(values.flat, values.offsets[filled])
        highest[filled] = np.maximum.reduceat(values.flat, values.offsets[filled])
    judged = (values.lengths >= 2) & (counts > 0) & (lowest != highest)
    # merge's own odd cases: candidates out of order, repeated, or outside the series
    odd = np.zeros(len(series), dtype=bool)
    odd[owner[(positions <= 0) | (positions >= values.lengths[owner])]] = True
    odd[owner[1:][(owner[1:] == owner[:-1]) & (positions[1:] <= positions[:-1])]] = True
    kept = np.flatnonzero(judged & ~odd).tolist()
    exact = _piecewise_constant(values, kept)
    measured = np.zeros(len(series), dtype=bool)  # judged with their spikes out, as merge judges them
    measured[kept] = ~exact
    nodes = _Nodes(values.despiked(values.offsets, values.lengths, measured), kept, exact, candidates, p_value,
                   min_change)
    for k in np.flatnonzero(judged & odd).tolist() + nodes.run():
        results[k] = merge(series[k], candidates[k], p_value, min_change)
    nodes.finish(series, results)
    return results


def _piecewise_constant(values: Values, judged: list[int]) -> np.ndarray:
    """``is_piecewise_constant`` of each judged series: its equal neighbours counted, those at [offset, offset +
    length - 1) of ``repeats`` (by where they are: a sum would cast every one of millions of flags to an integer
    first)."""
    lengths, offsets = values.lengths[judged], values.offsets[judged]
    repeats = np.flatnonzero(values.flat[1:] == values.flat[:-1])
    same = np.searchsorted(repeats, offsets + lengths - 1) - np.searchsorted(repeats, offsets)
    result: np.ndarray = same >= 0.75 * (lengths - 1)
    return result


class _Nodes:
    """Every candidate of the series judged here, linked to its neighbours, with the score of its current triple
    (previous point, itself, next point): whether it passes and its p-value."""

    def __init__(self, values: Values, judged: list[int], exact: np.ndarray, candidates: Sequence[Sequence[int]],
                 p_value: float, min_change: float) -> None:
        self.values, self.p_value, self.min_change = values, p_value, min_change
        self.series = np.array(judged, dtype=np.int64)
        counts = np.array([len(candidates[k]) for k in judged], dtype=np.int64)
        self.local = np.repeat(np.arange(len(judged)), counts)  # each node's series, as an index of self.series
        self.position = np.fromiter(itertools.chain.from_iterable(candidates[k] for k in judged), dtype=np.int64,
                                    count=int(counts.sum()))
        self.first = np.cumsum(counts) - counts
        index = np.arange(len(self.position))
        self.previous, self.following = index - 1, index + 1
        self.previous[self.first] = -1
        self.following[self.first + counts - 1] = -1
        self.alive = np.ones(len(index), dtype=bool)
        self.passes, self.p = np.zeros(len(index), dtype=bool), np.zeros(len(index))
        self.done = np.zeros(len(judged), dtype=bool)
        self.alone = np.zeros(len(judged), dtype=bool)  # judged by ``merge`` itself
        self.exact = exact
        if len(index):
            self._judge(index)

    def _triples(self, nodes: np.ndarray) -> tuple[np.ndarray, ...]:
        """Per node: its series' flat offset, and the start of its left side, itself, the end of its right side."""
        series = self.series[self.local[nodes]]
        before, after = self.previous[nodes], self.following[nodes]
        left = np.where(before >= 0, self.position[np.maximum(before, 0)], 0)
        right = np.where(after >= 0, self.position[np.maximum(after, 0)], self.values.lengths[series])
        return self.values.offsets[series], left, self.position[nodes], right

    def _judge(self, nodes: np.ndarray) -> None:
        """``merge``'s score of each node's current triple (``_passes`` and the t-test's p-value)."""
        offset, left, at, right = self._triples(nodes)
        p = t_tests(self.values, offset + left, offset + at, offset + right)
        n1, n2 = at - left, right - at
        passes = ~(p > np.where(np.minimum(n1, n2) < SHORT, self.p_value * SHORT_FACTOR, self.p_value))
        exact = self.exact[self.local[nodes]]
        medians = np.flatnonzero(passes)
        if len(medians):
            before = _medians(self.values, (offset + left)[medians], n1[medians])
            new = _medians(self.values, (offset + at)[medians], n2[medians])
            holds = before != new
            if self.min_change > 0:
                with np.errstate(all="ignore"):
                    magnitude = np.where(before != 0, np.abs(new / before - 1.0),
                                         (np.abs(new) > 0).astype(np.float64))
                holds &= ~(magnitude < self.min_change)
            steps = exact[medians]
            holds[steps] &= np.minimum(n1, n2)[medians][steps] >= MIN_SIDE
            seen = steps & holds & (n2[medians] < SEEN_HOLD)
            if seen.any():
                holds[seen] = ~_any_equal(self.values, (offset + left)[medians][seen], n1[medians][seen], new[seen])
            passes[medians] = holds
        self.passes[nodes], self.p[nodes] = passes, p
        odd = self.local[nodes[np.isnan(p)]]
        self.alone[odd] = self.done[odd] = True

    def run(self) -> list[int]:
        """Drop each series' weakest failing node, a round for all series at once, until every one left passes;
        the series (``merge_many``'s indexes) left to ``merge``."""
        while True:
            failing = self.alive & ~self.passes & ~self.done[self.local]
            self._hand_over(np.flatnonzero(failing & ~self.exact[self.local]))
            failing &= ~self.done[self.local]
            if not failing.any():
                break
            key = np.where(failing, self.p, -np.inf)
            weakest_p = np.maximum.reduceat(key, self.first)
            self.done |= weakest_p == -np.inf
            match = np.flatnonzero(failing & (key == weakest_p[self.local]))
            weakest = match[np.unique(self.local[match], return_index=True)[1]]  # the first, as min() takes
            before, after = self.previous[weakest], self.following[weakest]
            self.alive[weakest] = False
            self.following[before[before >= 0]] = after[before >= 0]
            self.previous[after[after >= 0]] = before[after >= 0]
            self._judge(np.concatenate((before[before >= 0], after[after >= 0])))
        alone: list[int] = self.series[self.alone].tolist()
        return alone

    def _hand_over(self, nodes: np.ndarray) -> None:
        """The series of failing ``nodes`` that bound a short excursion which may pass its test, left to ``merge``:
        it judges such an edge with its other edge (``perfgate.history.excursions``)."""
        if not len(nodes):
            return
        length = self.values.lengths[self.series[self.local[nodes]]]
        before, after = self.previous[nodes], self.following[nodes]
        earlier = self._at(np.where(before >= 0, self.previous[np.maximum(before, 0)], -1), 0)
        later = self._at(np.where(after >= 0, self.following[np.maximum(after, 0)], -1), length)
        at, previous, following = self.position[nodes], self._at(before, 0), self._at(after, length)
        ends = excursion_shape(earlier, previous, at, following, length, SHORT) & (before >= 0)
        starts = excursion_shape(previous, at, following, later, length, SHORT) & (after >= 0)
        owners = np.concatenate((nodes[ends], nodes[starts]))
        if not len(owners):
            return
        offset = self.values.offsets[self.series[self.local[owners]]]
        start, first, second, stop = (np.concatenate(pair) + offset for pair in (
            (earlier[ends], previous[starts]), (previous[ends], at[starts]), (at[ends], following[starts]),
            (following[ends], later[starts])))
        handed = self.local[owners[_may_pass(self.values, start, first, second, stop,
                                             ROOM * self.p_value * SHORT_FACTOR)]]
        self.alone[handed] = self.done[handed] = True

    def _at(self, nodes: np.ndarray, missing: int | np.ndarray) -> np.ndarray:
        """Each node's position, ``missing`` where there is no node (-1)."""
        result: np.ndarray = np.where(nodes >= 0, self.position[np.maximum(nodes, 0)], missing)
        return result

    def finish(self, series: Sequence[np.ndarray], results: list[list[ChangePoint]]) -> None:
        """Each series' change points from the nodes left, as ``merge`` reports them."""
        kept = np.flatnonzero(self.alive & ~self.alone[self.local])
        steps = self.exact[self.local[kept]]
        exact_points: dict[int, list[int]] = {}
        for k, at in zip(self.series[self.local[kept[steps]]].tolist(), self.position[kept[steps]].tolist()):
            exact_points.setdefault(k, []).append(at)
        for k, points in exact_points.items():
            results[k] = _exact_points(series[k], points)
        plain = kept[~steps]
        offset, left, at, right = self._triples(plain)
        before = _medians(self.values, offset + left, at - left).tolist()
        after = _medians(self.values, offset + at, right - at).tolist()
        for k, position, p, low, high in zip(self.series[self.local[plain]].tolist(), at.tolist(),
                                             self.p[plain].tolist(), before, after):
            results[k].append(ChangePoint(position, p, low, high, False))


def _may_pass(values: Values, start: np.ndarray, first: np.ndarray, second: np.ndarray, stop: np.ndarray,
              bound: float) -> np.ndarray:
    """Whether each short excursion [first, second) between [start, first) and [second, stop) (flat indexes) may
    pass ``excursions.excursion_p``'s t-test at ``bound``: both neighbours against the inside less its largest
    (or smallest) value, from each segment's mean and squared deviations (close to merge's floats, not the same:
    ``bound`` leaves ``ROOM``)."""
    m1, q1 = _means_and_squares(values, start, first - start)
    m2, q2 = _means_and_squares(values, second, stop - second)
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


def _exact_points(values: np.ndarray, points: list[int]) -> list[ChangePoint]:
    """An exact counter's change points as ``merge`` reports them: each step moved to its new value's first commit,
    judged again there."""
    moved = exact_starts(values, points)
    found = []
    for k, at in enumerate(moved):
        left, right = sides(values, moved, k)
        found.append(ChangePoint(at, t_test(left, right), median(left), median(right), True))
    return found


def _any_equal(values: Values, starts: np.ndarray, sizes: np.ndarray, new: np.ndarray) -> np.ndarray:
    """Per segment, whether any of its values equals ``new``'s."""
    found = np.zeros(len(starts), dtype=bool)
    for size, group in by_length(sizes):
        found[group] = (values.rows(starts[group], size) == new[group, None]).any(axis=1)
    return found
