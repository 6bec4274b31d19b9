"""Runner spells: most timing series of one GPU slower (or faster) together for a few runs, then back.

A CI run executes all of a GPU's tests on one runner. When that runner is slow for a few runs (a bad board, a hot
rack, a noisy neighbour), every timing series of that GPU is slower in the same runs and comes back after: within
one series that looks like a short regression and its revert, and the search names both edges, in many series at
the same commits. No single series can tell it from a reverted regression of the same size; its GPU's other series
can: the runner, not the code, moved them all.

Per run, each timing series of the GPU (a sample of at most ``SAMPLE``, every one where fewer) is compared with its
own level on either side: the median of its values in the ``REACH`` runs before and in the ``REACH`` runs after. A
series whose value is beyond both (slower than both, or faster than both) moved *in* that run and was back
after it. A run is a **spell run** where at least ``SHARE`` of the series with a value there moved the same way and
a sign test says that is no chance (binomial, each way at most one half under no shared move: p at most ``ALPHA``).
Runs in a row that pass that test but whose moves stay within the runners' usual spread (a sick runner among runners
of mixed speeds, a warm spell of the pool) are spell runs where together they stand out (``_stretches``).
A runner that slows only some of the GPU's series (a third to a half: the kernels bound by what its sick part
limits) fails that share, and under no shared move about half the series are beyond both sides each way by chance,
so no share-based test sees it: a run is also a spell run (a **partial** one) where more series moved *sharply*
that way (beyond both sides by more than ``run_moves.SHARP`` of their own noise units) than the GPU's usual share
of such moves allows (``run_moves.sharp_runs``: a binomial tail at most ``ALPHA``). The price: a real regression
in that many series, reverted within a few commits, reads as a spell too (as one in two thirds of them does).
Spell runs in a row (runs the GPU did not run at in between) are one spell. A held change (a driver update, a
runner swap) is not beyond both sides: the runs after it are at its level, so it is never a spell.

A series with a change point within ``SLOP`` runs of a spell, or a move and its return that hold one, is judged
again (``changes.merge``, the same tests), all its points, on its values with those in the spell's runs left out, where they moved like the GPU's (their
deviation within ``SPREAD`` robust spreads of the sampled series' median deviation in that run; in a partial spell,
whose median deviation is about nil, a move its way beyond ``LIKE`` of their own noise units and within ``SPREAD``
robust spreads above the sharp movers' median move: ``_moved_like``; a point farther
from the spell had the spell's runs in a segment beside it, and a slow run before a spell can draw a split there):
a spell's edges find no step then and are not named; a real step beside a spell still is, and a reverted regression much larger than the
runner's move (a code change inside a spell) keeps its values and its points. Only series that move with the
runner are judged so (``runner_signal``: timings, and regions' GPU-idle shares, whose spells are read apart from the
timings'): an exact counter does not move with the runner. The spells that hid a change point are
reported once each, in the words of the PR comparison's drift canary (``perfgate.compare.same_code``).
"""

from __future__ import annotations

import functools
from typing import Callable, Collection, NamedTuple, Sequence

import numpy as np

from perfgate.history.cache_rows import Found
from perfgate.history.changes import ChangePoint, merge
from perfgate.history.db import History
from perfgate.history.run_moves import REACH, RunMoves, noise_units, pool_matrix, run_moves, sharp_runs, side_medians
from perfgate.history.search import MIN_SIDE, is_piecewise_constant
from perfgate.history.series import Series, load_series
from perfgate.metrics import is_timing
from perfgate.vocabulary import is_benchmark_metric

SHARE = 2 / 3  # the share of a GPU's series that must move together: most of them, not a few
ALPHA = 0.001  # a spell run's sign test (each way, per run): Otava's default p-value
MIN_SERIES = 10  # fewest series with a value in a run to judge it: 10 of 10 one way is p 0.001
SAMPLE = 200  # series a GPU's runs are judged from: at 200, two thirds one way is p 2e-6 by chance
SLOP = 2  # runs beside a spell a change point it explains may sit (a spike beside an edge moves the split)
USUAL = 3.0  # a spell run's median move beyond 3 robust spreads of the GPU's run-to-run moves (its runners' spread)
STRETCH = REACH // 2  # most runs in a row a spell spans: a longer one leaves its runs no level of their own to read
SPREAD = 5.0  # robust spreads (1.4826 x MAD) of the GPU's deviations in a run a series' own may lie off its median
LIKE = 1.0  # own noise units a series moved the spell's way in a partial spell's run to be judged without it


