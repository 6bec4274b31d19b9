"""One self-contained HTML file with every launch: the full detail a human format can hold.

The page's frame is a jinja2 template, ``page.html.j2`` (autoescaped; a team can replace it, see
``perfgate.render.templates``), with the kernel table and sections (``perfgate.render.kernels_html``) and the table
of results, one row per gated metric of every launch (``perfgate.render.html_table``, in numpy), laid out in
Python: at 500,000 launches a template loop over the rows costs more than the whole comparison. The page can be
written a piece at a time (:func:`render_html_chunks`). Every string from a report is escaped, by the template's
autoescape or by ``html_escape`` (which escapes exactly what autoescape escapes); the page's
Content-Security-Policy forbids scripts and network fetches.
"""

from __future__ import annotations

import secrets
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from perfgate.errors import ConfigError

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
from perfgate.render.kernels_html import KernelRows, kernel_sections, kernel_table
from perfgate.render.templates import render_template
from perfgate.render.timeline_html import timeline_sections
from perfgate.report import Report

if TYPE_CHECKING:
    from perfgate.render.result_arrays import ResultArrays


def render_html(report: Report, commits: Sequence[str | None] | None = None, templates: Path | None = None) -> str:
    """One self-contained HTML file (inline CSS and SVG charts, no scripts, no fetches)."""
    return "".join(page_parts(report, commits, templates))


_CHUNK = 4096  # parts of the page joined into one piece for a writer: ~200 kB


def render_html_chunks(report: Report, commits: Sequence[str | None] | None = None,
                       templates: Path | None = None) -> Iterator[str]:
    """:func:`render_html`'s page in pieces, for a writer: the page of 10,000 launches never exists whole (as
    one str it takes 57 MB: its icons make it 4 bytes a character)."""
    parts = page_parts(report, commits, templates)
    for start in range(0, len(parts), _CHUNK):
        yield "".join(parts[start:start + _CHUNK])


def page_parts(report: Report, commits: Sequence[str | None] | None = None,
               templates: Path | None = None) -> list[str]:
    """The page as the parts to join: the top, the table's rows (parts most of them share), the bottom.

    The frame is ``page.html.j2`` (autoescaped); the rows go where it writes ``rows``, found by a mark drawn at
    random for each page, which no report can hold."""
    verdict = report["verdict"]
    pairs, more = compared_files(report)
    devices = report_devices(report)
    moved = commits_line(commits)
    facts = ([f"{devices_label(devices)}: {', '.join(devices)}"] if devices else []) + (
        [f"commits: {moved}"] if moved else [])
    # The report's results as arrays, for the kernel view and the table; no numpy loaded without launches.
    arrays = _result_arrays(report)
    kernels = KernelRows(report, arrays)
    from markupsafe import Markup  # jinja2's: the parts laid out and escaped in Python, not escaped again

    mark = f"<!-- rows {secrets.token_hex(16)} -->"
    page = render_template(
        "page.html.j2", templates, headline=headline(report), facts=facts, summary=summary_parts(report),
        verdict_class={"fail": "verdict-fail", "pass": "verdict-pass"}.get(verdict, "verdict-warn"),
        verdict=VERDICT_WORD.get(verdict, "FAIL"), compared=pairs, more_compared=more, devices=devices,
        kernels=Markup(kernel_table(kernels)), sections=Markup(kernel_sections(kernels)),
        timelines=Markup(timeline_sections(report)), test_column=any(report["launches"]["test"]),
        rows=Markup(mark), notes=[*unmeasured_notes(report), *report["notes"]], generator=report["generator"])
    if page.count(mark) != 1:
        raise ConfigError("page.html.j2: the page must write {{ rows }} (the rows of \"Every launch\") once")
    top, bottom = page.split(mark, 1)
    parts = _table_rows(report, arrays)
    parts.insert(0, top)
    parts.append(bottom)
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
