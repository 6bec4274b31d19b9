"""The HTML report's table of launches (one row per gated metric of each launch, then its "why" row), put
together from the report's columns in numpy: its 80,000 rows at 10,000 launches are parts that repeat (a
launch's cells, a metric's label, each distinct number's text: ``perfgate.render.html_numbers``), made once
each and joined once. The rows of
some launches can be asked for (``listed``), each part with the launch it belongs to, so that the page can
keep to its size (``perfgate.render.html_bound``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Callable

import numpy as np

from perfgate.columns import factorize, objects
from perfgate.render.common import NOT_AN_EXPLANATION
from perfgate.quantities import OWN, in_points, limit_text
from perfgate.render.formatting import html_escape
from perfgate.render.html_numbers import Writer, change_texts, row_scales, value_texts
from perfgate.render.result_arrays import ResultArrays
from perfgate.report import Report
from perfgate.units import TIME_UNITS
from perfgate.vocabulary import Status

_SHOWN_UNGATED = (Status.NEW.value, Status.MISSING.value, Status.NO_DATA.value)
_EXPLAINED = (Status.REGRESSION.value, Status.IMPROVEMENT.value)
_CLASS = {s.value: s.value.replace(" ", "-") for s in Status}
_REASONS = 4  # explanatory metrics named in a launch's "why" row

_escape = html_escape


class _Metrics:
    """Per-metric facts of a report, worked out once for a table of thousands of rows."""

    def __init__(self, report: Report) -> None:
        metrics = report["metrics"]
        self.names = [str(label or metric) for metric, label in zip(metrics["metric"], metrics["label"])]
        self.labels = [_escape(name) for name in self.names]
        self.units = [u or "" for u in metrics["unit"]]
        self.limits = [_escape(limit_text(t, u)) for t, u in zip(metrics["threshold"], self.units)]
        # A timeline region's why is one line in the kernel table (``kernels.why_lines``), not its metrics here.
        self.explains = [not NOT_AN_EXPLANATION.match(str(m or "")) and not str(m or "").startswith("timeline.")
                         for m in metrics["metric"]]
        # Timeline durations span ns to s within one region: each value in its own unit, never 0.009184 ms.
        self.own_scale = [str(m or "").startswith("timeline.") and u in TIME_UNITS
                          for m, u in zip(metrics["metric"], self.units)]
        self.shares = [in_points(str(m or ""), str(t or "")) for m, t in zip(metrics["metric"], metrics["threshold"])]
        self._writers: dict[tuple[int, int], Writer] = {}

    def writer(self, code: int, scale: int) -> Writer:
        """How metric ``code``'s values are written at ``scale`` (``quantities.value_scale``)."""
        if (code, scale) not in self._writers:
            self._writers[code, scale] = Writer.of(self.units[code], scale)
        return self._writers[code, scale]

    def row_scales(self, codes: np.ndarray, first: np.ndarray, second: np.ndarray) -> np.ndarray:
        """The scale each row's two values share (its metric: ``codes``; NaN: no value), ``value_scale``'s."""
        scales = np.zeros(len(codes), dtype=np.int64)
        for code in np.unique(codes).tolist():
            mine = np.flatnonzero(codes == code)
            scales[mine] = OWN if self.own_scale[code] else row_scales(self.units[code], first[mine], second[mine])
        return scales


def _number_texts(values: np.ndarray, column: Sequence[Any], rows: np.ndarray, codes: np.ndarray,
                  scales: np.ndarray, facts: _Metrics, missing: Callable[[Callable[[float], str]], Callable[[Any], str]],
                  suffix: str = "") -> Any:
    """The value of each of ``rows`` in its metric's unit at its row's scale (``facts.writer``), each distinct text
    made once; ``missing`` makes the text of a report's value that is no float (None) from the writer's."""
    out = np.empty(len(rows), dtype=object)
    pairs = codes.astype(np.int64) * (OWN + 1) + scales
    for pair in np.unique(pairs).tolist():
        code, scale = divmod(pair, OWN + 1)
        mine = np.flatnonzero(pairs == pair)
        writer = facts.writer(code, scale)
        out[mine] = value_texts(values, rows[mine], writer, column, missing(writer.text), suffix)
    return out


