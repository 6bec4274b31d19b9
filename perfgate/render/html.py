"""One self-contained HTML file with every launch: the full detail a human format can hold.

Written in plain Python, no template engine: the page is one string (``_PAGE``) with a handful of
fields, the kernel table and sections (``perfgate.render.kernels_html``), and the table of results, one row per
gated metric of every
launch, is written straight from the report's columns, because at 10,000 launches a template loop
(and loading jinja2, ~70 ms) costs more than the whole comparison. Every string from a report goes
through :func:`_escape`, which escapes exactly what jinja2's autoescape escapes; the page's
Content-Security-Policy forbids scripts and network fetches.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from perfgate.render.common import (
    VERDICT_WORD,
    commits_line,
    compared_files,
    headline,
    report_devices,
    summary_parts,
    unmeasured_notes,
)
from perfgate.render.formatting import _formatter, format_change, format_value, html_escape, limit_text
from perfgate.render.kernels_html import kernel_sections, kernel_table
from perfgate.report import Report
from perfgate.vocabulary import Status

_SHOWN_UNGATED = (Status.NEW.value, Status.MISSING.value, Status.NO_DATA.value)
_EXPLAINED = (Status.REGRESSION.value, Status.IMPROVEMENT.value)
_NOT_AN_EXPLANATION = re.compile(r"^(launch__|time\.stddev$)")
_CLASS = {s.value: s.value.replace(" ", "-") for s in Status}


_escape = html_escape


class _Metrics:
    """Per-metric facts of a report, worked out once for a table of thousands of rows."""

    def __init__(self, report: Report) -> None:
        metrics = report["metrics"]
        self.names = [str(label or metric) for metric, label in zip(metrics["metric"], metrics["label"])]
        self.labels = [_escape(name) for name in self.names]
        self.units = [u or "" for u in metrics["unit"]]
        self.limits = [_escape(limit_text(t, u)) for t, u in zip(metrics["threshold"], self.units)]
        self.unit_safe = [_escape(u) == u for u in self.units]
        self.explains = [not _NOT_AN_EXPLANATION.match(str(m or "")) for m in metrics["metric"]]


class _Rows:
    """The results columns a table row reads, bound once."""

    def __init__(self, report: Report) -> None:
        results = report["results"]
        self.statuses, self.gated, self.changes = results["status"], results["gated"], results["change"]
        self.codes, self.baseline, self.current = results["metric"], results["baseline"], results["current"]
        self.launch_change, self.launch_status = report["launches"]["launch_change"], report["launches"]["status"]


def _why(rows: _Rows, facts: _Metrics, index: int, start: int, stop: int) -> str:
    """A launch's "why" cell, worded as :func:`explanation` words it, read straight from the columns."""
    statuses, changes, codes, explains = rows.statuses, rows.changes, rows.codes, facts.explains
    moved = []
    improved = False
    for i in range(start, stop):
        status = statuses[i]
        if status == "info":
            size = changes[i]
            if size is not None and (size >= 0.01 or size <= -0.01) and explains[codes[i]]:
                moved.append(i)
        elif status == "improvement" and rows.gated[i]:
            improved = True
    change = rows.launch_change[index]
    if not change and not ((improved or moved) and rows.launch_status[index] in _EXPLAINED):
        return ""
    if len(moved) > 1:
        moved.sort(key=lambda i: -abs(changes[i] or 0.0))
    reasons = []
    for i in moved:
        if not rows.gated[i]:
            unit = facts.units[codes[i]]
            reasons.append(f"{facts.names[codes[i]]} {format_value(rows.baseline[i], unit)} → "
                           f"{format_value(rows.current[i], unit)} ({format_change(changes[i])})")
            if len(reasons) == 4:
                break
    text = f"launch config changed: {_escape(change)}<br>" if change else ""
    if reasons:
        text += "why: " + _escape("; ".join(reasons))
    return text


def table_rows(report: Report) -> str:
    """The ``<tbody>`` rows: each launch's gated metrics (and the rows that say new, missing or no data)."""
    launches, results = report["launches"], report["results"]
    facts = _Metrics(report)
    bound = _Rows(report)
    labels, limits, units, unit_safe = facts.labels, facts.limits, facts.units, facts.unit_safe
    has_tests = any(launches["test"])
    columns = 8 if has_tests else 7
    pointer, statuses, gated, codes = results["launch"], results["status"], results["gated"], results["metric"]
    baseline, current, changes = results["baseline"], results["current"], results["change"]
    change_of, escape = format_change, _escape
    formats = [_formatter(unit) for unit in units]
    titles: dict[str | None, str] = {}
    total = len(pointer)
    out: list[str] = []
    start = 0
    for index in range(len(launches["status"])):
        stop = start
        while stop < total and pointer[stop] == index:
            stop += 1
        kernel, ordinal = launches["kernel"][index], launches["ordinal"][index]
        name = f"{kernel} #{ordinal}" if launches["kind"][index] == "kernel" and ordinal > 0 else kernel
        demangled = launches["demangled"][index]
        title = titles.get(demangled)
        if title is None:
            title = titles[demangled] = escape(demangled)
        test = f'<td class="kernel">{escape(launches["test"][index] or "")}</td>' if has_tests else ""
        who = (f'{test}<td class="kernel" title="{title}">{escape(name)}</td>'
               f'<td>{escape(launches["region"][index] or "")}</td>')
        launch_status = launches["status"][index]
        for i in range(start, stop):
            status = statuses[i]
            # An ungated metric is listed only for a launch that is new, missing or without data as a whole: one
            # absent on a side of a compared launch says nothing (its section lists every collected metric).
            if not gated[i] and (status not in _SHOWN_UNGATED or status != launch_status):
                continue
            code = codes[i]
            number = formats[code]
            base_value, cur_value = baseline[i], current[i]
            before = "—" if base_value is None else number(base_value)
            after = "—" if cur_value is None else number(cur_value)
            if not unit_safe[code]:
                before, after = escape(before), escape(after)
            out.append(f'<tr class="{_CLASS[status]}">\n<td>{status}</td>{who}\n<td>{labels[code]}</td>'
                       f'<td class="num">{before}</td><td class="num">{after}</td>\n'
                       f'<td class="num">{change_of(changes[i])}</td><td>{limits[code]}</td>\n</tr>\n')
        why = _why(bound, facts, index, start, stop)
        if why:
            out.append(f'<tr class="why"><td></td><td colspan="{columns}" class="why">{why}</td></tr>\n')
        start = stop
    return "".join(out)


