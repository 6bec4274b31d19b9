"""One self-contained HTML file with every launch: the full detail a human format can hold.

Written in plain Python, no template engine: the page is one string (``_PAGE``) with a handful of
fields, the kernel table and sections (``perfgate.render.kernels_html``), and the table of results, one row per
gated metric of every launch (``perfgate.render.html_table``, in numpy), because at 10,000 launches a template
loop (and loading jinja2, ~70 ms) costs more than the whole comparison. The page can be written a piece at a
time (:func:`render_html_chunks`). Every string from a report goes through ``html_escape``, which escapes
exactly what jinja2's autoescape escapes; the page's Content-Security-Policy forbids scripts and network fetches.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING

from perfgate.render.common import (
    VERDICT_WORD,
    commits_line,
    compared_files,
    devices_label,
    headline,
    report_devices,
    summary_parts,
    unmeasured_notes,
)
from perfgate.render.formatting import html_escape
from perfgate.render.kernels_html import KernelRows, kernel_sections, kernel_table
from perfgate.render.timeline_html import timeline_sections
from perfgate.report import Report

if TYPE_CHECKING:
    from perfgate.render.result_arrays import ResultArrays

_escape = html_escape


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
{timelines}
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
_PAGE_TOP, _PAGE_BOTTOM = _PAGE.split("{rows}")


def render_html(report: Report, commits: Sequence[str | None] | None = None) -> str:
    """One self-contained HTML file (inline CSS and SVG charts, no scripts, no fetches)."""
    return "".join(page_parts(report, commits))


_CHUNK = 4096  # parts of the page joined into one piece for a writer: ~200 kB


def render_html_chunks(report: Report, commits: Sequence[str | None] | None = None) -> Iterator[str]:
    """:func:`render_html`'s page in pieces, for a writer: the page of 10,000 launches never exists whole (as
    one str it takes 57 MB: its icons make it 4 bytes a character)."""
    parts = page_parts(report, commits)
    for start in range(0, len(parts), _CHUNK):
        yield "".join(parts[start:start + _CHUNK])


def page_parts(report: Report, commits: Sequence[str | None] | None = None) -> list[str]:
    """The page as the parts to join: the top, the table's rows (parts most of them share), the bottom."""
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
        facts.append(f"{devices_label(devices)}: {_escape(', '.join(devices))}")
    moved = commits_line(commits)
    if moved:
        facts.append(f"commits: {_escape(moved)}")
    # The report's results as arrays, for the kernel view and the table; no numpy loaded without launches.
    arrays = _result_arrays(report)
    kernels = KernelRows(report, arrays)
    fields = {
        "facts": " · ".join(facts),
        "kernels": kernel_table(kernels),
        "sections": kernel_sections(kernels),
        "timelines": timeline_sections(report),
        "headline": _escape(headline(report)),
        "verdict_class": {"fail": "verdict-fail", "pass": "verdict-pass"}.get(verdict, "verdict-warn"),
        "verdict": VERDICT_WORD.get(verdict, "FAIL"),
        "summary": _escape(" · ".join(summary)) if summary else "nothing compared",
        "comparisons": "".join(comparisons),
        "test_header": "<th>Test</th>" if any(report["launches"]["test"]) else "",
        "notes": "".join(f'<p class="meta">{_escape(note)}</p>\n' for note in [*unmeasured_notes(report),
                                                                                *report["notes"]]),
        "generator": _escape(report["generator"]),
    }
    parts = _table_rows(report, arrays)
    parts.insert(0, _PAGE_TOP.format(**fields))
    parts.append(_PAGE_BOTTOM.format(**fields))
    return parts


def _result_arrays(report: Report) -> ResultArrays | None:
    if not report["launches"]["status"]:
        return None
    from perfgate.render.result_arrays import ResultArrays

    return ResultArrays(report)


def _table_rows(report: Report, arrays: ResultArrays | None) -> list[str]:
    """The table's rows as parts; none for a report without launches."""
    if arrays is None:
        return []
    from perfgate.render.html_table import table_rows

    return table_rows(report, arrays)
