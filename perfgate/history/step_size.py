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
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

FLOOR = 1.5  # noise units a step must move its series' level by (the level's median, in log)
LEAST = 3  # values each side a step is judged by its size with (1-2 runs: a blip, judged by ``blips``)


def small_steps(series: np.ndarray, points: Sequence[tuple[int, bool]]) -> set[int]:
    """The positions of the steps (``points``: each change point's position and whether it is a measured step, in
    order) of a measured series whose level moves by less than ``FLOOR`` noise units."""
    found: set[int] = set()
    if not any(step for _, step in points) or not bool(np.all(series > 0)):
        return found
    logs = np.log(series)
    edges = [0] + [at for at, _ in points] + [len(series)]
    segments = [logs[start:stop] for start, stop in zip(edges[:-1], edges[1:])]
    levels = [float(np.median(segment)) if len(segment) else 0.0 for segment in segments]
    residuals = np.concatenate([segment - level for segment, level in zip(segments, levels)])
    unit = 1.4826 * float(np.median(np.abs(residuals)))
    if unit <= 0.0:
        return found
    for k, (at, step) in enumerate(points):
        left, right = segments[k], segments[k + 1]
        if step and min(len(left), len(right)) >= LEAST and abs(levels[k + 1] - levels[k]) < FLOOR * unit:
            found.add(at)
    return found
