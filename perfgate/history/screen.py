"""The screen of many series' windows at once (``loud_windows``): where ``search.window_search`` might find a
candidate, judged for the rows of one array (one series each, of one length) with the search's own windows,
splits and t-tests, so that the series it clears (most of a history's) need no search of their own.

A window's E-divisive split is judged by its t-test; where that fails, the best split of each side is judged as
well (the search's retry). The sides' splits need each point's distances to the points before the split, a
quadratic sum per row; but a side none of whose splits could pass its t-test is calm whichever split wins, and
the t-statistic of every split of a side comes from the row's prefix sums at linear cost. So the sides are
bounded first (``_sides_calm``): only the rows where some split of a side comes near the p-value are searched
side by side.
"""

from __future__ import annotations

import functools
from typing import NamedTuple

import numpy as np

from perfgate.history.blips import exact_rows, row_blips, window_blips
from perfgate.history.changes import P_VALUE
from perfgate.history.search import MIN_SIDE, WEAK_FACTOR, WINDOW
from perfgate.history.spikes import despike
from perfgate.history.stats import stdtr, stdtrit

SCREEN_ROWS = 2048  # series loud_windows judges at once
# The bound's t-statistic limit is where the p-value is this much above the search's: t-statistics below it give
# p-values above the search's, whatever the last bits of the t-test's arithmetic.
BOUND_MARGIN = 1.01
TAME = 1e100  # values (from the window's first) past this may overflow the sums: such rows are searched side by side