@functools.cache
def runner_timed(metric: str) -> bool:
    """Whether a metric moves with the runner: a timing (``metrics.is_timing``) or a pytest-benchmark statistic
    of the rounds' times (their spread aside)."""
    return is_timing(metric) or (is_benchmark_metric(metric) and metric not in ("time.stddev", "time.iqr", "rounds"))


IDLE_SHARE = "idle share"
TIMING = "timing"


def runner_signal(metric: str) -> str | None:
    """How a metric moves with the runner, each kind judged for spells apart: ``timing`` (``runner_timed``), or
    ``idle share`` (a region's share of time the GPU sat idle: a stalled host raises it while the kernels' times
    hold, a slow GPU may lower it, so it is no sample of the times' move); None: it does not move (counters)."""
    if "idle_pct" in metric:
        return IDLE_SHARE
    return TIMING if runner_timed(metric) else None


class Spell(NamedTuple):
    """Runs ``first``..``last`` (commit indexes) in which ``moved`` of ``counted`` timing series of ``gpu`` were
    beyond their levels together (``slower``: worse), by ``shift`` (the median relative move), and back after."""

    gpu: str
    first: int
    last: int
    slower: bool
    moved: int
    counted: int
    shift: float
    hidden: int = 0  # change points the spell explained: not named
    reach: tuple[int, int] = (-1, -1)  # the commits ``SLOP`` GPU runs before it and ``SLOP`` after its return
    signal: str = TIMING  # the kind of series that moved (``runner_signal``)
    partial: bool = False  # only some series moved, sharply (``run_moves.sharp_runs``)


def spells_of(gpu: str, moves: RunMoves) -> list[Spell]:
    """The GPU's spells: spell runs in a row (runs it has no value at between them), each way."""
    from scipy.special import bdtrc  # scipy.special, as the t-test: scipy.stats costs a second to import

    counted = moves.counted
    spells: list[Spell] = []
    judged = counted >= MIN_SERIES
    usual = moves.median[judged]
    center = float(np.median(usual)) if len(usual) else 0.0
    spread = 1.4826 * float(np.median(np.abs(usual - center))) if len(usual) else 0.0
    beyond = np.abs(np.nan_to_num(moves.median - center)) > USUAL * spread
    for way, (slower, together) in enumerate(((True, moves.up), (False, moves.down))):
        enough = counted >= MIN_SERIES
        p = np.ones(len(counted))
        p[enough] = bdtrc(together[enough] - 1, counted[enough], 0.5)  # P(at least that many)
        shared = enough & (together >= SHARE * counted) & (p <= ALPHA)
        full = (shared & beyond) | _stretches(shared, moves, center, USUAL * spread, slower)
        flagged = full | sharp_runs(moves, way, ALPHA, MIN_SERIES)
        current: list[int] = []
        ran = np.flatnonzero(counted > 0)
        for run in [*np.flatnonzero(flagged | (counted == 0)).tolist(), -1]:
            if run >= 0 and current and run == current[-1] + 1:
                current.append(run)
                continue
            kept = [at for at in current if flagged[at]]
            if kept:
                spells.append(_spell(gpu, kept, way, not full[kept].any(), moves, ran))
            current = [run] if run >= 0 and flagged[run] else []
    return sorted(spells, key=lambda spell: spell.first)


def _spell(gpu: str, kept: list[int], way: int, partial: bool, moves: RunMoves, ran: np.ndarray) -> Spell:
    """A spell of runs ``kept`` (``way`` 0 slower, 1 faster); ``partial``: only some series moved, sharply, so its
    count and move are those of the series that moved sharply (``run_moves.SHARP``), not of all."""
    moved = moves.sharp[way] if partial else (moves.up if way == 0 else moves.down)
    best = max(kept, key=lambda at: int(moved[at]))
    shift = (1.0 - 2 * way) * float(np.median(moves.lift[way][kept])) if partial else float(np.median(moves.median[kept]))
    first, last = np.searchsorted(ran, [kept[0], kept[-1]]).tolist()
    reach = (int(ran[max(first - SLOP, 0)]), int(ran[min(last + 1 + SLOP, len(ran) - 1)]))
    return Spell(gpu, kept[0], kept[-1], way == 0, int(moved[best]), int(moves.counted[best]), float(np.expm1(shift)),
                 0, reach, partial=partial)


