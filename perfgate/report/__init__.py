"""The JSON report: the one contract between compare, the renderers, ``merge`` and ``publish``.

``contract`` declares it once: each table's columns (kind, meaning, allowed values), the fields, the limits,
and the TypedDicts mypy checks it with; ``schema`` makes the JSON Schema shipped as
``perfgate/schemas/report-v2.schema.json`` from that declaration. ``build`` turns a Comparison into a report
(numpy's work: loaded on first use of ``build_report``, so that ``merge``, ``publish`` and the
session report of a run whose perf tests were all skipped do without it), ``write`` writes one; ``validate`` reads and checks an untrusted one (an artifact a fork's code wrote), ``upgrade``
turns a version 1 report into version 2, ``merge`` combines reports, and ``views`` holds what a human format
reads of one (``ReportView``: what a report holds beside its file format's fields).

Version 2 is what perfgate writes; version 1 (row lists) is read too, and upgraded on load. Tables are
column-oriented, each a JSON object of equally long arrays, so launch facts are stored once per
launch and metric facts once per metric, and ``pandas.DataFrame(report["results"])`` loads a table::

    {
      "format": "perfgate-report", "version": 2, "generator": "perfgate 0.1.0",
      "verdict": "pass" | "fail",
      "summary": {"regression": 0, "no data": 0, "missing": 0, "new": 0, "improvement": 0, "unchanged": 1},
      "comparisons": [{"baseline", "current", "baseline_devices", "current_devices", "settings", "test"}],
      "launches": {"kind": [], "kernel": [], "demangled": [], "region": [], "ordinal": [], "status": [],
                   "device": [], "launch_change": [], "test": [], "path": [], "line": []},
      "metrics":  {"metric": [], "label": [], "unit": [], "threshold": [], "direction": []},
      "results":  {"launch": [], "metric": [], "baseline": [], "current": [], "change": [], "delta": [],
                   "status": [], "gated": []},
      "notes": [],
      "groups":   {"group": [], "metric": [], "n_baseline": [], "n_current": [], "median_baseline": [],
                   "median_current": [], "estimate": [], "ci_low": [], "ci_high": []}   # optional
    }

Optional, added within version 2 (absent in older reports: read as null / empty): the launch columns
``baseline_kernel``, ``group``, ``findings_appeared`` and ``findings_gone``, and the ``groups`` table.

``results.launch`` is a row of ``launches`` and ``results.metric`` a row of ``metrics``; results are
grouped by launch, in launch order (``results.launch`` never decreases), and launches come worst
first. A v1 result row is ``{**launches[r.launch], **metrics[r.metric], **the result's own fields}``
(:func:`result_rows` gives exactly that). ``change`` is relative (0.05 = +5%), null when it cannot
be computed (no data, or a zero baseline). ``summary`` counts launches by status.
"""

from typing import TYPE_CHECKING, Any

from perfgate.report.contract import (
    FORMAT_NAME,
    FORMAT_VERSION,
    GROUP_COLUMNS,
    LAUNCH_COLUMNS,
    MAX_REPORT_BYTES,
    MAX_ROWS,
    METRIC_COLUMNS,
    OPTIONAL_LAUNCH_COLUMNS,
    READ_VERSIONS,
    RESULT_COLUMNS,
    ComparisonInfo,
    GroupTable,
    LaunchTable,
    MetricTable,
    Report,
    ReportView,
    ResultTable,
    empty_report,
    summarize,
    verdict_of,
)
from perfgate.report.merge import merge_reports
from perfgate.report.upgrade import upgrade_v1
from perfgate.limits import MAX_FINDINGS
from perfgate.report.validate import load_report, validate_report
from perfgate.report.write import dump_parts, dumps
from perfgate.report.views import (
    KERNEL_COLUMNS,
    KERNEL_NAME_COLUMNS,
    group_stats,
    iter_launches,
    kernel_keys,
    launch_count,
    launch_row,
    launch_rows,
    kernel_summary,
    listed_summary,
    repeated_totals,
    result_rows,
    result_span,
)

__all__ = [
    "FORMAT_NAME", "FORMAT_VERSION", "GROUP_COLUMNS", "KERNEL_COLUMNS", "KERNEL_NAME_COLUMNS", "LAUNCH_COLUMNS", "MAX_FINDINGS", "MAX_REPORT_BYTES",
    "MAX_ROWS", "METRIC_COLUMNS", "OPTIONAL_LAUNCH_COLUMNS", "READ_VERSIONS", "RESULT_COLUMNS", "ComparisonInfo",
    "GroupTable", "LaunchTable", "MetricTable", "Report", "ReportView", "ResultTable", "build_report",
    "dump_parts", "dumps",
    "empty_report", "group_stats", "iter_launches", "kernel_keys", "kernel_summary", "launch_count", "launch_row", "launch_rows",
    "listed_summary",
    "load_report", "merge_reports", "repeated_totals", "result_rows", "result_span", "summarize", "upgrade_v1",
    "validate_report", "verdict_of",
]

if TYPE_CHECKING:
    from perfgate.report.build import build_report


def __getattr__(name: str) -> Any:
    """``build_report``, imported on first use (PEP 562): see the docstring."""
    if name == "build_report":
        # the module, not this package's attribute ``build``: see perfgate.plugin.session
        from perfgate.report.build import build_report  # noqa: F811

        return build_report
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
