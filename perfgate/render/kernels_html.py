"""The HTML report's kernel view: one row per kernel, and a section for each regressed or inconclusive one.

A kernel engineer investigates from here. Each section names the kernel with its test, GPU and region, says
why first (bound before and after from the speed-of-light percentages, launch configuration, Nsight
Compute's rule findings that appeared or went), draws each gated metric's baseline and current value on its
own axis with the band its threshold allows, and lists every collected metric, grouped as Nsight Compute
groups its sections (speed of light, memory, compute, launch and occupancy), with its change. How many
kernels and sections are shown, and how many are not, is stated on the page.
"""

from __future__ import annotations

from perfgate.errors import ConfigError
from perfgate.metrics import parse_threshold
from perfgate.render.common import STATUS_ICON
from perfgate.render.formatting import format_values, html_escape
from perfgate.render.kernels import (
    KernelRow,
    MetricSummary,
    change_text,
    kernel_groups,
    kernel_row,
    launches_label,
    why_lines,
)
from perfgate.render.result_arrays import ResultArrays, metric_launches
from perfgate.report import Report, group_stats
from perfgate.vocabulary import Status

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


def _where(row: KernelRow) -> str:
    parts = [row.test or "", row.device or "", f"region {row.region}" if row.region else ""]
    return " · ".join(p for p in parts if p)


class KernelRows:
    """A report's kernels, each summarized once (:func:`kernel_row`) for the table and the sections: a kernel of a
    loop of 10,000 launches is summarized in numpy (``arrays``, the report's results as arrays; None only for a
    report without launches, which has no kernel). ``kernels``: the report's ``kernel_groups`` where the caller
    has them."""

    def __init__(self, report: Report, arrays: ResultArrays | None, kernels: list[list[int]] | None = None) -> None:
        self.report = report
        self.kernels = kernel_groups(report) if kernels is None else kernels
        self.stats = group_stats(report)
        self._arrays = arrays
        self._rows: dict[int, KernelRow] = {}

    def row(self, indexes: list[int]) -> KernelRow:
        found = self._rows.get(indexes[0])  # kernels do not share launches: the first one names a kernel
        if found is None:
            assert self._arrays is not None  # a kernel is launches
            metrics = metric_launches(self.report, self._arrays, indexes)
            found = self._rows[indexes[0]] = kernel_row(self.report, indexes, self.stats, metrics)
        return found

    def with_status(self, statuses: tuple[str, ...]) -> list[list[int]]:
        """The kernels with a launch in one of ``statuses``, as ``kernel_groups(report, statuses)``."""
        column = self.report["launches"]["status"]
        return [k for k in self.kernels if any(column[i] in statuses for i in k)]


def kernel_table(rows: KernelRows) -> str:
    """``<h2>Kernels</h2>`` and one row per kernel (the first ``KERNEL_ROWS``), what needs attention first."""
    kernels = rows.kernels
    if not kernels:
        return ""
    out = ['<h2 id="kernels">Kernels</h2>',
           '<table id="kernel-table"><thead><tr><th>Status</th><th>Kernel</th><th>Test · GPU · region</th>'
           '<th>Launches</th><th>Metric</th><th>Baseline</th><th>Current</th><th>Change</th><th>Limit</th>'
           '<th>Why</th></tr></thead><tbody>']
    room = KERNEL_TABLE_BYTES
    listed = 0
    for indexes in kernels[:KERNEL_ROWS]:
        row = rows.row(indexes)
        moved = row.moved[:3]
        why = why_lines(row, others=0)[:3]  # the bound, a launch-config change, ncu's findings
        shown = [format_values([m.before, m.after], m.unit) for m in moved]
        cells = [f"{STATUS_ICON.get(row.status, '')} {html_escape(row.status)}",
                 f'<span class="kernel">{html_escape(row.name)}</span>', html_escape(_where(row)),
                 launches_label(row) or "1",
                 "<br>".join(html_escape(m.label) for m in moved),
                 "<br>".join(html_escape(before) for before, _ in shown),
                 "<br>".join(html_escape(after) for _, after in shown),
                 "<br>".join(html_escape(change_text(m)) for m in moved),
                 "<br>".join(html_escape(m.limit) for m in moved),
                 "<br>".join(html_escape(line) for line in why)]
        classes = ["", "", "", "num", "", "num", "num", "num", "", "why"]
        line = (f'<tr class="{row.status.replace(" ", "-")}">'
                + "".join(f'<td class="{c}">{v}</td>' if c else f"<td>{v}</td>" for c, v in zip(classes, cells))
                + "</tr>")
        room -= len(line.encode("utf-8"))
        if room < 0:
            break
        out.append(line)
        listed += 1
    out.append("</tbody></table>")
    if len(kernels) > listed:
        out.append(f'<p class="meta" id="kernels-truncated">The first {listed:,} of {len(kernels):,} kernels '
                   f'are listed; the launches below and the JSON report hold them all.</p>')
    return "\n".join(out) + "\n"


def kernel_sections(rows: KernelRows) -> str:
    """One ``<section>`` per regressed or inconclusive kernel (the first ``SECTIONS``)."""
    kernels = rows.with_status(_SECTION_STATUSES)
    if not kernels:
        return ""
    shown = [row for row in map(rows.row, kernels[:SECTIONS]) if row.status in _SECTION_STATUSES]
    out = ['<h2 id="investigate">Regressed and inconclusive kernels</h2>']
    room = SECTIONS_BYTES
    drawn = 0
    for number, row in enumerate(shown):
        section = _section(row, number)
        room -= len(section.encode("utf-8"))
        if room < 0:
            break
        out.append(section)
        drawn += 1
    if len(kernels) > SECTIONS or drawn < len(shown):
        first = SECTIONS if drawn == len(shown) else drawn
        out.append(f'<p class="meta" id="sections-truncated">Sections for the first {first} of {len(kernels):,} '
                   f'regressed or inconclusive kernels; the others are in the tables.</p>')
    return "\n".join(out) + "\n"


