"""What every renderer shares: status words and icons, views of the launches shown, the headline, what was
left out, and where the numbers came from.

Stdlib only. Renderers read a version 2 report (``perfgate.report``) through its row views, and
only for the launches they show: a human format is bounded by what needs attention, so its cost
does not grow with the launches it leaves out. Numbers are written by ``perfgate.quantities``, escaping lives in
``render.formatting``, kernel rows and the "why" in ``render.kernels``.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from typing import Any, Iterable, Sequence

from perfgate.quantities import change_for, pair_texts
from perfgate.report import ReportView, kernel_summary, listed_summary
from perfgate.report.contract import compared_launches
from perfgate.vocabulary import KIND_REGION, UPDATE_NOTE, Status

STATUS_ICON = {"regression": "❌", "inconclusive": "❔", "improvement": "🚀", "unchanged": "✅", "new": "🆕",
               "missing": "➖", "no data": "⚠️", "info": "ℹ️"}
ATTENTION = (Status.REGRESSION.value, Status.NO_DATA.value, Status.MISSING.value)


# ---------------------------------------------------------------- views of launches and their rows

def display_name(row: dict[str, Any]) -> str:
    name = str(row.get("kernel", ""))
    if row.get("kind") == "kernel" and int(row.get("ordinal") or 0) > 0:
        name += f" #{int(row['ordinal'])}"
    return name


def shown_region(kind: Any, kernel: Any, region: Any) -> str:
    """The region to show beside a row's name: none for a region's own row, which its name already says
    (``step [step]``, ``step`` over ``step``)."""
    return "" if not region or (kind == KIND_REGION and region == kernel) else str(region)


def metric_line(row: dict[str, Any]) -> str:
    metric = str(row.get("metric") or "")
    before, after = pair_texts(row.get("baseline"), row.get("current"), row.get("unit"), metric)
    change = change_for(metric, row.get("baseline"), row.get("current"), row.get("change"), row.get("threshold"))
    return f"{row.get('label') or metric} {before} → {after} ({change})"


# Launch facts already appear in the "launch config changed" note; a stddev explains nothing.
NOT_AN_EXPLANATION = re.compile(r"^(launch__|time\.stddev$)")


def no_data_side(rows: list[dict[str, Any]]) -> str:
    """Where a "no data" launch lacks values (its result rows; the gated ones where it has some): ``the
    baseline``, ``the current run``, ``both runs``, or ``one run or the other`` (a metric lacks one side, another
    the other)."""
    gated = [r for r in rows if r.get("gated")] or rows
    return missing_side([r.get("baseline") for r in gated], [r.get("current") for r in gated])


def missing_side(befores: Sequence[Any], afters: Sequence[Any]) -> str:
    """The words for which side lacks values, from the values of each (None: none): one home for the text's and
    the Markdown's "no values in ..."."""
    base_missing = all(v is None for v in befores)
    cur_missing = all(v is None for v in afters)
    if base_missing and cur_missing:
        return "both runs"
    if base_missing:
        return "the baseline"
    if cur_missing:
        return "the current run"
    return "one run or the other"


def explanation(rows: list[dict[str, Any]], min_change: float = 0.01) -> list[str]:
    """What else moved in a launch: gated metrics that improved, then the explanatory metrics."""
    better = [metric_line(r) for r in rows if r.get("gated") and r.get("status") == "improvement"]
    moved = [r for r in rows if r.get("status") == "info" and r.get("change") is not None
             and abs(r["change"]) >= min_change and not NOT_AN_EXPLANATION.match(str(r.get("metric", "")))]
    moved.sort(key=lambda r: -abs(r["change"]))
    return better + [metric_line(r) for r in moved]


@dataclass(frozen=True, slots=True)
class Shown:
    """One launch a human format shows: its launch row and its result rows (v1-shaped dicts;
    ``ComparedReport.launch`` makes them)."""

    index: int
    launch: dict[str, Any]
    rows: list[dict[str, Any]]


# ---------------------------------------------------------------- headline and what was left out

VERDICT_WORD = {"fail": "FAIL", "not measured": "NOT MEASURED", "inconclusive": "INCONCLUSIVE", "pass": "PASS"}
VERDICT_ICON = {"fail": "❌", "not measured": "⚠️", "inconclusive": "⚠️", "pass": "✅"}


# Status words that take a plural: "60 regressions", "2 improvements" (but "3 no data", "2 new").
_PLURAL = {"regression": "regressions", "improvement": "improvements", "inconclusive": "inconclusive",
           "new": "new", "missing": "missing", "no data": "no data", "unchanged": "unchanged"}


def plural(count: int, word: str, many: str | None = None) -> str:
    """``1 regression``, ``20,000 regressions``; ``many`` for an irregular plural."""
    return f"{count:,} {word if count == 1 else (many or _PLURAL.get(word) or word + 's')}"




def headline(report: ReportView, counts: dict[str, int] | None = None) -> str:
    """What the verdict rests on, in a few words: regressions, then what was not measured, then the rest. A kernel
    judged as one (its repeated launches) counts once; ``counts``: the report's ``kernel_summary`` where the caller
    has it (it goes through every launch)."""
    counts = kernel_summary(report) if counts is None else counts
    regressions = counts.get("regression", 0)
    total = sum(counts.values())
    unmeasured = report.get("unmeasured") or []
    compared = compared_launches(counts)
    if regressions:
        head = f"{plural(regressions, 'regression')} in {compared:,} compared"
    elif unmeasured:
        causes = Counter(_unmeasured_cause(entry) for entry in unmeasured)
        cause, _ = causes.most_common(1)[0]
        more = f" and {len(causes) - 1} other cause{'s' if len(causes) > 2 else ''}" if len(causes) > 1 else ""
        return f"{_unmeasured_count(unmeasured)} not measured: {shorten_keeping_fix(cause)}{more}"
    elif not compared and total and counts.get("new", 0) == total and not _updated(report):
        return _all_new(report, total)
    elif not compared:
        return f"nothing compared ({total:,} launch{'es' if total != 1 else ''}, none with a baseline to compare)" \
            if total else "nothing compared"
    elif counts.get("inconclusive", 0):
        head = f"{plural(counts['inconclusive'], 'inconclusive change')} in {compared:,} compared"
    else:
        head = f"no regression in {compared:,} compared"
    if unmeasured:
        head += f"; {_unmeasured_count(unmeasured)} not measured"
    return head


