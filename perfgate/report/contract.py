"""The report contract: its shape (TypedDicts), column names, limits, and the verdict a report allows.

Stdlib only, like the whole ``perfgate.report`` package (see its docstring for the format).
"""

from __future__ import annotations

from collections import Counter
from typing import Any, Dict, Iterable, List, Optional, Sequence, TypedDict, cast

from perfgate import __version__
from perfgate.errors import InputError
from perfgate.verdict import COMPARED_STATUSES as COMPARED_STATUSES
from perfgate.verdict import compared_launches as compared_launches
from perfgate.verdict import verdict_of as verdict_of
from perfgate.vocabulary import STATUS_ORDER, Status, Verdict

FORMAT_NAME = "perfgate-report"
FORMAT_VERSION = 2
READ_VERSIONS = (1, 2)

# What an untrusted report may hold: a crafted artifact must not exhaust the publishing job.
MAX_REPORT_BYTES = 256 * 1024 * 1024
MAX_ROWS = 4_000_000

LAUNCH_COLUMNS = ("kind", "kernel", "demangled", "region", "ordinal", "status", "device", "launch_change", "test",
                  "path", "line")
# Optional launch columns (added within version 2; a report without them reads as all null): the kernel's
# name in the baseline when a rename rule paired it, its repeated-launch group, and the Nsight Compute rule
# findings that appeared or disappeared (null: not known, because a side carries no rule results).
OPTIONAL_LAUNCH_COLUMNS = ("baseline_kernel", "group", "findings_appeared", "findings_gone")
# The optional ``groups`` table: one row per (repeated-launch group, time-like metric) judged as one sample.
GROUP_COLUMNS = ("group", "metric", "n_baseline", "n_current", "median_baseline", "median_current", "estimate",
                 "ci_low", "ci_high")
METRIC_COLUMNS = ("metric", "label", "unit", "threshold", "direction")
RESULT_COLUMNS = ("launch", "metric", "baseline", "current", "change", "delta", "status", "gated")
# The per-result fields of a v1 result row (the rest comes from its launch and its metric).
RESULT_VALUES = ("baseline", "current", "change", "delta", "status", "gated")
# The launch facts a v1 result row repeats.
ROW_LAUNCH_FIELDS = ("kind", "kernel", "demangled", "region", "ordinal", "device", "test", "path", "line")

LAUNCH_STATUSES = tuple(s.value for s in STATUS_ORDER if s is not Status.INFO)
# A launch in one of these was compared with its baseline; new, missing and no-data launches were not.


# ---------------------------------------------------------------- the shape

# The functional form with real types, not class bodies: under ``from __future__ import annotations`` a
# class body's annotations are strings, and typing compiles each one at import (~10 ms for these 40
# fields): a cost ``pytest --perfgate --collect-only`` would pay for nothing.
ComparisonInfo = TypedDict("ComparisonInfo", {
    "baseline": Optional[str], "current": Optional[str], "baseline_devices": List[str],
    "current_devices": List[str], "settings": Dict[str, Any], "test": Optional[str]})
"""One comparison the report holds (a merged report holds several)."""

LaunchTable = TypedDict("LaunchTable", {
    "kind": List[Optional[str]], "kernel": List[str], "demangled": List[Optional[str]],
    "region": List[Optional[str]], "ordinal": List[int], "status": List[str], "device": List[Optional[str]],
    "launch_change": List[Optional[str]], "test": List[Optional[str]], "path": List[Optional[str]],
    "line": List[Optional[int]], "baseline_kernel": List[Optional[str]], "group": List[Optional[int]],
    "findings_appeared": List[Optional[List[str]]], "findings_gone": List[Optional[List[str]]]}, total=False)

MetricTable = TypedDict("MetricTable", {
    "metric": List[str], "label": List[Optional[str]], "unit": List[Optional[str]],
    "threshold": List[Optional[str]], "direction": List[Optional[str]]})

ResultTable = TypedDict("ResultTable", {
    "launch": List[int], "metric": List[int], "baseline": List[Optional[float]], "current": List[Optional[float]],
    "change": List[Optional[float]], "delta": List[Optional[float]], "status": List[str],
    "gated": List[Optional[bool]]})

GroupTable = TypedDict("GroupTable", {
    "group": List[int], "metric": List[int], "n_baseline": List[int], "n_current": List[int],
    "median_baseline": List[Optional[float]], "median_current": List[Optional[float]],
    "estimate": List[Optional[float]], "ci_low": List[Optional[float]], "ci_high": List[Optional[float]]})

Report = TypedDict("Report", {
    "format": str, "version": int, "generator": Optional[str], "verdict": str, "summary": Dict[str, int],
    "comparisons": List[ComparisonInfo], "launches": LaunchTable, "metrics": MetricTable, "results": ResultTable,
    "notes": List[str], "unmeasured": List[Dict[str, str]], "groups": GroupTable})
REPORT_FIELDS = ("format", "version", "generator", "verdict", "summary", "comparisons", "launches", "metrics",
                 "results", "notes", "unmeasured", "groups")
UNMEASURED_LIMIT = 10_000  # entries of "unmeasured" read from a report


def empty_columns(names: Sequence[str]) -> dict[str, list[Any]]:
    return {name: [] for name in names}


def empty_report(notes: Iterable[str] = ()) -> Report:
    """A report of nothing: its verdict is "not measured", never "pass"."""
    return {"format": FORMAT_NAME, "version": FORMAT_VERSION, "generator": f"perfgate {__version__}",
            "verdict": Verdict.NOT_MEASURED.value, "summary": summarize([]), "comparisons": [],
            "launches": cast(LaunchTable, empty_columns((*LAUNCH_COLUMNS, *OPTIONAL_LAUNCH_COLUMNS))),
            "metrics": cast(MetricTable, empty_columns(METRIC_COLUMNS)),
            "results": cast(ResultTable, empty_columns(RESULT_COLUMNS)),
            "notes": list(notes), "unmeasured": [], "groups": cast(GroupTable, empty_columns(GROUP_COLUMNS))}


def summarize(statuses: Iterable[str]) -> dict[str, int]:
    """Launches counted by status, every launch status present (0 when none)."""
    found = Counter(statuses)
    return {status: found.get(status, 0) for status in LAUNCH_STATUSES}


def refuse(source: str, message: str, hint: str = "") -> InputError:
    """The error for a report that breaks the contract."""
    return InputError(source, message, hint) if hint else InputError(source, message)