def _stretches(shared: np.ndarray, moves: RunMoves, center: float, usual: float, slower: bool) -> np.ndarray:
    """Runs of stretches of ``shared`` runs in a row (runs the GPU has no value at between them), at most
    ``STRETCH`` of them, whose median move lies beyond ``usual`` / sqrt(their count) the way they moved, and whose
    median level lies as far beyond that of the ``STRETCH`` runs on either side (then back: not the first runs of a
    longer move). The evidence of a shared move grows with the runs that show it, as a step's does: a stretch of
    runs each within the runners' usual spread (a sick runner among runners of mixed speeds, a warm spell of the
    pool) stands out together where no one run of it does."""
    marked = np.zeros(len(shared), dtype=bool)
    ran = np.flatnonzero(moves.counted > 0)
    sign = 1.0 if slower else -1.0
    on = shared[ran]
    for start in np.flatnonzero(on & ~np.concatenate([[False], on[:-1]])).tolist():
        end = start
        while end + 1 < len(ran) and on[end + 1]:
            end += 1
        runs, bar = ran[start:end + 1], usual / np.sqrt(end + 1 - start)
        before, after = ran[max(start - STRETCH, 0):start], ran[end + 1:end + 1 + STRETCH]
        if len(runs) > STRETCH or min(len(before), len(after)) < MIN_SIDE:
            continue
        level = float(np.median(moves.level[runs]))
        if (sign * (float(np.median(moves.median[runs])) - center) > bar
                and sign * (level - float(np.median(moves.level[before]))) > bar
                and sign * (level - float(np.median(moves.level[after]))) > bar):
            marked[runs] = True
    return marked


def excursions(found: Sequence[Found]) -> list[tuple[int, int]]:
    """A series' moves and their returns within ``REACH`` runs (first and last commit): what a spell makes."""
    spans = []
    for first, second in zip(found, found[1:]):
        up = first.point.after > first.point.before
        if second.commit - first.commit <= REACH and (second.point.after > second.point.before) != up:
            spans.append((first.commit, second.commit))
    return spans


def together(spans: Sequence[Sequence[tuple[int, int]]]) -> bool:
    """Whether excursions of two series (``spans``: each series' ``excursions``) overlap, within ``SLOP`` runs: a
    spell moves many series at once; one series' excursion alone has no company to blame on the runner."""
    ordered = sorted((start, end, series) for series, own in enumerate(spans) for start, end in own)
    reach: dict[int, int] = {}  # per series, the farthest end so far
    for start, end, series in ordered:
        if any(other != series and start <= last + SLOP for other, last in reach.items()):
            return True
        reach[series] = max(reach.get(series, end), end)
    return False


def sample(ids: Sequence[int]) -> list[int]:
    """At most ``SAMPLE`` of a GPU's series ids, spread evenly over them in order (the same ones every time)."""
    ordered = sorted(ids)
    if len(ordered) <= SAMPLE:
        return ordered
    return [ordered[at] for at in np.unique(np.linspace(0, len(ordered) - 1, SAMPLE).round().astype(int)).tolist()]


def _near(found: Found, spell: Spell) -> bool:
    """Whether a change point lies within ``SLOP`` of the GPU's runs of a spell (its first run after the spell the
    return's own): commits the GPU did not run at (an outage) between them put it no farther."""
    return spell.reach[0] <= found.commit <= spell.reach[1]


def _close(found: Sequence[Found], spells: Sequence[Spell]) -> list[bool]:
    """Per change point, whether a spell may explain it: it lies near one (``_near``), or it is an edge of an
    excursion (``excursions``) that holds one (a pool's warm spell felt more by one series starts and ends
    beyond the runs where most series moved)."""
    close = [any(_near(item, spell) for spell in spells) for item in found]
    for start, end in excursions(found):
        if any(start <= spell.first and spell.last < end for spell in spells):
            close = [flag or item.commit in (start, end) for flag, item in zip(close, found)]
    return close


