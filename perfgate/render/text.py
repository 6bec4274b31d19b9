"""The terminal view: the kernels that need attention, at most ``limit`` of them, then one line."""

from __future__ import annotations

import re

from collections import Counter
from typing import Any

from perfgate.render.common import (
    Shown,
    display_name,
    left_out,
    metric_line,
    missing_side,
    no_data_side,
    shown_region,
    source_label,
    verdict_line,
)
from perfgate.timeline_why import region_why
from perfgate.quantities import limit_text, pair_texts
from perfgate.render.kernels import KernelRow, KernelRows, change_text, gathered, kernel_row, launches_label, why_lines
from perfgate.render.shape import ComparedReport, compared
from perfgate.report import ReportView
from perfgate.text import inert
from perfgate.vocabulary import KIND_REGION, Status

TEXT_LAUNCHES = 50  # a CI log shows the first 50 kernels that need attention; the rest are counted


def _header(report: ReportView) -> list[str]:
    lines = []
    for comparison in report["comparisons"]:
        base_devices, cur_devices = comparison["baseline_devices"], comparison["current_devices"]
        devices = ", ".join(cur_devices or base_devices)
        if base_devices and cur_devices and base_devices != cur_devices:
            devices = f"{', '.join(base_devices)} → {', '.join(cur_devices)}"
        lines.append(f"perfgate: {source_label(comparison['baseline'])} → {source_label(comparison['current'])}"
                     + (f" on {devices}" if devices else ""))
    return lines


def _launch_lines(item: Shown, report: ReportView, variant: str = "") -> list[str]:
    """A launch's entry; ``variant``: what tells its kernel from others of its name, shown in its ordinal's place
    (``reduce_kernel (2)``, as every format names that kernel)."""
    launch, rows = item.launch, item.rows
    status = str(launch["status"])
    region = shown_region(launch.get("kind"), launch.get("kernel"), launch.get("region"))
    where = f" [{region}]" if region else ""
    # A benchmark's name is its test id: name it once.
    test = f"{launch['test']}: " if launch.get("test") and launch.get("test") != launch.get("kernel") else ""
    name = f"{launch.get('kernel')}{variant}" if variant else display_name(launch)
    if launch.get("baseline_kernel") and launch["baseline_kernel"] != launch.get("kernel"):
        name = f"{launch['baseline_kernel']} → {name}"
    lines = [f"{status.upper():<11} {test}{name}{where}"]
    if launch.get("kind") == KIND_REGION and any(str(r.get("metric", "")).startswith("timeline.") for r in rows):
        return lines + _region_lines(rows)
    # A launch of a kernel judged as one (its repeated launches): its rows' statuses are the kernel's, not their own.
    judged = "; judged with its kernel's repeated launches" if launch.get("group") is not None else ""
    for row in rows:
        if row.get("gated") and row.get("status") in ("regression", "improvement", "unchanged", "inconclusive"):
            how = judged if row.get("status") != "regression" else ""
            lines.append(f"    {row['status']:<11} {metric_line(row)}  "
                         f"[limit {limit_text(row.get('threshold'), row.get('unit'))}{how}]")
    if status == Status.NO_DATA.value:
        lines.append(f"    no values of the gated metrics in {no_data_side(rows)}")
    if launch.get("launch_change"):
        lines.append(f"    launch config changed: {launch['launch_change']}")
    if launch.get("code_why"):
        lines.append(f"    code: {launch['code_why']}")
    if status in ("regression", "improvement", "inconclusive"):
        # The "why" every format gives (``why_lines``); the code and launch configuration have their lines above.
        kernel = kernel_row(report, [item.index], {})._replace(code_why=None, launch_change=None)
        lines += [f"    why: {why}" for why in why_lines(kernel, others=4)]
    return lines


def _region_lines(rows: list[dict[str, Any]]) -> list[str]:
    """A timeline region in at most four lines: the gated metrics that moved (wall time, GPU idle, host lead: as
    the Markdown and HTML rows list them), then one "why" naming the part of its wall time that moved, its idle
    share in points and its kernel time."""
    gated = [r for r in rows if r.get("gated") and r.get("status") in ("regression", "improvement", "inconclusive")]
    lines = [f"    {r['status']:<11} {metric_line(r)}  [limit {limit_text(r.get('threshold'), r.get('unit'))}]"
             for r in gated[:3]]
    then = {str(r["metric"]): float(r["baseline"]) for r in rows if isinstance(r.get("baseline"), (int, float))}
    now = {str(r["metric"]): float(r["current"]) for r in rows if isinstance(r.get("current"), (int, float))}
    why = region_why(then, now)
    return lines + ([f"    why: {why}"] if why else [])


