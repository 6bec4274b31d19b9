"""Change points of one series: E-divisive means with a t-test, as Apache Otava (Hunter) does it.

Matteson & James (2014) find the split of a sequence that maximises an energy statistic; Hunter (Fleming et
al. 2023, arXiv:2301.03034) replaces their permutation test by Student's t-test between the two sides
(deterministic and fast), runs it in sliding windows, keeps "weak" change points at 10x the p-value, then
drops the weakest one at a time until every one left passes the final p-value (and a minimum magnitude)
against its neighbours. Written here on numpy/scipy because Otava's package pins old numpy/scipy and pulls
cloud SDKs.

An exact counter (instructions, bytes moved) is the same number run after run until the code changes (now and
then another code path adds a little): its series goes through the same search and tests, its new value must
hold (be the median after the step), and each step is named at the exact commit where the new value starts.
"""

from __future__ import annotations

import functools
import math
from typing import NamedTuple, Sequence

import numpy as np

from perfgate.history.stats import stdtr

WINDOW = 50  # Otava's default window; windows advance by half of it
MIN_SIDE = 3  # fewest points on either side of a split the t-test judges
WEAK_FACTOR = 10.0  # weak change points: at 10x the final p-value
# A segment shorter than half a window between two change points (a regression reverted soon after) could sit in
# any of many places, with any of many lengths: in noise, one passes 0.0001 now and then (the search's retries
# find them: 97 false points in 7,600 flat series of 200 commits). Against such a segment a change point must
# pass a p-value 100 times smaller (3 found in the same series; a 3-commit regression of 5% in 1% noise reaches
# about 1e-10).
SHORT = 25
SHORT_FACTOR = 0.01
SEEN_HOLD = 10  # commits an exact counter's value seen before its step must hold to be a new level
SCREEN_ROWS = 2048  # series loud_windows judges at once
RETRIES = 1  # how many failed splits deep E-divisive still searches a window's sides
# The final p-value. Otava defaults to 0.001; a history gates thousands of series, and on planted series
# (docs/history.md) 0.0001 kept every step of 3% in 1% noise and dropped most false change points.
P_VALUE = 0.0001


class ChangePoint(NamedTuple):
    position: int  # the first point after the change
    p_value: float
    before: float  # median of the segment before (back to the previous change point)
    after: float  # median of the segment after (up to the next change point)
    exact: bool  # a step of a piecewise-constant series


def t_test(left: np.ndarray, right: np.ndarray) -> float:
    """Two-sided p-value of Student's t-test (pooled variance). Sides without spread: 0 if they differ, else 1."""
    n1, n2 = len(left), len(right)
    if n1 < 1 or n2 < 1 or n1 + n2 < 3:
        return 1.0
    m1, m2 = float(left.sum()) / n1, float(right.sum()) / n2
    d1, d2 = left - m1, right - m2  # squared deviations summed as np.var does, without its overhead
    pooled = (float(np.dot(d1, d1)) + float(np.dot(d2, d2))) / (n1 + n2 - 2)
    if pooled <= 0.0:
        return 0.0 if m1 != m2 else 1.0
    t = abs(m1 - m2) / math.sqrt(pooled * (1.0 / n1 + 1.0 / n2))
    return float(2.0 * stdtr(n1 + n2 - 2, -t))


def best_split(values: np.ndarray, min_side: int = MIN_SIDE) -> int:
    """The split (1..n-1) maximising the E-divisive energy statistic Q (alpha = 1); -1 when too short.

    Q(t) = t(n-t)/n * (2/(t(n-t)) sum|x-y| - 1/C(t,2) sum|x-x'| - 1/C(n-t,2) sum|y-y'|), every block sum from
    one 2-D prefix sum of the distance matrix: all splits at once."""
    n = len(values)
    if n < 2 * min_side:
        return -1
    distances = np.abs(values[:, None] - values[None, :])
    prefix = distances.cumsum(0).cumsum(1)  # block [0, a) x [0, b) at [a - 1, b - 1]
    sizes, left_pairs, right_pairs, first = split_factors(n, min_side)
    at_end = prefix[min_side - 1:n - min_side, n - 1]
    within_left = prefix.diagonal()[min_side - 1:n - min_side]
    within_right = prefix[n - 1, n - 1] - 2 * at_end + within_left
    q = first * (2 * (at_end - within_left) / sizes - within_left / left_pairs - within_right / right_pairs)
    return int(np.argmax(q)) + min_side