def _moved_like(own: np.ndarray, runs: np.ndarray, spells: Sequence[Spell], moves: RunMoves) -> np.ndarray:
    """Per run of a series (``own``: its oriented logs by commit index), whether it moved there like the GPU's in a
    spell, against either side's level (a step of its own beside the spell moves the other): within ``SPREAD``
    robust spreads of the GPU's median deviation in that run; in a partial spell (most series did not move), moved
    that way by more than ``LIKE`` of its own noise units and within ``SPREAD`` robust spreads above the median
    move of the series that moved sharply. A move much larger than the runner's is the code's: kept."""
    before, after = (side[0] for side in side_medians(own[None, :]))
    unit = float(noise_units((own - (before + after) / 2)[None, :])[0])
    like = np.zeros(len(runs), dtype=bool)
    for spell in spells:
        inside = (runs >= spell.first) & (runs <= spell.last)
        at = runs[inside]
        steps = (own[at] - before[at], own[at] - after[at])
        if spell.partial:
            way = 0 if spell.slower else 1
            cap = moves.lift[way][at] + SPREAD * np.fmax(moves.lift_spread[way][at], 0.0)
            sign = 1.0 if spell.slower else -1.0
            moved = [(sign * step > LIKE * unit) & (sign * step <= cap) for step in steps]
        else:
            band = SPREAD * np.fmax(moves.spread[at], 0.0)
            moved = [np.abs(step - moves.median[at]) <= band for step in steps]
        like[np.flatnonzero(inside)] = moved[0] | moved[1]
    return like


def rejudged(series: Series, found: list[Found], spells: Sequence[Spell], moves: RunMoves, commits: int,
             p_value: float, min_change: float) -> tuple[list[Found], list[int]]:
    """A series' change points, judged again with the spell runs' values left out where they moved like the GPU's
    (where it has a point near a spell: all of them); and per spell, how many of its points near it that hid."""
    own = pool_matrix([series], commits)
    runs = series.commits
    like = _moved_like(own[0], runs, spells, moves)
    near = _close(found, spells)
    if not like.any() or not any(near):
        return found, [0] * len(spells)
    kept_runs, values = runs[~like], series.values[~like]
    candidates = sorted({int(at) for at in np.searchsorted(kept_runs, [item.commit for item in found])} - {0})
    candidates = [at for at in candidates if at < len(kept_runs)]
    sign = -1.0 if series.facts.get("direction") == "higher" else 1.0
    corrected = own[0, runs] - moves.median[runs]
    judged = [_placed(p, kept_runs, runs, like, corrected, sign) for p in merge(values, candidates, p_value, min_change)]
    again = [item for item, close in zip(judged, _close(judged, spells)) if close]
    result = sorted(judged, key=lambda item: item.commit)  # all its points: a segment beside a far one held spell runs
    hidden = [0] * len(spells)
    for item, close in zip(found, near):  # each point no longer named, to the spell nearest it
        if close and not any(other.commit == item.commit for other in again):
            hidden[_nearest(item, spells)] += 1
    hidden = [max(count - sum(1 for item in again if item.commit not in {f.commit for f in found}
                              and _nearest(item, spells) == k), 0) for k, count in enumerate(hidden)]
    return result, hidden


def _distance(item: Found, spell: Spell) -> int:
    return max(spell.first - item.commit, item.commit - spell.last - 1, 0)


def _nearest(item: Found, spells: Sequence[Spell]) -> int:
    return min(range(len(spells)), key=lambda k: _distance(item, spells[k]))


