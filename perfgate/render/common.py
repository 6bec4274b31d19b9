"""What every renderer shares: number formatting, escaping, the headline, and the bounded selection.

Stdlib only. Renderers read a version 2 report (``perfgate.report``) through its row views, and
only for the launches they show: a human format is bounded by what needs attention, so its cost
does not grow with the launches it leaves out.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from functools import lru_cache
from typing import Any, Callable, Iterable

from perfgate.report import Report, launch_row, result_rows
from perfgate.units import (
    BYTE,
    BYTE_SYMBOL,
    SILENT_UNITS,
    TIME_UNITS,
    scale_si,
    scale_time,
)
from perfgate.vocabulary import STATUS_ORDER, Status

STATUS_ICON = {"regression": "❌", "inconclusive": "❔", "improvement": "🚀", "unchanged": "✅", "new": "🆕",
               "missing": "➖", "no data": "⚠️", "info": "ℹ️"}
MAX_NAME = 160  # longer (templated) kernel names are cut in tables; the JSON keeps them whole
ATTENTION = (Status.REGRESSION.value, Status.NO_DATA.value, Status.MISSING.value)
_STATUS_WORDS = {s.value: s.value for s in STATUS_ORDER}


# ---------------------------------------------------------------- number formatting

def _si(value: float, unit: str) -> str:
    scaled, prefix = scale_si(value)
    if prefix:
        return f"{scaled:.3g} {prefix}{unit}".rstrip()
    return f"{value:.4g} {unit}".rstrip()


def _percent(value: float) -> str:
    return f"{value:.1f}%"


@lru_cache(maxsize=256)
def _formatter(unit: str) -> Callable[[float], str]:
    """One function per unit, so a table of thousands of values does not re-decide the unit each time.
    The unit knowledge (scales, symbols) is ``perfgate.units``'."""
    if unit in TIME_UNITS:
        def time(value: float) -> str:
            scaled, symbol = scale_time(value, unit)
            return f"{scaled:.4g} {symbol}"

        return time
    if unit == BYTE:
        return lambda value: _si(value, BYTE_SYMBOL)
    if unit == "%":
        return _percent
    bare = unit in SILENT_UNITS
    si_unit = "" if bare else unit

    def count(value: float) -> str:
        if float(value).is_integer() and abs(value) < 1e9:
            return f"{int(value)}" if bare else f"{int(value):,} {unit}".rstrip()
        return _si(value, si_unit)

    return count


def format_value(value: float | None, unit: str | None) -> str:
    """Human-readable value in the metric's unit: 151328 ns -> '151.3 µs'."""
    if value is None or value != value:  # None or NaN
        return "—"
    return _formatter(unit or "")(value)


def format_change(change: float | None) -> str:
    if change is None or (isinstance(change, float) and math.isnan(change)):
        return "—"
    if abs(change) < 0.0005:
        return "±0.0%" if change else "0%"
    return f"{change * 100:+.1f}%"


# ---------------------------------------------------------------- escaping

_MD_REPLACEMENTS = {"&": "&amp;", "<": "&lt;", ">": "&gt;", "|": "&#124;", "`": "&#96;", "@": "@&#8203;",
                    **{ch: "\\" + ch for ch in "\\*_[]~"}}
_MD_TABLE = str.maketrans(_MD_REPLACEMENTS)


def md_escape(text: Any, limit: int = MAX_NAME) -> str:
    """Escape untrusted text for a GitHub Markdown table cell or summary line.

    HTML-significant characters become entities (no raw tags), a pipe cannot end the cell,
    backticks cannot open code spans, emphasis and link brackets are backslash-escaped, and '@'
    is followed by a zero-width space so a name like '@octocat' never notifies anyone.
    """
    raw = " ".join(str(text).split())  # newlines would end a table row
    if len(raw) > limit:
        raw = raw[: limit - 1] + "…"
    return raw.translate(_MD_TABLE)


def text_length(text: str) -> int:
    """Length in UTF-16 code units, as GitHub counts a comment's characters."""
    return len(text.encode("utf-16-le")) // 2


# ---------------------------------------------------------------- views of launches and their rows

def display_name(row: dict[str, Any]) -> str:
    name = str(row.get("kernel", ""))
    if row.get("kind") == "kernel" and int(row.get("ordinal") or 0) > 0:
        name += f" #{int(row['ordinal'])}"
    return name


def metric_line(row: dict[str, Any]) -> str:
    unit = row.get("unit") or ""
    return (f"{row.get('label') or row.get('metric')} {format_value(row.get('baseline'), unit)} → "
            f"{format_value(row.get('current'), unit)} ({format_change(row.get('change'))})")


# Launch facts already appear in the "launch config changed" note; a stddev explains nothing.
_NOT_AN_EXPLANATION = re.compile(r"^(launch__|time\.stddev$)")


def no_data_side(rows: list[dict[str, Any]]) -> str:
    """Which side lacks values for a "no data" launch: 'baseline', 'current run' or 'either run'."""
    gated = [r for r in rows if r.get("gated")] or rows
    base_missing = all(r.get("baseline") is None for r in gated)
    cur_missing = all(r.get("current") is None for r in gated)
    if base_missing and not cur_missing:
        return "baseline"
    if cur_missing and not base_missing:
        return "current run"
    return "either run"


