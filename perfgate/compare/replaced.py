"""Replaced kernels: kernels missing and new in one region that no rename rule paired (cuBLAS moving a GEMM from
an xmma kernel to an nvjet one or to split-K with a reduce kernel, an op swapped for another).

Each side's kernels cannot be compared with the other's, but the smallest total that holds both sides can: the
region's total (the region itself where it has one, else its top-level region, else the overall total; for launches
outside every region, the total of those, the whole report where it has no region: ``outside``), the sum of its
kernels' time. The replacement is judged through that total's time: its work counters are shown, not gated (they
count different kernels' work). A total that did not regress passes, with a note naming the kernels replaced (old
-> new); one that regressed fails on its own row, with a note naming the replacement as the likely cause. Kernels
that no total holds (launches outside every region of runs that hold different regions) are ``not measured`` unless
accepted (``accept_unpaired_kernels``), with one line naming them.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from perfgate.compare.arrays import Bools, StatusCodes
from perfgate.compare.codes import STATUS_CODE, is_status
from perfgate.demangled import short_name
from perfgate.compare.joining import JoinedRows
from perfgate.compare.matching import BASELINE_ONLY, BOTH_SIDES, CURRENT_ONLY, MatchedLaunches
from perfgate.compare.policies import JudgedRows
from perfgate.metrics import is_time_like, label_of
from perfgate.vocabulary import KIND_KERNEL, KIND_REGION, OUTSIDE, REGION_SEPARATOR, TOTAL, Status, some_of

_JUDGED = (Status.REGRESSION, Status.IMPROVEMENT, Status.UNCHANGED, Status.INCONCLUSIVE)


class Replacement(NamedTuple):
    """The kernels of one region that only one side holds, and the launch id of the smallest total holding them
    (-1: none)."""

    region: str
    missing: tuple[str, ...]  # demangled names, baseline only
    new: tuple[str, ...]  # demangled names, current run only
    total: int
    time_rows: tuple[int, ...] = ()  # the joined rows of the total's judged time metrics (empty: not judged)


def listed(names: tuple[str, ...], most: int = 4) -> str:
    return some_of([short_name(name) for name in names], most)


def _has_regions(launches: MatchedLaunches) -> bool:
    return bool(((launches.kinds == KIND_KERNEL) & (launches.frame["region"] != "")).any())


def _holding_total(launches: MatchedLaunches, region: str) -> int:
    """The launch id of the smallest total on both sides that holds ``region``'s kernels, -1 where none does: for
    the launches outside every region, the total of them (``compare.outside``), where one was made."""
    frame = launches.frame
    totals = (launches.kinds == KIND_REGION) & (launches.side == BOTH_SIDES)
    if not region:
        outside = OUTSIDE if _has_regions(launches) else TOTAL
        found = np.flatnonzero(totals & (frame["kernel"] == outside) & (frame["region"] == ""))
        return int(found[0]) if found.size else -1
    parts = region.split(REGION_SEPARATOR)
    for path in [REGION_SEPARATOR.join(parts[:n]) for n in range(len(parts), 0, -1)]:
        found = np.flatnonzero(totals & (frame["kernel"] == path) & (frame["region"] == path))
        if found.size:
            return int(found[0])
    overall = np.flatnonzero(totals & (frame["kernel"] == TOTAL) & (frame["region"] == ""))
    return int(overall[0]) if overall.size else -1


def find_replacements(launches: MatchedLaunches) -> list[Replacement]:
    """Per region holding kernels missing and new that no rule paired, the kernels and the total holding them."""
    one_sided = np.flatnonzero((launches.kinds == KIND_KERNEL) & (launches.side != BOTH_SIDES))
    if not one_sided.size:
        return []
    regions = launches.frame["region"][one_sided]
    sides = launches.side[one_sided]
    demangled = launches.either("demangled")[one_sided]
    found = []
    for region in dict.fromkeys(regions.tolist()):
        here = regions == region
        missing = tuple(dict.fromkeys(demangled[here & (sides == BASELINE_ONLY)].tolist()))
        new = tuple(dict.fromkeys(demangled[here & (sides == CURRENT_ONLY)].tolist()))
        if missing and new:
            found.append(Replacement(str(region), missing, new, _holding_total(launches, str(region))))
    return found


def judge_through_totals(rows: JoinedRows, judged: JudgedRows,
                         replacements: list[Replacement]) -> tuple[JudgedRows, list[Replacement]]:
    """Each replacement judged through its total's time: the total's work counters shown, not gated; each
    replacement with the joined rows of its total's judged time metrics."""
    if not replacements:
        return judged, replacements
    status, gated = judged.status.copy(), judged.gated.copy()
    time_like = np.array([is_time_like(str(name)) for name in rows.names], dtype=bool)[rows.metric_code]
    settled = []
    for replacement in replacements:
        if replacement.total < 0:
            settled.append(replacement)
            continue
        of_total = rows.launch_id == replacement.total
        times: Bools = of_total & time_like & judged.gated & is_status(judged.status, *_JUDGED)
        if times.any():
            work = of_total & ~time_like & judged.gated
            status[work], gated[work] = STATUS_CODE[Status.INFO], False
        settled.append(replacement._replace(time_rows=tuple(np.flatnonzero(times).tolist())))
    return judged._replace(status=status, gated=gated), settled


