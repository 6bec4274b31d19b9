"""Replaced kernels: kernels missing and new in one region that no rename rule paired (cuBLAS moving a GEMM from
an xmma kernel to an nvjet one or to split-K with a reduce kernel, an op swapped for another).

Each side's kernels cannot be compared with the other's, but the smallest total that holds both sides can: the
region's total (the region itself where it has one, else its top-level region, else the overall total), the sum of
its kernels' time. The replacement is judged through that total's time: its work counters are shown, not gated (they
count different kernels' work). A total that did not regress passes, with a note naming the kernels replaced (old
-> new); one that regressed fails on its own row, with a note naming the replacement as the likely cause. Kernels
that no total holds (launches outside every region) are ``not measured`` unless accepted
(``accept_unpaired_kernels``), with one line naming them.
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
from perfgate.vocabulary import KIND_KERNEL, KIND_REGION, REGION_SEPARATOR, Status

TOTAL = "total"  # the overall total's name (``perfgate.regions.TOTAL``)
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
    shown = [short_name(name) for name in names]
    return ", ".join(shown[:most]) + (f" and {len(shown) - most} more" if len(shown) > most else "")


def _holding_total(launches: MatchedLaunches, region: str) -> int:
    """The launch id of the smallest total on both sides that holds ``region``'s kernels, -1 where none does."""
    if not region:
        return -1
    frame = launches.frame
    totals = (launches.kinds == KIND_REGION) & (launches.side == BOTH_SIDES)
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


def _shared_regressed(launches: MatchedLaunches, statuses: StatusCodes, total: dict[str, object]) -> bool:
    """Whether a kernel both sides hold, inside ``total``'s region (every region for the overall total), regressed."""
    region = str(total["region"])
    regions = launches.frame["region"]
    inside = (regions == region) | np.char.startswith(regions.astype(str), region + REGION_SEPARATOR) if region \
        else regions != ""
    return bool((inside & (launches.kinds == KIND_KERNEL) & (launches.side == BOTH_SIDES)
                 & is_status(statuses, Status.REGRESSION)).any())


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
        what = "the overall total" if not total["region"] else f"region {total['region']}'s total"
        changes, regressed = _time_changes(rows, judged, replacement.time_rows)
        if not regressed:
            verdict = "not a regression (its work counters count other kernels' work: shown, not gated)"
        elif _shared_regressed(launches, statuses, total):
            verdict = "the replacement is a likely cause of its regression, besides the kernels that regressed in it"
        else:
            verdict = "the replacement is the likely cause of its regression"
        lines.append(f"kernels replaced in region {replacement.region}: {listed(replacement.missing)} → "
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
        why = ("no region total holds them" if replacement.total < 0 else
               "the total holding them has no time judged on both sides")
        # The fix first: a headline keeps the first 200 characters of a cause.
        lines.append((where, "kernels no rule paired, one may be the other renamed (after review accept them with "
                             "--accept-unpaired-kernels or accept_unpaired_kernels, or pair them with kernel_aliases): "
                             f"missing {listed(replacement.missing)}; new {listed(replacement.new)}; {why}"))
    return lines