# ---------------------------------------------------------------- the table of every launch

def _shown(columns: ResultArrays, listed: np.ndarray | None) -> np.ndarray:
    """The result rows the table lists of the launches ``listed`` (a mask; every launch where None): the gated ones,
    and an ungated one only for a launch that is new, missing or without data as a whole (one absent on a side of
    a compared launch says nothing: its section lists every collected metric). Only the listed launches' rows are
    looked at: a page lists a few thousand launches of 500,000."""
    rows = np.arange(len(columns.status)) if listed is None else columns.rows_of(np.flatnonzero(listed).tolist())
    status = columns.status[rows]
    ungated = columns.statuses(*_SHOWN_UNGATED)[status] & (status == columns.launch_status[columns.launch[rows]])
    shown: np.ndarray = rows[columns.gated[rows] | ungated]
    return shown


def _factorized(column: Sequence[Any]) -> tuple[list[Any], np.ndarray]:
    """(the distinct values in order of appearance, each value's index among them)."""
    codes, distinct = factorize(objects(column))
    return distinct.tolist(), codes


def _who(report: Report, wanted: np.ndarray) -> tuple[Any, Any, Any]:
    """The cells of launches ``wanted`` (indexes; the others' are left empty) as three parts: the test and the
    kernel up to its ordinal, the ordinal (`` #3``), the region; each made once for the distinct values (10,000
    launches are a few kernels)."""
    launches = report["launches"]
    has_tests = any(launches["test"])
    at = wanted.tolist()

    def picked(name: str) -> list[Any]:
        column: Sequence[Any] = launches[name]  # type: ignore[literal-required]
        return [column[i] for i in at]

    tests, test_of = _factorized(picked("test"))
    # Each column on its own: 50,000 (demangled, kernel) tuples alive at once cost garbage collections, each
    # one going through the report's lists.
    demangled_names, demangled_of = _factorized(picked("demangled"))
    kernels, kernel_of = _factorized(picked("kernel"))
    pairs, pair_of = np.unique((test_of * len(demangled_names) + demangled_of) * len(kernels) + kernel_of,
                               return_inverse=True)
    opening = []
    for pair in pairs.tolist():
        rest, kernel = divmod(pair, len(kernels))
        test, demangled = divmod(rest, len(demangled_names))
        test_cell = f'<td class="kernel">{_escape(tests[test] or "")}</td>' if has_tests else ""
        opening.append(f'{test_cell}<td class="kernel" title="{_escape(demangled_names[demangled])}">'
                       f'{_escape(kernels[kernel])}')
    kinds, kind_of = _factorized(picked("kind"))
    ordinal = np.array(picked("ordinal"), dtype=np.int64)
    numbered = (kind_of == (kinds.index("kernel") if "kernel" in kinds else -1)) & (ordinal > 0)
    ordinals, ordinal_of = np.unique(np.where(numbered, ordinal, 0), return_inverse=True)
    regions, region_of = _factorized(picked("region"))
    cells = (objects(opening)[pair_of], objects([f" #{o}" if o else "" for o in ordinals.tolist()])[ordinal_of],
             objects([f'</td><td>{_escape(region or "")}</td>' for region in regions])[region_of])
    out = tuple(np.empty(len(launches["status"]), dtype=object) for _ in cells)
    for full, part in zip(out, cells):
        full[wanted] = part
    return out[0], out[1], out[2]


