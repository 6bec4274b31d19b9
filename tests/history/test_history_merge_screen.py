"""The screen of candidates that ``merge`` would all drop (``merge_screen.surely_dropped``): wherever it says so,
``merge`` finds no change point, on noise, steps, exact counters, hostile magnitudes and odd candidate lists; and
it clears most noise-only series (what it is for)."""

from __future__ import annotations

import numpy as np

from perfgate.history.changes import P_VALUE, merge, window_search
from perfgate.history.merge_screen import surely_dropped


def _cases() -> list[tuple[np.ndarray, list[int]]]:
    rng = np.random.default_rng(35)
    cases: list[tuple[np.ndarray, list[int]]] = []
    for i in range(400):
        n = int(rng.integers(8, 260))
        level = float(rng.choice([1.0, 1e3, 1e6, 1e12, -5e5]))
        noise = float(rng.choice([0.0, 1e-9, 1e-3, 0.01, 0.2]))
        values = level * (1 + rng.normal(0, noise, n))
        if i % 3 == 0:  # a step somewhere
            values[int(rng.integers(1, n)):] *= 1 + float(rng.choice([1e-4, 0.01, 0.05, 1.0]))
        if i % 7 == 0:  # an exact counter with an odd value now and then
            values = np.round(np.full(n, level) + (rng.random(n) < 0.05) * 7)
        count = int(rng.integers(1, 3))
        candidates = sorted(int(c) for c in rng.integers(1, n, count))
        if i % 11 == 0:
            candidates = candidates[::-1]  # out of order, or twice the same: merge reads them as given
        cases.append((values, candidates))
        found = window_search(values, P_VALUE)[0]
        if 0 < len(found) <= 2:
            cases.append((values, found))
    return cases


def test_what_the_screen_drops_merge_drops_too() -> None:
    cases = _cases()
    dropped = surely_dropped(cases, P_VALUE)
    assert 0 < dropped.sum() < len(cases)
    for (values, candidates), none in zip(cases, dropped.tolist()):
        if none:
            assert merge(values, candidates, P_VALUE) == [], (values[:5], candidates)


def test_it_clears_noise_and_leaves_steps_and_long_lists() -> None:
    rng = np.random.default_rng(7)
    noise = [(1e6 * (1 + rng.normal(0, 0.01, 200)), [int(rng.integers(20, 180))]) for _ in range(200)]
    assert surely_dropped(noise, P_VALUE).mean() > 0.9
    step = 1e6 * (1 + rng.normal(0, 0.01, 200))
    step[100:] *= 1.1
    assert surely_dropped([(step, [100]), (step, [50, 100]), (step[:100], [20, 40, 60]), (step, [])],
                          P_VALUE).tolist() == [False, False, False, False]
