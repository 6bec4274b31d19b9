"""An exact counter's step must move its level (``perfgate.history.counter_levels``): a sticky flicker between
counts the series shows all through its history is no change, nor are a near-exact counter's one-run bumps side
by side; a new count (a step, a reverted regression of a few runs or many) still is. The one-series judge
(``changes.merge``) and the batched one (``judge.merge_many``) agree."""

from __future__ import annotations

import numpy as np

from perfgate.history.changes import P_VALUE, movements
from perfgate.history.counter_levels import held, moves_level
from perfgate.history.judge import merge_many
from perfgate.history.search import WINDOW, weak_change_points


def _sticky_flicker(seed: int, n: int = 210, share: float = 0.4, stay: float = 0.8) -> np.ndarray:
    """Instructions at 8,827,551 that take 0.11% fewer in about ``share`` of runs, a state holding ``1 / (1 -
    stay)`` runs on average (an autotuner's two configurations, picked again only now and then)."""
    rng = np.random.default_rng(seed)
    state = np.zeros(n, dtype=bool)
    for k in range(1, n):
        keep = rng.random() < stay
        state[k] = state[k - 1] if keep else rng.random() < share
    return np.where(state, 8_817_840.0, 8_827_551.0)


def _bumped(seed: int, n: int = 200) -> np.ndarray:
    """DRAM write bytes identical run after run but for one-run bumps of 0.5-3% (3% of runs), two of them side by
    side at 60-61 and three at 120-122, each a value of its own."""
    rng = np.random.default_rng(seed)
    values = np.full(n, 1_621_568.0)
    bumps = rng.random(n) < 0.03
    bumps[[60, 61, 120, 121, 122]] = True
    values[bumps] *= 1 + rng.uniform(0.005, 0.03, int(bumps.sum()))
    return np.round(values / 32) * 32


def _found(values: np.ndarray) -> list[int]:
    return [p.position for p in movements(values) if not p.gradual]


def _batched(values: np.ndarray) -> list[int]:
    return [p.position for p in merge_many([values], [weak_change_points(values, P_VALUE, WINDOW)])[0]
            if not p.gradual]


def test_a_sticky_flicker_is_no_change() -> None:
    for seed in range(6):
        values = _sticky_flicker(seed)
        assert _found(values) == [] == _batched(values), seed


def test_a_step_of_a_sticky_flicker_is_named_once() -> None:
    values = _sticky_flicker(2, stay=0.6)
    values[117:125] = 8_827_551.0  # the usual count on each side of the step (so its first new count is at 120)
    values[120:] = np.round(values[120:] * 1.01)  # a new count: both configurations 1% more
    assert _found(values) == [120] == _batched(values)


def test_a_reverted_regression_of_a_flickering_counter_is_named() -> None:
    values = _sticky_flicker(4)
    values[50:53] = 9_000_000.0  # counts the series never shows elsewhere: a code change, reverted
    values[140:160] = 9_100_000.0
    values[160:165] = 8_827_551.0  # back to the usual count at once
    assert _found(values) == [50, 53, 140, 160] == _batched(values)


def test_one_run_bumps_side_by_side_are_no_level() -> None:
    for seed in range(4):
        values = _bumped(seed)
        assert _found(values) == [] == _batched(values), seed


def test_a_held_count_among_bumps_is_still_a_change() -> None:
    values = _bumped(1)
    values[120:123] = 1_700_000.0  # three runs at one new count: a regression reverted after 3 runs
    assert _found(values) == [120, 123] == _batched(values)


def test_the_rule_itself() -> None:
    assert not held(np.array([3.0, 1.0, 2.0])) and held(np.array([3.0, 1.0, 3.0]))
    series = np.array([1.0] * 10 + [2.0] * 10 + [1.0] * 10)
    assert moves_level(series, 0, 10, 20, 1.0, 2.0)  # 2 comes up nowhere else: a reverted regression
    series[25:28] = 2.0
    assert not moves_level(series, 0, 10, 20, 1.0, 2.0)  # both counts recur: a flicker
