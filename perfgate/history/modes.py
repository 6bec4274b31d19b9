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
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

BAND = 3.0  # robust spreads (1.4826 x MAD) of the neighbourhood around a mode a value at that mode lies within
USUAL = 0.05  # the share of the neighbouring values an off-mode level must have for a value there to be usual
NEAREST = 20  # fewest neighbouring values to judge a mix from
WIDEST = 25  # runs a mix segment may span (``changes.SHORT``: a longer one is judged as a step)
LEAST = 3  # runs a mix segment spans at least (1-2 runs: ``blips``)


def mix_edges(series: np.ndarray, points: Sequence[tuple[int, bool]], limit: float) -> set[int]:
    """The positions of the steps (``points``: each position and whether it is a step, in order) that bound a mix
    segment of a measured series: ``LEAST`` to ``WIDEST`` runs between two steps whose values are its
    neighbourhood's usual levels in a share ``limit`` does not rule out."""
    found: set[int] = set()
    if len(series) < NEAREST or not bool(np.all(series > 0)):
        return found
    logs = np.log(series)
    positions = [at for at, _ in points]
    for k in range(len(points) - 1):
        (start, step), (stop, next_step) = points[k], points[k + 1]
        if not (step and next_step and LEAST <= stop - start < WIDEST):
            continue
        before = positions[k - 1] if k else 0
        after = positions[k + 2] if k + 2 < len(positions) else len(series)
        if is_mix(logs[start:stop], logs[before:start], logs[stop:after], limit):
            found |= {start, stop}
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
