"""What every renderer shares: number formatting, escaping, the headline, and the bounded selection.

Stdlib only. Renderers read a version 2 report (``perfgate.report``) through its row views, and
only for the launches they show: a human format is bounded by what needs attention, so its cost
does not grow with the launches it leaves out.
"""

from __future__ import annotations

import math
import re
import statistics
from collections import Counter
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, Callable, Iterable, Sequence

from perfgate.report import Report, group_stats, launch_row, result_rows, result_span
from perfgate.units import BYTE, BYTE_SYMBOL, SILENT_UNITS, TIME_UNITS, scale_si, scale_time
from perfgate.vocabulary import (
    SOL_COMPUTE_METRIC,
    SOL_MEMORY_METRIC,
    STATUS_ORDER,
    STATUS_RANK,
    Status,
    bound_of,
)

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


def html_escape(text: object) -> str:
    """markupsafe's escaping (what jinja2's autoescape does), without building a Markup object."""
    return (str(text).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace('"', "&#34;")
            .replace("'", "&#39;"))


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


# Status words that take a plural: "60 regressions", "2 improvements" (but "3 no data", "2 new").
_PLURAL = {"regression": "regressions", "improvement": "improvements", "inconclusive": "inconclusive",
           "new": "new", "missing": "missing", "no data": "no data", "unchanged": "unchanged"}


def plural(count: int, word: str, many: str | None = None) -> str:
    """``1 regression``, ``60 regressions``; ``many`` for an irregular plural."""
    return f"{count} {word if count == 1 else (many or _PLURAL.get(word) or word + 's')}"




def headline(report: Report | dict[str, Any]) -> str:
    """What the verdict rests on, in a few words: regressions, then what was not measured, then the rest."""
    counts = report.get("summary", {})
    regressions = counts.get("regression", 0)
    total = sum(counts.values())
    unmeasured = report.get("unmeasured") or []
    compared = sum(counts.get(s, 0) for s in ("regression", "inconclusive", "improvement", "unchanged"))
    if regressions:
        head = f"{plural(regressions, 'regression')} in {total} compared"
    elif unmeasured:
        causes = Counter(_unmeasured_cause(entry) for entry in unmeasured)
        cause, _ = causes.most_common(1)[0]
        more = f" and {len(causes) - 1} other cause{'s' if len(causes) > 2 else ''}" if len(causes) > 1 else ""
        return f"{_unmeasured_count(unmeasured)} not measured: {cause[:200]}{more}"
    elif not compared:
        return f"nothing compared ({total} launch{'es' if total != 1 else ''}, none with a baseline to compare)" \
            if total else "nothing compared"
    elif counts.get("inconclusive", 0):
        head = f"{plural(counts['inconclusive'], 'inconclusive change')} in {total} compared"
    else:
        head = f"no regression in {total} compared"
    if unmeasured:
        head += f"; {_unmeasured_count(unmeasured)} not measured"
    return head


def _unmeasured_count(unmeasured: list[dict[str, str]]) -> str:
    """"2 perf tests", or "1 gated value" for values one side lacks (entries that name a launch)."""
    values = sum(1 for entry in unmeasured if entry.get("launch"))
    parts = [plural(len(unmeasured) - values, "perf test")] if len(unmeasured) > values else []
    return " and ".join(parts + ([plural(values, "gated value")] if values else []))


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
    """``60 regressions``, ``2 improvements``, ``3 unchanged``: launches counted by status."""
    return [plural(n, status) for status, n in report.get("summary", {}).items() if n]


def verdict_line(report: Report | dict[str, Any]) -> str:
    """The last line of the text report: ``FAIL: 1 regression in 4 compared (1 regression, 3 unchanged)``."""
    verdict = VERDICT_WORD.get(str(report.get("verdict")), "FAIL")
    return f"{verdict}: {headline(report)} ({', '.join(summary_parts(report)) or 'nothing compared'})"


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


# ---------------------------------------------------------------- where, on what, which commits