_PAGE = """<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'; img-src data:">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>perfgate: {headline}</title>
<style>
body {{ font: 14px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; margin: 2rem; color: #1f2328; }}
h1 {{ font-size: 1.4rem; }} h2 {{ font-size: 1.1rem; margin-top: 2rem; }}
.verdict-fail {{ color: #cf222e; }} .verdict-pass {{ color: #1a7f37; }} .verdict-warn {{ color: #9a6700; }}
table {{ border-collapse: collapse; margin: .5rem 0; }}
th, td {{ border: 1px solid #d0d7de; padding: 4px 8px; text-align: left; vertical-align: top; }}
td.num {{ text-align: right; font-variant-numeric: tabular-nums; }}
tr.regression td {{ background: #ffebe9; }} tr.improvement td {{ background: #dafbe1; }}
tr.no-data td, tr.missing td {{ background: #fff8c5; }}
.kernel {{ font-family: ui-monospace, SFMono-Regular, Menlo, monospace; word-break: break-all; }}
.why {{ color: #57606a; font-size: 12px; }}
svg text {{ font: 12px system-ui, sans-serif; fill: #1f2328; }}
.meta {{ color: #57606a; }}
section.kernel-section {{ border: 1px solid #d0d7de; border-radius: 6px; padding: 0 1rem 1rem; margin: 1rem 0; }}
section.kernel-section h3 {{ font-size: 1rem; }} h4 {{ font-size: .9rem; margin: .8rem 0 .2rem; }}
ul.explain {{ margin: .3rem 0; padding-left: 1.2rem; }} ul.explain li {{ margin: .1rem 0; }}
.bound {{ font-weight: 600; }}
tr.inconclusive td {{ background: #fff8c5; }}
</style>
</head>
<body>
<h1 class="{verdict_class}" id="verdict">{verdict}: perfgate — {headline}</h1>
<p class="meta" id="facts">{facts}</p>
<p class="meta" id="summary">{summary}</p>
{comparisons}
{kernels}
{sections}
<h2 id="every-launch">Every launch</h2>
<table id="results">
<thead><tr><th>Status</th>{test_header}<th>Kernel</th><th>Region</th><th>Metric</th><th>Baseline</th><th>Current</th><th>Change</th><th>Limit</th></tr></thead>
<tbody>
{rows}</tbody>
</table>
{notes}<p class="meta">{generator}</p>
</body>
</html>
"""

def render_html(report: Report, commits: Sequence[str | None] | None = None) -> str:
    """One self-contained HTML file (inline CSS and SVG charts, no scripts, no fetches)."""
    verdict = report["verdict"]
    summary = summary_parts(report)
    comparisons = []
    on = f" on {_escape(', '.join(report_devices(report)))}" if report_devices(report) else ""
    pairs, more = compared_files(report)
    for baseline, current in pairs:
        comparisons.append(f'<p class="meta">Baseline <code>{_escape(baseline)}</code> vs current '
                           f'<code>{_escape(current)}</code>{on}.</p>\n')
    if more:
        comparisons.append(f'<p class="meta">And {more} more comparison{"s" if more != 1 else ""}.</p>\n')
    facts = []
    devices = report_devices(report)
    if devices:
        facts.append(f"{'GPU' if len(devices) == 1 else 'GPUs'}: {_escape(', '.join(devices))}")
    moved = commits_line(commits)
    if moved:
        facts.append(f"commits: {_escape(moved)}")
    return _PAGE.format(
        facts=" · ".join(facts),
        kernels=kernel_table(report),
        sections=kernel_sections(report),
        headline=_escape(headline(report)),
        verdict_class={"fail": "verdict-fail", "pass": "verdict-pass"}.get(verdict, "verdict-warn"),
        verdict=VERDICT_WORD.get(verdict, "FAIL"),
        summary=_escape(" · ".join(summary)) if summary else "nothing compared",
        comparisons="".join(comparisons),
        test_header="<th>Test</th>" if any(report["launches"]["test"]) else "",
        rows=table_rows(report),
        notes="".join(f'<p class="meta">{_escape(note)}</p>\n' for note in [*unmeasured_notes(report), *report["notes"]]),
        generator=_escape(report["generator"]),
    )
