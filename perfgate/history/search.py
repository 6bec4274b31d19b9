"""Candidates of one series: E-divisive means in sliding windows, as Apache Otava (Hunter) searches, with each
window's blips (``perfgate.history.blips``). ``perfgate.history.changes`` judges what it finds;
``perfgate.history.divide`` runs the same search over many series at once."""

from __future__ import annotations

import functools

import numpy as np

from perfgate.history.blips import blip_edges
from perfgate.history.spikes import despike_one
from perfgate.history.stats import t_test

WINDOW = 50  # Otava's default window; windows advance by half of it
MIN_SIDE = 3  # fewest points on either side of a split the t-test judges
WEAK_FACTOR = 10.0  # weak change points: at 10x the final p-value
RETRIES = 1  # how many failed splits deep E-divisive still searches a window's sides


def is_piecewise_constant(series: np.ndarray) -> bool:
    """Most consecutive points equal exactly: an exact counter, not a noisy measurement."""
    same = np.count_nonzero(series[1:] == series[:-1])
    return bool(same >= 0.75 * (len(series) - 1))


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
    """E-divisive in sliding windows from ``start``, at ``WEAK_FACTOR`` x ``p_value``, and each window's blips'
    edges (``perfgate.history.blips``): every candidate, the candidates of the windows that had their full length, and where a search over more points resumes (the
    first window cut short by the series' end). A window of full length sees no later point, so a history
    that grows by a commit redoes only the windows from there (``perfgate.history.cache``)."""
    weak = p_value * WEAK_FACTOR
    found: list[int] = []
    step = max(window // 2, 1)
    while start < len(values):
        stop = min(start + window, len(values))
        before = len(found)
        inside: list[int] = []
        _divide(despike_one(values[start:stop]), 0, stop - start, weak, inside)  # the window's own spikes out
        found += [start + at for at in inside]
        split = max(found[before:], default=0)  # the next window starts at a split, not at a blip's edge
        raw = values[start:stop]  # blips are judged on the window's own values, spikes and all
        found += [start + at for at in blip_edges(raw, is_piecewise_constant(raw))]
        if stop < start + window:
            return sorted(set(found)), sorted(set(found[:before])), start
        start = max(start + step, split)
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
