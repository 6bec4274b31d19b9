"""Blips: a regression reverted after one or two commits, too short for the search's splits (``search.MIN_SIDE``
points a side) and for the excursion test (``excursions.LEAST_INSIDE`` commits inside), judged on their own.

A measured series' single odd run is the runner's (a co-tenant, a slow launch among the few replayed): no change,
whatever its size. Two runs in a row at one new level are a change when the series' own history rules out the
runner: a **pair** is

- both runs beyond the medians of the ``CONTEXT`` commits before and after it (on the same side) by
  ``SIGMAS`` standard deviations of the series' noise at least (the robust spread of consecutive differences,
  1.4826 x their median magnitude / sqrt(2): steps and spikes move one or two of them), its neighbours (the
  commit before it, the one after it) less than half as far off (two commits, not a longer run), and the two
  medians less than half as far apart (it comes back to the level it left: no step's first commits overshooting);
- a level: the two runs within ``GAP`` standard deviations of each other (slow runs land anywhere in +5..50%;
  a commit's code puts both at one value);
- beyond the runner's reach: of the series' ``n`` commits, ``M`` lie at least half as far off (beyond both
  of their own neighbourhoods' medians, ``CONTEXT`` commits a side), the pair's two among them. Were they slow
  runs that landed anywhere, two would sit side by side with a chance of about M (M - 1) / n: that must be at
  most ``CHANCE``. A heavy-tailed or bimodal series (two slow runs in a row at 85 and 13 standard deviations on
  blind set 2's flat series) has many such commits; a series on locked clocks has none or a few (M = 2: 1% in
  200 commits).

An exact counter (``search.is_piecewise_constant``) is one instruction stream per binary: a different count is
a different stream. An **exact blip** is one or two commits at one new value, between ``EXACT_SIDE`` commits of
one old value on each side, in a counter that has never flickered: no other run of fewer than ``EXACT_SIDE``
commits at a value anywhere in its history, and the blip's value seen nowhere else. A counter that flickers (an
atomic's retries, an autotuner's two configurations) shows other short runs or repeats its odd value, and its
blips are not reported; one that flickers once, in a long history, is reported until it flickers again.

The search finds blips window by window (``scan``: the local rules, on one window's values; windows overlap by
half, so a blip with its ``CONTEXT`` commits a side lies whole in one of them, except where a window starts at a
split found in the last ones before it, Otava's rule, and that split is the blip's own edge: such a blip is
missed); ``changes.merge`` judges those its candidates bound against the whole series (``held``).
"""

from __future__ import annotations

from typing import NamedTuple, Sequence

import numpy as np

from perfgate.history.stats import t_test

CONTEXT = 8  # commits a side whose median is the level a blip leaves and comes back to
SIGMAS = 7.0  # noise standard deviations a pair's runs lie beyond both levels
GAP = 5.0  # noise standard deviations a pair's two runs may lie apart (a level: sqrt(2) x 3.5 of one run's)
CHANCE = 0.05  # the most M (M - 1) / n: the chance that two of M far-off runs in n land side by side
EXACT_SIDE = 3  # commits of the old value on each side of an exact blip; a shorter run elsewhere is a flicker
MAD_TO_SIGMA = 1.4826
WIDTHS = (1, 2)  # commits an exact blip may span; a measured one spans 2


class Blip(NamedTuple):
    start: int  # its first commit (a position)
    width: int  # commits at the new level


def noise(values: np.ndarray) -> float:
    """A stretch's noise standard deviation: 1.4826 x the median magnitude of consecutive differences / sqrt(2)."""
    if len(values) < 2:
        return 0.0
    return float(MAD_TO_SIGMA * np.median(np.abs(np.diff(values))) / np.sqrt(2.0))


def scan(values: np.ndarray, exact: bool) -> list[Blip]:
    """The blips the local rules find in ``values`` (a search window or a whole series; ``exact``: an exact
    counter's, ``search.is_piecewise_constant``). Each blip is judged on its own commits and its context alone,
    so a window that holds them finds what the whole series does."""
    rows = values[None, :]
    _, starts, widths = exact_blips(rows) if exact else pairs(rows)
    return [Blip(int(at), int(width)) for at, width in zip(starts.tolist(), widths.tolist())]


