"""A step smaller than its series' own noise is no change point: the t-test sees it, a person and the gate cannot.

Student's t-test between two long segments passes a shift of any size: over 100 runs a side, a shift of a third
of one run's noise is many standard errors. The environment makes such shifts all the time, with no code change:
a pool's room and chassis warm for a day (boost clocks drift with temperature), the mix of runners or of an
autotuner's picks changes, a driver nudges every kernel a little. A regression that matters to a user stands out
of a run's own noise, which is all a gate comparing one run to the history can see. So each step of a measured
series (not an exact counter's, whose noise is none) must move the level by at least ``FLOOR`` of the series'
noise units: 1.4826 x the median absolute deviation of its values (in log) around the medians of the segments
its change points bound, the robust spread of one run about its level. A point under it is dropped, and the
series judged again without it, as a mode mix's edges are (``perfgate.history.modes``).

A short segment's level is itself uncertain: read from a few runs, its median moves by 1.2533 x unit / sqrt(n)
(the sample median's standard error in normal noise), and the t-test, which reads the segment's mean, takes one
or two slow runs inside it (a host benchmark's GC pauses, right-skewed) for a level. So a step beside a segment of
``LEAST`` to ``SHORT - 1`` runs must also move the level by ``z`` standard errors of the difference of the two
sides' medians, read as the change points were judged (the series with its spikes out,
``perfgate.history.spikes``), with ``z`` the normal quantile of the p-value a point against a short segment must
pass: a median test beside the t-test's mean test, as robust to slow runs as the levels the output reports.
"""

from __future__ import annotations

from statistics import NormalDist
from typing import Sequence

import numpy as np

from perfgate.history.spikes import despike_one

FLOOR = 1.5  # noise units a step must move its series' level by (the level's median, in log)
LEAST = 3  # values each side a step is judged by its size with (1-2 runs: a blip, judged by ``blips``)
SHORT = 25  # runs under which a side's level is read from few values (``changes.SHORT``)
MEDIAN_ERROR = 1.2533  # the standard error of a median of n normal values, x sigma / sqrt(n): sqrt(pi / 2)


def small_steps(series: np.ndarray, points: Sequence[tuple[int, bool]], limit: float = 0.0) -> set[int]:
    """The positions of the steps (``points``: each change point's position and whether it is a measured step, in
    order) of a measured series whose level moves by less than ``FLOOR`` noise units, or, beside a short segment,
    by less than its medians' standard errors allow at the p-value ``limit`` (0: not judged so)."""
    found: set[int] = set()
    if not any(step for _, step in points) or not bool(np.all(series > 0)):
        return found
    levels, unit, sizes = _levels(np.log(series), points)
    if unit <= 0.0:
        return found
    for k, (at, step) in enumerate(points):
        if step and min(sizes[k], sizes[k + 1]) >= LEAST and abs(levels[k + 1] - levels[k]) < FLOOR * unit:
            found.add(at)
    if limit > 0.0 and any(step and min(sizes[k], sizes[k + 1]) < SHORT for k, (_, step) in enumerate(points)):
        found |= unsure_levels(series, points, limit)
    return found


def unsure_levels(series: np.ndarray, points: Sequence[tuple[int, bool]], limit: float) -> set[int]:
    """The steps beside a segment of ``LEAST`` to ``SHORT - 1`` runs between steps (or a step and an end) whose two
    sides' medians (the series with its spikes out, all values positive) lie within ``z`` standard errors of their
    difference of each other, ``z`` the two-sided normal quantile of ``limit``."""
    found: set[int] = set()
    steps = [(at, True) for at, step in points if step]  # a gradual point bounds no level: it is a slow movement
    levels, unit, sizes = _levels(np.log(despike_one(series)), steps)
    z = NormalDist().inv_cdf(1.0 - limit / 2.0)
    for k, (at, _) in enumerate(steps):
        shorter, longer = sorted((sizes[k], sizes[k + 1]))
        if LEAST <= shorter < SHORT:
            error = MEDIAN_ERROR * unit * float(np.sqrt(1.0 / shorter + 1.0 / longer))
            if abs(levels[k + 1] - levels[k]) < z * error:
                found.add(at)
    return found


def _levels(logs: np.ndarray, points: Sequence[tuple[int, bool]]) -> tuple[list[float], float, list[int]]:
    """The medians of the segments the ``points`` bound (of log values), the noise unit (1.4826 x the median
    absolute deviation around them) and the segments' sizes."""
    edges = [0] + [at for at, _ in points] + [len(logs)]
    segments = [logs[start:stop] for start, stop in zip(edges[:-1], edges[1:])]
    levels = [float(np.median(segment)) if len(segment) else 0.0 for segment in segments]
    residuals = np.concatenate([segment - level for segment, level in zip(segments, levels)])
    return levels, 1.4826 * float(np.median(np.abs(residuals))), [len(segment) for segment in segments]
