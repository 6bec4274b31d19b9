"""One self-contained HTML file a browser opens: every launch while they fit 5 MB, else the launches that need
attention in full and the others summarized per kernel (``perfgate.render.html_bound``); the JSON report holds
every launch.

The page's frame is a jinja2 template, ``page.html.j2`` (autoescaped; a team can replace it, see
``perfgate.render.templates``), with the kernel table and sections (``perfgate.render.kernels_html``) and the table
of launches, one row per gated metric of each launch (``perfgate.render.html_table``, in numpy), laid out in
Python: at 500,000 launches a template loop over the rows costs more than the whole comparison. The page can be
written a piece at a time (:func:`render_html_chunks`). Every string from a report is escaped, by the template's
autoescape or by ``html_escape`` (which escapes exactly what autoescape escapes); the page's
Content-Security-Policy forbids scripts and network fetches.
"""

from __future__ import annotations

import secrets
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, cast

from markupsafe import Markup

from perfgate.errors import ConfigError
from perfgate.render.common import (
    VERDICT_WORD,
    commits_line,
    compared_files,
    devices_label,
    headline,
    report_devices,
    summary_parts,
)
from perfgate.render.html_bound import PAGE_BYTES, LaunchTable, launch_table, utf8_size
from perfgate.render.kernels_html import kernel_sections, kernel_table
from perfgate.render.shape import ComparedReport, compared
from perfgate.render.templates import render_template
from perfgate.render.timeline_html import timeline_sections
from perfgate.report import Report

NOTES_BYTES = 100_000  # the notes listed on the page; the JSON report holds them all
_FRAME_SLACK = 1_000  # what the frame adds around a summary (the heading's longer words, the note's paragraph)


def render_html(report: Report | ComparedReport, commits: Sequence[str | None] | None = None, templates: Path | None = None,
                json_report: str | None = None) -> str:
    """One self-contained HTML file (inline CSS and SVG charts, no scripts, no fetches); ``json_report``: the file
    name of the JSON report written beside it, which the page names where it summarizes launches."""
    return "".join(page_parts(report, commits, templates, json_report))


_CHUNK = 256  # parts of the page (a launch's rows are one) joined into one piece for a writer: ~300 kB


def render_html_chunks(report: Report | ComparedReport, commits: Sequence[str | None] | None = None,
                       templates: Path | None = None, json_report: str | None = None) -> Iterator[str]:
    """:func:`render_html`'s page in pieces, for a writer: the page of 10,000 launches never exists whole."""
    parts = page_parts(report, commits, templates, json_report)
    for start in range(0, len(parts), _CHUNK):
        yield "".join(parts[start:start + _CHUNK])


def page_parts(shape: Report | ComparedReport, commits: Sequence[str | None] | None = None, templates: Path | None = None,
               json_report: str | None = None) -> list[str]:
    """The page as the parts to join: the top, the table's rows (a text per launch), the bottom.

    The frame is ``page.html.j2`` (autoescaped); the rows go where it writes ``rows``, found by a mark drawn at
    random for each page, which no report can hold. The frame is rendered once without launches, which measures
    the room left for them under :data:`PAGE_BYTES` and is the page's frame when every launch fits. Only when
    launches are left out is it rendered again, with the note that says so and their summary: the template
    decides the page's shape from that note (``launches_note``), so no one render can serve both."""
    shape = compared(shape)
    report = cast(Report, shape.report)  # the page is made of a whole report, never of a view
    verdict = report["verdict"]
    pairs, more = compared_files(report)
    devices = report_devices(report)
    moved = commits_line(commits)
    facts = ([f"{devices_label(devices)}: {', '.join(devices)}"] if devices else []) + (
        [f"commits: {moved}"] if moved else [])
    arrays, kernels = shape.arrays, shape.kernels  # arrays: None for a report without launches
    mark = f"<!-- rows {secrets.token_hex(16)} -->"
    given: dict[str, Any] = dict(
        headline=headline(report), facts=facts, summary=summary_parts(report),
        verdict_class={"fail": "verdict-fail", "pass": "verdict-pass"}.get(verdict, "verdict-warn"),
        verdict=VERDICT_WORD.get(verdict, "FAIL"), compared=pairs, more_compared=more, devices=devices,
        kernels=Markup(kernel_table(kernels, templates)), sections=Markup(kernel_sections(kernels, templates)),
        timelines=Markup(timeline_sections(report)), test_column=any(report["launches"]["test"]),
        rows=Markup(mark), notes=listed_notes(shape.notes),
        generator=report["generator"])
    frame = _frame(templates, mark, given, LaunchTable([], None, ""))
    table = LaunchTable([], None, "") if arrays is None else launch_table(
        shape, PAGE_BYTES - utf8_size(frame[0]) - utf8_size(frame[1]) - _FRAME_SLACK, json_report)
    top, bottom = _frame(templates, mark, given, table) if table.note is not None else frame
    return [top, *table.rows, bottom]


def _frame(templates: Path | None, mark: str, given: dict[str, Any], table: LaunchTable) -> tuple[str, str]:
    """The page above and below the rows of the launches."""
    page = render_template("page.html.j2", templates, **given, launches_note=table.note,
                           summarized=Markup(table.summary))
    if page.count(mark) != 1:
        raise ConfigError("page.html.j2: the page must write {{ rows }} (the rows of \"Every launch\") once")
    top, bottom = page.split(mark, 1)
    return top, bottom


def listed_notes(notes: list[str]) -> list[str]:
    """The notes the page lists: those that fit :data:`NOTES_BYTES`, then a line that counts the others."""
    room = NOTES_BYTES
    for count, note in enumerate(notes):
        room -= utf8_size(note)
        if room < 0:
            return [*notes[:count], f"{len(notes) - count:,} more notes are in the JSON report."]
    return notes
