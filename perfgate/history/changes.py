"""Change points of one series: E-divisive means with a t-test, as Apache Otava (Hunter) does it.

Matteson & James (2014) find the split of a sequence that maximises an energy statistic; Hunter (Fleming et
al. 2023, arXiv:2301.03034) replaces their permutation test by Student's t-test between the two sides
(deterministic and fast), runs it in sliding windows, keeps "weak" change points at 10x the p-value, then
drops the weakest one at a time until every one left passes the final p-value (and a minimum magnitude)
against its neighbours. Written here on numpy/scipy because Otava's package pins old numpy/scipy and pulls
cloud SDKs. A measured series is searched and judged with its spikes out (``perfgate.history.spikes``): a few
runs at 1.2-2x their value would otherwise hide a step or read as a short regression.

An exact counter (instructions, bytes moved) is the same number run after run until the code changes (now and
then another code path adds a little): its series goes through the same search and tests, its new value must
hold (be the median after the step), and each step is named at the exact commit where the new value starts.
"""

from __future__ import annotations

from typing import Mapping, NamedTuple, Sequence

import numpy as np

from perfgate.history.abrupt import ABRUPT_P, judged_points
from perfgate.history.blips import Blip, blip_levels, held
from perfgate.history.counter_levels import moves_level
from perfgate.history.excursions import excursion_p, short_sides_hold
from perfgate.history.modes import mix_edges
from perfgate.history.search import MIN_SIDE, WINDOW, is_piecewise_constant, weak_change_points
from perfgate.history.spikes import despike_one
from perfgate.history.stats import t_test
from perfgate.history.step_size import small_steps
from perfgate.history.wander import step_p, variogram

# A segment shorter than half a window between two change points (a regression reverted soon after) could sit in
# any of many places, with any of many lengths: in noise, one passes 0.0001 now and then (the search's retries
# find them: 97 false points in 7,600 flat series of 200 commits). Against such a segment a change point must
# pass a p-value 100 times smaller (3 found in the same series; a 3-commit regression of 5% in 1% noise reaches
# about 1e-10).
SHORT = 25
SHORT_FACTOR = 0.01
SEEN_HOLD = 10  # commits an exact counter's value seen before its step must hold to be a new level
# The final p-value. Otava defaults to 0.001; a history gates thousands of series, and on planted series
# (docs/history.md) 0.0001 kept every step of 3% in 1% noise and dropped most false change points.
P_VALUE = 0.0001


