"""The call-site test of ``compare.alone`` reads the median and the median absolute deviation of a call site's
others from the sorted values (issue 37: a group of 100,000 launches has thousands of call sites that vote): the
numbers must be numpy's own, to the bit, or a verdict could move."""

from __future__ import annotations

import numpy as np

from perfgate.compare.alone import Others, _sorted_deviation, _sorted_median, call_sites


def _samples() -> list[np.ndarray]:
    rng = np.random.default_rng(37)
    samples = []
    for size in list(range(1, 24)) + [99, 100, 1001]:
        samples += [rng.normal(size=size), rng.integers(-3, 4, size=size).astype(float),
                    np.round(rng.normal(size=size), 2), rng.exponential(size=size) * 1e-3]
    return samples


def test_sorted_median_and_deviation_are_numpys() -> None:
    """Of the sorted values, and of the sorted values with some left out in place (a call site's others)."""
    rng = np.random.default_rng(11)
    for values in _samples():
        ordered = np.sort(values)
        for removed in (np.zeros(0, dtype=np.intp), np.sort(rng.choice(values.size, values.size // 3, replace=False))):
            others = np.delete(values[np.argsort(values, kind="stable")], removed)
            center = float(np.median(others)) if others.size else float("nan")
            read = Others(ordered, removed)
            assert read.size == others.size and [read[i] for i in range(read.size)] == others.tolist()
            if not others.size:
                continue
            assert _sorted_median(read) == center
            assert _sorted_deviation(read, center) == float(np.median(np.abs(others - center)))


def test_call_site_found_as_before() -> None:
    """A loop of 4 positions x 6 iterations whose position 1 moved in 5 of its 6 launches: those 5 are found."""
    rng = np.random.default_rng(3)
    worse = rng.normal(scale=0.002, size=24)
    worse[1::4][:5] += 0.2
    moved = np.zeros(24, dtype=bool)
    moved[1::4][:5] = True
    found = call_sites(worse, moved, np.ones(24, dtype=bool), margin=0.02, z=3.0)
    assert np.flatnonzero(found).tolist() == [1, 5, 9, 13, 17]
