"""Markdown for a PR comment or a job summary, bounded to fit one comment.

A reviewer decides from the first screen, so the comment is one row per *kernel*, not per launch or
metric: the launches of a kernel in one test, GPU and region are grouped (``×40``, with the medians and,
for a repeated kernel judged as one sample, the 95% interval of its change). Layout: the headline (verdict,
GPUs, base and head commits), the counts, then the first ``top`` kernels that need attention (regressions
first, then inconclusive, no data, missing) with what moved, the change against its limit, and the "why"
(bound before and after, launch configuration, Nsight Compute findings). Then "and M more", folded in
``<details>`` with a pointer to the full report; then the other kernels (new, improved, unchanged) folded;
then the notes. Rows are added while they fit ``budget`` (GitHub counts UTF-16 code units; a comment holds
65,536); what did not fit is counted in a last line.

Python chooses what is shown (the rows that fit ``budget``, measured as each is laid out) and the templates in
``perfgate/render/templates`` lay it out (:mod:`perfgate.render.templates`); every string from the report
reaches them raw and goes through their ``md`` filter (:func:`perfgate.render.untrusted.md_inline`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from perfgate.render.common import (
    ATTENTION,
    STATUS_ICON,
    VERDICT_ICON,
    commits_line,
    compared_files,
    devices_label,
    headline,
    left_out,
    missing_side,
    no_data_side,
    plural,
    report_devices,
    shown_region,
    summary_parts,
)
from perfgate.quantities import pair_texts
from perfgate.render.formatting import text_length
from perfgate.render.kernels import KernelRow, KernelRows, change_text, launches_label, why_lines
from perfgate.render.next_steps import next_steps_block
from perfgate.render.templates import render_block, render_template
from perfgate.render.shape import ComparedReport, compared
from perfgate.report import ReportView
from perfgate.vocabulary import KIND_BENCHMARK, Status

MARKDOWN_BUDGET = 64_000  # leaves a PR comment (65,536) room for perfgate's marker and all-clear lines
NOTES_BUDGET = 6_000
COMMENT_TOP = 10  # kernels in the first table: what fits a reviewer's first screen
_ATTENTION = (Status.REGRESSION.value, Status.INCONCLUSIVE.value, *ATTENTION[1:])
_OTHERS = (Status.NEW.value, Status.IMPROVEMENT.value, Status.UNCHANGED.value)


class _Budget:
    def __init__(self, left: int) -> None:
        self.left = left

    def take(self, text: str) -> bool:
        cost = text_length(text) + 1  # and its newline
        if cost > self.left:
            return False
        self.left -= cost
        return True


def short_test(test: str | None) -> str:
    """``test_softmax[fp16]`` for ``tests/gpu/test_softmax.py::test_softmax[fp16]``."""
    return (test or "").rsplit("::", 1)[-1]


# Every default gated metric (4) and a few a team adds; more are counted, and listed in the HTML page.
MAX_METRICS_IN_ROW = 6


def _names(row: KernelRow) -> tuple[str, list[str]]:
    """The kernel's name and what goes under it (its test and region), raw."""
    name = row.name
    under = [short_test(row.test) if row.test and row.test != row.kernel else "",
             shown_region(row.kind, row.kernel, row.region)]
    if row.kind == KIND_BENCHMARK and "::" in row.kernel:
        # A benchmark is named by its full test id: the test's name leads, its file goes under it, so a long
        # path does not widen the column and push "Why" off the comment.
        path, name = row.kernel.split("::", 1)
        under = [path, under[1]]
    return name, [u for u in under if u]


def _message(row: KernelRow) -> str | None:
    """What stands in the metric columns of a kernel with no values to compare; None when it has them."""
    status = row.status
    if status == Status.MISSING.value:
        return "not in the current run"
    if status == Status.NEW.value:
        return "new: no baseline"
    if status == Status.NO_DATA.value:
        gated = [m for m in row.metrics if m.gated]
        return f"no values in {missing_side([m.before for m in gated], [m.after for m in gated])}"
    return None


def row_view(row: KernelRow, why: bool) -> dict[str, Any]:
    """What ``kernel_row.md.j2`` lays out: the numbers formatted, every string from the report raw."""
    name, under = _names(row)
    moved = row.moved[:MAX_METRICS_IN_ROW]
    median = any(m.launches > 1 for m in moved)
    return {"icon": STATUS_ICON.get(row.status, ""), "name": name, "under": under, "device": row.device or "",
            "launches": launches_label(row) or "1", "message": _message(row),
            "moved": [{"label": m.label, "median": median and m.launches > 1,
                       **dict(zip(("before", "after"), pair_texts(m.before, m.after, m.unit, m.metric))),
                       "change": change_text(m), "limit": m.limit, "regression": m.status == Status.REGRESSION.value}
                      for m in moved],
            "more": len(row.moved) - len(moved), "why": why_lines(row, others=1)[:4] if why else None}