def _updated(report: ReportView) -> bool:
    """An update's report: its baselines were written by the run, its new launches need nothing more."""
    return any(str(note).startswith(UPDATE_NOTE) for note in report["notes"])


def _all_new(report: ReportView, launches: int) -> str:
    """Every launch is new (a first run, a first pull request): say so, and what gives it something to compare
    with. The tests where the report names them, else the launches (a report compared by hand)."""
    tests = {test for test, status in zip(report["launches"]["test"], report["launches"]["status"])
             if test and status == Status.NEW.value}
    what = f"{plural(len(tests), 'new test')}" if tests else plural(launches, "new launch", "new launches")
    return f"{what} with no baseline yet, nothing to compare: record the base branch's runs, or update the baseline"


HEADLINE_CAUSE_CHARS = 240


def shorten_keeping_fix(cause: str, limit: int = HEADLINE_CAUSE_CHARS) -> str:
    """``cause`` in at most ``limit`` characters, cut at a word, keeping its last clause (what to do about it:
    the part after the last ``; `` or the last parenthesis) whole when that clause is short enough."""
    if len(cause) <= limit:
        return cause
    start = max(cause.rfind("; "), cause.rfind(" ("))
    fix = cause[start:] if start > 0 and len(cause) - start <= limit // 2 else ""
    head = cause[:limit - len(fix) - 1]
    head = head[:head.rfind(" ")] if " " in head else head
    return f"{head.rstrip(' ;,:')}…{fix}"


def _unmeasured_count(unmeasured: list[dict[str, str]]) -> str:
    """"2 perf tests", or "1 gated value" for values one side lacks (entries that name a launch)."""
    values = sum(1 for entry in unmeasured if entry.get("launch"))
    parts = [plural(len(unmeasured) - values, "perf test")] if len(unmeasured) > values else []
    return " and ".join(parts + ([plural(values, "gated value")] if values else []))


def unmeasured_notes(report: ReportView | dict[str, Any], limit: int = 20) -> list[str]:
    """The gated values one side lacks (entries that name a launch), as note lines; the skipped perf tests
    are already in the notes."""
    entries = [e for e in report.get("unmeasured") or [] if e.get("launch")]
    lines = [f"not measured: {e['test'] + ': ' if e.get('test') else ''}{_unmeasured_cause(e)}" for e in entries[:limit]]
    if len(entries) > limit:
        lines.append(f"not measured: {len(entries) - limit:,} more gated values (the JSON report lists them all)")
    return lines


def _unmeasured_cause(entry: dict[str, str]) -> str:
    return f"{entry['launch']}: {entry['cause']}" if entry.get("launch") else entry["cause"]


def summary_parts(report: ReportView) -> list[str]:
    """``60 regressions``, ``2 improvements``, ``3 unchanged``: launches counted by status."""
    return [plural(n, status) for status, n in listed_summary(report).items() if n]


def verdict_line(report: ReportView) -> str:
    """The last line of the text report: ``FAIL: 1 regression in 4 compared (1 regression, 3 unchanged)``."""
    verdict = VERDICT_WORD.get(str(report.get("verdict")), "FAIL")
    counts = kernel_summary(report)
    launches = "launches: " if counts != listed_summary(report) else ""
    return f"{verdict}: {headline(report, counts)} ({launches}{', '.join(summary_parts(report)) or 'nothing compared'})"


def left_out(report: ReportView, listed: Counter[str], statuses: Iterable[str] | None = None) -> str:
    """``9,850 regressions, 120 improvements``: the launches of ``statuses`` a format did not list."""
    wanted = set(statuses) if statuses is not None else None
    parts = []
    for status, total in listed_summary(report).items():
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


def report_devices(report: ReportView) -> list[str]:
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


def devices_label(devices: Sequence[str]) -> str:
    """What the measured devices are called: ``GPU``/``GPUs``, ``machine``/``machines`` for pytest-benchmark
    runs (their device is named ``CPU: <brand>``), ``devices`` for a mix of both."""
    cpus = sum(1 for d in devices if d.startswith("CPU: "))
    if cpus == 0:
        return "GPU" if len(devices) == 1 else "GPUs"
    if cpus == len(devices):
        return "machine" if cpus == 1 else "machines"
    return "devices"


def commits_line(commits: Sequence[str | None] | None) -> str:
    """``base 1a2b3c4d5e6f → head 9f8e7d6c5b4a``, or "" when neither is known."""
    if not commits:
        return ""
    base, head = (list(commits) + [None, None])[:2]
    parts = [f"base {base[:12]}" if base else "", f"head {head[:12]}" if head else ""]
    return " → ".join(p for p in parts if p)


def compared_files(report: ReportView, limit: int = 3) -> tuple[list[tuple[str, str]], int]:
    """The (baseline, current) file labels of the report's comparisons that name no test, each pair once: the
    first ``limit``, and how many more there are (a merged report may hold hundreds)."""
    pairs = list(dict.fromkeys((source_label(c["baseline"]), source_label(c["current"]))
                               for c in report["comparisons"] if not c["test"]))
    return pairs[:limit], max(len(pairs) - limit, 0)
