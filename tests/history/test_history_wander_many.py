"""The series ``merge_many`` hands on because a point left is no step (``abrupt`` reads it as gradual, or it does not
stand out of the series' own wander, ``perfgate.history.wander``) are judged in the batch: their variograms, their
points' tests against them and every key ``merge``'s later rounds may ask, many series at once. The change points
must be those ``merge`` gives one series at a time, to the bit, and each batched test the float or verdict of its
one-series counterpart."""

from __future__ import annotations

import numpy as np

from helpers.history_planted import wander_series, wave_series
from perfgate.history.changes import P_VALUE, _stands_out, merge
from perfgate.history.judge import TRIPLES, merge_many, stand_out_many
from perfgate.history.search import window_search
from perfgate.history.spikes import despike_one
from perfgate.history.wander import step_p, step_ps, variogram, variograms


def _ramp(rng: np.random.Generator) -> np.ndarray:
    """A gradual ramp of 2-6% over 20-60 commits in 0.3-1% noise: points on its slope that ``abrupt`` reads as
    gradual."""
    n = int(rng.integers(120, 220))
    start, length = int(rng.integers(20, n // 2)), int(rng.integers(20, 60))
    ramp = 1 + rng.uniform(0.02, 0.06) * np.clip((np.arange(n) - start) / length, 0, 1)
    return rng.uniform(1, 1e6) * ramp * (1 + rng.normal(0, rng.uniform(0.003, 0.01), n))


def _step(rng: np.random.Generator) -> np.ndarray:
    n = int(rng.integers(60, 230))
    level = np.where(np.arange(n) < int(rng.integers(10, n - 10)), 1.0, 1 + rng.uniform(0.03, 0.2))
    return rng.uniform(1, 1e6) * level * (1 + rng.normal(0, 0.01, n))


def _mixed(seed: int) -> tuple[list[np.ndarray], list[list[int]]]:
    """Wanders (with a step and without), thermal waves and ramps among steps in white noise, each with the
    candidates the search gives; some with extra candidates (more rounds, and more than ``TRIPLES`` of them: keys
    not asked beforehand)."""
    rng = np.random.default_rng(seed)
    series = [planted.values for planted in wander_series(seed, 60)] + [
        planted.values for planted in wave_series(seed + 1, 20)]
    series += [_ramp(rng) for _ in range(80)] + [_step(rng) for _ in range(200)]
    candidates = []
    for values in series:
        found = window_search(values, P_VALUE)[0]
        if rng.random() < 0.3:
            extra = int(rng.integers(1, 3 * TRIPLES))
            found = sorted(set(found) | set(rng.integers(1, len(values), extra).tolist()))
        candidates.append(found)
    return series, candidates


def test_handed_over_series_get_the_change_points_merge_gives_them() -> None:
    series, candidates = _mixed(3581)
    expected = [merge(values, found) for values, found in zip(series, candidates)]
    gradual = sum(any(point.gradual for point in points) for points in expected)
    assert gradual > 60 and sum(any(not point.gradual for point in points) for points in expected) > 250
    assert repr(merge_many(series, candidates)) == repr(expected)
    assert repr(merge_many(series, candidates, P_VALUE, 0.02)) == repr(
        [merge(values, found, P_VALUE, 0.02) for values, found in zip(series, candidates)])


def test_the_batched_stand_out_tests_are_the_floats_and_verdicts_of_one_point_at_a_time() -> None:
    """Every triple of candidates of the mixed series (short variograms, reaches cut by the segments or by the
    variogram's length, white noise and wander): ``step_ps`` gives ``step_p``'s floats, ``stand_out_many``
    ``changes._stands_out``'s verdicts."""
    series, candidates = _mixed(3582)
    despiked = [despike_one(values) for values in series]
    offsets = np.cumsum([0, *(len(values) for values in despiked)])
    flat = np.concatenate(despiked)
    triples, gammas = [], []
    for k, (values, found) in enumerate(zip(despiked, candidates)):
        ends = [0, *found, len(values)]
        gamma = variogram(values, found[::2])
        for j in range(1, len(ends) - 1):
            triples += [(k, ends[i], ends[j], ends[m]) for i in range(max(j - 2, 0), j)
                        for m in range(j + 1, min(j + 3, len(ends)))]
            gammas += [gamma] * (len(triples) - len(gammas))
    assert len(triples) > 2000 and sum(len(gamma) < 20 for gamma in gammas) > 50
    owners = np.array([k for k, *_ in triples])
    lengths = np.array([len(despiked[k]) for k in owners.tolist()])
    start, at, stop = (np.array([offsets[k] + triple[i] for k, *triple in triples]) for i in range(3))
    expected = [step_p(gamma, despiked[k], a, b, c) for gamma, (k, a, b, c) in zip(gammas, triples)]
    got = step_ps(flat, gammas, lengths, start, at, stop)
    assert got.tobytes() == np.array(expected).tobytes()
    verdicts = [_stands_out(despiked[k], gamma, (a, b, c), P_VALUE) for gamma, (k, a, b, c) in zip(gammas, triples)]
    assert 100 < sum(verdicts) < len(verdicts) - 100
    assert stand_out_many(flat, gammas, lengths, start, at, stop, P_VALUE).tolist() == verdicts


def test_many_variograms_a_lag_at_a_time_are_each_ones_alone() -> None:
    """Rows of a length a lag at a time (many of them) and each row alone (every lag at once): the same floats,
    values far apart, huge and not finite included."""
    rng = np.random.default_rng(3583)
    moving = 0
    for length in (2, 7, 40, 81, 160):
        rows = rng.uniform(1, 1e6, (400, 1)) * (1 + rng.normal(0, 0.02, (400, length)))
        rows[1] *= 1e300
        rows[2, length // 2] = np.inf
        rows[3, 0] = np.nan
        rows[4] = 7.0
        segments = np.cumsum(rng.random((400, length)) < 0.04, axis=1)
        together = variograms(rows, segments)
        alone = [variograms(rows[row:row + 1], segments[row:row + 1])[0] for row in range(len(rows))]
        assert [gamma.tobytes() for gamma in together] == [gamma.tobytes() for gamma in alone]
        moving += sum(len(gamma) > 0 for gamma in together)
    assert moving > 1000
