"""Blips judged once per whole row (``blips.row_blips``) and taken per window (``blips.window_blips``, the screen;
``divide.window_search_many``) are the blips each window's own scan finds: one window and one series at a time."""

from __future__ import annotations

import numpy as np
import pytest

from perfgate.history.blips import exact_blips, exact_rows, pairs, row_blips, window_blips
from perfgate.history.changes import P_VALUE
from perfgate.history.divide import window_search_many
from perfgate.history import screen
from perfgate.history.screen import loud_windows
from perfgate.history.search import WINDOW, window_search


# The reference: each window scanned on its own, as the screen did before blips were found once per row.
def has_blips(rows: np.ndarray, fresh: int = 0) -> np.ndarray:
    """Per row (one window a row), whether ``scan`` finds a blip in it (judged as an exact counter's where the row
    is one, ``search.is_piecewise_constant``): the search's screen (``perfgate.history.screen``) of many windows
    at once. Where ``fresh`` > 0 the rows' columns before it were screened already (a tail one value shorter): only
    blips that reach column ``fresh`` are new, but where the longer row is judged as the other kind, any may be."""
    exact = exact_rows(rows)
    since = np.full(len(rows), fresh)
    if 0 < fresh <= rows.shape[1]:
        since[exact_rows(rows[:, :fresh]) != exact] = 0
    found = np.zeros(len(rows), dtype=bool)
    for start in np.unique(since).tolist():
        for kind, finder in ((exact, exact_blips), (~exact, pairs)):
            picked = np.flatnonzero(kind & (since == start))
            found[picked[finder(rows[picked], start)[0]]] = True
    return found



def _rows(n: int = 120) -> np.ndarray:
    """Series with blips of both kinds, anywhere: locked-clock pairs (some at a window's edge), heavy-tailed
    series whose pairs the rules weigh, exact counters with one- and two-commit blips, and counters that turn
    exact or stop being so from window to window."""
    rng = np.random.default_rng(48)
    rows = []
    for k in range(60):
        values = 100_000.0 * (1 + rng.normal(0, 0.003, n))
        for at in rng.integers(1, n - 2, 1 + k % 3).tolist():
            values[at:at + 2] *= 1 + rng.choice([-1, 1]) * rng.uniform(0.02, 0.3)
        if k % 4 == 0:
            values[rng.integers(0, n, 10)] *= 1.4  # slow runs
        rows.append(values)
    for k in range(40):
        counter = np.full(n, 4096.0)
        for at in rng.integers(1, n - 2, 1 + k % 3).tolist():
            counter[at:at + 1 + k % 2] = 4096.0 + rng.integers(1, 90)
        if k % 3 == 0:
            lo = int(rng.integers(0, n - 20))
            counter[lo:lo + 16] += rng.integers(0, 60, 16)  # jitter: some windows are no exact counter
        rows.append(counter)
    turning = np.full(n, 4096.0)  # the window from 25 is exact, its first 35 columns are not
    turning[30] = 4160.0
    turning[45:53] += rng.integers(1, 60, 8)
    rows.append(turning)
    return np.array(rows)


@pytest.mark.parametrize("fresh", [0, 30, 57, 60, 95, 110])
def test_window_blips_are_each_window_s_own_scan(fresh: int) -> None:
    rows = _rows()
    n = rows.shape[1]
    picked = np.arange(0, len(rows), 2) if fresh % 2 else np.arange(len(rows))
    found = row_blips(rows)
    hits = 0
    for start in range(0, n, 7):
        for stop in (min(start + WINDOW, n), min(start + 19, n)):
            since = max(fresh - start, 0)
            expected = has_blips(rows[picked, start:stop], since)
            assert np.array_equal(window_blips(rows, found, picked, start, stop, since), expected)
            hits += int(expected.sum())
    assert hits > 10  # the series hold blips the windows find


@pytest.mark.parametrize("fresh", [0, 60, 80, 119])
def test_the_screen_finds_the_windows_it_finds_with_each_window_s_own_scan(fresh: int,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    rows = _rows()
    screened = loud_windows(rows, P_VALUE, WINDOW, fresh)

    def own_scan(matrix: np.ndarray, found: object, picked: np.ndarray, start: int, stop: int,
                 since: int) -> np.ndarray:
        return has_blips(matrix[picked, start:stop], since)

    monkeypatch.setattr(screen, "window_blips", own_scan)
    assert np.array_equal(loud_windows(rows, P_VALUE, WINDOW, fresh), screened)
    assert (screened >= 0).sum() > 50


@pytest.mark.parametrize("fresh", [0, 60, 80, 119])
def test_the_screen_s_blips_from_its_first_column_are_every_window_s(fresh: int) -> None:
    """The blips the screen judges reach a column (``screen._blip_floor``) before ``fresh`` where a window's first
    ``fresh`` columns are of the other kind (the last row)."""
    rows = _rows()
    found = row_blips(rows, screen._blip_floor(rows, WINDOW, fresh))
    every = np.arange(len(rows))
    for start in range(0, rows.shape[1], WINDOW // 2):
        stop = min(start + WINDOW, rows.shape[1])
        since = max(fresh - start, 0)
        assert np.array_equal(window_blips(rows, found, every, start, stop, since),
                              has_blips(rows[:, start:stop], since))


def test_searching_many_series_with_blips_finds_what_one_at_a_time_finds() -> None:
    rows = _rows()
    series = [row[:len(row) - k % 7] for k, row in enumerate(rows)]  # several lengths
    starts = [0 if k % 5 else 25 for k in range(len(series))]
    expected = [window_search(s, P_VALUE, WINDOW, start) for s, start in zip(series, starts)]
    assert window_search_many(series, P_VALUE, WINDOW, starts) == expected
    assert sum(len(found) for found, _, _ in expected) > 200
