"""``changes.merge`` for many series at once: the candidates that hold, the weakest dropped while any fails, with
the same t-tests, medians and order of removal, every float the same as one series at a time gives.

One call per series cost most of an update of the change cache (20,000 series with candidates, 20-100 µs of numpy
calls each). Here every triple (previous point, point, next point) a round judges is one row of a few arrays,
the rows of one segment length stacked: a row's sum is numpy's pairwise sum of that row (``ndarray.sum`` of one
segment), a stacked ``matmul`` of vectors is BLAS's ``ddot`` of each (``np.dot`` of one segment), a median is
the segment's order statistics (the values ``np.partition`` picks), so each p-value and median is the float
``t_test`` and ``median`` give. A series whose p-values are not all numbers (values so large their squares
overflow) is judged by ``merge`` itself.

A series with a point left that is no step goes on as ``merge`` goes on: one with a gradual point to ``merge``
itself; one whose points do not all stand out of its own wander (``perfgate.history.wander``: the variograms and
the points' tests of all series at once) to ``changes.against_wander``, ``merge``'s last rounds, with the verdicts
those rounds ask for found beforehand, all series at once.
"""

from __future__ import annotations

import itertools
from typing import Sequence

import numpy as np

from perfgate.history.abrupt import ABRUPT_P, gradual_scores, judged_points
from perfgate.history.blips import WIDTHS
from perfgate.history.changes import (
    P_VALUE,
    SEEN_HOLD,
    SHORT,
    SHORT_FACTOR,
    ChangePoint,
    against_wander,
    exact_points,
    merge,
)
from perfgate.history.counter_levels import moves_level
from perfgate.history.excursions import excursion_shape, hold_levels, may_pass
from perfgate.history.modes import mix_edges
from perfgate.history.step_size import small_steps
from perfgate.history.search import MIN_SIDE
from perfgate.history.segments import Values, by_length, means_and_squares, segment_medians
from perfgate.history.stats import stdtr
from perfgate.history.wander import step_ps, variograms


# An excursion's p-value computed here from per-segment sums may be this much larger than the limit and still go to
# merge: the floats differ from merge's by rounding (a t of 1e-12 relative), a factor 2 in p is a t 1% apart. A
# spread under a millionth of the level (where rounding could move t that far) goes to merge whatever its p-value.
ROOM = 2.0
TRIPLES = 8  # candidates of a wandering series up to which every key merge may ask is judged beforehand


def t_tests(values: Values, left: np.ndarray, split: np.ndarray, right: np.ndarray) -> np.ndarray:
    """``t_test(values[left:split], values[split:right])`` per triple of flat indexes, the same floats (NaN where
    ``t_test`` would divide by zero: ``merge_many`` leaves such a series to ``merge``)."""
    n1, n2 = split - left, right - split
    p = np.ones(len(left))
    judged = np.flatnonzero((n1 >= 1) & (n2 >= 1) & (n1 + n2 >= 3))
    n1, n2 = n1[judged], n2[judged]
    m1, q1 = means_and_squares(values, left[judged], n1)
    m2, q2 = means_and_squares(values, split[judged], n2)
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
    # merge's own odd cases: candidates out of order, repeated, outside the series, or bounding a blip
    odd = np.zeros(len(series), dtype=bool)
    odd[owner[(positions <= 0) | (positions >= values.lengths[owner])]] = True
    odd[owner[1:][(owner[1:] == owner[:-1]) & (positions[1:] <= positions[:-1])]] = True
    # two candidates a blip apart (``perfgate.history.blips``): merge judges such a blip on its own
    odd[owner[1:][(owner[1:] == owner[:-1]) & (positions[1:] - positions[:-1] <= max(WIDTHS))]] = True
    kept = np.flatnonzero(judged & ~odd).tolist()
    exact = _piecewise_constant(values, kept)
    measured = np.zeros(len(series), dtype=bool)  # judged with their spikes out, as merge judges them
    measured[kept] = ~exact
    nodes = _Nodes(values.despiked(values.offsets, values.lengths, measured), kept, exact, candidates, p_value,
                   min_change)
    for k in np.flatnonzero(judged & odd).tolist() + nodes.run():
        results[k] = merge(series[k], candidates[k], p_value, min_change)
    nodes.finish(series, results)
    gradual = nodes.gradual_series()
    for k in gradual.tolist():  # merge drops them one at a time, judging the rest again
        results[k] = merge(series[k], candidates[k], p_value, min_change)
    wandering = nodes.wandering(gradual)  # where merge's first rounds end for them
    known = _standing(wandering, candidates, p_value)
    for k, (values_k, points, gamma) in wandering.items():
        results[k] = against_wander(values_k, candidates[k], set(points), gamma, p_value, min_change, known[k])
    for k, found in enumerate(results):  # merge's last word: a usual modes' run (``modes``), a small step (``step_size``)
        kinds = sorted((p.position, not (p.gradual or p.exact)) for p in found)
        if len(found) > 1 and mix_edges(series[k], kinds, p_value * SHORT_FACTOR, p_value) or small_steps(
                series[k], kinds, p_value * SHORT_FACTOR):
            results[k] = merge(series[k], candidates[k], p_value, min_change)
    return results


