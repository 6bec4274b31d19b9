"""Many series' values end to end, and per-segment reductions over them that give the floats one segment at a time
gives (``changes.t_test``, ``changes.median``): the arrays that ``judge.merge_many`` and ``divide`` work on."""

from __future__ import annotations

from typing import Sequence

import numpy as np

from perfgate.history.spikes import despike, may_hold_spikes

CELLS = 1 << 18  # values a batch of segments gathers at once (2 MB)


class Values:
    """Every series' values end to end, with where each starts."""

    def __init__(self, series: Sequence[np.ndarray]) -> None:
        lengths = np.array([len(values) for values in series], dtype=np.int64)
        self.flat = np.concatenate([np.zeros(0), *series]).astype(np.float64, copy=False)
        self.lengths = lengths
        self.offsets = np.cumsum(lengths) - lengths

    def rows(self, starts: np.ndarray, length: int) -> np.ndarray:
        """The segments of ``length`` values from each flat index in ``starts``, a row each."""
        result: np.ndarray = self.flat[starts[:, None] + np.arange(length)]
        return result

    def despiked(self, starts: np.ndarray, sizes: np.ndarray, cleaned: np.ndarray | None = None) -> Values:
        """The segments (flat start, size) end to end, each an entry of its own, with its spikes out where
        ``cleaned`` (per segment; all where None) says so: ``despike_one`` of each, the segments of a size
        cleaned as the rows of one array (those whose range rules out a spike left as they are)."""
        result = Values([])
        result.lengths = np.asarray(sizes, dtype=np.int64)
        result.offsets = np.cumsum(result.lengths) - result.lengths
        if np.array_equal(starts, self.offsets) and np.array_equal(result.lengths, self.lengths):
            result.flat = self.flat.copy()  # every series whole, as they lie
        else:
            result.flat = self.flat[np.repeat(starts - result.offsets, result.lengths)
                                    + np.arange(int(result.lengths.sum()))]
        chosen = np.flatnonzero((result.lengths >= 5) if cleaned is None else cleaned & (result.lengths >= 5))
        chosen = chosen[may_hold_spikes(*_extremes(result.flat, result.offsets[chosen], result.lengths[chosen]))]
        for size, group in by_length(result.lengths[chosen]):
            at = result.offsets[chosen[group]]
            rows = result.rows(at, size)
            clean = despike(rows)
            if clean is not rows:
                result.flat[at[:, None] + np.arange(size)] = clean
        return result


def _extremes(flat: np.ndarray, starts: np.ndarray, sizes: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per segment of ``flat`` (ascending starts, sizes >= 1, none overlapping): its largest and smallest value and
    its smallest magnitude, each segment and the gap after it reduced in turn (the gaps' results dropped)."""
    edges = np.stack((starts, starts + sizes), axis=1).ravel()
    edges = edges[:-1] if len(edges) and edges[-1] == len(flat) else edges
    if not len(edges):
        return np.zeros(0), np.zeros(0), np.zeros(0)
    return (np.maximum.reduceat(flat, edges)[::2], np.minimum.reduceat(flat, edges)[::2],
            np.minimum.reduceat(np.abs(flat), edges)[::2])

def by_length(sizes: np.ndarray) -> list[tuple[int, np.ndarray]]:
    """Indexes of ``sizes`` grouped by size (each group in index order), a group at most ``CELLS`` values long in
    all: the arrays of a batch stay a few MB however many segments are judged."""
    order = np.argsort(sizes, kind="stable")
    ordered = sizes[order]
    bounds = np.flatnonzero(np.diff(ordered)) + 1
    groups: list[tuple[int, np.ndarray]] = []
    for start, stop in zip([0, *bounds.tolist()], [*bounds.tolist(), len(order)]) if len(order) else ():
        size = int(ordered[start])
        step = max(CELLS // max(size, 1), 1)
        groups += [(size, order[at:min(at + step, stop)]) for at in range(start, stop, step)]
    return groups


def means_and_squares(values: Values, starts: np.ndarray, sizes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per segment (flat start, size >= 1): its mean and its squared deviations from it summed, as ``t_test``
    computes them (``sum() / n``, then ``np.dot`` of the deviations)."""
    means, squares = np.zeros(len(starts)), np.zeros(len(starts))
    for size, group in by_length(sizes):
        rows = values.rows(starts[group], size)
        mean = rows.sum(axis=1) / size
        deviations = rows - mean[:, None]
        means[group] = mean
        squares[group] = np.matmul(deviations[:, None, :], deviations[:, :, None])[:, 0, 0]
    return means, squares


def segment_medians(values: Values, starts: np.ndarray, sizes: np.ndarray) -> np.ndarray:
    """Per segment (size >= 1), ``changes.median``: the same order statistics, summed the same way."""
    result = np.zeros(len(starts))
    for size, group in by_length(sizes):
        ordered = np.sort(values.rows(starts[group], size), axis=1)
        half = size // 2
        if size % 2:
            result[group] = ordered[:, half] + 0.0
        else:
            result[group] = (ordered[:, half - 1] + (0.0 + ordered[:, half])) / 2.0
    return result
