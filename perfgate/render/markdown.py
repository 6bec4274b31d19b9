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

Every name from the code under test goes through :func:`md_escape`. Plain Python rather than a
template: the row-by-row budget needs to know each row's size as it is added.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
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
    no_data_side,
    plural,
    report_devices,
    summary_parts,
    unmeasured_notes,
)
from perfgate.render.formatting import format_value, md_escape, text_length
from perfgate.render.kernels import KernelRow, change_text, kernel_groups, kernel_row, launches_label, why_lines
from perfgate.report import Report, group_stats, listed_summary
from perfgate.vocabulary import KIND_BENCHMARK, Status

MARKDOWN_BUDGET = 64_000  # leaves a PR comment (65,536) room for perfgate's marker and all-clear lines
NOTES_BUDGET = 6_000
MARKDOWN_LAUNCHES = MARKDOWN_BUDGET // 30  # no table row is shorter than 30 characters: never more launches
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


def _kernel_cell(row: KernelRow) -> str:
    name = row.name
    under = [md_escape(short_test(row.test)) if row.test and row.test != row.kernel else "",
             md_escape(row.region) if row.region else ""]
    if row.kind == KIND_BENCHMARK and "::" in row.kernel:
        # A benchmark is named by its full test id: the test's name leads, its file goes under it, so a long
        # path does not widen the column and push "Why" off the comment.
        path, name = row.kernel.split("::", 1)
        under = [md_escape(path), *under[1:]]
    where = " · ".join(u for u in under if u)
    return md_escape(name) + (f"<br><sub>{where}</sub>" if where else "")


def _moved_cells(row: KernelRow) -> list[str]:
    """Metric, before, after, Δ (limit): one line per metric that moved the kernel's status."""
    status = row.status
    if status == Status.MISSING.value:
        return ["not in the current run", "", "", ""]
    if status == Status.NEW.value:
        return ["new: no baseline", "", "", ""]
    if status == Status.NO_DATA.value:
        gated = [m for m in row.metrics if m.gated]
        side = "baseline" if all(m.before is None for m in gated) else "current run" if all(
            m.after is None for m in gated) else "either run"
        return [f"no values in the {side}", "", "", ""]
    moved = row.moved[:MAX_METRICS_IN_ROW]
    more = len(row.moved) - len(moved)
    median = any(m.launches > 1 for m in moved)
    return ["<br>".join(md_escape(m.label) + (" (median)" if median and m.launches > 1 else "") for m in moved)
            + (f"<br><sub>and {plural(more, 'more gated metric')}</sub>" if more else ""),
            "<br>".join(md_escape(format_value(m.before, m.unit)) for m in moved),
            "<br>".join(md_escape(format_value(m.after, m.unit)) for m in moved),
            "<br>".join(f"**{md_escape(change_text(m))}**" if m.status == Status.REGRESSION.value
                        else md_escape(change_text(m)) for m in moved)
            + ("<br>" if moved else "") + "<sub>limit " + ", ".join(dict.fromkeys(md_escape(m.limit)
                                                                     for m in moved)) + "</sub>"]


def _row(row: KernelRow, gpu_column: bool, why: bool) -> str:
    cells = [STATUS_ICON.get(row.status, ""), _kernel_cell(row)]
    if gpu_column:
        cells.append(md_escape(row.device or ""))
    cells.append(launches_label(row) or "1")
    cells += _moved_cells(row)
    if why:
        cells.append("<br>".join(md_escape(line, 300) for line in why_lines(row, others=1)[:4]))
    return "| " + " | ".join(cells) + " |"


def _head(gpu_column: bool, why: bool) -> list[str]:
    names = ["", "Kernel", *(["GPU"] if gpu_column else []), "Launches", "Metric", "Before", "After", "Δ",
             *(["Why"] if why else [])]
    rules = ["---", "---", *(["---"] if gpu_column else []), "---:", "---", "---:", "---:", "---:",
             *(["---"] if why else [])]
    return ["| " + " | ".join(names) + " |", "|" + "|".join(rules) + "|"]


def headline_block(report: Report, commits: Sequence[str | None] | None = None) -> list[str]:
    """The first lines: verdict and headline, the GPUs and commits, the counts, and what was compared."""
    devices = report_devices(report)
    facts = []
    if devices:
        facts.append(f"**{devices_label(devices)}:** {md_escape(', '.join(devices), 400)}")
    moved = commits_line(commits)
    if moved:
        facts.append(f"**commits:** {md_escape(moved)}")
    summary = summary_parts(report)
    lines = [f"### {VERDICT_ICON.get(report['verdict'], '❌')} perfgate: {md_escape(headline(report), 400)}", ""]
    if facts:
        lines += [" · ".join(facts), ""]
    lines.append(f"Launches: {md_escape(' · '.join(summary))}" if summary else "nothing compared")
    pairs, more = compared_files(report)
    for baseline, current in pairs:
        lines += ["", f"Baseline {md_escape(baseline)} vs current {md_escape(current)}."]
    if more:
        lines += ["", f"And {plural(more, 'more comparison')}."]
    return lines


