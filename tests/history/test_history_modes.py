"""Mode mixes (``perfgate.history.modes``): a short run of an autotuned kernel's usual configurations is no change
point, in the one-series judge (``changes.merge``) and the batched one (``judge.merge_many``) alike; a short
regression to a new level in the same series, and a two-stage step, still are."""

from __future__ import annotations

import numpy as np

from perfgate.history.changes import P_VALUE, movements
from perfgate.history.judge import merge_many
from perfgate.history.modes import mix_edges
from perfgate.history.search import WINDOW, weak_change_points


def _autotuned(seed: int = 1, n: int = 200) -> np.ndarray:
    """A kernel at 100 us (0.5% noise) whose autotuner picks a config 22% slower in about 18% of runs, and four
    slow picks in five runs at 100-104 (chance does that now and then)."""
    rng = np.random.default_rng(seed)
    slow = rng.random(n) < 0.18
    slow[100:105] = [True, True, False, True, True]
    return 1e5 * np.where(slow, 1.22, 1.0) * np.exp(rng.normal(0, 0.005, n))


def _points(values: np.ndarray) -> list[int]:
    return [p.position for p in movements(values)]


def _batched(values: np.ndarray) -> list[int]:
    return [p.position for p in merge_many([values], [weak_change_points(values, P_VALUE, WINDOW)])[0]]


def test_a_short_run_of_slow_autotune_picks_is_no_change() -> None:
    values = _autotuned()
    assert _points(values) == [] == _batched(values)


def test_a_short_regression_to_a_new_level_is_still_named() -> None:
    values = _autotuned()
    values[60:66] *= 1.12  # a level no run of the series has: a code change, reverted after 6 runs
    assert _points(values) == [60, 66] == _batched(values)


def test_the_mix_needs_one_main_mode_on_both_sides() -> None:
    """Two steps of a regression landing in stages: the middle stage is at neither neighbour's level."""
    rng = np.random.default_rng(3)
    logs = rng.normal(0, 0.005, 120)
    logs[60:] += np.log(1.10)
    logs[66:] += np.log(1.10)
    assert mix_edges(np.exp(logs), [(60, True), (66, True)], 1e-6, 1e-4) == set()
    flat = rng.normal(0, 0.005, 120)
    flat[[10, 30, 50, 61, 63, 64, 80, 90, 100, 110]] += np.log(1.22)
    assert mix_edges(np.exp(flat), [(60, True), (66, True)], 1e-6, 1e-4) == {60, 66}