class _WhyRows:
    """The "why" rows: the launch configuration change, then (for a regressed or improved launch) the explanatory
    metrics that moved most, as :func:`explanation` words them. ``launches`` are the launches with one
    (ascending), ``sizes`` each row's number of parts, ``parts`` the rows' parts one after another."""

    def __init__(self, report: Report, facts: _Metrics, columns: ResultArrays, listed: np.ndarray) -> None:
        launches, results = report["launches"], columns.values
        launch, change = columns.launch, columns.change
        with np.errstate(invalid="ignore"):
            moved = columns.of_status("info") & (np.abs(change) >= 0.01) & np.array(facts.explains, dtype=bool)[
                columns.metric]
        improved = columns.of_status("improvement") & columns.gated
        changes, change_of = _factorized(launches["launch_change"])
        has_config = np.array([bool(text) for text in changes], dtype=bool)[change_of]
        stirred = ((np.bincount(launch[moved | improved], minlength=len(change_of)) > 0)
                   & columns.statuses(*_EXPLAINED)[columns.launch_status])
        wanted = (has_config | stirred) & listed
        # Each launch's ungated moved metrics, the largest change first (ties in report order), at most _REASONS.
        named = np.flatnonzero(moved & ~columns.gated & wanted[launch])
        rank = _ranks(launch[named], -np.abs(change[named]))
        named, rank = named[rank < _REASONS], rank[rank < _REASONS]
        reasons = np.bincount(launch[named], minlength=len(change_of))
        self.launches = np.flatnonzero((has_config & listed) | (reasons > 0))
        # A row: its start (with the configuration change and "why: ", as the row has them), then per reason
        # the metric's label (after "; " but the first), the baseline, the current value and the change; its end.
        self.sizes = 2 + 4 * reasons[self.launches]
        starts = np.cumsum(self.sizes) - self.sizes
        self.parts = parts = np.empty(int(self.sizes.sum()), dtype=object)
        width = 8 if any(launches["test"]) else 7
        opening = [f'<tr class="why"><td></td><td colspan="{width}" class="why">'
                   + (f"launch config changed: {_escape(text)}<br>" if text else "") + why
                   for text in changes for why in ("", "why: ")]
        parts[starts] = objects(opening)[2 * change_of[self.launches] + (reasons[self.launches] > 0)]
        parts[starts + self.sizes - 1] = "</td></tr>\n"
        at = starts[np.searchsorted(self.launches, launch[named])] + 1 + 4 * rank
        codes = columns.metric[named]
        labels = objects([lead + label + " " for label in facts.labels for lead in ("", "; ")])
        parts[at] = labels[2 * codes + (rank > 0)]
        scales = facts.row_scales(codes, columns.baseline[named], columns.current[named])
        parts[at + 1] = _number_texts(columns.baseline, results["baseline"], named, codes, scales, facts,
                                      _why_missing, " → ")
        parts[at + 2] = _number_texts(columns.current, results["current"], named, codes, scales, facts,
                                      _why_missing, " (")
        parts[at + 3] = _share_points(change_texts(change, results["change"], named, ")"), columns, named, facts, ")")


def _ranks(groups: np.ndarray, values: np.ndarray) -> np.ndarray:
    """Each of ``values``' rank in its group, smallest first, ties in row order; ``groups`` ascending (a group's
    rows together), ``values`` below infinity. Sorted in a table of a row per group where that table is small (a
    launch's few metrics), else by ``np.lexsort``, which sorts every value at once (four times slower)."""
    if not len(groups):
        return np.zeros(0, dtype=np.intp)
    first = np.flatnonzero(np.r_[True, groups[1:] != groups[:-1]])
    sizes = np.diff(np.r_[first, len(groups)])
    group = np.repeat(np.arange(len(first)), sizes)
    position = np.arange(len(groups)) - first[group]
    ranks = np.empty(len(groups), dtype=np.intp)
    if len(first) * int(sizes.max()) <= 4 * len(groups) + 1024:
        table = np.full((len(first), int(sizes.max())), np.inf)
        table[group, position] = values
        order = np.argsort(table, axis=1, kind="stable")
        in_table = np.empty_like(order)
        np.put_along_axis(in_table, order, np.arange(order.shape[1])[np.newaxis, :], axis=1)
        ranks[:] = in_table[group, position]
    else:
        order = np.lexsort((values, groups))
        ranks[order] = np.arange(len(groups)) - first[group[order]]
    return ranks