class Found(NamedTuple):
    """Blips of either kind in whole rows (``row_blips``), one an element: its row, first commit, width, whether
    the exact rule found it, and the columns its context spans, [begin, end)."""

    row: np.ndarray
    start: np.ndarray
    width: np.ndarray
    exact: np.ndarray
    begin: np.ndarray
    end: np.ndarray


def row_blips(rows: np.ndarray, fresh: int = 0) -> Found:
    """Every blip ``pairs`` and ``exact_blips`` find in each whole row, those whose context reaches column
    ``fresh`` or later. Their rules read a blip's commits and its context alone, so a window of a row finds those
    whose context it holds: its kind's, from its columns (``window_blips``); each column is judged once, not once
    per window that holds it."""
    kinds = ((pairs(rows, fresh), False, CONTEXT), (exact_blips(rows, fresh), True, EXACT_SIDE))
    row, start, width = (np.concatenate(parts) for parts in zip(*(found for found, _, _ in kinds)))
    exact = np.concatenate([np.full(len(found[0]), kind) for found, kind, _ in kinds])
    side = np.concatenate([np.full(len(found[0]), reach, dtype=np.int64) for found, _, reach in kinds])
    return Found(row, start, width, exact, start - side, start + width + side)


def window_blips(rows: np.ndarray, found: Found, picked: np.ndarray, start: int, stop: int,
                 fresh: int = 0) -> np.ndarray:
    """What a scan of each picked window alone finds (the screen's rule: ``tests/history/test_history_blips_batched.py`` keeps it as the reference) from ``found = row_blips(rows)``: per picked row, whether a
    blip of the window's kind lies whole in its columns and reaches its column ``fresh`` or later (any column
    where the window's first ``fresh`` columns are of the other kind)."""
    window = rows[picked, start:stop]
    exact = exact_rows(window)
    since = np.full(len(picked), fresh)
    if 0 < fresh <= window.shape[1]:
        since[exact_rows(window[:, :fresh]) != exact] = 0
    position = np.full(len(rows), -1, dtype=np.int64)
    position[picked] = np.arange(len(picked))
    inside = np.flatnonzero((position[found.row] >= 0) & (found.begin >= start) & (found.end <= stop))
    at = position[found.row[inside]]
    hit = at[(found.exact[inside] == exact[at]) & (found.end[inside] > start + since[at])]
    result = np.zeros(len(picked), dtype=bool)
    result[hit] = True
    return result


def exact_rows(rows: np.ndarray) -> np.ndarray:
    """``search.is_piecewise_constant`` of each row."""
    same = np.count_nonzero(rows[:, 1:] == rows[:, :-1], axis=1)
    result: np.ndarray = same >= 0.75 * (rows.shape[1] - 1)
    return result