@functools.cache
def split_factors(n: int, min_side: int) -> tuple[np.ndarray, ...]:
    """``best_split``'s counts per split t (min_side..n - min_side) as floats: t(n - t), t(t - 1),
    (n - t)(n - t - 1) and t(n - t)/n, the same floats as computed from the integers each time."""
    t = np.arange(min_side, n - min_side + 1)
    m = n - t
    return (t * m).astype(float), (t * (t - 1)).astype(float), (m * (m - 1)).astype(float), t * m / n


def _divide(values: np.ndarray, start: int, stop: int, p_value: float, found: list[int],
            retries: int = RETRIES) -> None:
    """E-divisive on values[start:stop]: split where Q peaks while the t-test passes, then each side.

    A split that fails is not the end of the segment: a short-lived change (a regression reverted after a few
    commits) puts Q's peak on one of its edges, where the t-test sees the other edge's points as noise. Each side
    is searched in turn (``retries`` failures deep), and a point found there re-judges the failed split against
    the segment it now bounds."""
    split = best_split(values[start:stop])
    if split < 0:
        return
    at = start + split
    if t_test(values[start:at], values[at:stop]) <= p_value:
        found.append(at)
        _divide(values, start, at, p_value, found)
        _divide(values, at, stop, p_value, found)
        return
    if retries <= 0:
        return
    before = len(found)
    _divide(values, start, at, p_value, found, retries - 1)
    _divide(values, at, stop, p_value, found, retries - 1)
    if len(found) == before:
        return
    left = max((f for f in found[before:] if f < at), default=start)
    right = min((f for f in found[before:] if f > at), default=stop)
    if at not in found[before:] and t_test(values[left:at], values[at:right]) <= p_value:
        found.append(at)


