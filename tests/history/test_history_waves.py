"""A runner's slow thermal wave is no series of change points; a step on it still is (``perfgate.history.abrupt``):
planted waves (``wave_series``, expectations written before the detector first ran on them), one wave by hand,
and the same series read from a real SQLite history by ``perfgate history changes``."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from helpers.history import write_series
from helpers.history_planted import score, wave_series
from perfgate.cli import main
from perfgate.history.cache_rows import Found
from perfgate.history.changes import change_points, movements
from perfgate.history.detect import change_dicts
from perfgate.history.keys import SERIES_FIELDS


def _positions(values: np.ndarray) -> list[int]:
    return [c.position for c in change_points(values)]


def _reported(values: np.ndarray) -> list[int]:
    """What ``history changes`` reports of a duration series: its steps, and its gradual points where they add
    up past the gate's 5% (a creep)."""
    facts = {**{name: "" for name in SERIES_FIELDS}, "unit": "ns", "metric": "gpu__time_duration.sum",
             "direction": "lower"}
    commits = [str(at) for at in range(len(values))]
    found = [Found(point.position, point.position - 1, point) for point in movements(values)]
    return [int(change["commit"]) for change in change_dicts(commits, commits, facts, found)]


def test_a_thermal_wave_is_no_series_of_steps() -> None:
    """40 waves of 0.5-2% in 0.25-0.5% noise: 226 points before a change point had to be a step (Otava places
    them the same way), 83 once a line through a point's neighbourhood had to leave it standing, 3 now that it
    must also stand out of the series' own noise (``wander``); every step of 3-10% on such a wave is still
    found, with 1 extra point where there were 222, then 49."""
    results = score(_positions, list(wave_series()))
    assert results["wave"].found <= 5, results["wave"]
    assert results["wave-step"].true_positives == 40, results["wave-step"]
    assert results["wave-step"].found - 40 <= 5, results["wave-step"]


def test_a_slope_is_no_step_and_a_step_on_it_is_one() -> None:
    """A 1.5% wave (period 60 commits) in 0.3% noise: both of its slopes read as steps to the t-test between the
    sides; a line through each slope's neighbourhood explains it. A 4% step at 100, on the wave's rising slope,
    stands out of that line."""
    rng = np.random.default_rng(3535)
    t = np.arange(160)
    wave = 100.0 * (1 + 0.015 * np.sin(2 * np.pi * t / 60)) * (1 + rng.normal(0, 0.003, 160))
    assert _positions(wave) == []
    stepped = wave * np.where(t < 100, 1.0, 1.04)
    assert _positions(stepped) == [100]


def test_a_step_in_flat_noise_stays_however_short_its_sides() -> None:
    """No slope beside it, so the line cannot explain it: a 3% step 6 commits from either end of 1% noise."""
    rng = np.random.default_rng(3536)
    for at in (6, 54):
        values = 100.0 * (1 + rng.normal(0, 0.005, 60)) * np.where(np.arange(60) < at, 1.0, 1.04)
        assert _positions(values) == [at]


def test_history_changes_reads_waves_as_one_series_at_a_time_does(tmp_path: Path,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    """The change cache judges many series at once: a wave's points are dropped there as ``change_points``
    drops them, and a search from the cache after one more commit gives the same."""
    planted = list(wave_series(seed=354, per_family=12))
    url = f"sqlite:///{tmp_path / 'history.sqlite'}"
    write_series(url, [item.values for item in planted])
    assert main(["history", "changes", "--db", url, "--format", "json"]) == 0
    found: dict[int, list[int]] = {}
    commits = max(len(item.values) for item in planted)
    for change in json.loads(capsys.readouterr().out):
        k = int(change["kernel"].removeprefix("kernel_"))
        found.setdefault(k, []).append(int(change["commit"], 16) - (commits - len(planted[k].values)))
    expected = {k: _reported(item.values) for k, item in enumerate(planted) if _reported(item.values)}
    assert {k: sorted(points) for k, points in found.items()} == expected
    on_waves = sum(len(points) for k, points in expected.items() if planted[k].family == "wave")
    assert on_waves <= 25, expected
    steps = [k for k, item in enumerate(planted) if item.family == "wave-step"]
    found_steps = [k for k in steps if any(abs(p - planted[k].changes[0]) <= 2 for p in expected.get(k, []))]
    assert len(found_steps) >= 11, expected  # the 4th, a 3% step where the wave turns, was missed before too
