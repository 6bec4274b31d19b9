"""A slow movement is no step: a random wander of the level is no series of change points (``perfgate.history.
wander``), and a slow drift is reported as a creep where it adds up past what a pull request gate fails
(``detect.change_dicts``), nothing where it does not. Planted wanders (``wander_series``, expectations written
before the detector first ran on them), ramps by hand, and the same read from a real SQLite history by
``perfgate history changes``, from scratch and from its cache."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from helpers.history import write_series
from helpers.history_planted import score, wander_series
from perfgate.cli import main
from perfgate.history.changes import change_points, movements
from perfgate.history.wander import step_p, variogram


def _positions(values: np.ndarray) -> list[int]:
    return [c.position for c in change_points(values)]


def test_a_random_wander_is_no_series_of_steps() -> None:
    """40 AR(1) wanders (correlation time 10-60 commits, 0.5-2%) in 0.3-2% noise: 62 false points before a point
    had to stand out of the series' own noise, 19 now; 39 of 40 steps of 3-10% on such a wander are found, with 3
    extra points where there were 50. The 40th (series 46, at 48) was a step only beside a point 15 commits before
    it, a dip of the wander 1.8 noise units deep, under the 1.9 its 15 runs' median needs (``step_size``): without
    that point the old code too reads the step as part of the wander (a gradual point)."""
    results = score(_positions, list(wander_series()))
    assert results["wander"].found <= 30, results["wander"]
    assert results["wander-step"].true_positives >= 39, results["wander-step"]
    assert results["wander-step"].found - results["wander-step"].true_positives <= 10, results["wander-step"]


def _ar1(seed: int, n: int, time: float, spread: float, noise: float) -> np.ndarray:
    rng = np.random.default_rng(seed)
    phi = np.exp(-1.0 / time)
    level = np.zeros(n)
    for t in range(1, n):
        level[t] = phi * level[t - 1] + rng.normal(0, spread * np.sqrt(1 - phi * phi))
    return 100.0 * (1 + level) * (1 + rng.normal(0, noise, n))


def test_a_step_stands_out_of_a_wander_its_slopes_do_not() -> None:
    """20 wanders of 1.5% (correlation time 30 commits) in 0.5% noise, 180 commits: the t-test between the sides
    passes wherever the wander moves (77 points before a point had to stand out of the series' own noise, 19
    now); values 20 commits apart differ far more than neighbours do. A 5% step at 90 stands out of them."""
    wanders = [_ar1(seed, 180, 30.0, 0.015, 0.005) for seed in range(3560, 3580)]
    assert sum(len(_positions(values)) for values in wanders) <= 30
    gamma = variogram(wanders[0], [])
    assert gamma[19] > 3 * gamma[0]
    stepped = [values * np.where(np.arange(180) < 90, 1.0, 1.05) for values in wanders]
    assert sum(any(abs(at - 90) <= 2 for at in _positions(values)) for values in stepped) >= 19
    assert step_p(variogram(stepped[0], [90]), stepped[0], 0, 90, 180) < 0.001


def test_white_noise_is_judged_as_before() -> None:
    """A 2.5% step in 1% white noise, 80 commits from the end: the variogram is flat, and over 40 commits each
    side the step passes as the t-test over its whole segments does."""
    rng = np.random.default_rng(3542)
    values = 100.0 * (1 + rng.normal(0, 0.01, 200)) * np.where(np.arange(200) < 120, 1.0, 1.025)
    assert [(p.position, p.gradual) for p in movements(values)] == [(122, False)]


def _ramp(seed: int, size: float, start: int = 60, length: int = 40, n: int = 160) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return 100.0 * (1 + size * np.clip((np.arange(n) - start) / length, 0, 1)) * (1 + rng.normal(0, 0.005, n))


def _changes(url: str, capsys: pytest.CaptureFixture[str]) -> list[dict[str, object]]:
    assert main(["history", "changes", "--db", url, "--format", "json"]) == 0
    found: list[dict[str, object]] = json.loads(capsys.readouterr().out)
    return found


def test_a_slow_drift_past_the_gate_is_a_creep_and_a_wander_is_nothing(tmp_path: Path,
                                                                      capsys: pytest.CaptureFixture[str]) -> None:
    """An 8% ramp over 40 commits (a duration: the gate fails 5%) in 0.5% noise has no step, only points a line
    through their neighbourhood explains: reported as a creep, each point with its cumulative change, the last
    near 8%. A 3% ramp over 100 commits and a 1.5% wander (their gradual points) add up to no more than the gate lets through: nothing. The same from
    the cache, and after one more commit."""
    series = [_ramp(3537, 0.08), _ramp(3544, 0.03, 40, 100), _ar1(3551, 160, 30.0, 0.015, 0.005)]
    url = f"sqlite:///{tmp_path / 'history.sqlite'}"
    write_series(url, [values[:159] for values in series])
    for _ in range(2):  # from scratch, then from the cache
        found = _changes(url, capsys)
        assert {change["kernel"] for change in found} == {"kernel_0"}
        assert all(change["creep"] and change["direction"] == "regression" for change in found)
        commits = sorted(int(str(change["commit"]), 16) for change in found)
        assert 58 <= commits[0] and commits[-1] <= 102, commits
        newest = max(found, key=lambda change: int(str(change["commit"]), 16))
        assert newest["cumulative"] == pytest.approx(0.08, abs=0.015)
    write_series(url, series, first=159)
    assert [(change["commit"], change["creep"]) for change in _changes(url, capsys)] == [
        (change["commit"], change["creep"]) for change in found]


def test_a_slow_drift_within_the_gate_is_not_reported(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Gradual points are held in the change cache with their kind, and shown only as a creep past the gate: a 3%
    ramp over 100 commits. (A steeper ramp, 4% over 40 commits, often reads as steps over 10-40 commits a side,
    reported as before.)"""
    url = f"sqlite:///{tmp_path / 'history.sqlite'}"
    values = _ramp(3544, 0.03, 40, 100)
    assert [p.position for p in movements(values) if p.gradual]
    write_series(url, [values])
    assert _changes(url, capsys) == []
    assert main(["history", "changes", "--db", url, "--format", "text"]) == 0
    assert capsys.readouterr().out == "no change points\n"