def source_label(path: str | None) -> str:
    """A comparison's input as a reader wants it: a relative path as given, an absolute one (a runner's
    ``/home/runner/work/...``) by its file name."""
    if not path:
        return ""
    text = str(path).replace("\\", "/")
    if text.startswith("/") or re.match(r"^[A-Za-z]:/", text):
        return text.rstrip("/").rsplit("/", 1)[-1]
    return text


def report_devices(report: Report) -> list[str]:
    """The GPUs (or CPUs) the report measured, each once: the comparisons' current devices, else the launches'."""
    found: dict[str, None] = {}
    for comparison in report["comparisons"]:
        for device in comparison["current_devices"] or comparison["baseline_devices"]:
            found.setdefault(device)
    if not found:
        for name in report["launches"]["device"]:
            if name:
                found.setdefault(name)
    return list(found)


def commits_line(commits: Sequence[str | None] | None) -> str:
    """``base 1a2b3c4d5e6f → head 9f8e7d6c5b4a``, or "" when neither is known."""
    if not commits:
        return ""
    base, head = (list(commits) + [None, None])[:2]
    parts = [f"base {base[:12]}" if base else "", f"head {head[:12]}" if head else ""]
    return " → ".join(p for p in parts if p)


# ---------------------------------------------------------------- kernels: launches grouped

@dataclass
class MetricSummary:
    """One metric of a kernel row: one launch's values, or the medians over its launches."""

    metric: str
    label: str
    unit: str
    threshold: str
    direction: str
    gated: bool
    status: str
    before: float | None
    after: float | None
    change: float | None
    launches: int = 1  # launches whose values are summarized (medians when > 1)
    interval: tuple[float, float] | None = None  # the repeated-launch judgement's 95% interval of the change
    judged_as_group: bool = False


@dataclass
class KernelRow:
    """A kernel of a report: its launches of one test, GPU, region (the repeated launches of a loop), with the
    statistics a reader judges it by."""

    launches: list[int]
    status: str
    kind: str
    kernel: str
    baseline_kernel: str | None
    region: str
    test: str | None
    device: str | None
    launch_change: str | None
    findings_appeared: list[str] | None
    findings_gone: list[str] | None
    metrics: list[MetricSummary] = field(default_factory=list)
    statuses: Counter[str] = field(default_factory=Counter)

    @property
    def name(self) -> str:
        """``old → new`` for a kernel paired by a rename rule."""
        if self.baseline_kernel and self.baseline_kernel != self.kernel:
            return f"{self.baseline_kernel} → {self.kernel}"
        return self.kernel

    def metric(self, name: str) -> MetricSummary | None:
        return next((m for m in self.metrics if m.metric == name), None)

    @property
    def bound(self) -> tuple[str | None, str | None]:
        """(before, after): memory, compute or latency, from the speed-of-light percentages."""
        compute, memory = self.metric(SOL_COMPUTE_METRIC), self.metric(SOL_MEMORY_METRIC)
        if compute is None or memory is None:
            return None, None
        return bound_of(compute.before, memory.before), bound_of(compute.after, memory.after)

    @property
    def moved(self) -> list[MetricSummary]:
        """The gated metrics a reader looks at first: those with the row's status, else every gated one."""
        gated = [m for m in self.metrics if m.gated]
        same = [m for m in gated if m.status == self.status]
        return same or [m for m in gated if m.status in (Status.REGRESSION.value, Status.INCONCLUSIVE.value)] or gated


_UNCOMPARED = (Status.NEW.value, Status.MISSING.value, Status.NO_DATA.value)


def _row_status(statuses: Counter[str]) -> str:
    """A kernel's status: its worst compared launch (a launch more or less, or one without values, does not make
    a compared kernel new, missing or no data), else its worst."""
    compared = [s for s in statuses if s not in _UNCOMPARED]
    return min(compared or statuses, key=lambda s: STATUS_RANK.get(s, 99))


