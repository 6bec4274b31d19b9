"""The HTML page's launches, kept to a page a browser opens (:data:`PAGE_BYTES`) at any number of launches.

A page lists every launch while they fit. Past that it lists in full the launches that need attention
(regressed, inconclusive, new, missing, without data), each kernel's first ones before any kernel's next, as
many as fit, and summarizes the others: a row per kernel and gated metric with the count of its launches,
their medians and the change of the medians. Kernels past the room left are counted in one line. Every launch
stays in the JSON report. The summary's rows are the kernel rows every format shares (``KernelRows.part`` of the
report's :class:`perfgate.render.shape.ComparedReport`), laid out here as this table's cells.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, cast

import numpy as np

from perfgate.quantities import format_change, format_values

from perfgate.render.formatting import html_escape
from perfgate.render.html_table import table_rows
from perfgate.render.kernels import KernelRow, worst_status
from perfgate.render.result_arrays import ResultArrays
from perfgate.render.shape import ComparedReport
from perfgate.report import Report
from perfgate.vocabulary import STATUS_RANK, Status

PAGE_BYTES = 5_000_000  # the page's bound, in UTF-8 bytes: a browser opens it
LISTED_MAX = 10_000  # launches whose rows are laid out to be measured: a launch's rows take 300 bytes at least
FIRST_LAID_OUT = 4_096  # of those, laid out first: a page lists ~2,600 launches of 8 gated metrics
SUMMARY_ROOM = 1_000_000  # the most of the table's room set aside for the summary when launches are left out
ATTENTION = (Status.REGRESSION.value, Status.INCONCLUSIVE.value, Status.NEW.value, Status.MISSING.value,
             Status.NO_DATA.value)


@dataclass(frozen=True)
class LaunchTable:
    """The launches on a page: the ``<tbody>`` rows of those listed (a text per launch), the line that says how many
    are summarized (None when every launch is listed) and the summary's section ("" then)."""

    rows: list[str]
    note: str | None
    summary: str


def utf8_size(text: str) -> int:
    return len(text.encode("utf-8"))


