"""``search.window_search`` for many series at once: the same windows, splits and t-tests, every float the same.

The searches a cache update cannot spare (a few thousand series a commit) cost 300-400 µs each in calls of
``best_split``, ``t_test`` and ``_divide``. Here the windows of every series are searched a round at a time, and
each window's E-divisive tree a level at a time: the segments of one length are the rows of one array, their
distance matrices one 3-D array whose cumulative sums (each element the previous one plus itself, in the same
order) are ``best_split``'s, and the t-tests are ``judge.t_tests``'s (the floats of ``t_test``). A failed split's
second look (``_divide``'s retry: judged again against the nearest points its sides found) is settled from the
deepest level up, as the recursion settles it after both sides.
"""

from __future__ import annotations

from typing import NamedTuple, Sequence

import numpy as np

from perfgate.history.blips import Found, row_blips
from perfgate.history.judge import t_tests
from perfgate.history.search import MIN_SIDE, RETRIES, WEAK_FACTOR, WINDOW, is_piecewise_constant, split_factors
from perfgate.history.segments import Values, by_length

_CELLS = 1 << 18  # distance-matrix cells a batch of splits holds at once (2 MB: it stays in the processor's cache)


def best_splits(values: Values, starts: np.ndarray, sizes: np.ndarray) -> np.ndarray:
    """``best_split(values[start:start + size])`` per segment (flat start), -1 where too short."""
    splits = np.full(len(starts), -1, dtype=np.int64)
    for n, group in by_length(sizes):
        if n < 2 * MIN_SIDE:
            continue
        factors, left_pairs, right_pairs, first = split_factors(n, MIN_SIDE)
        step = max(_CELLS // (n * n), 1)
        for at in range(0, len(group), step):
            part = group[at:at + step]
            rows = values.rows(starts[part], n)
            prefix = np.abs(rows[:, :, None] - rows[:, None, :]).cumsum(1).cumsum(2)
            at_end = prefix[:, MIN_SIDE - 1:n - MIN_SIDE, n - 1]
            within_left = np.diagonal(prefix, axis1=1, axis2=2)[:, MIN_SIDE - 1:n - MIN_SIDE]
            within_right = prefix[:, n - 1, n - 1][:, None] - 2 * at_end + within_left
            q = first * (2 * (at_end - within_left) / factors - within_left / left_pairs
                         - within_right / right_pairs)
            splits[part] = np.argmax(q, axis=1) + MIN_SIDE
    return splits


class _Level(NamedTuple):
    """One depth of the E-divisive trees: per node its segment (flat start and stop), retries left, parent node
    (an index of the level above, -1 at the roots), whether it is its parent's left side, its root, its split
    (flat; below start where too short to split) and whether the split's t-test passed."""

    start: np.ndarray
    stop: np.ndarray
    retries: np.ndarray
    parent: np.ndarray
    left: np.ndarray
    root: np.ndarray
    split: np.ndarray
    passed: np.ndarray


_NONE = np.iinfo(np.int64).max  # no point found (as the lowest one)


def divide_many(values: Values, starts: np.ndarray, stops: np.ndarray, p_value: float) -> list[list[int]]:
    """``_divide`` on each flat segment [start, stop): the flat indexes of the points it finds."""
    levels: list[_Level] = []
    start, stop = starts, stops
    retries = np.full(len(starts), RETRIES, dtype=np.int64)
    parent = np.full(len(starts), -1, dtype=np.int64)
    left = np.ones(len(starts), dtype=bool)
    root = np.arange(len(starts))
    while len(start):
        split = start + best_splits(values, start, stop - start)
        searched = split >= start
        passed = np.zeros(len(start), dtype=bool)
        passed[searched] = t_tests(values, start[searched], split[searched], stop[searched]) <= p_value
        levels.append(_Level(start, stop, retries, parent, left, root, split, passed))
        deeper = np.flatnonzero(searched & (passed | (retries > 0)))
        start = np.concatenate((start[deeper], split[deeper]))
        stop = np.concatenate((split[deeper], stop[deeper]))
        retries = np.tile(np.where(passed[deeper], RETRIES, retries[deeper] - 1), 2)
        parent, root = np.tile(deeper, 2), np.tile(root[deeper], 2)
        left = np.repeat(np.array([True, False]), len(deeper))
    found: list[list[int]] = [[] for _ in range(len(starts))]
    for level, adds in zip(levels, _settle(values, levels, p_value)):
        for at, point in zip(level.root[adds].tolist(), level.split[adds].tolist()):
            found[at].append(point)
    return found


def _settle(values: Values, levels: list[_Level], p_value: float) -> list[np.ndarray]:
    """Per level, which nodes add their split: those whose t-test passed, and the failed splits with retries
    whose sides found points, judged again between the nearest of them (``_divide``), from the deepest level up
    (each node's lowest and highest point found at or below it carried to its parent)."""
    adds_by_level: list[np.ndarray] = []
    below: tuple[np.ndarray, np.ndarray, _Level] | None = None
    for level in reversed(levels):
        size = len(level.start)
        low, high = np.full(size, _NONE, dtype=np.int64), np.full(size, -1, dtype=np.int64)
        left_high, right_low = np.full(size, -1, dtype=np.int64), np.full(size, _NONE, dtype=np.int64)
        if below is not None:
            child_low, child_high, child = below
            np.minimum.at(low, child.parent, child_low)
            np.maximum.at(high, child.parent, child_high)
            left_high[child.parent[child.left]] = child_high[child.left]
            right_low[child.parent[~child.left]] = child_low[~child.left]
        adds = level.passed.copy()
        again = np.flatnonzero(~level.passed & (level.retries > 0) & (high >= 0))
        if len(again):
            nearest_left = np.where(left_high[again] >= 0, left_high[again], level.start[again])
            nearest_right = np.where(right_low[again] != _NONE, right_low[again], level.stop[again])
            adds[again] = t_tests(values, nearest_left, level.split[again], nearest_right) <= p_value
        high = np.where(adds, np.maximum(high, level.split), high)
        low = np.where(adds, np.minimum(low, level.split), low)
        below = (low, high, level)
        adds_by_level.append(adds)
    return adds_by_level[::-1]


def window_search_many(series: Sequence[np.ndarray], p_value: float, window: int = WINDOW,
                       starts: Sequence[int] | None = None) -> list[tuple[list[int], list[int], int]]:
    """``window_search(s, p_value, window, start)`` for each series and start, the windows of all series a round
    at a time; each window's blips those of its whole series (``blips.row_blips``) that it holds."""
    values = Values(series)
    blips = _series_blips(series)
    weak = p_value * WEAK_FACTOR
    step = max(window // 2, 1)
    start = list(starts) if starts is not None else [0] * len(series)
    found: list[list[int]] = [[] for _ in series]
    results: list[tuple[list[int], list[int], int]] = [([], [], 0)] * len(series)
    active = list(range(len(series)))
    while active:
        for k in active:
            if start[k] >= len(series[k]):
                results[k] = sorted(set(found[k])), sorted(set(found[k])), start[k]
        active = [k for k in active if start[k] < len(series[k])]
        picked = np.array(active, dtype=np.int64)
        first = np.array([start[k] for k in active], dtype=np.int64)
        last = np.minimum(first + window, values.lengths[picked])
        windows = values.despiked(values.offsets[picked] + first, last - first)  # each window's own spikes out
        following = []
        for k, offset, stop, points in zip(active, (windows.offsets - first).tolist(), last.tolist(),
                                           divide_many(windows, windows.offsets, windows.offsets + windows.lengths,
                                                       weak)):
            before = len(found[k])
            found[k] += [point - offset for point in points]
            split = max(found[k][before:], default=0)  # the next window starts at a split, not at a blip's edge
            raw = series[k][start[k]:stop]  # blips are judged on the window's own values, spikes and all
            found[k] += _window_edges(blips[k], start[k], stop, is_piecewise_constant(raw))
            if stop < start[k] + window:
                results[k] = sorted(set(found[k])), sorted(set(found[k][:before])), start[k]
                continue
            start[k] = max(start[k] + step, split)
            if stop == len(series[k]):
                results[k] = sorted(set(found[k])), sorted(set(found[k])), start[k]
            else:
                following.append(k)
        active = following
    return results


class _Blip(NamedTuple):
    """A blip of a whole series: its edges (candidates), its context's columns [begin, end), its rule's kind."""

    first: int
    after: int
    begin: int
    end: int
    exact: bool


def _window_edges(blips: list[_Blip], start: int, stop: int, exact: bool) -> list[int]:
    """The edges of the blips ``blips.scan`` finds in the series' window [start, stop) (``exact``: its kind)."""
    return [edge for blip in blips if blip.exact == exact and blip.begin >= start and blip.end <= stop
            for edge in (blip.first, blip.after)]


def _series_blips(series: Sequence[np.ndarray]) -> list[list[_Blip]]:
    """Per series, its blips of either kind (``blips.row_blips``, the series of one length as one array): each
    one's first commit, the first after it, and its context's columns [begin, end), for the rule that found it."""
    found: list[list[_Blip]] = [[] for _ in series]
    by_length: dict[int, list[int]] = {}
    for k, values in enumerate(series):
        by_length.setdefault(len(values), []).append(k)
    for group in by_length.values():
        blips: Found = row_blips(np.array([series[k] for k in group]))
        for row, start, width, begin, end, exact in zip(blips.row.tolist(), blips.start.tolist(),
                                                        blips.width.tolist(), blips.begin.tolist(),
                                                        blips.end.tolist(), blips.exact.tolist()):
            found[group[row]].append(_Blip(start, start + width, begin, end, exact))
    return found