def _kernel_lines(row: KernelRow) -> list[str]:
    """A kernel launched more than once, in one entry: its gated metrics over its launches (the repeated-launch
    judgement's medians and interval where its launches were judged as one), then why; the launches that moved
    alone are named in the why."""
    region = shown_region(row.kind, row.kernel, row.region)
    where = f" [{region}]" if region else ""
    test = f"{row.test}: " if row.test and row.test != row.kernel else ""
    lines = [f"{row.status.upper():<11} {test}{row.name}{where} {launches_label(row)}"]
    compared = row.status not in (Status.NEW.value, Status.MISSING.value, Status.NO_DATA.value)
    for m in row.metrics if compared else ():
        if m.gated and m.status in ("regression", "improvement", "unchanged", "inconclusive"):
            before, after = pair_texts(m.before, m.after, m.unit, m.metric)
            label = f"{m.label} (median)" if m.launches > 1 else m.label
            lines.append(f"    {m.status:<11} {label} {before} → {after} ({change_text(m)})  [limit {m.limit}]")
    if row.status == Status.NO_DATA.value:
        gated = [m for m in row.metrics if m.gated]
        lines.append(f"    no values of the gated metrics in {missing_side([m.before for m in gated], [m.after for m in gated])}")
    if row.launch_change:
        lines.append(f"    launch config changed: {row.launch_change}")
    if row.code_why:
        lines.append(f"    code: {row.code_why}")
    if row.status in ("regression", "improvement", "inconclusive"):
        lines += [f"    why: {why}" for why in why_lines(row._replace(code_why=None, launch_change=None), others=4)]
    return lines


_WHY_END = re.compile(r"(kernels unchanged|kernels changed \(.*\)|kernel time [+-]\d+%)$")


def _is_why(note: str) -> bool:
    """A region's why note (``compare.sources.region_why``), which ends on its kernels: said by a listed region's own
    why line; its other notes (module loading, a cold run's gap) are not."""
    return _WHY_END.search(note) is not None


def render_text(report: ReportView | ComparedReport, show_unchanged: bool = False, limit: int = TEXT_LAUNCHES) -> str:
    """Verdict, the kernels that need attention (regressions first, at most ``limit``; a kernel's repeated
    launches in one entry), a count of the launches left out, then the one-line summary."""
    shape = compared(report)
    report = shape.report
    lines = _header(report)
    listed: Counter[str] = Counter()
    statuses = None if show_unchanged else [s for s in report["summary"] if s != Status.UNCHANGED.value]
    said: set[str] = set()  # the notes a listed region's own "why" already says
    kernels = KernelRows(report)
    status_column = report["launches"]["status"]
    wanted = kernels.kernels if statuses is None else kernels.with_status(statuses)
    for indexes in wanted[:limit]:
        listed.update(s for s in gathered(status_column, indexes) if statuses is None or s in statuses)
        if len(indexes) > 1:  # a kernel's repeated launches: one entry, as every other format shows them
            row = kernels.row(indexes)
            lines.extend(_kernel_lines(row))
            kind, name = str(row.kind), str(row.kernel)
        else:
            item = shape.launch(indexes[0])
            lines.extend(_launch_lines(item, report, kernels.variant(indexes[0])))
            kind, name = str(item.launch.get("kind")), str(item.launch.get("kernel"))
        if kind == KIND_REGION:
            said.add(f"region `{name}`: ")
    lines.extend(shape.unmeasured)
    for note in report["notes"]:
        if not any(note.startswith(prefix) and _is_why(note) for prefix in said):
            lines.append(f"note: {note}")
    more = left_out(report, listed, statuses)
    if more:
        lines.append(f"... not listed: {more} (the JSON and HTML reports list every launch)")
    lines.append(verdict_line(report))
    # Names come from the code under test: no escape sequence or carriage return reaches a terminal.
    return "\n".join(inert(line) for line in lines) + "\n"
