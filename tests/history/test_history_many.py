"""The change cache judges many series at once (``judge.merge_many``, ``divide.window_search_many``): every
t-test, split, median and change point is the float, the index and the order of removal that one series at a
time gives (``changes.merge``, ``search.window_search``), on series built to reach their corners: steps, short
regressions, rounded and tied values, flat stretches, exact counters, extra candidates, min_change."""

from __future__ import annotations

import numpy as np
import pytest

from helpers.history_planted import excursion_series
from perfgate.history.changes import P_VALUE, merge, t_test
from perfgate.history.divide import best_splits, window_search_many
from perfgate.history.judge import merge_many, t_tests
from perfgate.history.search import best_split, window_search
from perfgate.history.segments import Values


def _series(seed: int, count: int) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    made = []
    for _ in range(count):
        n = int(rng.integers(1, 260))
        values = rng.uniform(1, 1e6) * (1 + rng.normal(0, rng.choice([0.001, 0.01, 0.05]), n))
        for _ in range(int(rng.integers(0, 4))):
            at = int(rng.integers(1, max(n, 2)))
            values[at:at + int(rng.integers(2, 60))] *= 1 + rng.uniform(-0.2, 0.2)
        kind = rng.random()
        if kind < 0.25:
            values = np.round(values)  # an exact counter, now and then one value off
        elif kind < 0.3:
            values = np.round(values / 1000) * 1000  # few distinct values: ties everywhere
        elif kind < 0.33:
            values[:] = 5.0
        elif kind < 0.36 and n > 20:
            values[5:15] = values[5]  # a flat stretch inside noise
        made.append(values)
    return made


def _flickering(seed: int, count: int) -> list[np.ndarray]:
    """Counters off in 5% of the first half's runs and 40% of the second's: a mean that moves, a median that does
    not (too many repeats to be an exact counter)."""
    rng = np.random.default_rng(seed)
    return [np.where(np.concatenate([rng.random(75) < 0.05, rng.random(75) < 0.4]), 994.0, 1000.0)
            for _ in range(count)]


def _spiky(seed: int, count: int) -> list[np.ndarray]:
    """Noisy series where 2-8% of runs read 1.2-2.2x their value (lone, in pairs two commits apart, or three in a
    row), some with a step, some rounded: the spikes the search and the judgement take out."""
    rng = np.random.default_rng(seed)
    made = []
    for _ in range(count):
        n = int(rng.integers(5, 260))
        values = rng.uniform(1, 1e6) * (1 + rng.normal(0, rng.choice([0.005, 0.01, 0.03]), n))
        if rng.random() < 0.5:
            values[int(rng.integers(1, n)):] *= 1 + rng.uniform(-0.2, 0.2)
        spots = rng.choice(n, max(1, int(n * rng.uniform(0.02, 0.08))), replace=False)
        spots = np.concatenate((spots, spots + 2 * (rng.random(len(spots)) < 0.3), spots + (rng.random(len(spots)) < 0.1)))
        values[np.unique(spots[spots < n])] *= 1 + rng.uniform(0.2, 1.2)
        made.append(np.round(values) if rng.random() < 0.2 else values)
    return made


def _waves(seed: int, count: int) -> list[np.ndarray]:
    """Slow thermal waves in little noise, some with a step: points ``abrupt`` reads as gradual, dropped one at a
    time."""
    rng = np.random.default_rng(seed)
    made = []
    for _ in range(count):
        n = int(rng.integers(30, 220))
        t = np.arange(n)
        wave = 1 + rng.uniform(0.005, 0.03) * np.sin(2 * np.pi * t / rng.uniform(15, 90) + rng.uniform(0, 7))
        values = rng.uniform(1, 1e6) * wave * (1 + rng.normal(0, rng.uniform(0.001, 0.01), n))
        if rng.random() < 0.5:
            values[int(rng.integers(1, n)):] *= 1 + rng.uniform(-0.1, 0.1)
        made.append(values)
    return made


