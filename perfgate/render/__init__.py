"""Render a report (see ``perfgate.report``) as text, Markdown, HTML or JSON.

Renderers are pure: report in, string out, and they take a report, never a Comparison, so a merged
or downloaded report renders exactly like a fresh one. Each takes the report in one shape, a
:class:`ComparedReport` (``perfgate.render.shape``: the report and what the formats read of it, each made
once), or a report, which it wraps in one. The human formats are bounded by what needs
attention (regressions, then no data / missing / new, then improvements; the rest is counted): text
lists at most 50 launches, Markdown fits one PR comment and says what it left out, HTML holds every
launch up to 5 MB and past that summarizes the launches that need no attention. JSON holds every launch.

Names of kernels, tests and metrics come from the user's (possibly a fork's) code, so every renderer
treats them as untrusted: Markdown escapes them so they cannot inject HTML, break a table or
@mention anyone; HTML is escaped and carries a Content-Security-Policy that forbids scripts and
network fetches.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Callable, cast

from perfgate.render.common import (
    STATUS_ICON,
    VERDICT_ICON,
    VERDICT_WORD,
    display_name,
    explanation,
    headline,
    metric_line,
    no_data_side,
    summary_parts,
    verdict_line,
)
from perfgate.quantities import format_change, format_value, format_values
from perfgate.render.formatting import md_escape
from perfgate.render.untrusted import MAX_NAME
from perfgate.render.markdown import MARKDOWN_BUDGET, render_markdown
from perfgate.render.shape import ComparedReport, compared
from perfgate.render.text import TEXT_LAUNCHES, render_text
from perfgate.report import Report, dump_parts, dumps
from perfgate.text import inert_html

__all__ = ["ComparedReport", "MARKDOWN_BUDGET", "MAX_NAME", "RENDERERS", "STATUS_ICON", "TEXT_LAUNCHES", "VERDICT_ICON", "VERDICT_WORD", "display_name", "explanation",
           "format_change", "format_value", "format_values", "headline", "md_escape", "compared", "metric_line", "no_data_side", "render",
           "render_html", "render_json", "render_markdown", "render_parts", "render_text", "summary_parts", "verdict_line"]


def render_json(report: Report | ComparedReport) -> str:
    """The report itself (contract version 2), written by orjson (see ``perfgate.report.dumps``)."""
    return dumps(cast(Report, compared(report).report))


def render_html(report: Report | ComparedReport, commits: Sequence[str | None] | None = None, templates: Path | None = None,
                json_report: str | None = None) -> str:
    """One self-contained HTML file of at most 5 MB; ``templates``: a team's folder of templates;
    ``json_report``: the JSON report's file name, which the page names where it summarizes launches."""
    from perfgate.render.html import render_html as html

    return html(report, commits=commits, templates=templates, json_report=json_report)


RENDERERS: dict[str, Callable[[Report | ComparedReport], str]] = {
    "text": render_text,
    "md": render_markdown,
    "html": render_html,
    "json": render_json,
}


def render(report: Report | ComparedReport, fmt: str) -> str:
    return RENDERERS[fmt](report)


def render_parts(report: Report | ComparedReport, fmt: str, commits: Sequence[str | None] | None = None,
                 templates: Path | None = None, json_report: str | None = None) -> Iterable[str | bytes]:
    """The text of ``render(report, fmt)`` in parts, for a file writer: the JSON a table column at a time (50k
    launches: 40 MB) as UTF-8 bytes (``dump_parts``), the HTML page in pieces. ``commits``: as ``render_html`` takes them; ``templates``: a team's
    folder of templates; ``json_report``: the JSON report's file name, which the HTML page names."""
    shape = compared(report)
    if fmt == "json":
        return dump_parts(cast(Report, shape.report))
    if fmt == "html":
        from perfgate.render.html import render_html_chunks

        return map(inert_html, render_html_chunks(shape, commits=commits, templates=templates,
                                                  json_report=json_report))  # a name is whole in one chunk
    if fmt == "md":
        return [render_markdown(shape, commits=commits, templates=templates)]
    return [render(shape, fmt)]