def kernel_groups(report: Report, statuses: Iterable[str] | None = None) -> list[list[int]]:
    """Launch indexes grouped by kernel (test, GPU, kind, kernel, its baseline name, region), in report order
    (worst first); ``statuses`` keeps the kernels with a launch in one of them."""
    launches = report["launches"]
    optional: Any = launches
    renamed = optional.get("baseline_kernel") or [None] * len(launches["status"])
    keys = zip(launches["test"], launches["device"], launches["kind"], launches["kernel"], renamed,
               launches["region"])
    groups: dict[tuple[Any, ...], list[int]] = {}
    for index, key in enumerate(keys):
        members = groups.get(key)
        if members is None:
            groups[key] = [index]
        else:
            members.append(index)
    found = list(groups.values())
    if statuses is not None:
        wanted = set(statuses)
        column = launches["status"]
        found = [g for g in found if any(column[i] in wanted for i in g)]
    return found


def _median(values: list[float]) -> float | None:
    return statistics.median(values) if values else None


def kernel_row(report: Report, indexes: list[int], stats: dict[tuple[int, int], dict[str, Any]] | None = None) \
        -> KernelRow:
    """The kernel of launches ``indexes`` (one of :func:`kernel_groups`), its metrics summarized."""
    launches = report["launches"]
    optional: Any = launches
    first = indexes[0]
    statuses: Counter[str] = Counter(launches["status"][i] for i in indexes)

    def column(name: str) -> Any:
        values = optional.get(name)
        return values[first] if values else None

    def union(name: str) -> list[str] | None:
        values = optional.get(name)
        if not values or all(values[i] is None for i in indexes):
            return None
        return list(dict.fromkeys(f for i in indexes for f in (values[i] or [])))

    row = KernelRow(launches=indexes, status=_row_status(statuses), kind=str(launches["kind"][first] or ""),
                    kernel=launches["kernel"][first], baseline_kernel=column("baseline_kernel"),
                    region=launches["region"][first] or "", test=launches["test"][first],
                    device=launches["device"][first],
                    launch_change=next((launches["launch_change"][i] for i in indexes if launches["launch_change"][i]),
                                       None),
                    findings_appeared=union("findings_appeared"), findings_gone=union("findings_gone"),
                    statuses=statuses)
    row.metrics = _summaries(report, indexes, group_stats(report) if stats is None else stats)
    return row


def _summaries(report: Report, indexes: list[int], stats: dict[tuple[int, int], dict[str, Any]]) \
        -> list[MetricSummary]:
    results, metrics = report["results"], report["metrics"]
    groups: Any = report["launches"]
    group_column = groups.get("group") or []
    by_code: dict[int, list[int]] = {}
    for index in indexes:
        start, stop = result_span(report, index)
        for i in range(start, stop):
            by_code.setdefault(results["metric"][i], []).append(i)
    group = next((group_column[i] for i in indexes if group_column and group_column[i] is not None), None)
    out = []
    for code, rows in by_code.items():
        statuses = [results["status"][i] for i in rows]
        status = min(statuses, key=lambda s: STATUS_RANK.get(s, 99) + (len(STATUS_RANK) if s in _UNCOMPARED else 0))
        before = [v for v in (results["baseline"][i] for i in rows) if v is not None]
        after = [v for v in (results["current"][i] for i in rows) if v is not None]
        summary = MetricSummary(
            metric=str(metrics["metric"][code] or ""), label=str(metrics["label"][code] or metrics["metric"][code]),
            unit=str(metrics["unit"][code] or ""), threshold=str(metrics["threshold"][code] or ""),
            direction=str(metrics["direction"][code] or ""), gated=any(results["gated"][i] for i in rows),
            status=status, before=None, after=None, change=None, launches=len(rows))
        judged = stats.get((group, code)) if group is not None else None
        if len(rows) == 1:
            i = rows[0]
            summary.before, summary.after, summary.change = results["baseline"][i], results["current"][i], \
                results["change"][i]
        else:
            summary.before, summary.after = _median(before), _median(after)
            if summary.before and summary.after is not None:
                summary.change = summary.after / summary.before - 1
        if judged is not None:
            summary.before = judged["median_baseline"] if judged["median_baseline"] is not None else summary.before
            summary.after = judged["median_current"] if judged["median_current"] is not None else summary.after
            summary.launches = max(int(judged["n_baseline"]), int(judged["n_current"]))
            summary.judged_as_group = True
            if judged["estimate"] is not None:
                summary.change = judged["estimate"]
            if judged["ci_low"] is not None and judged["ci_high"] is not None:
                summary.interval = (judged["ci_low"], judged["ci_high"])
        out.append(summary)
    return out