def pairs(rows: np.ndarray, fresh: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Measured pairs in each row by the local rules (row, start, width), those whose context reaches column
    ``fresh`` or later: beyond both contexts' medians by ``SIGMAS`` of their noise (the mean of the two contexts'
    ``noise``), neighbours less than half as far off, the two runs within ``GAP`` of each other."""
    none = np.zeros(0, dtype=np.int64)
    n = rows.shape[1]
    x = rows
    at = np.arange(max(CONTEXT, fresh - CONTEXT - 1), n - CONTEXT - 1)
    if not len(at) or not len(rows):
        return none, none, none
    # both runs beyond both neighbours on one side, by more than half their gap: what the rules below imply
    lo, hi = int(at[0]), int(at[-1]) + 1  # the columns at, at + 1, ... as views, not copies
    low = np.minimum(x[:, lo:hi], x[:, lo + 1:hi + 1])
    high = np.maximum(x[:, lo:hi], x[:, lo + 1:hi + 1])
    margin_up = low - np.maximum(x[:, lo - 1:hi - 1], x[:, lo + 2:hi + 2])
    margin_down = np.minimum(x[:, lo - 1:hi - 1], x[:, lo + 2:hi + 2]) - high
    gap = high - low
    with np.errstate(invalid="ignore"):
        maybe = ((margin_up > 0) | (margin_down > 0)) & (gap * SIGMAS < 2 * GAP * np.maximum(margin_up, margin_down))
    row, column = np.nonzero(maybe)
    start = at[column]
    up = margin_up[row, column] > 0
    near = start[:, None] + np.arange(-CONTEXT, 0)
    far = start[:, None] + np.arange(2, 2 + CONTEXT)
    before, after = x[row[:, None], near], x[row[:, None], far]
    level_before, level_after = np.median(before, axis=1), np.median(after, axis=1)
    sign = np.where(up, 1.0, -1.0)
    first, second = x[row, start], x[row, start + 1]
    pair = np.where(up, np.minimum(first, second), np.maximum(first, second))
    offset = sign * (pair - np.where(up, np.maximum(level_before, level_after), np.minimum(level_before, level_after)))
    neighbour = np.maximum(sign * (x[row, start - 1] - level_before), sign * (x[row, start + 2] - level_after))
    back = 2 * np.abs(level_before - level_after) < offset  # it comes back to the level it left
    gap = np.abs(first - second)
    # the noise's medians only where the levels' rules hold, and gap <= GAP sigma <= GAP offset / SIGMAS (which
    # the noise's rules imply; a hair of slack for the products' rounding)
    leveled = np.flatnonzero((2 * neighbour < offset) & back & (gap * SIGMAS <= GAP * offset * (1 + 1e-9)))
    sigma = MAD_TO_SIGMA / np.sqrt(2.0) * (np.median(np.abs(np.diff(before[leveled], axis=1)), axis=1)
                                            + np.median(np.abs(np.diff(after[leveled], axis=1)), axis=1)) / 2
    kept = leveled[(sigma > 0) & (offset[leveled] >= SIGMAS * sigma) & (gap[leveled] <= GAP * sigma)]
    return row[kept], start[kept], np.full(len(kept), 2, dtype=np.int64)


def exact_blips(rows: np.ndarray, fresh: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Exact blips in each row (row, start, width), those whose context reaches column ``fresh`` or later: one or
    two commits at one value between ``EXACT_SIDE`` commits of another on each side."""
    n = rows.shape[1]
    found = []
    for width in WIDTHS:
        at = np.arange(max(EXACT_SIDE, fresh - width - EXACT_SIDE + 1), n - width - EXACT_SIDE + 1)
        if not len(at):
            continue
        lo, hi = int(at[0]), int(at[-1]) + 1

        def shifted(by: int) -> np.ndarray:  # rows[:, at + by], a view
            return rows[:, lo + by:hi + by]

        old = shifted(-1)
        blip = shifted(0) != old
        for k in range(1, EXACT_SIDE):
            blip &= shifted(-1 - k) == old
        for k in range(1, width):
            blip &= shifted(k) == shifted(0)
        for k in range(EXACT_SIDE):
            blip &= shifted(width + k) == old
        row, column = np.nonzero(blip)
        found.append((row, at[column], np.full(len(row), width, dtype=np.int64)))
    if not found:
        none = np.zeros(0, dtype=np.int64)
        return none, none, none
    row, start, widths = (np.concatenate(parts) for parts in zip(*found))
    order = np.lexsort((start, row))
    return row[order], start[order], widths[order]


def pair_offset(values: np.ndarray, at: int, width: int = 2) -> float:
    """How far the ``width`` runs from ``at`` lie beyond both medians of the ``CONTEXT`` commits before and after
    them: the nearer run's distance to the nearer median, signed (0 where they are not all on one side)."""
    block = values[at:at + width]
    before = np.median(values[max(at - CONTEXT, 0):at])
    after = np.median(values[at + width:at + width + CONTEXT])
    up = float(block.min() - max(before, after))
    down = float(min(before, after) - block.max())
    return up if up > 0 else -down if down > 0 else 0.0


