"""The HTML report's kernel view: one row per kernel, and a section for each regressed or inconclusive one.

A kernel engineer investigates from here. Each section names the kernel with its test, GPU and region, says
why first (bound before and after from the speed-of-light percentages, launch configuration, Nsight
Compute's rule findings that appeared or went), draws each gated metric's baseline and current value on its
own axis with the band its threshold allows, and lists every collected metric, grouped as Nsight Compute
groups its sections (speed of light, memory, compute, launch and occupancy), with its change. How many
kernels and sections are shown, and how many are not, is stated on the page.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from perfgate.errors import ConfigError
from perfgate.metrics import parse_threshold
from perfgate.render.common import STATUS_ICON, report_devices, shown_region
from perfgate.quantities import format_value, format_values, pair_texts
from perfgate.render.templates import Macros
from perfgate.render.kernels import KernelRow, KernelRows, MetricSummary, change_text, launches_label, why_lines
from perfgate.render.roofline import roofline_chart
from perfgate.vocabulary import Status

_TEMPLATE = "kernels.html.j2"
KERNEL_ROWS = 500  # rows of the kernel table; every launch stays in the JSON report
KERNEL_TABLE_BYTES = 1_000_000  # and the most bytes they take (long names), for the page's bound
SECTIONS = 50  # sections of regressed or inconclusive kernels
SECTIONS_BYTES = 1_000_000  # and the most bytes they take (a section lists every collected metric)
_SECTION_STATUSES = (Status.REGRESSION.value, Status.INCONCLUSIVE.value)

# Nsight Compute's section grouping, by metric name: the first group whose test matches holds the metric.
GROUPS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("Speed of light", ("gpu__time_duration", "sm__throughput", "gpu__compute_memory_throughput", "cycles_elapsed",
                        "pct_of_peak_sustained_elapsed")),
    ("Memory", ("dram__", "lts__", "l1tex__", "bytes", "sectors", "hit_rate", "memory")),
    ("Launch and occupancy", ("launch__", "warps_active", "occupancy", "registers", "shared_mem")),
    ("Compute", ("inst", "smsp__", "sm__", "pipe", "flop")),
)
OTHER_GROUP = "Other"


def metric_group(metric: str) -> str:
    """The section a metric belongs to (``Speed of light``, ``Memory``, ``Launch and occupancy``, ``Compute``)."""
    for name, hints in GROUPS:
        if any(hint in metric for hint in hints):
            return name
    return OTHER_GROUP


def _where(row: KernelRow, device: bool = True) -> str:
    """``test · GPU · region``; ``device``: whether to name the GPU (the table leaves out the one GPU the page's
    header names, so that a report of one GPU spends no column width on it)."""
    region = shown_region(row.kind, row.kernel, row.region)
    parts = [row.test or "", (row.device or "") if device else "", f"region {region}" if region else ""]
    return " · ".join(p for p in parts if p)


def kernel_table(rows: KernelRows, templates: Path | None = None) -> str:
    """``<h2>Kernels</h2>`` and one row per kernel (the first ``KERNEL_ROWS``), what needs attention first, laid
    out by ``kernels.html.j2`` (``templates``: a team's folder) one row at a time, under the table's room."""
    kernels = rows.kernels
    if not kernels:
        return ""
    macros = Macros(_TEMPLATE, templates)
    out = [macros("table_head")]
    room = KERNEL_TABLE_BYTES
    listed = 0
    devices = len(report_devices(rows.report)) > 1
    for indexes in kernels[:KERNEL_ROWS]:
        line = macros("table_row", _table_row(rows.row(indexes), devices))
        room -= len(line.encode("utf-8"))
        if room < 0:
            break
        out.append(line)
        listed += 1
    out.append(macros("table_end", listed, len(kernels)))
    return "\n".join(out) + "\n"


def _table_row(row: KernelRow, devices: bool = True) -> dict[str, Any]:
    """What the kernel table says of a kernel: its three gated metrics that moved most, the why's first lines."""
    moved = row.moved[:3]
    shown = [pair_texts(m.before, m.after, m.unit, m.metric) for m in moved]
    return {"status_class": row.status.replace(" ", "-"), "icon": STATUS_ICON.get(row.status, ""),
            "status": row.status, "name": row.name, "where": _where(row, devices), "launches": launches_label(row) or "1",
            "labels": [m.label for m in moved], "befores": [before for before, _ in shown],
            "afters": [after for _, after in shown], "changes": [change_text(m) for m in moved],
            "limits": [m.limit for m in moved],
            "why": _table_why(row)}


def _table_why(row: KernelRow) -> list[str]:
    """ncu's findings, the bound, a launch-config change (the section below lists the counters that moved); where
    none of those is known for a regressed or inconclusive kernel (a region's total), the counter that moved most,
    as the Markdown comment shows it."""
    lines = why_lines(row, others=0)[:3]
    return lines if lines or row.status not in _SECTION_STATUSES else why_lines(row, others=1)


def kernel_sections(rows: KernelRows, templates: Path | None = None) -> str:
    """One ``<section>`` per regressed or inconclusive kernel (the first ``SECTIONS``), laid out by
    ``kernels.html.j2`` one section at a time, under the sections' room."""
    kernels = rows.with_status(_SECTION_STATUSES)
    if not kernels:
        return ""
    macros = Macros(_TEMPLATE, templates)
    shown = [row for row in map(rows.row, kernels[:SECTIONS]) if row.status in _SECTION_STATUSES]
    out = [macros("sections_head")]
    room = SECTIONS_BYTES
    drawn = 0
    for number, row in enumerate(shown):
        section = macros("section", _section(row, number))
        room -= len(section.encode("utf-8"))
        if room < 0:
            break
        out.append(section)
        drawn += 1
    if len(kernels) > SECTIONS or drawn < len(shown):
        out.append(macros("sections_end", SECTIONS if drawn == len(shown) else drawn, len(kernels)))
    return "\n".join(out) + "\n"


def _section(row: KernelRow, number: int) -> dict[str, Any]:
    """What a kernel's section says: why first, each gated metric on its own axis, every collected metric."""
    return {"number": number, "icon": STATUS_ICON.get(row.status, ""), "name": row.name,
            "launches": launches_label(row), "where": _where(row), "why": why_lines(row, others=3),
            "charts": [band_chart(m) for m in row.metrics if m.gated and m.before is not None and m.after is not None],
            "median": len(row.launches) > 1, "metrics": _metric_rows(row), "roofline": roofline_chart(row)}


def _metric_rows(row: KernelRow) -> list[dict[str, Any]]:
    """The section's table of every collected metric, grouped as Nsight Compute groups its sections."""
    grouped: dict[str, list[MetricSummary]] = {}
    for summary in row.metrics:
        grouped.setdefault(metric_group(summary.metric), []).append(summary)
    out = []
    for name in [name for name, _ in GROUPS] + [OTHER_GROUP]:
        for i, m in enumerate(grouped.get(name, [])):
            before, after = pair_texts(m.before, m.after, m.unit, m.metric)
            out.append({"status_class": m.status.replace(" ", "-"), "section": name,
                        "section_rows": len(grouped[name]) if i == 0 else 0, "label": m.label, "name": m.metric,
                        "before": before, "after": after, "change": change_text(m), "limit": m.limit,
                        "status": m.status})
    return out


_WIDTH, _TRACK, _LEFT = 840, 440, 150


def allowed_bound(summary: MetricSummary) -> float | None:
    """The worst value the threshold allows from the baseline (a change must exceed every limit to fail)."""
    if summary.before is None or not summary.threshold:
        return None
    try:
        limit = parse_threshold(summary.threshold)
    except ConfigError:
        return None
    if not limit.gating:
        return None
    room = max(abs(summary.before) * (limit.relative or 0.0), limit.absolute or 0.0)
    return summary.before - room if summary.direction == "higher" else summary.before + room


def axis(values: list[float]) -> tuple[float, float]:
    """The axis of a band chart: from 0, unless every value lies within 20% of the largest; then zoomed on
    them (with a margin), so a +0.3% change over a 0.2% limit is as visible as a +30% one."""
    top, bottom = max(values), min(values)
    if top <= 0:
        return 0.0, 1.0
    if bottom > 0 and (top - bottom) / top < 0.2:
        margin = max((top - bottom) * 0.25, top * 0.001)
        return bottom - margin, top + margin
    return 0.0, top * 1.08


def band_chart(summary: MetricSummary) -> dict[str, Any]:
    """One metric on its own axis, as ``kernels.html.j2``'s ``band_chart`` draws it: the baseline, the band its
    threshold allows, the current value (and the 95% interval of a repeated kernel's change), each labelled with
    its absolute value."""
    before, after = summary.before, summary.after
    assert before is not None and after is not None
    bound = allowed_bound(summary)
    values = [v for v in (before, after, bound) if v is not None]
    low_ci = high_ci = None
    if summary.interval:
        low_ci, high_ci = before * (1 + summary.interval[0]), before * (1 + summary.interval[1])
        values += [low_ci, high_ci]
    low, top = axis(values)

    def x(value: float) -> float:
        return round(_LEFT + min(max(value - low, 0.0) / (top - low), 1.0) * _TRACK, 1)

    if summary.metric.startswith("timeline."):  # a region's times span ns to s: each in its own unit
        before_text, after_text, bound_text = (format_value(v, summary.unit) for v in (before, after, bound))
    else:
        before_text, after_text, bound_text = format_values([before, after, bound], summary.unit)
    allowed = None
    if bound is not None:
        start, stop = sorted((x(before), x(bound)))
        allowed = (start, max(stop - start, 1))
    legend = (f"baseline {before_text} · current {after_text} ({change_text(summary)})"
              + (f" · allowed {'down' if bound < before else 'up'} to {bound_text}" if bound is not None else ""))
    return {"width": _WIDTH, "left": _LEFT, "track": _TRACK, "label": summary.label, "limit": summary.limit,
            "allowed": allowed, "bound": bound_text, "current": max(x(after) - _LEFT, 1), "after": after_text,
            "fill": {"regression": "#cf222e", "improvement": "#1a7f37", "inconclusive": "#bf8700"}.get(summary.status,
                                                                                                      "#57606a"),
            "interval": (x(low_ci), x(high_ci)) if low_ci is not None and high_ci is not None else None,
            "baseline": x(before), "legend": legend,
            "axis": tuple(format_values([low, top], summary.unit)) if low > 0 else None,
            "axis_x": _LEFT + _TRACK + 6}