def _placed(point: ChangePoint, kept: np.ndarray, runs: np.ndarray, left_out: np.ndarray,
            corrected: np.ndarray, sign: float) -> Found:
    """A point judged without the spell runs, by the branch's commit indexes. Where runs were left out just before
    it, the change happened somewhere among them: it is placed where their values less the GPU's median move in
    each (``corrected``, oriented logs) split best between the levels before and after (least squares)."""
    previous, commit = int(kept[point.position - 1]), int(kept[point.position])
    gap = np.flatnonzero(left_out & (runs > previous) & (runs < commit))
    if len(gap) and point.before > 0 and point.after > 0:
        inside = corrected[gap]
        before, after = sign * np.log(point.before), sign * np.log(point.after)
        costs = [float(np.sum((inside[:j] - before) ** 2) + np.sum((inside[j:] - after) ** 2))
                 for j in range(len(gap) + 1)]
        split = int(np.argmin(costs))
        if split < len(gap):
            at = int(gap[split])
            return Found(int(runs[at]), int(runs[at - 1]), point._replace(position=at))
    return Found(commit, previous, point._replace(position=int(np.searchsorted(runs, commit))))


def hide_spells(changes: dict[int, list[Found]], facts: dict[int, dict[str, str]], commits: int,
                pool_of: Callable[[str, str], list[Series]], series_of: Callable[[list[int]], list[Series]],
                p_value: float, min_change: float) -> tuple[dict[int, list[Found]], list[Spell]]:
    """``changes`` (per series id; ``facts`` for those with change points) with the points runner spells explain
    left out, and those spells. ``pool_of(gpu, signal)``: a sample of the GPU's series of that kind
    (``runner_signal``, ``sample``) with their values; ``series_of(ids)``: those series with their values. Only GPUs
    where the points of two series of a kind hold a move and its return in the same runs are looked at (nothing is
    read for the others)."""
    moving: dict[tuple[str, str], list[int]] = {}
    for series_id, found in changes.items():
        info = facts.get(series_id)
        signal = runner_signal(info["metric"]) if info is not None else None
        if found and info is not None and signal is not None and not any(f.point.exact for f in found):
            moving.setdefault((info["gpu"], signal), []).append(series_id)
    result = dict(changes)
    reported: list[Spell] = []
    for (gpu, signal), ids in sorted(moving.items()):
        if not together([excursions(changes[sid]) for sid in ids]):
            continue
        moves, _ = run_moves(pool_matrix(pool_of(gpu, signal), commits))
        spells = [spell._replace(signal=signal) for spell in spells_of(gpu, moves)]
        near = [sid for sid in ids if any(_close(changes[sid], spells))]
        hidden = [0] * len(spells)
        for series in series_of(near) if near else []:
            if is_piecewise_constant(series.values):
                continue
            result[series.id], hid = rejudged(series, changes[series.id], spells, moves, commits, p_value, min_change)
            hidden = [a + b for a, b in zip(hidden, hid)]
        reported += [spell._replace(hidden=count) for spell, count in zip(spells, hidden) if count]
    return result, reported


def spell_note(spell: Spell, commits: Sequence[str]) -> str:
    """One line for a spell, as the drift canary words a runner's move."""
    points = f"{spell.hidden} change point{'s' if spell.hidden != 1 else ''}"
    if spell.signal == IDLE_SHARE:  # a share's relative move, said as such: "+40%" would read as points
        word, move = ("higher" if spell.slower else "lower"), f"median {spell.shift:+.0%} of their own share"
    else:
        word, move = ("slower" if spell.slower else "faster"), f"median {spell.shift:+.1%}"
    return (f"runner spell: runs {commits[spell.first][:12]}..{commits[spell.last][:12]} on {spell.gpu}: "
            f"{spell.moved} of {spell.counted} {spell.signal} series {word} together ({move}), then "
            f"back: the runner, not a change ({points} not named)")


def history_pools(history: History, branch: str, run_commit: dict[int, int],
                  on_branch: Collection[int]) -> Callable[[str, str], list[Series]]:
    """``hide_spells``' ``pool_of`` for a history: a sample of the GPU's series of a kind on the branch, read whole."""

    def pool_of(gpu: str, signal: str) -> list[Series]:
        metrics = [str(row[0]) for row in history.query("SELECT DISTINCT metric FROM perfgate_series WHERE gpu = ?",
                                                        (gpu,)) if runner_signal(str(row[0])) == signal]
        rows = history.query(f"SELECT id FROM perfgate_series WHERE gpu = ? AND metric IN "
                             f"({', '.join('?' * len(metrics))})", (gpu, *metrics)) if metrics else []
        ids = [int(row[0]) for row in rows if int(row[0]) in on_branch]
        return load_series(history, branch, run_commit, sample(ids))

    return pool_of