def blip_edges(values: np.ndarray, exact: bool) -> list[int]:
    """The candidates ``scan``'s blips add: each one's first commit and the first after it."""
    return [at for blip in scan(values, exact) for at in (blip.start, blip.start + blip.width)]


def held(series: np.ndarray, candidates: Sequence[int], exact: bool) -> tuple[list[Blip], list[int]]:
    """The blips bounded by two candidates that the whole series holds (``exact``: an exact counter's), and the
    candidates left for the search's judgement: every blip's edges out, held or not (a one- or two-commit segment
    is no step), of either kind (a window's own kind may differ from the series')."""
    points = set(candidates)
    found = {kind: [blip for blip in scan(series, kind) if blip.start in points and blip.start + blip.width in points]
             for kind in (False, True)}
    if not found[False] and not found[True]:
        return [], list(candidates)
    edges = {at for blips in found.values() for blip in blips for at in (blip.start, blip.start + blip.width)}
    rest = [at for at in candidates if at not in edges]
    kept = [blip for blip in found[exact] if (_exact_holds(series, blip) if exact else _pair_holds(series, blip))]
    return kept, rest


def _exact_holds(series: np.ndarray, blip: Blip) -> bool:
    """The counter never flickered: no other run shorter than ``EXACT_SIDE`` commits (its first and last runs,
    cut by the series' ends, aside), and the blip's value nowhere else."""
    edges = np.flatnonzero(series[1:] != series[:-1]) + 1
    starts = np.concatenate(([0], edges))
    stops = np.concatenate((edges, [len(series)]))
    inner = slice(1, len(starts) - 1)
    short = (stops[inner] - starts[inner] < EXACT_SIDE) & (starts[inner] != blip.start)
    if short.any():
        return False
    value = series[blip.start]
    return int(np.count_nonzero(series == value)) == blip.width


def _pair_holds(series: np.ndarray, blip: Blip) -> bool:
    """A measured pair against the series' noise and its other far-off commits (``CHANCE``)."""
    reach = abs(pair_offset(series, blip.start)) / 2
    offsets = np.abs(single_offsets(series))
    offsets[max(blip.start - 1, 0):blip.start + blip.width + 1] = 0.0
    far = int(np.count_nonzero(offsets >= reach)) + blip.width
    return far * (far - 1) <= CHANCE * len(series)


def single_offsets(series: np.ndarray) -> np.ndarray:
    """Each commit's ``pair_offset`` of width 1: how far it lies beyond both medians of the ``CONTEXT`` commits
    before and after it (of the one side the series holds in full near its ends; 0 where it holds neither)."""
    n = len(series)
    result = np.zeros(n)
    if n < CONTEXT + 1:
        return result
    medians = np.median(np.lib.stride_tricks.sliding_window_view(series, CONTEXT), axis=1)  # from each commit on
    before, after = np.full(n, np.nan), np.full(n, np.nan)
    before[CONTEXT:] = medians[:n - CONTEXT]
    after[:n - CONTEXT] = medians[1:]
    before = np.where(np.isnan(before), after, before)
    after = np.where(np.isnan(after), before, after)
    with np.errstate(invalid="ignore"):
        up = series - np.maximum(before, after)
        down = np.minimum(before, after) - series
    result = np.where(up > 0, up, np.where(down > 0, -down, 0.0))
    return result


def blip_levels(series: np.ndarray, blip: Blip) -> tuple[float, float, float, float]:
    """A held blip's t-test p-value (its runs against the ``CONTEXT`` commits on each side, raw: a blip's runs are
    what ``despike`` takes out), and the medians before it, of it and after it."""
    stop = blip.start + blip.width
    inside = series[blip.start:stop]
    before, after = series[max(blip.start - CONTEXT, 0):blip.start], series[stop:stop + CONTEXT]
    return (t_test(np.concatenate((before, after)), inside), float(np.median(before)) + 0.0,
            float(np.median(inside)) + 0.0, float(np.median(after)) + 0.0)
