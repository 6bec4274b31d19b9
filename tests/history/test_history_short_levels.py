"""Short runs that hold no level (``step_size.unsure_levels``, ``modes.back_at_level``): the blind sets' last false
points on flat series were 3-7-run excursions of a few slow runs (a host benchmark's GC pauses, set 10's
``flat_host_028``) and of a sick runner's spell (only the runs that land on it slow: set 6's ``io_event_k0153``);
real 3-run regressions of the same sets stay found, both edges, through ``perfgate history changes``. Set 12's
(noise resampled from measurements) were runs of a skewed noise's tail (``modes.tail_runs``): 5 of 7 ncu durations
3-5% slow with two at the level between them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Callable

import numpy as np
import pytest

from helpers.history import write_series
from perfgate.cli import main
from perfgate.history.changes import change_points
from perfgate.history.modes import back_at_level, tail_runs
from perfgate.history.step_size import small_steps
from tests.blind_history4.generate import generate as generate4
from tests.blind_history5.generate import generate as generate5
from tests.blind_history6.generate import generate as generate6
from tests.blind_history10.generate import generate as generate10
from tests.blind_history12.generate import generate as generate12

# (set's generator, series, the positions of its planted changes: none on a flat series)
SERIES: list[tuple[Callable[[], list[Any]], str, list[int]]] = [
    (generate10, "flat_host_028", []),  # slow runs of +55%, +9%, +24% at 147-149 (old code: 147, 150)
    (generate6, "io_event_k0153", []),  # 4 of 7 runs at 133-139 on a sick runner (old code: 133, 140)
    (generate5, "softmax_online_399", [131, 134]),  # a 3-run +14% regression of a host benchmark
    (generate4, "reverted_short.011", [66, 69]),  # a 3-run +24% regression on ncu's locked clocks
]
# Set 12's series whose short runs are its measured noise's tail, and its short regressions of the same noises
TAIL_SERIES: list[tuple[Callable[[], list[Any]], str, list[int]]] = [
    (generate12, "k12_011_ncu", []),  # 5 of 7 runs +3..5% at 63-69, two at the level (old code: 63, 70)
    (generate12, "k12_475_ncu", [100, 108]),  # a planted 8-run change of ncu durations
    (generate12, "k12_469_launch", [65, 73]),  # a planted 8-run change of launch durations
]


def _values(generate: Callable[[], list[Any]], name: str) -> np.ndarray:
    return np.asarray(next(s for s in generate() if s.name == name).values, dtype=float)


def _found(tmp_path: Path, named: list[tuple[Callable[[], list[Any]], str, list[int]]]) -> dict[str, list[int]]:
    """Each series' change points (positions) through ``perfgate history changes``."""
    series = [_values(generate, name) for generate, name, _ in named]
    url = f"sqlite:///{tmp_path / 'history.sqlite'}"
    write_series(url, series)
    out = tmp_path / "changes.json"
    assert main(["history", "changes", "--db", url, "--format", "json", "--min-change", "0", "-o", str(out)]) == 0
    newest = max(len(values) for values in series)
    found: dict[str, list[int]] = {}
    for change in json.loads(out.read_text(encoding="utf-8")):
        k = int(change["kernel"].removeprefix("kernel_"))
        found.setdefault(named[k][1], []).append(int(change["commit"], 16) - (newest - len(series[k])))
    return found


def test_history_changes_names_no_short_run_without_a_level_and_every_short_regression(tmp_path: Path) -> None:
    found = _found(tmp_path, SERIES)
    for _, name, planted in SERIES:
        assert sorted(found.get(name, [])) == pytest.approx(planted, abs=1), name


def test_history_changes_names_no_run_of_a_measured_noise_tail_and_every_short_regression(tmp_path: Path) -> None:
    found = _found(tmp_path, TAIL_SERIES)
    for _, name, planted in TAIL_SERIES:
        assert sorted(found.get(name, [])) == pytest.approx(planted, abs=1), name


def test_a_step_beside_a_short_segment_moves_the_median_by_its_standard_errors() -> None:
    """Three slow runs of a right-skewed host timing pass the t-test on their mean; their median, spikes out, lies
    within 4.9 standard errors (the short segments' p-value 1e-6) of the level; a 3-run regression of 10 noise units
    does not. Without a p-value (0) only the floor of 1.5 noise units is asked."""
    rng = np.random.default_rng(35)
    values = 7.0 * (1.0 + np.abs(rng.normal(0.0, 0.03, 200)))
    values[100:103] *= (1.55, 1.09, 1.24)
    points = [(100, True), (103, True)]
    assert small_steps(values, points, 1e-6) == {100, 103}
    assert small_steps(values, points) == set()
    values[100:103] = 7.0 * 1.3
    assert small_steps(values, points, 1e-6) == set()


def test_a_short_run_back_at_its_neighbours_level_is_no_level() -> None:
    """Five of seven runs 8% slow with two at the level between them (a sick runner's spell, 1% noise): both
    steps go; the same seven runs all slow stay (with edges placed a run off too), and so do they with one run back:
    one run in 200 falls that far, a chance of 4% among 7."""
    rng = np.random.default_rng(6)
    logs = rng.normal(0.0, 0.01, 200)
    spell = logs.copy()
    spell[[101, 102, 104, 106]] += 0.08
    spell[100] += 0.08
    assert back_at_level(spell, [100, 107], [0], 1e-4) == {100, 107}
    held = logs.copy()
    held[100:107] += 0.08
    assert back_at_level(held, [100, 107], [0], 1e-4) == set()
    one_back = held.copy()
    one_back[103] -= 0.08
    assert back_at_level(one_back, [100, 107], [0], 1e-4) == set()
    assert back_at_level(held, [99, 108], [0], 1e-4) == set()  # edges a run off: a run at the level at each end
    assert change_points(np.exp(held))[0].position == 100


def test_a_short_run_the_series_own_tail_explains_is_no_level() -> None:
    """Right-skewed noise (one run in twenty 3-6% slow, the rest within 0.3%): five of seven runs in that tail with
    two at the level between them go; seven runs all 4.5% slow, or the same five at a level of its own (4.5% in the
    same 0.3%), stay. A run of the tail in a series whose other runs never go that far stays too."""
    rng = np.random.default_rng(12)
    logs = rng.normal(0.0, 0.002, 220)
    tail = rng.random(220) < 0.05
    logs[tail] += rng.uniform(0.03, 0.06, int(tail.sum()))
    logs[100:107] = rng.normal(0.0, 0.002, 7)
    runs = logs.copy()
    runs[[100, 101, 103, 104, 106]] += (0.035, 0.05, 0.04, 0.055, 0.045)
    assert tail_runs(runs, [100, 107], [0], 1e-6, 1e-4) == {100, 107}
    level = logs.copy()
    level[100:107] += 0.045
    assert tail_runs(level, [100, 107], [0], 1e-6, 1e-4) == set()
    quiet = rng.normal(0.0, 0.002, 220)
    quiet[[100, 101, 103, 104, 106]] += (0.035, 0.05, 0.04, 0.055, 0.045)
    assert tail_runs(quiet, [100, 107], [0], 1e-6, 1e-4) == set()