class ChangePoint(NamedTuple):
    position: int  # the first point after the change
    p_value: float
    before: float  # median of the segment before (back to the previous change point)
    after: float  # median of the segment after (up to the next change point)
    exact: bool  # a step of a piecewise-constant series
    gradual: bool = False  # no step: a slow movement the t-test passed (``merge``)


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
    new level). Any change point's medians must differ: the change is reported as their ratio, and a counter
    that flickers in a share of runs can pass the t-test on its means with the same median on both sides."""
    if p > p_value:
        return False
    new = median(right)
    if median(left) == new or (min_change > 0 and _magnitude(left, right) < min_change):
        return False
    if not exact:
        return True
    if min(len(left), len(right)) < MIN_SIDE:
        return False
    return len(right) >= SEEN_HOLD or not bool(np.any(left == new))


def change_points(values: Sequence[float] | np.ndarray, p_value: float = P_VALUE, min_change: float = 0.0,
                  window: int = WINDOW) -> list[ChangePoint]:
    """The change points of a series in order: each passes ``p_value`` and ``min_change`` (relative) against
    the segments between its neighbours, and is a step. An exact counter's go through the same search and tests,
    and each is then named at the commit where its new value starts."""
    return [point for point in movements(values, p_value, min_change, window) if not point.gradual]


def movements(values: Sequence[float] | np.ndarray, p_value: float = P_VALUE, min_change: float = 0.0,
              window: int = WINDOW) -> list[ChangePoint]:
    """``change_points``, and the gradual points among them (``merge``): what ``detect`` reports from."""
    series = np.asarray(values, dtype=float)
    if len(series) < 2 or float(series.min()) == float(series.max()):
        return []
    return merge(series, weak_change_points(series, p_value, window), p_value, min_change)


def merge(series: np.ndarray, candidates: Sequence[int], p_value: float = P_VALUE,
          min_change: float = 0.0) -> list[ChangePoint]:
    """The candidates that hold, and the blips two of them bound that hold (``perfgate.history.blips``, judged on
    their own): the weakest is dropped while any fails its tests against its neighbours, judged
    on the series with its spikes out (``perfgate.history.spikes``; an exact counter's as it is). A measured
    series' points that its t-test passed but that are no step (a line through their neighbourhood explains them,
    ``abrupt``, or the series' wander does, ``wander``) come after its steps as ``gradual`` points, each judged
    against its neighbours of both kinds: a slow movement, which ``detect`` reports where it adds up. Two steps that
    bound a short run of a multimodal series' usual values (``perfgate.history.modes``), and a step smaller than
    the series' noise (``perfgate.history.step_size``), are no change points."""
    if len(series) < 2 or not candidates or float(series.min()) == float(series.max()):
        return []
    blips, steps = held(series, candidates, is_piecewise_constant(series))
    found = sorted(_merged_steps(series, steps, p_value, min_change) + blip_points(series, blips))
    kinds = [(p.position, not (p.gradual or p.exact)) for p in found]
    dropped = mix_edges(series, kinds, p_value * SHORT_FACTOR, p_value) or small_steps(
        series, kinds, p_value * SHORT_FACTOR)
    if dropped:  # a short run of the series' usual modes, or steps inside its noise: judged again without them
        return merge(series, [at for at in candidates if at not in dropped], p_value, min_change)
    return found


def blip_points(series: np.ndarray, blips: Sequence[Blip]) -> list[ChangePoint]:
    """Each held blip's two edges (``perfgate.history.blips``), exact where the series is."""
    exact = is_piecewise_constant(series)
    return [point for blip in blips for p, before, level, after in [blip_levels(series, blip)] for point in (
        ChangePoint(blip.start, p, before, level, exact), ChangePoint(blip.start + blip.width, p, level, after, exact))]


def _merged_steps(series: np.ndarray, candidates: Sequence[int], p_value: float,
                  min_change: float) -> list[ChangePoint]:
    """``merge`` of the candidates that are no blip's edges."""
    exact = is_piecewise_constant(series)
    series = series if exact else despike_one(series)
    points, p_values, gradual = _merged(series, candidates, p_value, min_change, exact, None)
    if exact:
        return exact_points(series, points)
    gamma = variogram(series, points) if points else np.zeros(0)
    if not all_stand_out(series, points, p_value, gamma):
        return against_wander(series, candidates, set(gradual) | set(points), gamma, p_value, min_change)
    return _reported(series, points, p_values, set(gradual))


def against_wander(series: np.ndarray, candidates: Sequence[int], slow: set[int], gamma: np.ndarray, p_value: float,
                   min_change: float, known: Mapping[tuple[int, int, int], bool] | None = None) -> list[ChangePoint]:
    """``merge``'s end for a measured series (its spikes out) whose points (among ``slow``, with the gradual ones
    its first rounds dropped) do not all stand out of its noise (``gamma``, their variogram): its candidates judged
    again, each point against the noise too (``known``: whether some keys' points stand out, found beforehand)."""
    points, p_values, gradual = _merged(series, candidates, p_value, min_change, False, gamma, known)
    return _reported(series, points, p_values, (slow | set(gradual)) - set(points))


def _reported(series: np.ndarray, points: list[int], p_values: dict[int, float], slow: set[int]) -> list[ChangePoint]:
    """A measured series' change points, its steps ``points`` and its ``slow`` points, in order."""
    result = []
    for k, at in enumerate(points):
        left, right = sides(series, points, k)
        result.append(ChangePoint(at, p_values[at], median(left), median(right), False))
    return sorted(result + _slow_points(series, points, slow))


def _key(series: np.ndarray, points: Sequence[int], k: int) -> tuple[int, int, int]:
    return points[k - 1] if k else 0, points[k], points[k + 1] if k + 1 < len(points) else len(series)


def _merged(series: np.ndarray, candidates: Sequence[int], p_value: float, min_change: float, exact: bool,
            gamma: np.ndarray | None, known: Mapping[tuple[int, int, int], bool] | None = None
            ) -> tuple[list[int], dict[int, float], list[int]]:
    """``merge``'s rounds: the points left, the last round's p-value of each (its own test's, or its excursion's
    where that kept it), and the points dropped as gradual. Given a wandering series' variogram ``gamma``, a point must also pass ``wander.local_p``."""
    points = list(candidates)
    judged: dict[tuple[int, int, int], tuple[bool, float]] = {}  # a removal changes only its neighbours' scores
    kept: dict[int, float] = {}  # the last round's p-value of a point judged as an excursion's edge
    steps: set[int] = set()  # points a line through their neighbourhood does not explain, once gradual ones went
    gradual: list[int] = []
    while points:
        scores = []
        kept.clear()
        for k in range(len(points)):
            key = _key(series, points, k)
            if key not in judged:
                left, right = sides(series, points, k)
                p = t_test(left, right)
                limit = _limit(series, points, k, p_value)
                passes = _passes(left, right, p, limit, min_change, exact)
                passes = passes and (moves_level(series, *key, median(left), median(right)) if exact
                                     else short_sides_hold(left, right, SHORT, median(left), median(right)))
                judged[key] = (passes and (gamma is None or _stands_out(series, gamma, key, p_value, known)), -p)
            score = (judged[key][0] or points[k] in steps, judged[key][1])
            if not (score[0] or exact):  # the edge of a short excursion is judged with its other edge
                score = _as_excursion(series, points, k, score, p_value, min_change)
                if score[0] and gamma is not None and not _stands_out(series, gamma, key, p_value, known):
                    score = (False, score[1])
                if score[0]:
                    kept[points[k]] = -score[1]
            scores.append(score)
        weakest = min(range(len(points)), key=lambda k: scores[k])
        if scores[weakest][0]:
            if exact:
                break
            slopes, abrupt = gradual_points(series, points)
            steps |= {at for at, step in zip(points, abrupt.tolist()) if step}
            weakest = int(np.argmax(slopes))
            if not slopes[weakest] > ABRUPT_P:
                break
            gradual.append(points[weakest])
        del points[weakest]
    return points, {at: kept.get(at, -judged[_key(series, points, k)][1]) for k, at in enumerate(points)}, gradual


def _limit(series: np.ndarray, points: Sequence[int], k: int, p_value: float) -> float:
    """The p-value a point must pass: ``SHORT_FACTOR`` times smaller against a short segment."""
    left, right = sides(series, points, k)
    return p_value * SHORT_FACTOR if min(len(left), len(right)) < SHORT else p_value


def all_stand_out(series: np.ndarray, points: Sequence[int], p_value: float, gamma: np.ndarray) -> bool:
    """Whether every point of a measured series (its spikes out) is a step out of the noise whose variogram is
    ``gamma`` (``wander.variogram``; every one where that is empty)."""
    return not len(gamma) or all(_stands_out(series, gamma, _key(series, points, k), p_value)
                                 for k in range(len(points)))


def _stands_out(series: np.ndarray, gamma: np.ndarray, key: tuple[int, int, int], limit: float,
                known: Mapping[tuple[int, int, int], bool] | None = None) -> bool:
    """Whether a point of a wandering series is a step: it passes ``limit`` against the series' variogram
    (``wander.local_p``), or stands out of a line through its neighbourhood at every reach (``abrupt``: a step
    on a smooth wave, which the variogram reads as fast wander). ``known``: the answers for some keys at
    ``limit``, found beforehand (``judge.merge_many``: many series' points at once)."""
    if known is not None and key in known:
        return known[key]
    if step_p(gamma, series, *key) <= limit:
        return True
    start, at, stop = (np.array([index], dtype=np.int64) for index in key)
    return bool(judged_points(series, start, at, stop)[1][0])


def _slow_points(series: np.ndarray, steps: Sequence[int], slow: set[int]) -> list[ChangePoint]:
    """The ``slow`` points as ``gradual`` change points, each judged against its neighbours among the steps and
    the slow points (those whose medians are equal left out: no direction)."""
    every = sorted(slow | set(steps))
    found = []
    for k, at in enumerate(every):
        if at in slow:
            left, right = sides(series, every, k)
            before, after = median(left), median(right)
            if before != after:
                found.append(ChangePoint(at, t_test(left, right), before, after, False, True))
    return found


def gradual_points(series: np.ndarray, points: Sequence[int]) -> tuple[np.ndarray, np.ndarray]:
    """``abrupt.judged_points`` of each change point of one series (its segments bounded by its neighbours)."""
    at = np.array(points, dtype=np.int64)
    left = np.concatenate(([0], at[:-1]))
    right = np.concatenate((at[1:], [len(series)]))
    return judged_points(series, left, at, right)


def _as_excursion(series: np.ndarray, points: list[int], k: int, score: tuple[bool, float], p_value: float,
                  min_change: float) -> tuple[bool, float]:
    """A failing change point's score as an edge of the short excursions it bounds (``perfgate.history.excursions``):
    their smallest t-test p-value, where that passes the short segments' p-value and the point's other tests."""
    p = excursion_p(series, points, k, SHORT, p_value)
    left, right = sides(series, points, k)
    if p < 1.0 and _passes(left, right, p, p_value * SHORT_FACTOR, min_change, False):
        return True, -p
    return score


def exact_points(values: np.ndarray, points: list[int]) -> list[ChangePoint]:
    """An exact counter's change points: each step moved to its new value's first commit, judged again there."""
    moved = exact_starts(values, points)
    found = []
    for k, at in enumerate(moved):
        left, right = sides(values, moved, k)
        found.append(ChangePoint(at, t_test(left, right), median(left), median(right), True))
    return found


def exact_starts(series: np.ndarray, points: list[int], reach: int = MIN_SIDE) -> list[int]:
    """Each step of an exact counter moved (at most ``reach`` commits, within its segments) to the first commit
    of its new value: the search's split can land beside it when an odd value sits next to the step. Going back,
    one odd value between two of the new value is stepped over where it is not the old value (a flicker just
    after the step is no return to the old level)."""
    moved: list[int] = []
    for k, at in enumerate(points):
        start = moved[-1] + 1 if moved else 1
        stop = points[k + 1] if k + 1 < len(points) else len(series)
        new, old = median(series[at:stop]), median(series[start - 1:at])
        first = at
        while first < min(at + reach, stop - 1) and series[first] != new:
            first += 1
        lowest = max(at - reach, start)
        while first > lowest:
            if series[first - 1] == new:
                first -= 1
            elif first - 1 > lowest and series[first - 1] != old and series[first - 2] == new:
                first -= 2
            else:
                break
        moved.append(first if series[first] == new else at)
    return moved