def _notes(report: Report) -> list[str]:
    notes: list[str] = []
    room = _Budget(NOTES_BUDGET)
    all_notes = [*unmeasured_notes(report), *report["notes"]]
    for count, note in enumerate(all_notes):
        line = f"> {md_escape(note, 400)}"
        if not room.take(line + "\n"):
            notes += ["", f"> … and {len(all_notes) - count:,} more notes (the JSON report has them all)"]
            break
        notes += ["", line]
    return notes


def render_markdown(report: Report, budget: int = MARKDOWN_BUDGET, full_report: str | None = None,
                    commits: Sequence[str | None] | None = None, top: int = COMMENT_TOP) -> str:
    """Markdown for a PR comment or job summary: one row per kernel, those that need attention first.

    ``full_report`` is the sentence that says where every launch is (``publish`` links the workflow run's
    artifacts, which hold the HTML report); by default it names the JSON and HTML reports. ``commits`` is
    (base, head) when known.
    """
    where = full_report or "The JSON and HTML reports list every launch."
    head = headline_block(report, commits)
    notes = _notes(report)
    left = _Budget(budget - sum(text_length(s) + 1 for s in [*head, *notes]) - 600)  # 600: the left-out line
    devices = {d for d in report["launches"]["device"] if d}
    gpu_column = len(devices) > 1
    stats = group_stats(report)
    counts = listed_summary(report)
    listed: Counter[str] = Counter()
    body: list[str] = []
    attention = kernel_groups(report, _ATTENTION) if any(counts[s] for s in _ATTENTION) else []
    cut = False
    if attention:
        table = _head(gpu_column, True)
        first, rest = attention[:top], attention[top:]
        rows, count = _fill(report, first, left, listed, stats, lambda r: _row(r, gpu_column, True), table)
        body += rows
        cut = count < len(first)
        if rest and not cut:
            opening = (f"<details><summary>and {plural(len(rest), 'more kernel')} that "
                       f"need{'s' if len(rest) == 1 else ''} attention</summary>")
            more, count = _fill(report, rest, left, listed, stats, lambda r: _row(r, gpu_column, True), table,
                                opening=opening)
            body += more
            cut = count < len(rest)
            body += ["", f"And {plural(len(rest), 'more kernel')} that need{'s' if len(rest) == 1 else ''} "
                         f"attention{' (above)' if count else ''}. {where}"]
    others = [s for s in _OTHERS if counts[s]]
    if others and not cut:
        seen = {k[0] for k in attention}
        kernels = [k for k in kernel_groups(report, others) if k[0] not in seen]
        if kernels:
            opening = (f"<details><summary>{plural(len(kernels), 'other kernel')} "
                       f"({', '.join(others)})</summary>")
            body += _fill(report, kernels, left, listed, stats, lambda r: _row(r, gpu_column, False),
                          _head(gpu_column, False), opening=opening)[0]
    tail = []
    missing = left_out(report, listed)
    if missing:
        tail = ["", f"> ⚠️ Not listed here, to fit a PR comment: {md_escape(missing)} launches. {where}"]
    return "\n".join([*head, *body, *notes, *tail]) + "\n"


def _fill(report: Report, kernels: list[list[int]], left: _Budget, listed: Counter[str],
          stats: dict[tuple[int, int], dict[str, Any]], write: Any, table: list[str],
          opening: str | None = None) -> tuple[list[str], int]:
    """The table (in ``<details>`` under ``opening``) with as many kernel rows as fit, and their count."""
    frame = ["", opening, ""] if opening else [""]
    closing = ["", "</details>"] if opening else []
    if not left.take("\n".join([*frame, *table, *closing])):
        return [], 0
    rows: list[str] = []
    statuses = report["launches"]["status"]
    for indexes in kernels:
        if indexes[0] >= MARKDOWN_LAUNCHES:
            break
        row = write(kernel_row(report, indexes, stats))
        if not left.take(row):
            break
        rows.append(row)
        listed.update(statuses[i] for i in indexes)
    if not rows:
        return [], 0
    return [*frame, *table, *rows, *closing], len(rows)


__all__ = ["COMMENT_TOP", "MARKDOWN_BUDGET", "MARKDOWN_LAUNCHES", "headline_block", "no_data_side",
           "render_markdown", "short_test"]