def _section(row: KernelRow, number: int) -> str:
    count = launches_label(row)
    title = (f"{STATUS_ICON.get(row.status, '')} <span class=\"kernel\">{html_escape(row.name)}</span>"
             f"{' ' + count if count else ''} — {html_escape(_where(row))}")
    why = why_lines(row, others=3)
    items = "".join(f'<li class="{"bound" if line.startswith("bound:") else ""}">{html_escape(line)}</li>'
                    for line in why)
    parts = [f'<section class="kernel-section" id="kernel-{number}">', f"<h3>{title}</h3>"]
    if items:
        parts.append(f'<ul class="explain">{items}</ul>')
    else:
        parts.append('<p class="meta">No speed-of-light percentages, launch change or rule findings to explain it '
                     '(collect them with --metrics +sm__throughput.avg.pct_of_peak_sustained_elapsed,'
                     '+gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed).</p>')
    charts = [band_chart(m) for m in row.metrics if m.gated and m.before is not None and m.after is not None]
    if charts:
        parts.append("<h4>Gated metrics against their limits</h4>")
        parts += charts
    parts.append(_metric_tables(row))
    parts.append("</section>")
    return "\n".join(parts)


def _metric_tables(row: KernelRow) -> str:
    grouped: dict[str, list[MetricSummary]] = {}
    for summary in row.metrics:
        grouped.setdefault(metric_group(summary.metric), []).append(summary)
    order = [name for name, _ in GROUPS] + [OTHER_GROUP]
    median = len(row.launches) > 1
    out = [f'<table class="metrics"><thead><tr><th>Section</th><th>Metric</th>'
           f'<th>Baseline{" (median)" if median else ""}</th><th>Current{" (median)" if median else ""}</th>'
           f'<th>Change</th><th>Limit</th><th>Status</th></tr></thead><tbody>']
    for name in order:
        for i, m in enumerate(grouped.get(name, [])):
            label = html_escape(m.label) + (f' <span class="meta">{html_escape(m.metric)}</span>'
                                            if m.label != m.metric else "")
            head = f'<td rowspan="{len(grouped[name])}">{name}</td>' if i == 0 else ""
            before, after = format_values([m.before, m.after], m.unit)
            out.append(f'<tr class="{m.status.replace(" ", "-")}">{head}<td>{label}</td>'
                       f'<td class="num">{html_escape(before)}</td><td class="num">{html_escape(after)}</td>'
                       f'<td class="num">{html_escape(change_text(m))}</td><td>{html_escape(m.limit)}</td>'
                       f'<td>{html_escape(m.status)}</td></tr>')
    out.append("</tbody></table>")
    return "\n".join(out)


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


def band_chart(summary: MetricSummary) -> str:
    """One metric on its own axis: the baseline, the band its threshold allows, the current value (and the 95%
    interval of a repeated kernel's change), each labelled with its absolute value."""
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

    unit = summary.unit
    before_text, after_text, bound_text = format_values([before, after, bound], unit)
    fill = {"regression": "#cf222e", "improvement": "#1a7f37", "inconclusive": "#bf8700"}.get(summary.status, "#57606a")
    lines = [f'<svg class="band" role="img" width="{_WIDTH}" height="58" xmlns="http://www.w3.org/2000/svg" '
             f'aria-label="{html_escape(summary.label)}: baseline, allowed band and current value">',
             f'<text x="0" y="20">{html_escape(summary.label)}</text>',
             f'<text x="0" y="38" class="meta">limit {html_escape(summary.limit)}</text>',
             f'<rect x="{_LEFT}" y="8" width="{_TRACK}" height="22" fill="#f6f8fa" stroke="#d0d7de"/>']
    if bound is not None:
        start, stop = sorted((x(before), x(bound)))
        lines.append(f'<rect class="allowed" x="{start}" y="8" width="{max(stop - start, 1)}" height="22" '
                     f'fill="#ddf4ff"><title>allowed by the limit: up to '
                     f'{html_escape(bound_text)}</title></rect>')
    lines.append(f'<rect class="current" x="{_LEFT}" y="13" width="{max(x(after) - _LEFT, 1)}" height="12" '
                 f'fill="{fill}"><title>current {html_escape(after_text)}</title></rect>')
    if low_ci is not None and high_ci is not None:
        lines.append(f'<line x1="{x(low_ci)}" y1="19" x2="{x(high_ci)}" y2="19" stroke="#1f2328" stroke-width="2">'
                     f'<title>95% interval of the change</title></line>')
    lines.append(f'<line class="baseline" x1="{x(before)}" y1="4" x2="{x(before)}" y2="34" stroke="#1f2328" '
                 f'stroke-width="2"/>')
    legend = (f"baseline {before_text} · current {after_text} ({change_text(summary)})"
              + (f" · allowed up to {bound_text}" if bound is not None else ""))
    lines.append(f'<text x="{_LEFT}" y="50">{html_escape(legend)}</text>')
    if low > 0:
        low_text, top_text = format_values([low, top], unit)
        lines.append(f'<text x="{_LEFT + _TRACK + 6}" y="24" class="meta">axis {html_escape(low_text)}'
                     f'–{html_escape(top_text)}</text>')
    lines.append("</svg>")
    return "\n".join(lines)
