"""The HTML report's table of launches (one row per gated metric of each launch, then its "why" row), put
together from the report's columns in numpy: its 80,000 rows at 10,000 launches are parts that repeat (a
launch's cells, a metric's label, each distinct number's text), made once each and joined once. The rows of
some launches can be asked for (``listed``), each part with the launch it belongs to, so that the page can
keep to its size (``perfgate.render.html_bound``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Callable, NamedTuple, TypeVar

import numpy as np

from perfgate.columns import factorize, objects
from perfgate.render.common import NOT_AN_EXPLANATION
from perfgate.render.formatting import _formatter, format_change, html_escape, limit_text, number_style, whole_count
from perfgate.render.result_arrays import ResultArrays
from perfgate.report import Report
from perfgate.units import SI_PREFIXES
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
        self.writers = [_Writer.of(u) for u in self.units]
        self.explains = [not NOT_AN_EXPLANATION.match(str(m or "")) for m in metrics["metric"]]


# ---------------------------------------------------------------- numbers, each distinct one formatted once

def _g_keys(values: np.ndarray, digits: np.ndarray | int) -> tuple[np.ndarray, np.ndarray]:
    """Keys for ``f"{value:.{digits}g}"``: its sign, decimal exponent and the ``digits`` digits it rounds to, and
    where that rounding is certain (not within 1e-6 of a tie, the exponent as ``log10`` says); so values with one
    certain key have one text. Zero (either sign) is certain."""
    magnitude = np.abs(values)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        exponent = np.floor(np.log10(magnitude))
        scaled = magnitude * 10.0 ** (digits - 1 - exponent)  # within a few ulps: far below the 1e-6 asked
        rounded = np.rint(scaled)
        certain = ((np.abs(scaled - np.floor(scaled) - 0.5) > 1e-6) & (rounded >= 10.0 ** (digits - 1))
                   & (rounded < 10.0 ** digits))
        # An exponent of a finite float is within ±400: (exponent + 400) * 1e5 + rounded stays below 1e8.
        keys = np.where(certain, (exponent + 400) * 1e5 + rounded, 0.0) + np.signbit(values) * 1e8
    return keys.astype(np.int64), certain | (magnitude == 0)


_SI_SCALES = np.array([scale for scale, _ in SI_PREFIXES] + [1.0])  # largest first; 1: no prefix


def _percent_keys(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Keys for ``f"{value:.1f}%"``: the tenths it rounds to (certain away from a tie: ``value * 10`` is within
    2**-13 of its own below 2**40) and its sign (``-0.0%``)."""
    with np.errstate(invalid="ignore", over="ignore"):
        tenths = values * 10
        certain = (np.abs(tenths) < 2.0 ** 40) & (np.abs(tenths - np.floor(tenths) - 0.5) > 1e-3)
        keys = 2 * np.where(certain, np.rint(tenths), 0).astype(np.int64) + np.signbit(values)
    return keys, certain


def _si_keys(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Keys for ``formatting._si``'s text: the prefix the value reaches, then the 3 digits it rounds to (4
    without a prefix)."""
    magnitude = np.abs(values)
    prefix = sum((magnitude < scale).astype(np.int64) for scale in _SI_SCALES[:-1].tolist())
    keys, certain = _g_keys(values / _SI_SCALES[prefix], np.where(prefix < len(_SI_SCALES) - 1, 3, 4))
    return prefix * 10 ** 9 + keys, certain


class _Writer(NamedTuple):
    """How a metric's values are written: ``text`` of a value, ``keys`` (values with one key have one text: those
    that round to the same digits) and ``whole`` (a whole number's text below 1e9: a count's) where its unit has
    them. A unit from the report is untrusted: its numbers are escaped, unless escaping leaves the unit as it is."""

    text: Callable[[float], str]
    keys: Callable[[np.ndarray], tuple[np.ndarray, np.ndarray]] | None = None
    whole: Callable[[int], str] | None = None

    @staticmethod
    def of(unit: str) -> _Writer:
        style = number_style(unit)
        text, whole = _formatter(unit), whole_count(unit) if style == "count" else None
        if _escape(unit) != unit:
            text, whole = _escaped(text), _escaped(whole) if whole is not None else None
        return _Writer(text, _percent_keys if style == "percent" else _si_keys if style in ("si", "count") else None,
                       whole)


_T = TypeVar("_T")


def _distinct(keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each key's index among the distinct ``keys``, and a row of each distinct key: by a table over the keys'
    range where it is small (tenths of a percent), else by sorting them. Not ``columns.factorize``: its codes
    follow first appearance, which costs a second sort here for nothing (twice the time on wide keys)."""
    low, high = int(keys.min()), int(keys.max())
    if high - low <= 2 * len(keys) + 1024:
        shifted = keys - low
        seen = np.zeros(high - low + 1, dtype=bool)
        seen[shifted] = True
        inverse: np.ndarray = (np.cumsum(seen) - 1)[shifted]
    else:
        inverse = np.unique(keys, return_inverse=True)[1]
    one = np.empty(int(inverse.max()) + 1, dtype=np.intp)
    one[inverse] = np.arange(len(keys))
    return inverse, one