def replaced_launches(launches: MatchedLaunches, replacements: list[Replacement]) -> Bools:
    """Per launch id: a kernel launch of a replacement judged through its total."""
    judged_regions = [r.region for r in replacements if r.time_rows]
    replaced: Bools = ((launches.kinds == KIND_KERNEL) & (launches.side != BOTH_SIDES)
                       & np.isin(launches.frame["region"], np.asarray(judged_regions, dtype=object)))
    return replaced


def _inside(launches: MatchedLaunches, total: dict[str, object]) -> Bools:
    """Per launch id: inside ``total`` (its region; for the overall total every region; for the total of the
    launches outside every region, those)."""
    region = str(total["region"])
    regions = launches.frame["region"]
    if region:
        inside: Bools = (regions == region) | np.char.startswith(regions.astype(str), region + REGION_SEPARATOR)
        return inside
    outside = total["kernel"] == OUTSIDE or not _has_regions(launches)
    return np.asarray(regions == "" if outside else regions != "", dtype=bool)


def _shared_regressed(launches: MatchedLaunches, statuses: StatusCodes, total: dict[str, object]) -> bool:
    """Whether a kernel both sides hold, inside ``total``, regressed."""
    return bool((_inside(launches, total) & (launches.kinds == KIND_KERNEL) & (launches.side == BOTH_SIDES)
                 & is_status(statuses, Status.REGRESSION)).any())


def _counted(launches: MatchedLaunches, inside: Bools) -> str:
    """How many kernel launches each side holds among ``inside``."""
    kernels = inside & (launches.kinds == KIND_KERNEL)
    base, cur = int((kernels & (launches.side != CURRENT_ONLY)).sum()), int((kernels & (launches.side != BASELINE_ONLY)).sum())
    return f"{base} kernel launch{'es' if base != 1 else ''} in the baseline, {cur} in the current run"


def _total_named(launches: MatchedLaunches, total: dict[str, object]) -> str:
    """What a total holding a replacement is, as a note names it: the overall total, a region's, or the total of
    the launches outside every region (what it holds, on each side)."""
    if total["region"]:
        return f"region {total['region']}'s total"
    if total["kernel"] == OUTSIDE:
        return (f"the total of the launches outside every region ({_counted(launches, _inside(launches, total))}; "
                "both runs hold the same regions)")
    if not _has_regions(launches):
        return f"the whole report's total (every kernel launch: {_counted(launches, _inside(launches, total))})"
    return "the overall total"


def _time_changes(rows: JoinedRows, judged: JudgedRows, time_rows: tuple[int, ...]) -> tuple[list[str], bool]:
    """Each judged time metric of a total as ``label +x.x% (status)``, and whether one regressed."""
    changes, regressed = [], False
    for index in time_rows:
        before, after = float(rows.baseline[index]), float(rows.current[index])
        verdict = next(s for s in _JUDGED if judged.status[index] == STATUS_CODE[s])
        regressed |= verdict is Status.REGRESSION
        label = label_of(rows.names[int(rows.metric_code[index])])
        changes.append(f"{label} {after / before - 1:+.1%} ({verdict.value})" if before else f"{label} ({verdict.value})")
    return changes, regressed


def replacement_notes(rows: JoinedRows, judged: JudgedRows, launches: MatchedLaunches, statuses: StatusCodes,
                      replacements: list[Replacement]) -> list[str]:
    """One line per replacement judged through its total: the kernels replaced, the total's time change and what
    it means for the verdict (``statuses``: per launch id)."""
    lines = []
    for replacement in replacements:
        if not replacement.time_rows:
            continue
        total = launches.frame.row(replacement.total)
        what = _total_named(launches, total)
        changes, regressed = _time_changes(rows, judged, replacement.time_rows)
        if not regressed:
            verdict = "not a regression (its work counters count other kernels' work: shown, not gated)"
        elif _shared_regressed(launches, statuses, total):
            verdict = "the replacement is a likely cause of its regression, besides the kernels that regressed in it"
        else:
            verdict = "the replacement is the likely cause of its regression"
        where = f"in region {replacement.region}" if replacement.region else "outside any region"
        lines.append(f"kernels replaced {where}: {listed(replacement.missing)} → "
                     f"{listed(replacement.new)} (no rule pairs them); judged through {what}: {', '.join(changes)}; "
                     f"{verdict}")
    return lines


def unjudged_replacements(replacements: list[Replacement]) -> list[tuple[str, str]]:
    """(where, cause) per replacement no total judged: not measured, unless accepted."""
    lines = []
    for replacement in replacements:
        if replacement.time_rows:
            continue
        where = f"region {replacement.region}" if replacement.region else "launches outside any region"
        why = "no total holds them" if replacement.total < 0 else "their total has no time on both sides"
        # What and why first, the fix last (a headline cut to fit keeps both ends: render.common.shorten_keeping_fix),
        # the names between them.
        lines.append((where, f"kernels no rule paired (perhaps one renamed), {why}: missing "
                             f"{listed(replacement.missing)}; new {listed(replacement.new)} (after review accept them "
                             "with --accept-unpaired-kernels or accept_unpaired_kernels, or pair them with "
                             "kernel_aliases)"))
    return lines
