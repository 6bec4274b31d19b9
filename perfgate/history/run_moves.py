"""How each run of a GPU moved its timing series (``runner_spells`` reads spells from it): per run, how many series
were beyond their own levels on both sides, each way, how far, and how many by far (``SHARP``).

A series' level either side of a run is the median of its values in the ``REACH`` runs before and in the ``REACH``
runs after; a series whose value is beyond both (slower than both, or faster than both) moved *in* that run and was
back after it. Its **deviation** there is its value less the mean of the two levels (oriented logs: larger is
worse), and its **noise unit** is the robust spread (1.4826 x MAD) of its deviations over all its runs. A move
beyond both sides, the nearer by more than ``SHARP`` of the series' own units, is a **sharp** move (a held step is
not: the runs after it are at its level): under no shared move few
series make one in any run (their tails: how few, each GPU's runs say), and a runner that slows a third of the
GPU's kernels by a few units makes many in the same run, where about as many as ever moved each way by any amount.
"""

from __future__ import annotations

from typing import NamedTuple, Sequence

import numpy as np

from perfgate.history.changes import SHORT
from perfgate.history.search import MIN_SIDE
from perfgate.history.series import Series

REACH = SHORT  # runs each side a series' level is read from: a spell shorter than half of it leaves that level be
SHARP = 3.0  # a sharp move: beyond both sides' levels by more than 3 of the series' own noise units
MAD_TO_SIGMA = 1.4826  # a normal distribution's standard deviation per median absolute deviation


class RunMoves(NamedTuple):
    """Per run (column) of a GPU's sampled series: how many had a value, moved up and moved down beyond both
    sides' levels, the median and robust spread of their log deviations from those levels, and their median level;
    and per way (row 0 slower, row 1 faster) how many moved sharply that way, and the median and robust spread
    of those series' deviations (NaN where none did)."""

    counted: np.ndarray
    up: np.ndarray
    down: np.ndarray
    median: np.ndarray
    spread: np.ndarray
    level: np.ndarray  # the median of the series' log values less each one's own median (NaN where none)
    sharp: np.ndarray  # (2, runs): series that moved sharply slower, faster
    lift: np.ndarray  # (2, runs): their median deviation
    lift_spread: np.ndarray  # (2, runs): its robust spread


def oriented(series: Series) -> np.ndarray:
    """The log of a series' values, signed so that larger is worse (a throughput's sign flipped); non-positive
    values as NaN."""
    with np.errstate(divide="ignore", invalid="ignore"):
        logs = np.where(series.values > 0, np.log(np.where(series.values > 0, series.values, 1.0)), np.nan)
    return -logs if series.facts.get("direction") == "higher" else logs


def pool_matrix(pool: Sequence[Series], commits: int) -> np.ndarray:
    matrix = np.full((len(pool), commits), np.nan)
    for row, series in enumerate(pool):
        matrix[row, series.commits] = oriented(series)
    return matrix


