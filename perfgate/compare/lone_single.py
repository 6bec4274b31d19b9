"""One launch at a launch configuration it ran at once, slower, while the same code held at its other ones: lone.

A kernel's identity includes its launch configuration (docs/matching.md), so a kernel launched once at a
configuration is judged on that one launch, with no noise estimate: one launch measured once cannot be told from
one that another process on the GPU slowed, nor from a draw past 3 sigma (``alone``'s *lone* launches). Where
the same machine code ran at other configurations in the same region, those launches witness the code: a kernel
identity launched once a side whose time moved past its limit is **lone** (inconclusive, never a pass and never a
fail) when

1. launches of the same code (the same demangled name on each side, template arguments included; the same
   ``code_id`` wherever both launches know theirs) at other launch configurations, in the same region, number at
   least MIN_PEERS, and every one of them held (its time judged unchanged, with its group where it has one), and
2. no count of the launch's own work moved: a metric that is not a time (instructions, bytes, sectors, launch
   facts) past its limit, or changed at all where the peers' values of it are identical on both sides (an exact
   count). Interference changes timings, not counts; a change of work is a real change, and stays a regression.

What it trades: a trace measures time only, so there a real slowdown of one call of a kernel (one layer's input
laid out otherwise: the same kernel, the same grid, slower) while its other calls held is inconclusive, not
failed. ncu's counters usually tell that case apart (the work moved); a trace cannot.
"""

from __future__ import annotations

from collections import Counter
from typing import NamedTuple

import numpy as np

from perfgate.columns import Columns, factorize
from perfgate.compare.arrays import Bools, Ints
from perfgate.compare.codes import STATUS_CODE, is_status
from perfgate.compare.joining import JoinedRows
from perfgate.compare.matching import BOTH_SIDES, MatchedLaunches
from perfgate.compare.policies import JudgedRows
from perfgate.compare.repeats import INTERVAL_LAUNCHES, kernel_groups
from perfgate.compare.same_code import CodeFacts
from perfgate.metrics import is_timing
from perfgate.quantities import limit_text
from perfgate.vocabulary import KIND_KERNEL, Status

# Peer launches a side needed: the count from which a group's own interval decides (``repeats``). One peer is one
# launch measured once, no better a witness than the launch it would excuse.
MIN_PEERS = INTERVAL_LAUNCHES
_SHOWN_CONFIGS = 4  # peer configurations named in a note


class LoneSingles(NamedTuple):
    """Per joined row: ``lone``, the time row of a launch made lone by its peers; per such row, the words that
    name the peers that held (``peers``)."""

    lone: Bools
    peers: dict[int, str]


class _Timing(NamedTuple):
    """The gated rows of a time (``metrics.is_timing``: a kernel's duration, whatever its source calls it), and per
    launch id whether one of them is a regression and whether all of them (one at least) held unchanged."""

    rows: Bools
    regressed: Bools
    held: Bools


def _timing(rows: JoinedRows, judged: JudgedRows, count: int) -> _Timing:
    timing = np.array([is_timing(name) for name in rows.names], dtype=bool)[rows.metric_code] & judged.gated
    at = np.flatnonzero(timing)
    regressed = np.zeros(count, dtype=bool)
    regressed[rows.launch_id[at[is_status(judged.status[at], Status.REGRESSION)]]] = True
    total = np.bincount(rows.launch_id[at], minlength=count)
    unchanged = np.bincount(rows.launch_id[at[is_status(judged.status[at], Status.UNCHANGED)]], minlength=count)
    return _Timing(timing, regressed, (total > 0) & (unchanged == total))


def _same_code(code: CodeFacts | None, one: int, other: Ints) -> Bools:
    """Which of the launches ``other`` ran the code launch ``one`` ran, by ``code_id`` where both know theirs."""
    same = np.ones(other.size, dtype=bool)
    if code is None:
        return same
    for ids in (code.base_id, code.cur_id):
        if ids[one] is not None:
            same &= np.array([ids[i] is None or ids[i] == ids[one] for i in other.tolist()], dtype=bool)
    return same


def _work_moved(rows: JoinedRows, judged: JudgedRows, one: int, peers: Ints) -> bool:
    """Whether a count of launch ``one``'s work moved: a metric that is not a time past its limit, or changed at all
    where the peers' values of it are the same on both sides (an exact count; no peer value: taken as exact)."""
    mine = np.flatnonzero(rows.launch_id == one)
    theirs = np.flatnonzero(np.isin(rows.launch_id, peers))
    for index in mine.tolist():
        metric = int(rows.metric_code[index])
        if is_timing(rows.names[metric]):
            continue
        base, cur = rows.baseline[index], rows.current[index]
        if not (np.isfinite(base) and np.isfinite(cur)) or base == cur:
            continue
        if is_status(judged.status[index:index + 1], Status.REGRESSION, Status.IMPROVEMENT).any():
            return True
        same = theirs[rows.metric_code[theirs] == metric]
        if np.array_equal(rows.baseline[same], rows.current[same], equal_nan=True):
            return True
    return False