def _escaped(text_of: Callable[[_T], str]) -> Callable[[_T], str]:
    return lambda value: _escape(text_of(value))


def _texts(values: np.ndarray, rows: np.ndarray, writer: _Writer, column: Sequence[Any], odd: Callable[[Any], str],
           suffix: str = "") -> Any:
    """``writer.text(v) + suffix`` for each of ``values[rows]``, each text made once: a whole number's, one
    value's of each key, else each distinct value's; a NaN (None in the report) is ``odd`` of the report's own
    value. The suffix (the markup that follows) spares the table a part in each row."""
    picked = values[rows]
    out = np.empty(len(rows), dtype=object)
    # Beyond 2**53 a float does not hold every integer: such a value (an int in a report read back) is
    # formatted from the report's own value.
    with np.errstate(invalid="ignore"):
        number = np.abs(picked) < 2.0 ** 53
        whole = (np.floor(picked) == picked) & (np.abs(picked) < 1e9)
    left = number
    if writer.whole is not None and whole.any():
        integers = picked[whole].astype(np.int64)
        inverse, one = _distinct(integers)
        out[whole] = objects([text + suffix for text in map(writer.whole, integers[one].tolist())])[inverse]
        left = number & ~whole
    keys, certain = writer.keys(picked) if writer.keys is not None else (None, np.zeros(len(rows), dtype=bool))
    # by bits where the key is the value, so -0.0 and 0.0 (shown "-0" and "0") stay apart
    for kept, key in ((left & certain, keys), (left & ~certain, picked.view(np.int64))):
        if key is not None and kept.any():
            inverse, one = _distinct(key[kept])
            out[kept] = objects([writer.text(v) + suffix for v in picked[kept][one].tolist()])[inverse]
    for at in np.flatnonzero(~number).tolist():
        out[at] = odd(column[rows[at]]) + suffix
    return out


def _number_texts(values: np.ndarray, column: Sequence[Any], rows: np.ndarray, codes: np.ndarray,
                  writers: Sequence[_Writer], odd_of: Sequence[Callable[[Any], str]], suffix: str = "") -> Any:
    """The value of each of ``rows`` in its metric's unit (``writers[code]``), each distinct text made once."""
    out = np.empty(len(rows), dtype=object)
    for code in np.unique(codes).tolist():
        mine = np.flatnonzero(codes == code)
        out[mine] = _texts(values, rows[mine], writers[code], column, odd_of[code], suffix)
    return out


def _tenths(k: int) -> str:
    return f"{'+' if k > 0 else '-'}{abs(k) // 10}.{abs(k) % 10}%"


