"""Markdown for a PR comment or a job summary, bounded to fit one comment.

Layout: the headline and counts, then a table of what needs attention (regressions, no data,
missing) with the "why", then the other launches (new, improvements, unchanged) folded in
``<details>``, then the notes. Rows are added in that order while they fit ``budget`` (GitHub counts
UTF-16 code units; a comment holds 65,536); what did not fit is counted in a last line that points
to the JSON and HTML reports, which list every launch.

Every name from the code under test goes through :func:`md_escape`. Plain Python rather than a
template: the row-by-row budget needs to know each row's size as it is added.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from perfgate.render.common import (
    ATTENTION,
    STATUS_ICON,
    VERDICT_ICON,
    Shown,
    display_name,
    explanation,
    format_change,
    format_value,
    headline,
    left_out,
    md_escape,
    metric_line,
    no_data_side,
    summary_parts,
    text_length,
    unmeasured_notes,
)
from perfgate.report import Report, iter_launches
from perfgate.vocabulary import Status

MARKDOWN_BUDGET = 64_000  # leaves a PR comment (65,536) room for perfgate's marker and all-clear lines
NOTES_BUDGET = 6_000
MARKDOWN_LAUNCHES = MARKDOWN_BUDGET // 30  # no table row is shorter than 30 characters: never more launches
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


def _cells(launch: dict[str, Any], has_tests: bool, has_regions: bool) -> str:
    cells = [md_escape(launch.get("test") or "")] if has_tests else []
    cells.append(md_escape(display_name(launch)))
    if has_regions:
        cells.append(md_escape(launch.get("region") or ""))
    return " | ".join(cells)


def _attention_row(item: Shown, has_tests: bool, has_regions: bool) -> str:
    launch, rows = item.launch, item.rows
    status = str(launch["status"])
    if status == Status.MISSING.value:
        moved = "not in the current run"
    elif status == Status.NO_DATA.value:
        moved = f"no values in the {no_data_side(rows)}"
    else:
        moved = "<br>".join(f"{md_escape(metric_line(r))} (limit {md_escape(r.get('threshold'))})"
                            for r in rows if r.get("gated") and r.get("status") == Status.REGRESSION.value)
    reasons = explanation(rows)
    why = ""
    if launch.get("launch_change"):
        why = f"launch config: {md_escape(launch['launch_change'])}" + ("<br>" if reasons else "")
    why += "<br>".join(md_escape(r) for r in reasons[:3])
    return f"| {STATUS_ICON[status]} {status} | {_cells(launch, has_tests, has_regions)} | {moved} | {why} |"


def _other_rows(item: Shown, has_tests: bool, has_regions: bool) -> list[str]:
    cells = _cells(item.launch, has_tests, has_regions)
    return [f"| {STATUS_ICON[str(r['status'])]} {r['status']} | {cells} | {md_escape(r.get('label') or r.get('metric'))} "
            f"| {md_escape(format_value(r.get('baseline'), r.get('unit')))} "
            f"| {md_escape(format_value(r.get('current'), r.get('unit')))} | {format_change(r.get('change'))} |"
            for r in item.rows if r.get("gated")]


def _table_head(columns: list[str], numeric: int, has_tests: bool, has_regions: bool) -> list[str]:
    names = ["", *(["Test"] if has_tests else []), "Kernel", *(["Region"] if has_regions else []), *columns]
    rules = ["---"] * (len(names) - numeric) + ["---:"] * numeric
    return ["| | " + " | ".join(names[1:]) + " |", "|" + "|".join(rules) + "|"]


def render_markdown(report: Report, budget: int = MARKDOWN_BUDGET, full_report: str | None = None) -> str:
    """Markdown for a PR comment or job summary: regressions first, everything else folded.

    ``full_report`` is the sentence that says where every launch is, when some are left out
    (``publish`` links the workflow run's artifacts); by default it names the JSON and HTML reports.
    """
    launches = report["launches"]
    has_tests = any(launches["test"])
    has_regions = any(launches["region"])
    summary = summary_parts(report)
    head = [f"### {VERDICT_ICON.get(report['verdict'], '❌')} perfgate: {headline(report)}", "",
            " · ".join(md_escape(s) for s in summary) if summary else "nothing compared"]
    for c in report["comparisons"]:
        if c["test"]:
            continue
        on = f" on {md_escape(', '.join(c['current_devices']))}" if c["current_devices"] else ""
        head += ["", f"Baseline {md_escape(c['baseline'])} vs current {md_escape(c['current'])}{on}."]
    notes: list[str] = []
    room = _Budget(NOTES_BUDGET)
    all_notes = [*unmeasured_notes(report), *report["notes"]]
    for count, note in enumerate(all_notes):
        line = f"> {md_escape(note, 400)}"
        if not room.take(line + "\n"):
            notes += ["", f"> … and {len(all_notes) - count:,} more notes (the JSON report has them all)"]
            break
        notes += ["", line]
    left = _Budget(budget - sum(text_length(s) + 1 for s in [*head, *notes]) - 600)  # 600: the left-out line

    listed: Counter[str] = Counter()
    body: list[str] = []
    cut = False  # once a launch that needs attention did not fit, nothing of lesser rank is listed
    attention = [*iter_launches(report, ATTENTION)] if any(report["summary"][s] for s in ATTENTION) else []
    if attention:
        table = _table_head(["What moved", "Why"], 0, has_tests, has_regions)
        rows = []
        if left.take("\n" + "\n".join(table)):
            for index in attention:
                if index >= MARKDOWN_LAUNCHES:
                    break
                item = Shown(report, index)
                row = _attention_row(item, has_tests, has_regions)
                if not left.take(row):
                    break
                rows.append(row)
                listed[str(item.launch["status"])] += 1
        if rows:
            body += ["", *table, *rows]
        cut = len(rows) < len(attention)
    others = [s for s in _OTHERS if report["summary"][s]]
    if others and not cut:
        total = sum(report["summary"][s] for s in others)
        opening = f"<details><summary>{total} other{'s' if total != 1 else ''} ({', '.join(others)})</summary>"
        table = _table_head(["Metric", "Baseline", "Current", "Change"], 3, has_tests, has_regions)
        if left.take("\n".join(["", opening, "", *table, "", "</details>"])):
            rows = []
            for index in iter_launches(report, others):
                if index >= MARKDOWN_LAUNCHES:
                    break
                item = Shown(report, index)
                lines = _other_rows(item, has_tests, has_regions)
                if not left.take("\n".join(lines)):
                    break
                rows += lines
                listed[str(item.launch["status"])] += 1
            body += ["", opening, "", *(table if rows else []), *rows, "", "</details>"]
    tail = []
    more = left_out(report, listed)
    if more:
        where = full_report or "The JSON and HTML reports list every launch."
        tail = ["", f"> ⚠️ Not listed here, to fit a PR comment: {md_escape(more)}. {where}"]
    return "\n".join([*head, *body, *notes, *tail]) + "\n"