def _peer_words(launches: MatchedLaunches, rows: JoinedRows, one: int, peers: Ints, timing: Bools,
                counted: bool) -> str:
    """``launched once at grid (7813, 1, 1), while 50 launches of the same code at 3 other launch configurations
    held (median +0.2%: grid (32, 1, 13) ×30, …)``, and what was checked of the work."""
    grids, blocks = launches.either("grid"), launches.either("block")
    configs = Counter(f"{grids[i]}" + (f" block {blocks[i]}" if blocks[i] != blocks[peers[0]] else "")
                      for i in peers.tolist())
    _, change = rows.changes()
    shown = ", ".join(f"{config} ×{n}" for config, n in configs.most_common(_SHOWN_CONFIGS))
    more = f" and {len(configs) - _SHOWN_CONFIGS} more" if len(configs) > _SHOWN_CONFIGS else ""
    work = "no count of its work moved" if counted else "no count of its work to check (time is all it measures)"
    moved = float(np.median(change[timing & np.isin(rows.launch_id, peers)]))
    return (f"launched once at grid {grids[one]}, while {peers.size} launches of the same code at {len(configs)} "
            f"other launch configurations held (median {moved:+.1%}: grid {shown}{more}), and {work}")


def lone_single_launches(rows: JoinedRows, judged: JudgedRows, launches: MatchedLaunches,
                         code: CodeFacts | None) -> tuple[JudgedRows, LoneSingles]:
    """``judged`` with the time row of each launch made lone by its peers (see the module) inconclusive, and
    which rows those are."""
    found = LoneSingles(np.zeros(len(rows), dtype=bool), {})
    timing = _timing(rows, judged, launches.count)
    kernel = (launches.kinds == KIND_KERNEL) & (launches.side == BOTH_SIDES)
    if not (timing.regressed & kernel).any():
        return judged, found
    group = kernel_groups(launches)
    sizes = np.bincount(group[group >= 0], minlength=1)
    candidates = np.flatnonzero(timing.regressed & kernel & (sizes[np.maximum(group, 0)] == 1))
    key = _code_keys(launches.frame, kernel)
    by_key = np.argsort(key, kind="stable")  # each key's launches, found by bisection: one pass, not one a candidate
    sorted_keys = key[by_key]
    for one in candidates.tolist():
        if key[one] < 0:
            continue
        peers = by_key[np.searchsorted(sorted_keys, key[one]):np.searchsorted(sorted_keys, key[one], side="right")]
        peers = np.sort(peers[group[peers] != group[one]])
        peers = peers[_same_code(code, one, peers)]
        if peers.size < MIN_PEERS or not timing.held[peers].all() or _work_moved(rows, judged, one, peers):
            continue
        mine = np.flatnonzero(rows.launch_id == one)
        moved = mine[timing.rows[mine] & is_status(judged.status[mine], Status.REGRESSION)]
        found.lone[moved] = True
        counted = any(not is_timing(rows.names[m]) for m in set(rows.metric_code[mine].tolist()))
        found.peers[int(moved[0])] = _peer_words(launches, rows, one, peers, timing.rows, counted)
    if not found.lone.any():
        return judged, found
    status = judged.status.copy()
    status[found.lone] = STATUS_CODE[Status.INCONCLUSIVE]
    return judged._replace(status=status), found


def _code_keys(frame: Columns, kernel: Bools) -> Ints:
    """Per launch id, a code shared by the kernel launches of one region and one demangled name on each side (-1:
    not a kernel launch on both sides, or a name one side does not give)."""
    named = kernel & (frame["demangled_b"] != "") & (frame["demangled_c"] != "")
    parts = [factorize(frame[column])[0] for column in ("region", "demangled_b", "demangled_c")]
    codes = np.zeros(len(named), dtype=np.int64)
    for part in parts:
        codes = codes * (int(part.max(initial=0)) + 1) + part
    _, key = np.unique(codes, return_inverse=True)
    keyed: Ints = np.where(named, key.astype(np.int64), -1)
    return keyed


def lone_single_notes(results: Columns, order: Ints, found: LoneSingles) -> list[str]:
    """One line per launch made lone by its peers: its change, its limit, the peers that held."""
    if not found.peers:
        return []
    position = np.empty(len(order), dtype=np.int64)
    position[order] = np.arange(len(order))
    lines = []
    for index, peers in sorted(found.peers.items()):
        row = results.row(int(position[index]))
        where = f" in region {row['region']!r}" if row["region"] else ""
        lines.append(
            f"{row['kernel']} #{row['ordinal']}{where}: {row['label']} {row['change']:+.1%} on its own, past its "
            f"limit {limit_text(row['threshold'], row['unit'])}, {peers}: one launch measured once, which another "
            "process on the GPU can slow too: inconclusive, not failed; rerun to confirm")
    return lines