def launches_label(row: KernelRow) -> str:
    """``×40`` for a kernel launched 40 times; "" for one launch."""
    return f"×{len(row.launches)}" if len(row.launches) > 1 else ""


def change_text(summary: MetricSummary) -> str:
    """``+8.1% [+7.4%, +8.8%]`` for a group judged as one, ``+123.3%`` otherwise."""
    text = format_change(summary.change)
    if summary.interval:
        low, high = summary.interval
        text += f" [{format_change(low)}, {format_change(high)}]"
    return text


def bound_text(row: KernelRow) -> str:
    """``bound: memory → latency (compute 17.3% → 6.2%, memory 90.9% → 50.0% of peak)``; "" without both
    speed-of-light percentages."""
    before, after = row.bound
    if before is None and after is None:
        return ""
    compute, memory = row.metric(SOL_COMPUTE_METRIC), row.metric(SOL_MEMORY_METRIC)
    assert compute is not None and memory is not None
    moved = f"{before or '—'} → {after or '—'}" if before != after else f"{after} (unchanged)"
    return (f"bound: {moved} (compute {format_value(compute.before, '%')} → {format_value(compute.after, '%')}, "
            f"memory {format_value(memory.before, '%')} → {format_value(memory.after, '%')} of peak)")


def findings_text(row: KernelRow, limit: int = 4) -> list[str]:
    """``ncu findings appeared: Bottleneck: Latency Issue, ...`` and ``... gone: ...``."""
    lines = []
    for word, found in (("appeared", row.findings_appeared), ("gone", row.findings_gone)):
        if found:
            more = f" and {len(found) - limit} more" if len(found) > limit else ""
            lines.append(f"ncu findings {word}: {', '.join(found[:limit])}{more}")
    return lines


def why_lines(row: KernelRow, others: int = 3) -> list[str]:
    """The "why" of a kernel's change, in every format: its bound before and after, the launch configuration
    change, the rule findings that appeared or went, then the explanatory metrics that moved most."""
    lines = [text for text in (bound_text(row),) if text]
    if row.launch_change:
        lines.append(f"launch config: {row.launch_change}")
    lines += findings_text(row)
    sol = (SOL_COMPUTE_METRIC, SOL_MEMORY_METRIC) if lines and lines[0].startswith("bound:") else ()
    moved = [m for m in row.metrics if not m.gated and m.status == Status.INFO.value and m.change is not None
             and abs(m.change) >= 0.01 and m.metric not in sol and not _NOT_AN_EXPLANATION.match(m.metric)]
    moved.sort(key=lambda m: -abs(m.change or 0.0))
    lines += [f"{m.label} {format_value(m.before, m.unit)} → {format_value(m.after, m.unit)} "
              f"({format_change(m.change)})" for m in moved[:others]]
    return lines


def compared_files(report: Report, limit: int = 3) -> tuple[list[tuple[str, str]], int]:
    """The (baseline, current) file labels of the report's comparisons that name no test, each pair once: the
    first ``limit``, and how many more there are (a merged report may hold hundreds)."""
    pairs = list(dict.fromkeys((source_label(c["baseline"]), source_label(c["current"]))
                               for c in report["comparisons"] if not c["test"]))
    return pairs[:limit], max(len(pairs) - limit, 0)