def _table_missing(text_of: Callable[[float], str]) -> Callable[[Any], str]:
    return lambda value: "—" if value is None else text_of(value)


def _why_missing(text_of: Callable[[float], str]) -> Callable[[Any], str]:
    return lambda value: "—" if value is None or value != value else text_of(value)


def _share_points(texts: Any, columns: ResultArrays, shown: np.ndarray, facts: _Metrics, suffix: str = "") -> Any:
    """A share's change in percentage points (``in_points``: 0.8% → 64.5% is +63.7 pp), the rest as ``texts`` say."""
    if not any(facts.shares):
        return texts
    rows = np.flatnonzero(np.array(facts.shares, dtype=bool)[columns.metric[shown]])
    for at in rows.tolist():
        before, after = columns.baseline[shown[at]], columns.current[shown[at]]
        if np.isfinite(before) and np.isfinite(after):
            texts[at] = f"{after - before:+.1f} pp{suffix}"
    return texts


def table_rows(report: Report, columns: ResultArrays, listed: np.ndarray | None = None) -> tuple[Any, np.ndarray]:
    """The ``<tbody>`` rows of the launches ``listed`` (a mask over launches; every launch without it) as the parts
    to join, and the launch each part belongs to: each launch's gated metrics (and the rows that say new,
    missing or no data), then its "why" row. A row is nine parts, most of them shared (the status cells, the
    launch's cells, the metric's label and limit, each distinct number's text), so the table is put together
    by numpy indexing, not 80,000 string formats."""
    shown = _shown(columns, listed)
    if listed is None:
        listed = np.ones(len(columns.launch_status), dtype=bool)
    facts = _Metrics(report)
    results = columns.values
    codes, launch = columns.metric[shown], columns.launch[shown]
    heads = np.empty(len(columns.names), dtype=object)
    for code in np.unique(columns.status[shown]).tolist():
        name = columns.names[code]
        heads[code] = f'<tr class="{_CLASS[name]}">\n<td>{name}</td>'
    middles = objects([f'\n<td>{label}</td><td class="num">' for label in facts.labels])
    tails = objects([f'</td><td>{limit}</td>\n</tr>\n' for limit in facts.limits])
    opening, ordinal, region = _who(report, np.unique(launch))
    # The table writes None as "—" (and formats a NaN); the "why" (format_values) writes both as "—".
    scales = facts.row_scales(codes, columns.baseline[shown], columns.current[shown])
    row = [heads[columns.status[shown]], opening[launch], ordinal[launch], region[launch], middles[codes],
           _number_texts(columns.baseline, results["baseline"], shown, codes, scales, facts, _table_missing,
                         '</td><td class="num">'),
           _number_texts(columns.current, results["current"], shown, codes, scales, facts, _table_missing,
                         '</td>\n<td class="num">'),
           _share_points(change_texts(columns.change, results["change"], shown), columns, shown, facts), tails[codes]]
    why = _WhyRows(report, facts, columns, listed)
    # A row's parts come after the rows and "why" rows before it; a launch's "why" row follows its last row.
    why_ends = np.r_[0, np.cumsum(why.sizes)].astype(np.intp)
    starts = len(row) * np.arange(len(shown)) + why_ends[np.searchsorted(why.launches, launch, side="left")]
    parts = np.empty(len(row) * len(shown) + len(why.parts), dtype=object)
    owner = np.empty(len(parts), dtype=np.intp)
    for offset, column in enumerate(row):
        parts[starts + offset] = column
        owner[starts + offset] = launch
    why_starts = len(row) * np.searchsorted(launch, why.launches, side="right") + why_ends[:-1]
    at = np.repeat(why_starts - why_ends[:-1], why.sizes) + np.arange(len(why.parts))
    parts[at] = why.parts
    owner[at] = np.repeat(why.launches, why.sizes)
    return parts, owner