def window_search(values: np.ndarray, p_value: float, window: int = WINDOW,
                  start: int = 0) -> tuple[list[int], list[int], int]:
    """E-divisive in sliding windows from ``start``, at ``WEAK_FACTOR`` x ``p_value``: every candidate, the
    candidates of the windows that had their full length, and where a search over more points resumes (the
    first window cut short by the series' end). A window of full length sees no later point, so a history
    that grows by a commit redoes only the windows from there (``perfgate.history.cache``)."""
    weak = p_value * WEAK_FACTOR
    found: list[int] = []
    step = max(window // 2, 1)
    while start < len(values):
        stop = min(start + window, len(values))
        before = len(found)
        _divide(values, start, stop, weak, found)
        if stop < start + window:
            return sorted(set(found)), sorted(set(found[:before])), start
        start = max(start + step, max(found[before:], default=0))
        if stop == len(values):
            break
    return sorted(set(found)), sorted(set(found)), start


def weak_change_points(values: np.ndarray, p_value: float, window: int = WINDOW) -> list[int]:
    """Candidates at ``WEAK_FACTOR`` x ``p_value``, from E-divisive in sliding windows, merged. A window starts
    half a window after the previous one, or at the last change found in it when that is later (as Otava):
    the next window judges the new level from its first point."""
    return window_search(values, p_value, window)[0]


def quiet_resume(length: int, window: int = WINDOW) -> int:
    """Where ``window_search`` resumes on ``length`` points from 0 when no window found anything."""
    step, start = max(window // 2, 1), 0
    while start < length:
        if start + window > length:
            return start
        start += step
        if start - step + window == length:
            break
    return start


def median(values: np.ndarray) -> float:
    """``np.median`` of a segment, the same float, without its generic machinery (a third of judging the candidates
    of 18,000 series): the same partition, and the middle value(s) summed as ``np.mean`` sums them (from 0.0: a
    -0.0 comes out 0.0)."""
    half = len(values) // 2
    if len(values) % 2:
        return float(np.partition(values, (half, -1))[half]) + 0.0
    if not half:
        return float(np.median(values))
    part = np.partition(values, (half - 1, half, -1))
    return (float(part[half - 1]) + (0.0 + float(part[half]))) / 2.0


def sides(values: np.ndarray, points: Sequence[int], k: int) -> tuple[np.ndarray, np.ndarray]:
    start = points[k - 1] if k > 0 else 0
    stop = points[k + 1] if k + 1 < len(points) else len(values)
    return values[start:points[k]], values[points[k]:stop]


def _magnitude(left: np.ndarray, right: np.ndarray) -> float:
    before = median(left)
    return abs(median(right) / before - 1.0) if before else float(abs(median(right)) > 0)


def _passes(left: np.ndarray, right: np.ndarray, p: float, p_value: float, min_change: float, exact: bool) -> bool:
    """A change point's test against its neighbours' segments (``p``: their t-test). An exact counter's new
    value must also hold: be the median of at least ``MIN_SIDE`` commits after the step, and of ``SEEN_HOLD``
    where it already came up before the step (a value seen now and then, a few times in a row by chance, is no
    new level)."""
    if p > p_value or (min_change > 0 and _magnitude(left, right) < min_change):
        return False
    if not exact:
        return True
    new = median(right)
    if min(len(left), len(right)) < MIN_SIDE or median(left) == new:
        return False
    return len(right) >= SEEN_HOLD or not bool(np.any(left == new))


def change_points(values: Sequence[float] | np.ndarray, p_value: float = P_VALUE, min_change: float = 0.0,
                  window: int = WINDOW) -> list[ChangePoint]:
    """The change points of a series in order: each passes ``p_value`` and ``min_change`` (relative) against
    the segments between its neighbours. An exact counter's go through the same search and tests, and each is
    then named at the commit where its new value starts."""
    series = np.asarray(values, dtype=float)
    if len(series) < 2 or float(series.min()) == float(series.max()):
        return []
    return merge(series, weak_change_points(series, p_value, window), p_value, min_change)


def merge(series: np.ndarray, candidates: Sequence[int], p_value: float = P_VALUE,
          min_change: float = 0.0) -> list[ChangePoint]:
    """The candidates that hold: the weakest is dropped while any fails its tests against its neighbours."""
    if len(series) < 2 or not candidates or float(series.min()) == float(series.max()):
        return []
    exact = is_piecewise_constant(series)
    points = list(candidates)
    judged: dict[tuple[int, int, int], tuple[bool, float]] = {}  # a removal changes only its neighbours' scores
    while points:
        scores = []
        for k in range(len(points)):
            key = (points[k - 1] if k else 0, points[k], points[k + 1] if k + 1 < len(points) else len(series))
            if key not in judged:
                left, right = sides(series, points, k)
                p = t_test(left, right)
                limit = p_value * SHORT_FACTOR if min(len(left), len(right)) < SHORT else p_value
                judged[key] = (_passes(left, right, p, limit, min_change, exact), -p)
            scores.append(judged[key])
        weakest = min(range(len(points)), key=lambda k: scores[k])
        if scores[weakest][0]:
            break
        del points[weakest]
    if exact:
        points = exact_starts(series, points)
    result = []
    for k, at in enumerate(points):
        left, right = sides(series, points, k)
        key = (points[k - 1] if k else 0, at, points[k + 1] if k + 1 < len(points) else len(series))
        p = t_test(left, right) if exact else -judged[key][1]  # the last round's test (an exact step has moved)
        result.append(ChangePoint(at, p, median(left), median(right), exact))
    return result


def is_piecewise_constant(series: np.ndarray) -> bool:
    """Most consecutive points equal exactly: an exact counter, not a noisy measurement."""
    same = np.count_nonzero(series[1:] == series[:-1])
    return bool(same >= 0.75 * (len(series) - 1))


def exact_starts(series: np.ndarray, points: list[int], reach: int = MIN_SIDE) -> list[int]:
    """Each step of an exact counter moved (at most ``reach`` commits, within its segments) to the first commit
    of its new value: the search's split can land beside it when an odd value sits next to the step."""
    moved: list[int] = []
    for k, at in enumerate(points):
        start = moved[-1] + 1 if moved else 1
        stop = points[k + 1] if k + 1 < len(points) else len(series)
        new = median(series[at:stop])
        first = at
        while first < min(at + reach, stop - 1) and series[first] != new:
            first += 1
        while first > max(at - reach, start) and series[first - 1] == new:
            first -= 1
        moved.append(first if series[first] == new else at)
    return moved


def loud_windows(matrix: np.ndarray, p_value: float = P_VALUE, window: int = WINDOW) -> np.ndarray:
    """For rows of equal length (one series each), the start of each row's first window that the search might find
    a candidate in, -1 where ``weak_change_points`` finds nothing in the row: the same windows, splits and t-tests
    as the search, for many series at once (most series of a history have no change). The windows before it find
    nothing, so ``window_search`` of the row from that start finds what it finds from 0."""
    if len(matrix) > SCREEN_ROWS:  # a few MB at a time: the arrays stay in the processor's cache
        return np.concatenate([loud_windows(matrix[at:at + SCREEN_ROWS], p_value, window)
                               for at in range(0, len(matrix), SCREEN_ROWS)])
    rows, n = matrix.shape
    first = np.full(rows, -1, dtype=np.int64)
    if n < 2 * MIN_SIDE:
        return first
    quiet = np.ones(rows, dtype=bool)
    weak = p_value * WEAK_FACTOR
    step = max(window // 2, 1)
    for start in range(0, n, step):
        stop = min(start + window, n)
        active = np.flatnonzero(quiet)  # a row found loud already has its first loud window: the later ones are moot
        if not len(active):
            break
        part = matrix[active, start:stop]
        part = part - part[:, :1]  # from the window's first value: the sums of squares keep their precision
        varied = ~np.all(part == 0.0, axis=1)  # a window of one value: the t-test finds nothing, side or whole
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
        checked = ~passed & (at > 0)  # a failed split: its sides are searched too
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
    m = before_each.shape[1]
    pick = np.arange(len(rows))
    k = np.arange(m)[None, :]
    inside = (k >= low[:, None]) & (k < high[:, None])
    to_low = before_low[rows]
    earlier = np.where(inside, before_each[rows] - to_low, 0.0)
    whole = np.where(inside, before_high[rows] - to_low, 0.0)
    within_left = np.zeros((len(rows), m + 1))
    rows_left = np.zeros_like(within_left)
    np.cumsum(2 * earlier, axis=1, out=within_left[:, 1:])
    np.cumsum(whole, axis=1, out=rows_left[:, 1:])
    total = rows_left[pick, high][:, None]
    cross = rows_left - within_left
    within_right = total - 2 * cross - within_left
    t = np.arange(m + 1)[None, :]
    left = (t - low[:, None]).astype(float)
    right = (high[:, None] - t).astype(float)
    valid = (left >= MIN_SIDE) & (right >= MIN_SIDE)
    with np.errstate(divide="ignore", invalid="ignore"):
        q = (left * right / size[:, None]) * (2 * cross / (left * right) - within_left / (left * (left - 1))
                                               - within_right / (right * (right - 1)))
    q = np.where(valid, q, -np.inf)
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