def stand_out_many(flat: np.ndarray, gammas: Sequence[np.ndarray], lengths: np.ndarray, start: np.ndarray,
                   at: np.ndarray, stop: np.ndarray, limit: float) -> np.ndarray:
    """``changes._stands_out`` of many points at once (flat indexes of each point's segments: their start, the point,
    their end; ``gammas[i]`` and ``lengths[i]`` the variogram and length of point i's series), the same verdicts."""
    result: np.ndarray = step_ps(flat, gammas, lengths, start, at, stop) <= limit
    unsure = np.flatnonzero(~result)
    result[unsure] = judged_points(flat, start[unsure], at[unsure], stop[unsure])[1]
    return result


def _standing(wandering: dict[int, tuple[np.ndarray, list[int], np.ndarray]], candidates: Sequence[Sequence[int]],
              limit: float) -> dict[int, dict[tuple[int, int, int], bool]]:
    """Per wandering series (``_Nodes.wandering``), whether a point stands out of its noise (``stand_out_many``, all
    series at once) for each key ``merge``'s rounds may ask of it: each candidate between an earlier one (or the
    start) and a later one (or the end); of a series with more than ``TRIPLES`` candidates, the first round's keys
    only (each candidate between its neighbours), the later ones judged as they come."""
    keys: list[tuple[int, int, int, int]] = []
    for k, (values, _, _) in wandering.items():
        ends = [0, *candidates[k], len(values)]
        near = len(ends) - 2 > TRIPLES
        keys += [(k, ends[i], ends[j], ends[m]) for j in range(1, len(ends) - 1)
                 for i in ([j - 1] if near else range(j)) for m in ([j + 1] if near else range(j + 1, len(ends)))]
    known: dict[int, dict[tuple[int, int, int], bool]] = {k: {} for k in wandering}
    if not keys:
        return known
    owners = [k for k, *_ in keys]
    flat = Values([wandering[k][0] for k in wandering])
    offsets = dict(zip(wandering, flat.offsets.tolist()))
    start, at, stop = (np.array([key[i] + offsets[key[0]] for key in keys], dtype=np.int64) for i in (1, 2, 3))
    standing = stand_out_many(flat.flat, [wandering[k][2] for k in owners], np.array(
        [len(wandering[k][0]) for k in owners], dtype=np.int64), start, at, stop, limit)
    for (k, *key), stands in zip(keys, standing.tolist()):
        known[k][(key[0], key[1], key[2])] = stands
    return known


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
            before = segment_medians(self.values, (offset + left)[medians], n1[medians])
            new = segment_medians(self.values, (offset + at)[medians], n2[medians])
            holds = before != new
            if self.min_change > 0:
                with np.errstate(all="ignore"):
                    magnitude = np.where(before != 0, np.abs(new / before - 1.0),
                                         (np.abs(new) > 0).astype(np.float64))
                holds &= ~(magnitude < self.min_change)
            steps = exact[medians]
            holds &= steps | self._short_sides_hold(offset[medians] + left[medians], offset[medians] + at[medians],
                                                    n1[medians], n2[medians], before, new)
            holds[steps] &= np.minimum(n1, n2)[medians][steps] >= MIN_SIDE
            seen = steps & holds & (n2[medians] < SEEN_HOLD)
            if seen.any():
                holds[seen] = ~_any_equal(self.values, (offset + left)[medians][seen], n1[medians][seen], new[seen])
            counted = np.flatnonzero(steps & holds)
            if len(counted):
                holds[counted] = self._levels_move(nodes[medians[counted]], before[counted], new[counted])
            passes[medians] = holds
        self.passes[nodes], self.p[nodes] = passes, p
        odd = self.local[nodes[np.isnan(p)]]
        self.alone[odd] = self.done[odd] = True

    def _short_sides_hold(self, left: np.ndarray, at: np.ndarray, n1: np.ndarray, n2: np.ndarray, before: np.ndarray,
                          after: np.ndarray) -> np.ndarray:
        """``excursions.short_sides_hold`` of each triple (flat starts of its sides, their sizes and medians)."""
        result = np.ones(len(left), dtype=bool)
        for side, start, size, level, other in ((n1 < SHORT, left, n1, before, after), (n2 < SHORT, at, n2, after, before)):
            chosen = np.flatnonzero(side & result)
            result[chosen] = hold_levels(self.values, start[chosen], size[chosen], level[chosen], other[chosen])
        return result

    def _levels_move(self, nodes: np.ndarray, before: np.ndarray, new: np.ndarray) -> list[bool]:
        """``counter_levels.moves_level`` of each exact node's triple (its sides' medians ``before`` and ``new``)."""
        offset, left, at, right = self._triples(nodes)
        length = self.values.lengths[self.series[self.local[nodes]]].tolist()
        return [moves_level(self.values.flat[start:start + size], first, point, last, low, high)
                for start, size, first, point, last, low, high in zip(
                    offset.tolist(), length, left.tolist(), at.tolist(), right.tolist(), before.tolist(), new.tolist())]

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
        handed = self.local[owners[may_pass(self.values, start, first, second, stop,
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
        exact_steps: dict[int, list[int]] = {}
        for k, at in zip(self.series[self.local[kept[steps]]].tolist(), self.position[kept[steps]].tolist()):
            exact_steps.setdefault(k, []).append(at)
        for k, points in exact_steps.items():
            results[k] = exact_points(series[k], points)
        plain = kept[~steps]
        offset, left, at, right = self._triples(plain)
        before = segment_medians(self.values, offset + left, at - left).tolist()
        after = segment_medians(self.values, offset + at, right - at).tolist()
        for k, position, p, low, high in zip(self.series[self.local[plain]].tolist(), at.tolist(),
                                             self.p[plain].tolist(), before, after):
            results[k].append(ChangePoint(position, p, low, high, False))


    def wandering(self, gradual: np.ndarray) -> dict[int, tuple[np.ndarray, list[int], np.ndarray]]:
        """The measured series (``merge_many``'s indexes) not in ``gradual`` with a change point left that does not
        stand out of the series' noise (``changes.all_stand_out``: the variograms of the series of a length taken
        together, every point's tests at once), each with its values (spikes out), its points and its variogram."""
        plain = np.flatnonzero(self.alive & ~self.alone[self.local] & ~self.exact[self.local])
        plain = plain[~np.isin(self.series[self.local[plain]], gradual)]
        owners = self.local[plain]
        gammas = self._variograms(plain)
        gamma_of = [gammas[local] for local in owners.tolist()]
        offset, left, at, right = self._triples(plain)
        standing = stand_out_many(self.values.flat, gamma_of, self.values.lengths[self.series[owners]], offset + left,
                                  offset + at, offset + right, self.p_value)
        found = {}
        for local in np.unique(owners[~standing]).tolist():
            k, nodes = int(self.series[local]), plain[owners == local]
            offset_k = int(self.values.offsets[k])
            found[k] = (self.values.flat[offset_k:offset_k + int(self.values.lengths[k])], self.position[nodes].tolist(),
                        gammas[local])
        return found

    def _variograms(self, nodes: np.ndarray) -> dict[int, np.ndarray]:
        """The variogram of each series with a node among ``nodes`` (all its alive ones; ``wander.variogram``), by
        its local index, the series of a length taken together."""
        owners = self.local[nodes]
        locals_ = np.unique(owners)
        gammas: dict[int, np.ndarray] = {}
        for size, group in by_length(self.values.lengths[self.series[locals_]]):
            chosen = locals_[group]
            rows = self.values.rows(self.values.offsets[self.series[chosen]], size)
            segments = np.zeros(rows.shape, dtype=np.int64)
            inside = np.isin(owners, chosen)
            segments[np.searchsorted(chosen, owners[inside]), self.position[nodes[inside]]] = 1
            gammas.update(zip(chosen.tolist(), variograms(rows, segments.cumsum(axis=1))))
        return gammas

    def gradual_series(self) -> np.ndarray:
        """The measured series (``merge_many``'s indexes) with a change point left that ``abrupt`` reads as
        gradual."""
        plain = np.flatnonzero(self.alive & ~self.alone[self.local] & ~self.exact[self.local])
        offset, left, at, right = self._triples(plain)
        gradual = gradual_scores(self.values.flat, offset + left, offset + at, offset + right) > ABRUPT_P
        found: np.ndarray = np.unique(self.series[self.local[plain[gradual]]])
        return found


def _any_equal(values: Values, starts: np.ndarray, sizes: np.ndarray, new: np.ndarray) -> np.ndarray:
    """Per segment, whether any of its values equals ``new``'s."""
    found = np.zeros(len(starts), dtype=bool)
    for size, group in by_length(sizes):
        found[group] = (values.rows(starts[group], size) == new[group, None]).any(axis=1)
    return found