def launch_table(shape: ComparedReport, room: int, json_report: str | None) -> LaunchTable:
    """The launches' rows of a report with launches, with their summary, in ``room`` bytes; ``json_report``: the
    JSON report's file name, where the page can name it."""
    report, arrays, groups = cast(Report, shape.report), shape.arrays, shape.groups
    assert arrays is not None, "a report without launches has no table of launches"
    count = len(arrays.launch_status)
    ranks = np.array([STATUS_RANK.get(name, len(STATUS_RANK)) for name in arrays.names])[arrays.launch_status]
    order = _attention_first(arrays.statuses(*ATTENTION)[arrays.launch_status], groups, ranks)
    order = order[:LISTED_MAX]
    budget = room - min(room // 4, SUMMARY_ROOM)  # for the listed launches: the rest is the summary's
    if count <= LISTED_MAX:
        rows, launches, sizes = _launch_rows(*table_rows(report, arrays), count)
        if sizes.sum() <= room:
            return LaunchTable(rows, None, "")
    else:
        rows, launches, sizes, order = _first_rows(report, arrays, order, budget)
    fits = order[np.cumsum(sizes[order]) <= budget]
    listed = np.zeros(count, dtype=bool)
    listed[fits] = True
    note = (f"{len(fits):,} of {count:,} launches are listed here: those that need attention (regressed, "
            "inconclusive, new, missing or without data), each kernel's first launches before any kernel's "
            f"next, as many as keep this page under {PAGE_BYTES // 1_000_000} MB. The other {count - len(fits):,} "
            'are summarized per kernel under "Summarized launches". Every launch is in the JSON report'
            + (f" {json_report}." if json_report else " (perfgate compare … --format json)."))
    left = room - int(sizes[fits].sum()) - utf8_size(html_escape(note))  # the page's autoescape writes it so
    rows = [row for row, kept in zip(rows, listed[launches].tolist()) if kept]
    return LaunchTable(rows, note, summary_section(shape, np.flatnonzero(~listed), ranks, left))


def _first_rows(report: Report, arrays: ResultArrays, order: Any, budget: int) -> tuple[list[str], Any, Any, Any]:
    """The rows of the first launches of ``order``, laid out :data:`FIRST_LAID_OUT` at a time until they pass
    ``budget`` bytes (a page lists a few thousand of the 10,000 it may), as :func:`_launch_rows` gives them (in
    launch order), and the launches of ``order`` laid out. A launch's rows are the same whichever others are laid
    out with them."""
    count = len(arrays.launch_status)
    sizes = np.zeros(count)
    rows: list[str] = []
    launches: list[Any] = []
    done = 0
    while done < len(order) and (not launches or sizes[order[:done]].sum() <= budget):
        chunk = order[done:done + (FIRST_LAID_OUT if not launches else len(order))]
        wanted = np.zeros(count, dtype=bool)
        wanted[chunk] = True
        texts, laid_out, chunk_sizes = _launch_rows(*table_rows(report, arrays, wanted), count)
        rows += texts
        launches.append(laid_out)
        sizes += chunk_sizes
        done += len(chunk)
    every = np.concatenate(launches) if launches else np.zeros(0, dtype=np.intp)
    by_launch = np.argsort(every).tolist()
    return [rows[i] for i in by_launch], every[by_launch], sizes, order[:done]


def _launch_rows(parts: Any, owner: Any, count: int) -> tuple[list[str], Any, Any]:
    """Each launch's rows as one text, from the table's parts and each one's launch (``owner``, ascending); the
    launches, in that order; each of ``count`` launches' size in UTF-8 (0 for one without rows)."""
    sizes = np.zeros(count)
    if not len(owner):
        return [], np.zeros(0, dtype=np.intp), sizes
    starts = np.flatnonzero(np.r_[True, owner[1:] != owner[:-1]])
    texts = parts.tolist()
    bounds = [*starts.tolist(), len(texts)]
    rows = ["".join(texts[start:stop]) for start, stop in zip(bounds[:-1], bounds[1:])]
    launches = owner[starts]
    sizes[launches] = [len(row) if row.isascii() else len(row.encode("utf-8")) for row in rows]
    return rows, launches, sizes


def _attention_first(attention: Any, groups: Any, ranks: Any) -> Any:
    """The launches that need attention in the order they are listed: each kernel's first before any kernel's
    second (so that every such kernel has launches in the table), the worst status first, then report order."""
    wanted = np.flatnonzero(attention)
    kernel = groups[wanted]
    by_kernel = np.argsort(kernel, kind="stable")
    firsts = np.flatnonzero(np.r_[True, kernel[by_kernel][1:] != kernel[by_kernel][:-1]])
    sizes = np.diff(np.r_[firsts, len(wanted)])
    nth = np.empty(len(wanted), dtype=np.int64)
    nth[by_kernel] = np.arange(len(wanted)) - np.repeat(firsts, sizes)
    return wanted[np.lexsort((wanted, ranks[wanted], nth))]


_SUMMARY_HEAD = ('<h2 id="summarized">Summarized launches</h2>\n<p class="meta">The launches not listed above, one '
                 'row per kernel and gated metric: the baseline and current values are the medians over the '
                 'launches, the change is theirs.</p>\n<table id="summarized-table"><thead><tr><th>Status</th>{test}'
                 '<th>Kernel</th><th>Region</th><th>Launches</th><th>Metric</th><th>Baseline</th><th>Current</th>'
                 '<th>Change</th><th>Limit</th></tr></thead>\n<tbody>\n')


def summary_section(shape: ComparedReport, unlisted: Any, ranks: Any, room: int) -> str:
    """``<h2>Summarized launches</h2>`` and the rows of the kernels of launches ``unlisted``, the worst first,
    in ``room`` bytes; then a line that counts the kernels left out. A kernel's rows are the shared kernel row
    (:meth:`perfgate.render.kernels.KernelRows.part`) of its unlisted launches, laid out as this table's."""
    arrays, groups = shape.arrays, shape.groups
    assert arrays is not None
    test_column = any(shape.report["launches"]["test"])
    head = _SUMMARY_HEAD.format(test="<th>Test</th>" if test_column else "")
    tail = "</tbody></table>\n"
    kernel = groups[unlisted]
    by_kernel = np.argsort(kernel, kind="stable")
    members, kernel = unlisted[by_kernel], kernel[by_kernel]
    firsts = np.flatnonzero(np.r_[True, kernel[1:] != kernel[:-1]]) if len(kernel) else np.zeros(0, np.intp)
    ends = np.r_[firsts[1:], len(members)]
    worst = np.minimum.reduceat(ranks[members], firsts) if len(firsts) else firsts
    left = room - utf8_size(head) - utf8_size(tail) - 600  # 600: the closing line's room
    out: list[str] = []
    order = np.lexsort((kernel[firsts], worst)).tolist() if len(firsts) else []
    for k in order:
        mine = members[firsts[k]:ends[k]]
        rows = _kernel_rows(shape.kernels.part(mine.tolist()), arrays, mine, test_column)
        left -= utf8_size(rows)
        if left < 0:
            break
        out.append(rows)
    rest = [members[firsts[k]:ends[k]] for k in order[len(out):]]
    closing = ""
    if rest:
        left_out = np.concatenate(rest)
        closing = (f'<p class="meta" id="summarized-rest">And {len(rest):,} more kernel{"s" * (len(rest) != 1)} '
                   f'with {len(left_out):,} launch{"es" * (len(left_out) != 1)} '
                   f"({_status_counts(arrays, left_out)}), not listed: the page would pass its size.</p>\n")
    return head + "".join(out) + tail + closing


def _status_counts(arrays: ResultArrays, members: Any) -> str:
    """``2,400 regression, 7 unchanged``: launches ``members`` counted by status, the worst first."""
    counts = np.bincount(arrays.launch_status[members], minlength=len(arrays.names)).tolist()
    ordered = sorted((STATUS_RANK.get(name, len(STATUS_RANK)), name, n) for name, n in zip(arrays.names, counts) if n)
    return ", ".join(f"{n:,} {html_escape(name)}" for _, name, n in ordered)


def _kernel_rows(row: KernelRow, arrays: ResultArrays, members: Any, test_column: bool) -> str:
    """A kernel's summary rows, from its row of launches ``members``: one per gated metric (one row without any)."""
    gated = [m for m in row.metrics if m.gated]
    span = f' rowspan="{len(gated)}"' if len(gated) > 1 else ""
    who = ((f'<td class="kernel"{span}>{html_escape(row.test or "")}</td>' if test_column else "")
           + f'<td class="kernel"{span}>{html_escape(row.name)}</td><td{span}>{html_escape(row.region)}'
           f'</td><td class="num"{span}>{len(members):,}<br><span class="meta">'
           f"{_status_counts(arrays, members)}</span></td>")
    if not gated:
        status = worst_status(dict.fromkeys(arrays.names[code] for code in arrays.launch_status[members].tolist()))
        return (f'<tr class="{status.replace(" ", "-")}"><td>{html_escape(status)}</td>{who}'
                '<td colspan="5" class="meta">no gated metric</td></tr>\n')
    out = []
    for number, summary in enumerate(gated):
        before, after = format_values([summary.before, summary.after], summary.unit)
        out.append(f'<tr class="{summary.status.replace(" ", "-")}"><td>{html_escape(summary.status)}</td>'
                   f'{who if number == 0 else ""}<td>{html_escape(summary.label)}</td>'
                   f'<td class="num">{html_escape(before)}</td><td class="num">{html_escape(after)}</td>'
                   f'<td class="num">{html_escape(format_change(summary.change))}</td>'
                   f"<td>{html_escape(summary.limit)}</td></tr>\n")
    return "".join(out)
