"""The same-code rule and the drift canary, from each side's machine code (``Measurement.code``, ``.ncu-rep``).

A kernel launched with the same ``code_id`` and the same launch configuration on both sides runs the same
instructions: a change of its time is noise by construction, so its timing metrics are judged "unchanged (same
code)", never a regression or an improvement. Its deterministic counters (instructions, bytes) are still judged:
the same code with other counts ran on other input, which is worth saying.

Same-code kernels are also a free A/A sample of the runner: when at least ``DRIFT_KERNELS`` of them moved past
their limits the same way and their median change is past the median limit, the runner drifted (clocks, thermals,
a noisy neighbour), and the time changes of kernels whose code changed are inconclusive rather than blamed.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import NamedTuple

import numpy as np

from perfgate.collect.timeline.codes_file import CODE_PROBLEMS_SETTING
from perfgate.columns import Columns, objects
from perfgate.compare.arrays import Bools, Objects
from perfgate.compare.codes import STATUS_CODE, is_status
from perfgate.compare.joining import JoinedRows
from perfgate.compare.matching import MatchedLaunches
from perfgate.compare.options import TIME_METRIC
from perfgate.compare.policies import JudgedRows
from perfgate.limits import parse_json_or_none
from perfgate.metrics import LAUNCH_CONFIG_METRICS, is_timing
from perfgate.table import KernelCode, Measurement
from perfgate.vocabulary import KIND_KERNEL, KIND_REGION, REGION_SEPARATOR, SAME_CODE_HELD, Status

DRIFT_KERNELS = 3  # same-code kernels that must move together before the runner is blamed
SHOWN_OPCODES = 5  # instruction-mix changes named in a kernel's why
SHOWN_ID = 12  # characters of a code_id in text
SHOWN_HELD = 5  # timing changes held unchanged (same code) named in the notes
_MOVED = (Status.REGRESSION, Status.IMPROVEMENT, Status.INCONCLUSIVE)


class CodeFacts(NamedTuple):
    """Per launch id: each side's code_id (None: not known), whether the code and the launch configuration are the
    same on both sides, whether the code differs, and the line that says so (None: nothing to say)."""

    base_id: list[str | None]
    cur_id: list[str | None]
    same: Bools
    changed: Bools
    why: list[str | None]
    kernel: Bools  # a kernel launch (not a region total or a benchmark), which has code to compare
    unknown: Bools  # a kernel launch on both sides whose code one side does not give


def mix_change(before: Mapping[str, int], after: Mapping[str, int], limit: int = SHOWN_OPCODES) -> str:
    """``248 → 256 instructions in its code: FFMA +8, LDS -4`` (static, not executed): the opcodes whose counts changed most, largest first."""
    moved = sorted(((after.get(op, 0) - before.get(op, 0), op) for op in {*before, *after}),
                   key=lambda item: (-abs(item[0]), item[1]))
    parts = [f"{op} {delta:+d}" for delta, op in moved if delta][:limit]
    more = len([1 for delta, _ in moved if delta]) - len(parts)
    total = f"{sum(before.values())} → {sum(after.values())} instructions in its code"
    return total + (": " + ", ".join(parts) + (f" and {more} more" if more > 0 else "") if parts else
                    ": the same mix, other code")


def code_columns(code: CodeFacts | None) -> dict[str, Objects]:
    """The launch table's code columns (``code_id``, ``baseline_code_id``, ``code_why``); none where no code is
    known (the report's columns are then null)."""
    if code is None:
        return {}
    return {"code_id": objects(code.cur_id), "baseline_code_id": objects(code.base_id), "code_why": objects(code.why)}


def _config_same(facts: Columns) -> Bools:
    same: Bools = (facts["grid_b"] == facts["grid_c"]) & (facts["block_b"] == facts["block_c"])
    for metric in LAUNCH_CONFIG_METRICS:
        before, after = facts[f"{metric}_b"], facts[f"{metric}_c"]
        same &= (before == after) | (np.isnan(before) & np.isnan(after))
    return same


def code_facts(launches: MatchedLaunches, baseline: Measurement, current: Measurement, facts: Columns) -> CodeFacts:
    """What each launch's code says, ``facts`` being ``notes.launch_facts`` (each side's launch configuration)."""
    base_code: Mapping[int, KernelCode] = baseline.code or {}
    cur_code: Mapping[int, KernelCode] = current.code or {}
    config = _config_same(facts)
    base_id: list[str | None] = []
    cur_id: list[str | None] = []
    why: list[str | None] = []
    same = np.zeros(launches.count, dtype=bool)
    changed = np.zeros(launches.count, dtype=bool)
    unknown = np.zeros(launches.count, dtype=bool)
    frame = launches.frame
    for at, (before_at, after_at) in enumerate(zip(frame["launch_b"].tolist(), frame["launch_c"].tolist())):
        before = base_code.get(int(before_at)) if before_at >= 0 else None
        after = cur_code.get(int(after_at)) if after_at >= 0 else None
        base_id.append(None if before is None else before.code_id)
        cur_id.append(None if after is None else after.code_id)
        if before is None or after is None:
            unknown[at] = before_at >= 0 and after_at >= 0
            why.append(None)
        elif before.code_id == after.code_id:
            same[at] = bool(config[at])
            why.append(f"same code ({after.code_id[:SHOWN_ID]})" + (
                f" and launch configuration: {SAME_CODE_HELD}" if same[at] else
                " in another launch configuration: judged as usual"))
        else:
            changed[at] = True
            why.append(f"code changed ({before.code_id[:SHOWN_ID]} → {after.code_id[:SHOWN_ID]}): "
                       + mix_change(before.opcodes, after.opcodes))
    kernel = launches.kinds == KIND_KERNEL
    _same_code_totals(frame["region"].tolist(), launches.kinds, kernel, same, why)
    return CodeFacts(base_id, cur_id, same, changed, why, kernel, unknown & kernel)


def _same_code_totals(regions: list[str], kinds: np.ndarray, kernel: Bools, same: Bools, why: list[str | None]) -> None:
    """A region total (``perfgate.regions``: its top-level region's kernels; "" for the overall one) whose kernel
    launches are all same-code is a sum of same-code times: judged as they are (``same`` and ``why`` filled in)."""
    kernels = np.flatnonzero(kernel & np.array([bool(r) for r in regions], dtype=bool)).tolist()
    for at in np.flatnonzero(kinds == KIND_REGION).tolist():
        region = regions[at]
        members = [k for k in kernels if not region or regions[k].split(REGION_SEPARATOR, 1)[0] == region]
        if members and all(same[k] for k in members):
            same[at] = True
            why[at] = (f"its {len(members)} kernel launch{'es' if len(members) != 1 else ''} kept their code and "
                       f"launch configuration: {SAME_CODE_HELD}")


def _timing_rows(rows: JoinedRows) -> Bools:
    by_code = np.array([is_timing(name) for name in rows.names], dtype=bool)
    timing: Bools = by_code[rows.metric_code] if len(rows) else np.zeros(0, dtype=bool)
    return timing


def same_code_judgement(rows: JoinedRows, judged: JudgedRows, code: CodeFacts,
                        kernels: Sequence[str]) -> tuple[JudgedRows, CodeFacts, list[str]]:
    """The rows' verdicts with the timing metrics of same-code launches unchanged; each such launch's why says what
    its counters did (moved: other input). The notes: how many kernels kept their code, and each whose time
    moved past its limit but was judged unchanged (same code). ``kernels``: per launch id."""
    same_row = code.same[rows.launch_id] if len(rows) else np.zeros(0, dtype=bool)
    timing = _timing_rows(rows)
    moved = is_status(judged.status, *_MOVED)
    status = judged.status.copy()
    held = same_row & timing & moved
    status[held] = STATUS_CODE[Status.UNCHANGED]
    _, change = rows.changes()
    notes = [_count_note(code, kernels)]
    for index in np.flatnonzero(held)[:SHOWN_HELD].tolist():
        at = int(rows.launch_id[index])
        notes.append(f"{'' if code.kernel[at] else 'region total '}{kernels[at]}: {rows.names[int(rows.metric_code[index])]} "
                     f"{float(change[index]):+.1%} judged unchanged (same code): the same machine code and launch "
                     "configuration on both sides, so the change is the runner's noise")
    if int(held.sum()) > SHOWN_HELD:
        notes.append(f"{int(held.sum()) - SHOWN_HELD} more timing changes of same-code kernels judged unchanged")
    counters = same_row & ~timing & judged.gated & is_status(judged.status, Status.REGRESSION, Status.IMPROVEMENT)
    why = list(code.why)
    for at in sorted(set(rows.launch_id[counters].tolist())):
        names = sorted({rows.names[int(k)] for k in rows.metric_code[counters & (rows.launch_id == at)].tolist()})
        why[at] = f"{why[at]}; its counters moved ({', '.join(names[:3])}): the same code ran on other input"
    return judged._replace(status=status), code._replace(why=why), notes


def _count_note(code: CodeFacts, kernels: Sequence[str]) -> str:
    """``machine code: 4 kernels the same ..., 1 changed (name), 0 not known``, kernels counted by name (a kernel on
    one side only is neither)."""
    same = {kernels[at] for at in np.flatnonzero(code.same & code.kernel).tolist()}
    changed = {kernels[at] for at in np.flatnonzero(code.changed).tolist()}
    unknown = {kernels[at] for at in np.flatnonzero(code.unknown).tolist()}
    other = {kernels[at] for at, (b, c) in enumerate(zip(code.base_id, code.cur_id))
             if b is not None and b == c and not code.same[at]}
    named = f" ({', '.join(sorted(changed)[:5])}{' …' if len(changed) > 5 else ''})" if changed else ""
    return (f"machine code: {len(same)} kernel{'s' if len(same) != 1 else ''} the same on both sides in the same "
            f"launch configuration (time judged unchanged), {len(other)} the same in another configuration, "
            f"{len(changed)} changed{named}, {len(unknown)} not known")


def drift_judgement(rows: JoinedRows, judged: JudgedRows, code: CodeFacts, relative_limits: np.ndarray,
                    kernels: Sequence[str]) -> tuple[JudgedRows, list[str]]:
    """When the same-code kernels' durations moved together past their limits, the time changes of the kernels
    whose code changed are inconclusive (runner drift), with one note that says so. ``kernels``: per launch id."""
    if not len(rows):
        return judged, []
    _, change = rows.changes()
    duration = np.array([name == TIME_METRIC for name in rows.names], dtype=bool)[rows.metric_code]
    sample = duration & (code.same & code.kernel)[rows.launch_id] & np.isfinite(change)
    per_kernel: dict[str, list[tuple[float, float]]] = {}
    for index in np.flatnonzero(sample).tolist():
        per_kernel.setdefault(kernels[int(rows.launch_id[index])], []).append(
            (float(change[index]), float(relative_limits[index])))
    if len(per_kernel) < DRIFT_KERNELS:
        return judged, []
    moves = {name: (float(np.median([c for c, _ in pairs])), float(np.median([lim for _, lim in pairs])))
             for name, pairs in per_kernel.items()}
    shift = float(np.median([c for c, _ in moves.values()]))
    limit = float(np.median([lim for _, lim in moves.values()]))
    together = [name for name, (c, lim) in moves.items() if lim >= 0 and abs(c) > lim and c * shift > 0]
    if len(together) < DRIFT_KERNELS or limit < 0 or abs(shift) <= limit:
        return judged, []
    blamed = code.changed[rows.launch_id] & _timing_rows(rows) & is_status(judged.status, Status.REGRESSION,
                                                                          Status.IMPROVEMENT)
    status = judged.status.copy()
    status[blamed] = STATUS_CODE[Status.INCONCLUSIVE]
    blamed_kernels = sorted({kernels[int(at)] for at in rows.launch_id[blamed].tolist()})
    note = (f"runner drift: {len(together)} of {len(moves)} same-code kernels' durations moved together (median "
            f"{shift:+.1%}, past their {limit:.1%} limit), though their code and launch configuration did not change"
            + (f": the time changes of {', '.join(blamed_kernels[:5])} (code changed) are inconclusive, not blamed"
               if blamed_kernels else "") + "; rerun on a quiet runner with locked clocks")
    return judged._replace(status=status), [note]


def code_problem_notes(baseline: Measurement, current: Measurement, shown: int = 3) -> list[str]:
    """What the writer of each side's codes file could not read (a module loaded from PTX, no nvdisasm...), which
    is why some of its kernels carry no code: ``shown`` lines a side and a count of the rest."""
    notes: list[str] = []
    for name, side in (("baseline", baseline), ("current run", current)):
        text = side.settings.get(CODE_PROBLEMS_SETTING)
        problems = parse_json_or_none(text) if isinstance(text, str) else None
        if not isinstance(problems, list):
            continue
        notes += [f"machine code of the {name}'s kernels: {problem}" for problem in problems[:shown]]
        if len(problems) > shown:
            notes.append(f"machine code of the {name}'s kernels: {len(problems) - shown} more problems in its codes "
                         "file")
    return notes