def _change_texts(changes: np.ndarray, column: Sequence[Any], rows: np.ndarray, suffix: str = "") -> Any:
    """:func:`format_change` of each of ``changes[rows]``. Changes hardly repeat, their texts do (``+5.2%``):
    a change is rounded to tenths of a percent in numpy where that rounding is certain, and each distinct
    text made once; the rest (no change, near a tie, huge, missing) go through :func:`format_change`."""
    picked = changes[rows]
    with np.errstate(invalid="ignore", over="ignore"):
        tenths = picked * 100 * 10  # what f"{change * 100:+.1f}" rounds, within 2**-13 below 2**40
        rounded = np.rint(tenths)
        certain = ((np.abs(picked) >= 0.0005) & (np.abs(tenths) < 2.0 ** 40)
                   & (np.abs(tenths - np.floor(tenths) - 0.5) > 1e-3) & (rounded != 0))
    out = np.empty(len(rows), dtype=object)
    if certain.any():
        kept = rounded[certain].astype(np.int64)
        inverse, one = _distinct(kept)
        out[certain] = objects([_tenths(k) + suffix for k in kept[one].tolist()])[inverse]
    rest = np.flatnonzero(~certain)
    if len(rest):
        out[rest] = _texts(changes, rows[rest], _Writer(format_change), column, format_change, suffix)
    return out


# ---------------------------------------------------------------- the table of every launch

def _shown(columns: ResultArrays) -> np.ndarray:
    """The result rows the table lists: the gated ones, and an ungated one only for a launch that is new, missing
    or without data as a whole (one absent on a side of a compared launch says nothing: its section lists every
    collected metric)."""
    ungated = columns.statuses(*_SHOWN_UNGATED)[columns.status] & (columns.status
                                                                   == columns.launch_status[columns.launch])
    return np.flatnonzero(columns.gated | ungated)


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

    def __init__(self, report: Report, facts: _Metrics, columns: ResultArrays,
                 missing: list[Callable[[Any], str]], listed: np.ndarray) -> None:
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
        parts[at + 1] = _number_texts(columns.baseline, results["baseline"], named, codes, facts.writers,
                                      missing, " → ")
        parts[at + 2] = _number_texts(columns.current, results["current"], named, codes, facts.writers,
                                      missing, " (")
        parts[at + 3] = _change_texts(change, results["change"], named, ")")


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


def table_rows(report: Report, columns: ResultArrays, listed: np.ndarray | None = None) -> tuple[Any, np.ndarray]:
    """The ``<tbody>`` rows of the launches ``listed`` (a mask over launches; every launch without it) as the parts
    to join, and the launch each part belongs to: each launch's gated metrics (and the rows that say new,
    missing or no data), then its "why" row. A row is nine parts, most of them shared (the status cells, the
    launch's cells, the metric's label and limit, each distinct number's text), so the table is put together
    by numpy indexing, not 80,000 string formats."""
    if listed is None:
        listed = np.ones(len(columns.launch_status), dtype=bool)
    facts = _Metrics(report)
    results = columns.values
    # The table writes None as "—" (and formats a NaN); the "why" (format_value) writes both as "—".
    table_missing = [_table_missing(writer.text) for writer in facts.writers]
    why_missing = [_why_missing(writer.text) for writer in facts.writers]
    shown = _shown(columns)
    shown = shown[listed[columns.launch[shown]]]
    codes, launch = columns.metric[shown], columns.launch[shown]
    heads = np.empty(len(columns.names), dtype=object)
    for code in np.unique(columns.status[shown]).tolist():
        name = columns.names[code]
        heads[code] = f'<tr class="{_CLASS[name]}">\n<td>{name}</td>'
    middles = objects([f'\n<td>{label}</td><td class="num">' for label in facts.labels])
    tails = objects([f'</td><td>{limit}</td>\n</tr>\n' for limit in facts.limits])
    opening, ordinal, region = _who(report, np.unique(launch))
    row = [heads[columns.status[shown]], opening[launch], ordinal[launch], region[launch], middles[codes],
           _number_texts(columns.baseline, results["baseline"], shown, codes, facts.writers, table_missing,
                         '</td><td class="num">'),
           _number_texts(columns.current, results["current"], shown, codes, facts.writers, table_missing,
                         '</td>\n<td class="num">'),
           _change_texts(columns.change, results["change"], shown), tails[codes]]
    why = _WhyRows(report, facts, columns, why_missing, listed)
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