class _Layout:
    """The templates (perfgate's, or a team's from ``folder``) with what every one of them is given."""

    def __init__(self, folder: Path | None, gpu_column: bool) -> None:
        self.folder = folder
        self.gpu_column = gpu_column

    def block(self, name: str, **context: Any) -> str:
        return render_block(name, self.folder, plural=plural, gpu_column=self.gpu_column, **context)

    def row(self, row: KernelRow, why: bool) -> str:
        return self.block("kernel_row.md.j2", row=row_view(row, why))

    def table(self, rows: list[str], why: bool, opening: str | None = None) -> str:
        return self.block("kernel_table.md.j2", rows=rows, why=why, opening=opening)


def headline_block(report: ReportView, commits: Sequence[str | None] | None = None,
                   templates: Path | None = None) -> str:
    """The first lines: verdict and headline, the GPUs and commits, the counts, and what was compared."""
    devices = report_devices(report)
    pairs, more = compared_files(report)
    return render_block("headline.md.j2", templates, plural=plural,
                        verdict_icon=VERDICT_ICON.get(report["verdict"], "❌"), headline=headline(report),
                        devices=devices, devices_label=devices_label(devices) if devices else "",
                        commits=commits_line(commits), summary=summary_parts(report), compared=pairs,
                        more_compared=more)


def _notes(all_notes: list[str], layout: _Layout) -> tuple[list[str], int]:
    """The notes that fit ``NOTES_BUDGET``, laid out, and how many did not."""
    notes: list[str] = []
    room = _Budget(NOTES_BUDGET)
    for count, note in enumerate(all_notes):
        text = layout.block("note.md.j2", note=note)
        if not room.take(text + "\n"):
            return notes, len(all_notes) - count
        notes.append(text)
    return notes, 0


def render_markdown(report: ReportView | ComparedReport, budget: int = MARKDOWN_BUDGET, full_report: str | None = None,
                    commits: Sequence[str | None] | None = None, top: int = COMMENT_TOP,
                    templates: Path | None = None) -> str:
    """Markdown for a PR comment or job summary: one row per kernel, those that need attention first.

    ``full_report`` is the sentence that says where every launch is (``publish`` links the workflow run's
    artifacts, which hold the HTML report); by default it names the JSON and HTML reports. ``commits`` is
    (base, head) when known. ``templates``: a team's folder of templates overriding perfgate's.
    """
    shape = compared(report)
    report = shape.report
    where = full_report or "The JSON and HTML reports list every launch."
    layout = _Layout(templates, len({d for d in report["launches"]["device"] if d}) > 1)
    head = headline_block(report, commits, templates)
    notes, notes_left = _notes(shape.notes, layout)
    kernels = shape.kernels
    steps = next_steps_block(report, kernels)
    fixed = [head, *notes] + ([f"> … and {notes_left:,} more notes (the JSON report has them all)"] if notes_left
                              else []) + ([steps] if steps else [])
    # Each note follows a blank line; 600: the left-out line.
    left = _Budget(budget - sum(text_length(s) + 1 for s in fixed) - (len(fixed) - 1) - 600)
    counts = shape.summary
    listed: Counter[str] = Counter()
    fill = _Filler(kernels, layout, left, listed)
    sections: dict[str, Any] = {}
    attention = kernels.with_status(_ATTENTION) if any(counts[s] for s in _ATTENTION) else []
    cut = False
    if attention:
        first, rest = attention[:top], attention[top:]
        sections["attention"], count = fill(first, True)
        cut = count < len(first)
        if rest and not cut:
            opening = (f"and {plural(len(rest), 'more kernel')} that "
                       f"need{'s' if len(rest) == 1 else ''} attention")
            sections["more_table"], count = fill(rest, True, opening)
            sections["more_attention"] = len(rest)
            cut = count < len(rest)
    others = [s for s in _OTHERS if counts[s]]
    if others and not cut:
        seen = {k[0] for k in attention}
        rest = [k for k in kernels.with_status(others) if k[0] not in seen]
        if rest:
            opening = f"{plural(len(rest), 'other kernel')} ({', '.join(others)})"
            sections["others"] = fill(rest, False, opening)[0]
    return render_template("report.md.j2", templates, plural=plural, head=head, notes=notes, notes_left=notes_left,
                           where=where, missing=left_out(report, listed), next_steps=steps,
                           **{"attention": "", "more_table": "", "more_attention": 0, "others": "", **sections})


class _Filler:
    """Tables of kernel rows, as many as fit the budget left, counting the launches they list."""

    def __init__(self, kernels: KernelRows, layout: _Layout, left: _Budget, listed: Counter[str]) -> None:
        self.kernels, self.layout, self.left, self.listed = kernels, layout, left, listed

    def __call__(self, kernels: list[list[int]], why: bool, opening: str | None = None) -> tuple[str, int]:
        """The table (in ``<details>`` under ``opening``) with as many kernel rows as fit, and their count."""
        if not self.left.take(self.layout.table([], why, opening)):
            return "", 0
        rows: list[str] = []
        statuses = self.kernels.report["launches"]["status"]
        for indexes in kernels:
            row = self.layout.row(self.kernels.row(indexes), why)
            if not self.left.take(row):
                break
            rows.append(row)
            self.listed.update([statuses[i] for i in indexes])  # a list: half the time of a generator's items
        if not rows:
            return "", 0
        return self.layout.table(rows, why, opening), len(rows)


__all__ = ["COMMENT_TOP", "MARKDOWN_BUDGET", "headline_block", "no_data_side",
           "render_markdown", "short_test"]