def _wanders(seed: int, count: int) -> list[np.ndarray]:
    """Random wanders (AR(1) levels) in noise, some with a step: points that do not stand out of the series'
    own noise (``wander``), their variograms taken many series at once."""
    rng = np.random.default_rng(seed)
    made = []
    for _ in range(count):
        n = int(rng.integers(20, 220))
        phi = float(np.exp(-1.0 / rng.uniform(5, 60)))
        level = np.zeros(n)
        for t in range(1, n):
            level[t] = phi * level[t - 1] + rng.normal(0, rng.uniform(0.005, 0.02) * np.sqrt(1 - phi * phi))
        values = rng.uniform(1, 1e6) * (1 + level) * (1 + rng.normal(0, rng.uniform(0.001, 0.02), n))
        if rng.random() < 0.5:
            values[int(rng.integers(1, n)):] *= 1 + rng.uniform(-0.1, 0.1)
        made.append(values)
    return made


@pytest.mark.parametrize("min_change", [0.0, 0.02])
def test_merging_many_series_at_once_gives_each_ones_change_points_to_the_bit(min_change: float) -> None:
    series = _series(5, 1500) + _flickering(7, 20) + _spiky(12, 300) + _waves(14, 200) + _wanders(15, 200)
    rng = np.random.default_rng(6)
    candidates = []
    for values in series:
        found = window_search(values, P_VALUE)[0]
        if rng.random() < 0.3 and len(values) > 10:  # candidates the search would not give: more removals
            found = sorted(set(found) | set(rng.integers(1, len(values), int(rng.integers(1, 6))).tolist()))
        candidates.append(found)
    candidates[:3] = [[5, 3], [0, 10], [10, 10]]  # out of order, at 0, repeated: merge's own answer
    expected = [merge(values, found, P_VALUE, min_change) for values, found in zip(series, candidates)]
    assert sum(1 for points in expected if points) > 500
    assert repr(merge_many(series, candidates, P_VALUE, min_change)) == repr(expected)


def test_many_t_tests_and_splits_at_once_are_the_floats_of_one_at_a_time() -> None:
    series = _series(8, 600) + _spiky(13, 100)
    values = Values(series)
    rng = np.random.default_rng(9)
    triples = []
    for k, one in enumerate(series):
        for _ in range(4):
            left = int(rng.integers(0, len(one)))
            split = int(rng.integers(left, len(one) + 1))
            triples.append((k, left, split, int(rng.integers(split, len(one) + 1))))
    offset = values.offsets
    flat = [np.array([offset[k] + triple[i] for k, *triple in triples]) for i in range(3)]
    expected = [t_test(series[k][a:b], series[k][b:c]) for k, a, b, c in triples]
    assert t_tests(values, *flat).tolist() == expected
    assert best_splits(values, offset, values.lengths).tolist() == [best_split(one) for one in series]


@pytest.mark.parametrize("window", [50, 20, 7])
def test_searching_many_series_at_once_finds_what_one_at_a_time_finds(window: int) -> None:
    series = _series(10, 800) + _spiky(14, 200)
    rng = np.random.default_rng(11)
    starts = [int(rng.integers(0, 60)) if rng.random() < 0.3 else 0 for _ in series]
    expected = [window_search(values, P_VALUE, window, start) for values, start in zip(series, starts)]
    assert sum(1 for found in expected if found[0]) > 300
    assert window_search_many(series, P_VALUE, window, starts) == expected


def test_series_with_short_excursions_are_judged_as_merge_judges_them() -> None:
    """A series whose candidates lie less than ``SHORT`` apart may hold a short excursion, whose edges are judged
    together (``perfgate.history.excursions``): ``merge_many`` leaves it to ``merge``, with the same points."""
    series = [planted.values for planted in excursion_series(355, 20)]
    candidates = [window_search(values, P_VALUE)[0] for values in series]
    expected = [merge(values, found) for values, found in zip(series, candidates)]
    assert sum(len(points) == 2 for points in expected) > 30
    assert repr(merge_many(series, candidates)) == repr(expected)