def explanation(rows: list[dict[str, Any]], min_change: float = 0.01) -> list[str]:
    """What else moved in a launch: gated metrics that improved, then the explanatory metrics."""
    better = [metric_line(r) for r in rows if r.get("gated") and r.get("status") == "improvement"]
    moved = [r for r in rows if r.get("status") == "info" and r.get("change") is not None
             and abs(r["change"]) >= min_change and not _NOT_AN_EXPLANATION.match(str(r.get("metric", "")))]
    moved.sort(key=lambda r: -abs(r["change"]))
    return better + [metric_line(r) for r in moved]


class Shown:
    """One launch a human format shows: its launch row and its result rows (v1-shaped dicts)."""

    __slots__ = ("index", "launch", "rows")

    def __init__(self, report: Report, index: int) -> None:
        self.index = index
        self.launch = launch_row(report, index)
        self.rows = result_rows(report, index)


def shown(report: Report, indexes: Iterable[int]) -> Iterable[Shown]:
    return (Shown(report, i) for i in indexes)


# ---------------------------------------------------------------- headline and what was left out

VERDICT_WORD = {"fail": "FAIL", "not measured": "NOT MEASURED", "inconclusive": "INCONCLUSIVE", "pass": "PASS"}
VERDICT_ICON = {"fail": "❌", "not measured": "⚠️", "inconclusive": "⚠️", "pass": "✅"}


def _plural(count: int, word: str, many: str | None = None) -> str:
    return f"{count} {word if count == 1 else (many or word + 's')}"


def headline(report: Report | dict[str, Any]) -> str:
    """What the verdict rests on, in a few words: regressions, then what was not measured, then the rest."""
    counts = report.get("summary", {})
    regressions = counts.get("regression", 0)
    total = sum(counts.values())
    unmeasured = report.get("unmeasured") or []
    compared = sum(counts.get(s, 0) for s in ("regression", "inconclusive", "improvement", "unchanged"))
    if regressions:
        head = f"{_plural(regressions, 'regression')} in {total} compared"
    elif unmeasured:
        causes = Counter(_unmeasured_cause(entry) for entry in unmeasured)
        cause, _ = causes.most_common(1)[0]
        more = f" and {len(causes) - 1} other cause{'s' if len(causes) > 2 else ''}" if len(causes) > 1 else ""
        return f"{_unmeasured_count(unmeasured)} not measured: {cause[:200]}{more}"
    elif not compared:
        return f"nothing compared ({total} launch{'es' if total != 1 else ''}, none with a baseline to compare)" \
            if total else "nothing compared"
    elif counts.get("inconclusive", 0):
        head = f"{_plural(counts['inconclusive'], 'inconclusive change')} in {total} compared"
    else:
        head = f"no regression in {total} compared"
    if unmeasured:
        head += f"; {_unmeasured_count(unmeasured)} not measured"
    return head


def _unmeasured_count(unmeasured: list[dict[str, str]]) -> str:
    """"2 perf tests", or "1 gated value" for values one side lacks (entries that name a launch)."""
    values = sum(1 for entry in unmeasured if entry.get("launch"))
    parts = [_plural(len(unmeasured) - values, "perf test")] if len(unmeasured) > values else []
    return " and ".join(parts + ([_plural(values, "gated value")] if values else []))


def unmeasured_notes(report: Report | dict[str, Any], limit: int = 20) -> list[str]:
    """The gated values one side lacks (entries that name a launch), as note lines; the skipped perf tests
    are already in the notes."""
    entries = [e for e in report.get("unmeasured") or [] if e.get("launch")]
    lines = [f"not measured: {e['test'] + ': ' if e.get('test') else ''}{_unmeasured_cause(e)}" for e in entries[:limit]]
    if len(entries) > limit:
        lines.append(f"not measured: {len(entries) - limit:,} more gated values (the JSON report lists them all)")
    return lines


def _unmeasured_cause(entry: dict[str, str]) -> str:
    return f"{entry['launch']}: {entry['cause']}" if entry.get("launch") else entry["cause"]


def summary_parts(report: Report | dict[str, Any]) -> list[str]:
    return [f"{n} {status}" for status, n in report.get("summary", {}).items() if n]


def verdict_line(report: Report | dict[str, Any]) -> str:
    """The last line of the text report: ``FAIL: 1 regression in 4 compared (1 regression, 3 unchanged)``."""
    verdict = VERDICT_WORD.get(str(report.get("verdict")), "FAIL")
    return f"{verdict}: {headline(report)} ({', '.join(summary_parts(report)) or 'nothing compared'})"


_PLURAL = {"regression": "regressions", "improvement": "improvements", "new": "new", "missing": "missing",
           "no data": "no data", "unchanged": "unchanged"}


def left_out(report: Report, listed: Counter[str], statuses: Iterable[str] | None = None) -> str:
    """``9,850 regressions, 120 improvements``: the launches of ``statuses`` a format did not list."""
    wanted = set(statuses) if statuses is not None else None
    parts = []
    for status, total in report["summary"].items():
        missing = total - listed.get(status, 0)
        if missing > 0 and (wanted is None or status in wanted):
            word = _PLURAL.get(status, status) if missing != 1 else status
            parts.append(f"{missing:,} {word}")
    return ", ".join(parts)
