"""Blips: regressions reverted after one or two commits (``perfgate.history.blips``), on our own generated series."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from helpers.history import record_commits
from perfgate.history.cache import search
from perfgate.history.db import open_history
from perfgate.history.detect import find_changes
from perfgate.history.changes import P_VALUE, change_points, movements
from perfgate.history.judge import merge_many
from perfgate.history.screen import loud_windows
from perfgate.history.search import WINDOW
from perfgate.history.series import Series


def _locked(seed: int, n: int = 200) -> np.ndarray:
    """An ncu duration on locked clocks: 0.3% Gaussian noise around 100 us."""
    return 100_000.0 * (1 + np.random.default_rng(seed).normal(0, 0.003, n))


def test_two_commits_at_a_new_level_on_locked_clocks_are_a_change() -> None:
    values = _locked(1)
    values[120:122] *= 1.15  # two commits 15% slower, then reverted: 50 standard deviations
    assert [(c.position, c.exact) for c in change_points(values)] == [(120, False), (122, False)]


def test_two_slow_runs_among_others_as_far_off_are_no_change() -> None:
    """Heavy tails: eight single slow runs of 20-40% beside the two in a row; two of ten far-off runs land side by
    side by chance (10 x 9 / 200 = 45%), no evidence of a level."""
    values = _locked(2)
    values[[15, 37, 52, 70, 88, 140, 161, 185]] *= np.linspace(1.2, 1.4, 8)
    values[120:122] *= 1.15
    assert change_points(values) == []


def test_two_slow_runs_far_apart_from_each_other_are_no_level() -> None:
    values = _locked(3)
    values[120] *= 1.15
    values[121] *= 1.35  # 20% apart: two slow runs, no level
    assert change_points(values) == []


def test_a_step_whose_first_two_commits_overshoot_is_a_step() -> None:
    values = _locked(1)
    values[130:] *= 1.17
    values[130:132] *= 1.025  # the new level's first two commits a little higher still: no return, no blip
    # one step: the overshoot's end (133, named before) bounds 3 commits of which only 2 hold the overshoot's level
    assert [c.position for c in change_points(values)] == [130]


def test_one_slow_run_is_no_change_whatever_its_size() -> None:
    values = _locked(4)
    values[120] *= 2.0
    assert change_points(values) == []


def test_an_exact_counter_that_never_flickered_shows_its_one_commit_blip() -> None:
    values = np.full(150, 81_920.0)
    values[70] = 83_200.0  # one commit ran another instruction stream
    assert [(c.position, c.before, c.after, c.exact) for c in change_points(values)] == [
        (70, 81_920.0, 83_200.0, True), (71, 83_200.0, 81_920.0, True)]


def test_an_exact_counter_shows_a_two_commit_blip() -> None:
    values = np.full(150, 81_920.0)
    values[70:72] = 83_200.0
    assert [c.position for c in change_points(values)] == [70, 72]


def test_a_flickering_counter_s_lone_odd_value_is_no_change() -> None:
    values = np.full(150, 81_920.0)
    values[[20, 95, 130]] = 81_984.0  # another code path now and then
    values[70] = 83_200.0
    assert change_points(values) == []


def test_a_counter_s_blip_at_a_value_it_takes_elsewhere_is_no_change() -> None:
    values = np.full(150, 81_920.0)
    values[70] = 83_200.0
    values[140:] = 83_200.0  # the blip's value holds later: the step at 140 is the change
    assert [c.position for c in change_points(values)] == [140]


def test_the_screen_the_batch_search_and_the_batch_judgement_find_the_blips_one_series_does() -> None:
    """A history's search (``cache.search``: the screen, the windows of many series at once, ``merge_many``) names
    what ``movements`` names one series at a time."""
    rows = []
    for seed in range(6):
        values = _locked(10 + seed)
        values[40 + 20 * seed:42 + 20 * seed] *= 1.2
        rows.append(values)
    counter = np.full(200, 4096.0)
    counter[150] = 4160.0
    rows.append(counter)
    rows.append(_locked(30))  # no blip: cleared by the screen
    matrix = np.array(rows)
    assert (loud_windows(matrix, P_VALUE, WINDOW)[:-1] >= 0).all()
    states = search([Series(k, {}, np.arange(200), row) for k, row in enumerate(rows)], P_VALUE, 0.0, WINDOW)
    for k, row in enumerate(rows):
        assert [found.point for found in states[k].changes] == movements(row)
    assert [[c.position for c in movements(row)] for row in rows[:-1]] == [
        [40 + 20 * k, 42 + 20 * k] for k in range(6)] + [[150, 151]]
    candidates = [[40, 42], [60, 62, 100]]
    assert merge_many(rows[:2], candidates) == [movements(rows[0]), movements(rows[1])]


def test_blips_completed_by_newer_commits_are_what_a_search_from_scratch_finds(tmp_path: Path) -> None:
    """The cache's update screens a plain series' tail for the blips its new point completes: a pair on locked
    clocks, an exact counter's one-commit blip, and a counter whose window turns exact with the new commits (its odd
    value lies before the new point; the counter's jitter makes it no blip)."""
    rng = np.random.default_rng(9)
    pair = _locked(20, 90)
    pair[70:72] *= 1.2
    counter = np.full(90, 4096.0)
    counter[74] = 4160.0
    turning = np.full(90, 4096.0)
    turning[52:64] += rng.integers(1, 60, 12)  # a stretch of jitter: the window is no exact counter yet
    turning[68] = 4160.0
    rows = [pair, counter, turning, _locked(21, 90)]
    with open_history(f"sqlite:///{tmp_path / 'h.sqlite'}") as history:
        record_commits(history, rows, range(0, 60))
        find_changes(history, "main")
        for commit in range(60, 90):
            record_commits(history, rows, range(commit, commit + 1))
            found = find_changes(history, "main")
        with history.transaction():
            history.execute("DELETE FROM perfgate_change_cache")
            history.execute("DELETE FROM perfgate_meta WHERE name LIKE ?", ("change_cache %",))
        assert found == find_changes(history, "main")
    named = sorted((c["kernel"], int(c["commit"], 16)) for c in found)
    assert [at for at in named if at[0] in ("k0", "k1", "k3")] == [("k0", 70), ("k0", 72), ("k1", 74), ("k1", 75)]
