"""The screen (``screen.loud_windows``) bounds each side of a failed split before searching it (``_sides_calm``): a
side is left unsearched only where no split of it comes near the search's p-value, so the screen's first loud window
of every row is the one it finds searching every side, on rows built to reach the bound's corners (steps at a side's
edge, short regressions, exact counters with a value off, ties, flat stretches, spreads near the limit, values large
enough to overflow the sums)."""

from __future__ import annotations

import numpy as np
import pytest

from perfgate.history import screen
from perfgate.history.changes import P_VALUE
from perfgate.history.search import MIN_SIDE, WEAK_FACTOR
from perfgate.history.stats import stdtr


# Rows past TAME overflow the sums by design (searched side by side): said by no warning.
pytestmark = pytest.mark.filterwarnings("error::RuntimeWarning")


def _rows(seed: int, count: int, length: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    rows = rng.uniform(1, 1e6, (count, 1)) * (1 + rng.normal(0, 1, (count, length))
                                              * rng.choice([1e-4, 0.01, 0.05], (count, 1)))
    for row in rows:
        kind = rng.random()
        if kind < 0.3:  # a step or a short regression, anywhere (a side's edge included)
            at = int(rng.integers(1, length))
            row[at:at + int(rng.integers(1, length))] *= 1 + rng.uniform(-0.05, 0.05)
        elif kind < 0.45:
            row[:] = np.round(row)  # an exact counter, one value off now and then
            row[int(rng.integers(0, length))] += float(rng.integers(1, 4))
        elif kind < 0.5:
            row[:] = np.round(row / 1000) * 1000
        elif kind < 0.55:
            row[2:length // 2] = row[2]  # a flat stretch inside noise
        elif kind < 0.58:
            row *= 1e150  # past TAME: searched side by side
    return rows


@pytest.mark.parametrize("length", [6, 7, 12, 26, 38, 50, 160])
def test_the_screen_with_its_side_bound_finds_the_first_loud_window_that_searching_every_side_finds(
        length: int, monkeypatch: pytest.MonkeyPatch) -> None:
    rows = _rows(length, 3000, length)
    bounded = screen.loud_windows(rows, P_VALUE)
    monkeypatch.setattr(screen, "_sides_calm", lambda part, *_: np.zeros(len(part), dtype=bool))
    assert np.array_equal(bounded, screen.loud_windows(rows, P_VALUE))
    assert (bounded >= 0).any() and (bounded < 0).any()


def test_the_side_bound_leaves_unsearched_most_quiet_rows_and_none_a_side_search_finds_loud() -> None:
    """On 4,000 noisy tails of 50 points (the benchmark's), the bound clears most sides the search finds quiet; the
    rows it clears have no side whose search passes (the same ``_split_many`` the screen runs on the rest)."""
    rng = np.random.default_rng(11)
    part = 1e5 * rng.normal(0, 0.01, (4000, 50))
    part[::7, 30:] += 2e3  # a step in the right side now and then
    part = part - part[:, :1]
    weak = P_VALUE * WEAK_FACTOR
    whole, earlier = screen._distance_sums(part)
    sums, squares = np.zeros((4000, 51)), np.zeros((4000, 51))
    sums[:, 1:], squares[:, 1:] = part.cumsum(1), (part * part).cumsum(1)
    every, low, high = np.arange(4000), np.zeros(4000, dtype=np.int64), np.full(4000, 50, dtype=np.int64)
    at, passed = screen._split_many((earlier, np.zeros_like(whole), whole), sums, squares, every, low, high, weak)
    failed = ~passed & (at > 0)
    cleared = screen._sides_calm(part, sums, squares, at, weak) & failed
    before_split = screen._distance_sums(part, np.where(failed, at, 0))[0]
    loud_side = np.zeros(4000, dtype=bool)
    for side_low, side_high, to_low, to_high in ((low, at, np.zeros_like(whole), before_split),
                                                 (at, high, before_split, whole)):
        loud_side[failed] |= screen._split_many((earlier, to_low, to_high), sums, squares, every[failed],
                                                side_low[failed], side_high[failed], weak)[1][failed]
    assert not (cleared & loud_side).any()
    assert cleared.sum() >= 0.9 * (failed & ~loud_side).sum() and loud_side.sum() >= 20


def test_the_side_limits_are_t_statistics_whose_p_values_fail_the_search() -> None:
    limits = screen._t_limits(P_VALUE * WEAK_FACTOR, 50)
    for size in range(2 * MIN_SIDE, 51):
        p = 2.0 * stdtr(size - 2, -limits[size])
        assert P_VALUE * WEAK_FACTOR < p < P_VALUE * WEAK_FACTOR * 1.02