def side_medians(matrix: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per cell, the median of the row's values in its ``REACH`` runs before and in those after (NaN where fewer
    than ``MIN_SIDE`` are there): the runs the row has a value at, so that an outage between them (a gap of commits
    the GPU did not run at) leaves the level read from as many runs as elsewhere. Each row's values are moved to its
    front (its NaNs after them), read there, and put back; NaNs sort last, so each window's median is read at its
    own count."""
    rows, columns = matrix.shape
    order = np.argsort(np.isnan(matrix), axis=1, kind="stable")
    compact = np.take_along_axis(matrix, order, axis=1)
    padded = np.full((rows, columns + 2 * REACH + 1), np.nan)
    padded[:, REACH:REACH + columns] = compact
    windows = np.sort(np.lib.stride_tricks.sliding_window_view(padded, REACH, axis=1), axis=2)
    count = REACH - np.isnan(windows).sum(axis=2)
    low = np.take_along_axis(windows, np.maximum((count - 1) // 2, 0)[..., None], axis=2)[..., 0]
    high = np.take_along_axis(windows, np.maximum(count // 2, 0)[..., None], axis=2)[..., 0]
    medians = np.where(count >= MIN_SIDE, (low + high) / 2, np.nan)
    before, after = np.empty((rows, columns)), np.empty((rows, columns))
    np.put_along_axis(before, order, medians[:, :columns], axis=1)
    np.put_along_axis(after, order, medians[:, REACH + 1:REACH + 1 + columns], axis=1)
    return before, after


def noise_units(deviation: np.ndarray) -> np.ndarray:
    """Per row, the robust spread of its deviations (NaN where it has none; 0 where most are exactly alike)."""
    units = np.full(deviation.shape[0], np.nan)
    some = np.isfinite(deviation).any(axis=1)
    if some.any():
        rows = deviation[some]
        units[some] = MAD_TO_SIGMA * np.nanmedian(np.abs(rows - np.nanmedian(rows, axis=1)[:, None]), axis=1)
    return units


def _robust(values: np.ndarray, mask: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per column, the median of the values where ``mask`` holds and their robust spread (NaN where none)."""
    median, spread = np.full(values.shape[1], np.nan), np.full(values.shape[1], np.nan)
    some = mask.any(axis=0)
    if some.any():
        chosen = np.where(mask[:, some], values[:, some], np.nan)
        median[some] = np.nanmedian(chosen, axis=0)
        spread[some] = MAD_TO_SIGMA * np.nanmedian(np.abs(chosen - median[some]), axis=0)
    return median, spread


def run_moves(matrix: np.ndarray) -> tuple[RunMoves, np.ndarray]:
    """``RunMoves`` of a GPU's sampled series (rows: oriented log values by commit index, NaN where none), and
    each cell's deviation from the mean of its two sides' levels (NaN where it has no value or a side none)."""
    before, after = side_medians(matrix)
    judged = np.isfinite(matrix) & np.isfinite(before) & np.isfinite(after)
    deviation = np.where(judged, matrix - (before + after) / 2, np.nan)
    up = judged & (matrix > np.fmax(before, after))
    down = judged & (matrix < np.fmin(before, after))
    counted = judged.sum(axis=0)
    median, spread = _robust(deviation, judged)
    level = np.full(matrix.shape[1], np.nan)
    present = np.isfinite(matrix)
    if present.any():
        rows = present.any(axis=1)  # a row with no value has no median of its own (nanmedian would warn)
        centred = matrix - np.nanmedian(np.where(rows[:, None], matrix, 0.0), axis=1)[:, None]
        some_value = present.any(axis=0)
        level[some_value] = np.nanmedian(centred[:, some_value], axis=0)
    units = noise_units(deviation)[:, None]
    bar = SHARP * np.where(units > 0, units, np.inf)  # beyond the nearer side by that much: a held step is not
    sharp_up = up & (np.nan_to_num(matrix - np.fmax(before, after)) > bar)
    sharp_down = down & (np.nan_to_num(np.fmin(before, after) - matrix) > bar)
    lifts = [_robust(deviation, sharp_up), _robust(-deviation, sharp_down)]
    return RunMoves(counted, up.sum(axis=0), down.sum(axis=0), median, spread, level,
                    np.stack([sharp_up.sum(axis=0), sharp_down.sum(axis=0)]),
                    np.stack([lift for lift, _ in lifts]), np.stack([width for _, width in lifts])), deviation


def sharp_runs(moves: RunMoves, way: int, alpha: float, fewest: int) -> np.ndarray:
    """Per run, whether more series moved sharply that way (``way`` 0 slower, 1 faster) than chance allows: a
    binomial tail at most ``alpha`` at the GPU's usual share of such moves (the median over its runs with at least
    ``fewest`` series; at least one series a run, so a GPU whose runs rarely see one is not startled by one)."""
    from scipy.special import bdtrc  # scipy.special, as the t-test: scipy.stats costs a second to import

    counted, sharp = moves.counted, moves.sharp[way]
    enough = counted >= fewest
    flagged = np.zeros(len(counted), dtype=bool)
    if not enough.any():
        return flagged
    usual = max(float(np.median(sharp[enough] / counted[enough])), 1.0 / float(np.median(counted[enough])))
    flagged[enough] = bdtrc(sharp[enough] - 1, counted[enough], min(usual, 1.0)) <= alpha
    return flagged
