"""Short runs that hold no level (``step_size.unsure_levels``, ``modes.back_at_level``): the blind sets' last false
points on flat series were 3-7-run excursions of a few slow runs (a host benchmark's GC pauses, set 10's
``flat_host_028``) and of a sick runner's spell (only the runs that land on it slow: set 6's ``io_event_k0153``);
real 3-run regressions of the same sets stay found, both edges, through ``perfgate history changes``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Callable

import numpy as np
import pytest

from helpers.history import write_series
from perfgate.cli import main
from perfgate.history.changes import change_points
from perfgate.history.modes import back_at_level
from perfgate.history.step_size import small_steps
from tests.blind_history4.generate import generate as generate4
from tests.blind_history5.generate import generate as generate5
from tests.blind_history6.generate import generate as generate6
from tests.blind_history10.generate import generate as generate10

# (set's generator, series, the positions of its planted changes: none on a flat series)
SERIES: list[tuple[Callable[[], list[Any]], str, list[int]]] = [
    (generate10, "flat_host_028", []),  # slow runs of +55%, +9%, +24% at 147-149 (old code: 147, 150)
    (generate6, "io_event_k0153", []),  # 4 of 7 runs at 133-139 on a sick runner (old code: 133, 140)
    (generate5, "softmax_online_399", [131, 134]),  # a 3-run +14% regression of a host benchmark
    (generate4, "reverted_short.011", [66, 69]),  # a 3-run +24% regression on ncu's locked clocks
]


def _values(generate: Callable[[], list[Any]], name: str) -> np.ndarray:
    return np.asarray(next(s for s in generate() if s.name == name).values, dtype=float)


def test_history_changes_names_no_short_run_without_a_level_and_every_short_regression(tmp_path: Path) -> None:
    series = [_values(generate, name) for generate, name, _ in SERIES]
    url = f"sqlite:///{tmp_path / 'history.sqlite'}"
    write_series(url, series)
    out = tmp_path / "changes.json"
    assert main(["history", "changes", "--db", url, "--format", "json", "--min-change", "0", "-o", str(out)]) == 0
    newest = max(len(values) for values in series)
    found: dict[str, list[int]] = {}
    for change in json.loads(out.read_text(encoding="utf-8")):
        k = int(change["kernel"].removeprefix("kernel_"))
        found.setdefault(SERIES[k][1], []).append(int(change["commit"], 16) - (newest - len(series[k])))
    for _, name, planted in SERIES:
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