@np.errstate(over="ignore", invalid="ignore")  # values past TAME overflow the sums: NaN, never calm, searched alone
def loud_windows(matrix: np.ndarray, p_value: float = P_VALUE, window: int = WINDOW, fresh: int = 0) -> np.ndarray:
    """For rows of equal length (one series each), the start of each row's first window that the search might find
    a candidate in, -1 where ``weak_change_points`` finds nothing in the row: the same windows, splits and t-tests
    as the search, for many series at once (most series of a history have no change). The windows before it find
    nothing, so ``window_search`` of the row from that start finds what it finds from 0. Blips
    (``perfgate.history.blips``) are looked for where they reach column ``fresh`` or later: a tail the screen
    cleared before, one value longer, holds no other."""
    if len(matrix) > SCREEN_ROWS:  # a few MB at a time: the arrays stay in the processor's cache
        return np.concatenate([loud_windows(matrix[at:at + SCREEN_ROWS], p_value, window, fresh)
                               for at in range(0, len(matrix), SCREEN_ROWS)])
    rows, n = matrix.shape
    first = np.full(rows, -1, dtype=np.int64)
    if n < 2 * MIN_SIDE:
        return first
    quiet = np.ones(rows, dtype=bool)
    weak = p_value * WEAK_FACTOR
    step = max(window // 2, 1)
    blips = row_blips(matrix, _blip_floor(matrix, window, fresh))  # judged once; each window takes its own
    for start in range(0, n, step):
        stop = min(start + window, n)
        active = np.flatnonzero(quiet)  # a row found loud already has its first loud window: the later ones are moot
        if not len(active):
            break
        raw = matrix[active, start:stop]
        blipped = window_blips(matrix, blips, active, start, stop, max(fresh - start, 0))  # edges: candidates
        quiet[active[blipped]] = False
        first[active[blipped]] = start
        part = despike(raw)  # the search's windows, their spikes out as the search takes them
        part = part - part[:, :1]  # from the window's first value: the sums of squares keep their precision
        varied = ~np.all(part == 0.0, axis=1) & ~blipped  # a window of one value: the t-test finds nothing
        active, part = active[varied], part[varied]  # (exact counters mostly): calm, no sums needed
        whole, earlier = _distance_sums(part)
        none = np.zeros_like(whole)
        sums = np.zeros((len(active), part.shape[1] + 1))
        squares = np.zeros_like(sums)
        sums[:, 1:] = part.cumsum(1)
        squares[:, 1:] = (part * part).cumsum(1)
        every = np.arange(len(active))
        low, high = np.zeros(len(active), dtype=np.int64), np.full(len(active), part.shape[1], dtype=np.int64)
        at, passed = _split_many((earlier, none, whole), sums, squares, every, low, high, weak)
        calm = ~passed
        checked = ~passed & (at > 0)  # a failed split: its sides are searched too, where a split of them may pass
        checked &= ~_sides_calm(part, sums, squares, at, weak)
        before_split = _distance_sums(part, np.where(checked, at, 0))[0]
        for side_low, side_high, to_low, to_high in ((low, at, none, before_split), (at, high, before_split, whole)):
            _, side = _split_many((earlier, to_low, to_high), sums, squares, every[checked], side_low[checked],
                                  side_high[checked], weak)
            calm &= ~side
        quiet[active] = calm
        first[active[~calm]] = start
        if stop == n:
            break
    return first


def _blip_floor(matrix: np.ndarray, window: int, fresh: int) -> int:
    """The first column a blip ``loud_windows`` may find must reach: ``fresh``, or the start of a window that
    reaches past ``fresh`` where some row's first ``fresh`` columns of it are of the other kind (a window judged as the other kind may hold any blip)."""
    n = matrix.shape[1]
    for start in range(0, min(fresh, n), max(window // 2, 1)):
        part = matrix[:, start:min(start + window, n)]
        if fresh - start <= part.shape[1] and (exact_rows(part[:, :fresh - start]) != exact_rows(part)).any():
            return start
    return fresh


def _sides_calm(part: np.ndarray, sums: np.ndarray, squares: np.ndarray, at: np.ndarray,
                p_value: float) -> np.ndarray:
    """Per row, whether no split of either side of ``at`` (``[0, at)`` and ``[at, n)``, splits at least
    ``MIN_SIDE`` from each end) comes near passing the t-test at ``p_value``: the sides' searches
    (``_split_many``, whichever split each picks) then pass nothing. Every split's t-statistic is compared with its
    side's limit (``_SideTables``) as t^2 < limit^2, from the prefix sums (``sums``, ``squares``): no spread is
    not calm, nor is a row whose values could overflow the sums."""
    rows, width = sums.shape
    tables = _side_tables(p_value, width - 1)
    on_left = np.arange(width)[None, :] < at[:, None]
    row = np.arange(rows)
    sums_at, squares_at = sums[row, at][:, None], squares[row, at][:, None]
    with np.errstate(over="ignore", invalid="ignore"):  # an overflow is no calm: NaN compares false
        s1 = sums - np.where(on_left, 0.0, sums_at)
        s2 = np.where(on_left, sums_at, sums[:, -1:]) - sums
        q1 = squares - np.where(on_left, 0.0, squares_at)
        q2 = np.where(on_left, squares_at, squares[:, -1:]) - squares
        inverse_left, inverse_right = tables.inverse_left[at], tables.inverse_right[at]
        difference = s1 * inverse_left - s2 * inverse_right
        pooled = (q1 - s1 * s1 * inverse_left) + (q2 - s2 * s2 * inverse_right)  # times the degrees of freedom
        below = (difference * difference < tables.scale[at] * pooled) | tables.unsplit[at]
    calm: np.ndarray = below.all(axis=1) & (np.abs(part).max(axis=1, initial=0.0) <= TAME)
    return calm


class _SideTables(NamedTuple):
    """Per ``at`` (a row) and split (a column) of ``_sides_calm``'s windows of n points: 1 / the split's points on
    its left and on its right, limit^2 (1/n1 + 1/n2) / (n1 + n2 - 2), and whether the split is none its side's
    search judges (too near an end; 0 in the others there)."""

    inverse_left: np.ndarray
    inverse_right: np.ndarray
    scale: np.ndarray
    unsplit: np.ndarray


@functools.cache
def _side_tables(p_value: float, n: int) -> _SideTables:
    at, split = np.arange(n + 1)[:, None], np.arange(n + 1)[None, :]
    low, high = np.where(split < at, 0, at), np.where(split < at, at, n)
    n1, n2 = (split - low).astype(float), (high - split).astype(float)
    unsplit = (n1 < MIN_SIDE) | (n2 < MIN_SIDE)
    n1[unsplit], n2[unsplit] = 1.0, 1.0
    limits = _t_limits(p_value, n)[high - low]
    scale = np.where(unsplit, 0.0, limits * limits * (1 / n1 + 1 / n2) / np.maximum(n1 + n2 - 2, 1))
    return _SideTables(np.where(unsplit, 0.0, 1 / n1), np.where(unsplit, 0.0, 1 / n2), scale, unsplit)


@functools.cache
def _t_limits(p_value: float, n: int) -> np.ndarray:
    """Per side length (0..n), a t-statistic below which the two-sided p-value of Student's t-test with that many
    points (less 2 degrees of freedom) is over ``p_value`` times ``BOUND_MARGIN``: the search's test fails."""
    limits = np.zeros(n + 1)
    for size in range(2 * MIN_SIDE, n + 1):
        limit = -stdtrit(size - 2, p_value * BOUND_MARGIN / 2)
        while not 2.0 * stdtr(size - 2, -limit) > p_value:  # the inverse's own rounding
            limit *= 0.999
        limits[size] = limit
    return limits


def _distance_sums(part: np.ndarray, cut: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """[row, i]: the sum of |x_i - x_j| over j < cut[row] (every j where ``cut`` is None), and over j < i (where
    ``cut`` is None; zeros otherwise), in one row of ``part``. Summed in j's order one j at a time over all rows
    (the floats of a cumsum over j), never held for every j: the screen needs only these sums, and a
    rows x m x m array of them cost most of its time."""
    rows, m = part.shape
    if cut is not None:
        return _sums_before(part, cut), np.zeros((rows, m))
    total, earlier = np.zeros((rows, m)), np.zeros((rows, m))
    distance = np.empty((rows, m))
    for j in range(m):
        np.subtract(part[:, j:j + 1], part, out=distance)
        np.abs(distance, out=distance)
        total += distance
        if j + 1 < m:
            earlier[:, j + 1] = total[:, j + 1]
    return total, earlier


def _sums_before(part: np.ndarray, cut: np.ndarray) -> np.ndarray:
    """``_distance_sums`` up to each row's cut: the rows by cut, longest first, so that the j-th point's distances
    are added to the rows whose cut is past j only (a leading block, no mask), half the work of adding them to all."""
    order = np.argsort(-cut, kind="stable")
    ordered = part[order]
    reach = -cut[order]
    total, distance = np.zeros_like(ordered), np.empty_like(ordered)
    for j, count in enumerate(np.searchsorted(reach, -np.arange(1, int(cut.max(initial=0)) + 1), "right").tolist()):
        block, out = ordered[:count], distance[:count]
        np.subtract(block[:, j:j + 1], block, out=out)
        np.abs(out, out=out)
        total[:count] += out
    sums = np.empty_like(total)
    sums[order] = total
    return sums


def _split_many(distances: tuple[np.ndarray, np.ndarray, np.ndarray], sums: np.ndarray, squares: np.ndarray,
                rows: np.ndarray, low: np.ndarray, high: np.ndarray, p_value: float) -> tuple[np.ndarray, np.ndarray]:
    """``best_split`` and its t-test on part[row, low:high] for each row: the split (0 where too short) and
    whether it passes ``p_value`` (NaN, from a segment without spread, counts as passing: the row is searched
    one at a time). Q's block sums from each point's distances to the points before it and to the whole range:
    ``distances`` holds, per row and point, the sums of its distances to the points before it, before ``low``
    and before ``high`` (``_distance_sums``)."""
    before_each, before_low, before_high = distances
    at = np.zeros(len(before_each), dtype=np.int64)
    passed = np.zeros(len(before_each), dtype=bool)
    size = high - low
    long_enough = size >= 2 * MIN_SIDE
    rows, low, high, size = rows[long_enough], low[long_enough], high[long_enough], size[long_enough]
    if len(rows) == 0:
        return at, passed
    q = _energies(distances, rows, low, high)
    split = np.argmax(q, axis=1)
    n1, n2 = (split - low).astype(float), (high - split).astype(float)
    s1 = sums[rows, split] - sums[rows, low]
    s2 = sums[rows, high] - sums[rows, split]
    q1 = squares[rows, split] - squares[rows, low]
    q2 = squares[rows, high] - squares[rows, split]
    pooled = ((q1 - s1 * s1 / n1) + (q2 - s2 * s2 / n2)) / (n1 + n2 - 2)
    with np.errstate(divide="ignore", invalid="ignore"):
        t_value = np.abs(s1 / n1 - s2 / n2) / np.sqrt(pooled * (1 / n1 + 1 / n2))
        p_values = 2.0 * stdtr(n1 + n2 - 2, -t_value)
    at[rows] = split
    passed[rows] = ~(p_values > p_value)  # NaN (no spread) passes: searched one at a time
    return at, passed


def _energies(distances: tuple[np.ndarray, np.ndarray, np.ndarray], rows: np.ndarray, low: np.ndarray,
              high: np.ndarray) -> np.ndarray:
    """``_split_many``'s Q of every split (a column; -inf where a side would hold fewer than ``MIN_SIDE`` points)
    of part[row, low:high] for each row. Where every row is judged whole (the first look at a window), the sums
    are read as they are and the counts are one row for all: the same floats, without a mask and two gathers."""
    before_each, before_low, before_high = distances
    m = before_each.shape[1]
    t = np.arange(m + 1)[None, :]
    if len(rows) == len(before_each) and not low.any() and bool((high == m).all()):
        earlier, whole = before_each, before_high  # less the sums before 0, zeros: the same floats
        left, right, size = t.astype(float), (m - t).astype(float), np.full((1, 1), m)
        total_at = np.full(len(rows), m)
    else:
        k = np.arange(m)[None, :]
        inside = (k >= low[:, None]) & (k < high[:, None])
        to_low = before_low[rows]
        earlier = np.where(inside, before_each[rows] - to_low, 0.0)
        whole = np.where(inside, before_high[rows] - to_low, 0.0)
        left, right, size = (t - low[:, None]).astype(float), (high[:, None] - t).astype(float), (high - low)[:, None]
        total_at = high
    within_left = np.zeros((len(rows), m + 1))
    rows_left = np.zeros_like(within_left)
    np.cumsum(2 * earlier, axis=1, out=within_left[:, 1:])
    np.cumsum(whole, axis=1, out=rows_left[:, 1:])
    total = rows_left[np.arange(len(rows)), total_at][:, None]
    cross = rows_left - within_left
    within_right = total - 2 * cross - within_left
    valid = (left >= MIN_SIDE) & (right >= MIN_SIDE)
    with np.errstate(divide="ignore", invalid="ignore"):
        q = (left * right / size) * (2 * cross / (left * right) - within_left / (left * (left - 1))
                                     - within_right / (right * (right - 1)))
    energies: np.ndarray = np.where(valid, q, -np.inf)
    return energies
