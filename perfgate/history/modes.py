"""Mode mixes: a short run of a multimodal series' usual values is no change while the mix of its modes holds.

A kernel whose autotuner picks its configuration per run (or a GPU whose clocks throttle some runs) takes one of a
few times each run: mostly its main one, now and then a slower (or faster) one, the share steady. Four slow picks
in five runs happen by chance in a long history, and the t-test between that short segment and its neighbours
reads them as a regression and its revert. Like a flickering exact counter (``changes._passes``: its median must
move), such a segment is no change where nothing new shows in it: every value in it lies at a level its
neighbourhood has too (the main mode, or an off-mode level that ``USUAL`` neighbouring values share), and its
count of off-mode values is no surprise at the neighbourhood's off-mode share (binomial, at the p-value a point
against a short segment must pass). A regression lands its values at a new level, where the neighbourhood has
none: it is judged as before.

A short run that goes back to its neighbours' level in some of its runs is no level either, whatever its other
values are: a sick runner's spell (only the runs that land on it are slow) or a rare mode's picks between runs at the
main one. A regression is in every run of its code; so where two steps bound ``LEAST`` to ``WIDEST - 1`` runs
beyond the one level on both sides (their t-test does not pass the final p-value), the runs between the first and
last at the inside's level that lie nearer the outside's are counted: were the inside a level, each would be one of
its runs that landed that far toward the outside, which the series' other runs do (around their own segments'
medians) as often as they show it, at least once in as many runs as they have (a share not read as zero), and at
least as often as the noise unit's normal tail gives. A count so many that its binomial chance is under ``MIXED``
makes both steps no change points.
"""

from __future__ import annotations

from statistics import NormalDist
from typing import Sequence

import numpy as np

from perfgate.history.spikes import despike_one
from perfgate.history.stats import t_test

BAND = 3.0  # robust spreads (1.4826 x MAD) of the neighbourhood around a mode a value at that mode lies within
USUAL = 0.05  # the share of the neighbouring values an off-mode level must have for a value there to be usual
NEAREST = 20  # fewest neighbouring values to judge a mix from
WIDEST = 25  # runs a mix segment may span (``changes.SHORT``: a longer one is judged as a step)
LEAST = 3  # runs a mix segment spans at least (1-2 runs: ``blips``)
MIXED = 0.001  # the binomial chance under which the runs back at the outside level make a short run no level


def mix_edges(series: np.ndarray, points: Sequence[tuple[int, bool]], limit: float, p_value: float) -> set[int]:
    """The positions of the steps (``points``: each position and whether it is a step, in order) that bound a mix
    segment of a measured series: ``LEAST`` to ``WIDEST`` runs between two steps whose values are its
    neighbourhood's usual levels in a share ``limit`` does not rule out, or that go back to their neighbours' one
    level (``p_value``: the final one) too often for a level (``back_at_level``)."""
    found: set[int] = set()
    if len(series) < NEAREST or not bool(np.all(series > 0)):
        return found
    logs = np.log(series)
    positions = [at for at, _ in points]
    short = [k for k in range(len(points) - 1) if points[k][1] and points[k + 1][1]
             and LEAST <= positions[k + 1] - positions[k] < WIDEST]
    for k in short:
        before = positions[k - 1] if k else 0
        after = positions[k + 2] if k + 2 < len(positions) else len(series)
        if is_mix(logs[positions[k]:positions[k + 1]], logs[before:positions[k]], logs[positions[k + 1]:after], limit):
            found |= {positions[k], positions[k + 1]}
    if short:
        found |= back_at_level(np.log(despike_one(series)), positions, short, p_value)
    return found


def back_at_level(logs: np.ndarray, positions: Sequence[int], short: Sequence[int], p_value: float) -> set[int]:
    """The two steps bounding each short segment ``k`` in ``short`` (between ``positions[k]`` and ``positions[k +
    1]`` of a measured series' log values, its spikes out) that goes back to its neighbours' one level in more of
    its runs than a level's noise makes likely (the module's rule)."""
    from scipy.special import bdtrc

    edges = [0, *positions, len(logs)]
    segments = [logs[start:stop] for start, stop in zip(edges[:-1], edges[1:])]
    levels = [float(np.median(segment)) for segment in segments]
    residuals = [segment - level for segment, level in zip(segments, levels)]
    unit = 1.4826 * float(np.median(np.abs(np.concatenate(residuals))))
    found: set[int] = set()
    for k in short:
        inside, level, outside = segments[k + 1], levels[k + 1], (levels[k], levels[k + 2])
        if unit <= 0 or min(outside) <= level <= max(outside) or t_test(segments[k], segments[k + 2]) <= p_value:
            continue  # no excursion from one level
        old = max(outside) if level > max(outside) else min(outside)
        at_level = np.flatnonzero(np.abs(inside - old) >= np.abs(inside - level))
        between = inside[at_level[0]:at_level[-1] + 1]  # an edge placed a run off leaves no run back at the level
        back = int(np.count_nonzero(np.abs(between - old) < np.abs(between - level)))
        if not back:
            continue
        half = abs(level - old) / 2.0
        others = np.concatenate([r for j, r in enumerate(residuals) if j != k + 1])
        toward = np.count_nonzero((others if old > level else -others) > half)
        share = max(NormalDist().cdf(-half / unit), (toward + 1) / (len(others) + 1))
        if float(bdtrc(back - 1, len(between), share)) < MIXED:
            found |= {positions[k], positions[k + 1]}
    return found


def is_mix(inside: np.ndarray, left: np.ndarray, right: np.ndarray, limit: float) -> bool:
    """Whether a segment's log values (``inside``) are all at the usual levels of its neighbours (``left``,
    ``right``: the segments before and after it, one main mode at one level), with a count of off-mode values the
    neighbours' share makes likelier than ``limit``."""
    from scipy.special import bdtrc  # scipy.special, as the t-test: scipy.stats costs a second to import

    around = np.concatenate((left, right))
    if len(around) < NEAREST:
        return False
    center = float(np.median(around))
    spread = 1.4826 * float(np.median(np.abs(around - center)))
    width = BAND * spread
    if spread <= 0 or any(len(side) and abs(float(np.median(side)) - center) > width for side in (left, right)):
        return False  # no one main mode around it: a step on either side
    off_around = np.abs(around - center) > width
    off_inside = np.abs(inside - center) > width
    share = float(off_around.mean())
    if not off_inside.any() or share == 0.0:
        return False
    elsewhere = np.sort(around[off_around])
    odd = inside[off_inside]
    near = np.searchsorted(elsewhere, odd + width, side="right") - np.searchsorted(elsewhere, odd - width)
    if bool(np.any(near < max(USUAL * len(around), 3))):
        return False
    chance = float(bdtrc(int(off_inside.sum()) - 1, len(inside), share))  # P(at least that many off-mode values)
    return chance > limit
