"""The JSON report: the one contract between compare, the renderers, ``merge`` and ``publish``.

This module defines the report's shape (the TypedDicts below), builds it from a Comparison, writes
it, reads and validates an untrusted one (an artifact a fork's code wrote), upgrades version 1
reports, merges reports, and gives row views for the few launches a human format shows. It imports
only the standard library: ``publish`` and ``merge`` never pay for pandas.

Version 2 is what perfgate writes; version 1 (row lists) is still read and upgraded on load. Tables are
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

from __future__ import annotations

import json
import math
import os
from bisect import bisect_left, bisect_right
from collections import Counter
from pathlib import Path
from typing import (
    TYPE_CHECKING,
    Any,
    Dict,
    Iterable,
    Iterator,
    List,
    Optional,
    Sequence,
    TypedDict,
    cast,
)

from perfgate import __version__
from perfgate.errors import InputError
from perfgate.vocabulary import (
    STATUS_ORDER,
    STATUS_RANK,
    VERDICT_RANK,
    Status,
    Verdict,
    worst_verdict,
)

if TYPE_CHECKING:  # keep this module free of pandas: publish and merge only need plain data
    from perfgate.compare import Comparison

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
_RESULT_VALUES = ("baseline", "current", "change", "delta", "status", "gated")
# The launch facts a v1 result row repeats.
_ROW_LAUNCH_FIELDS = ("kind", "kernel", "demangled", "region", "ordinal", "device", "test", "path", "line")

_LAUNCH_STATUSES = tuple(s.value for s in STATUS_ORDER if s is not Status.INFO)
# A launch in one of these was compared with its baseline; new, missing and no-data launches were not.
COMPARED_STATUSES = (Status.REGRESSION, Status.INCONCLUSIVE, Status.IMPROVEMENT, Status.UNCHANGED)


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


def _empty_columns(names: Sequence[str]) -> dict[str, list[Any]]:
    return {name: [] for name in names}


def empty_report(notes: Iterable[str] = ()) -> Report:
    """A report of nothing: its verdict is "not measured", never "pass"."""
    return {"format": FORMAT_NAME, "version": FORMAT_VERSION, "generator": f"perfgate {__version__}",
            "verdict": Verdict.NOT_MEASURED.value, "summary": summarize([]), "comparisons": [],
            "launches": cast(LaunchTable, _empty_columns((*LAUNCH_COLUMNS, *OPTIONAL_LAUNCH_COLUMNS))),
            "metrics": cast(MetricTable, _empty_columns(METRIC_COLUMNS)),
            "results": cast(ResultTable, _empty_columns(RESULT_COLUMNS)),
            "notes": list(notes), "unmeasured": [], "groups": cast(GroupTable, _empty_columns(GROUP_COLUMNS))}


def summarize(statuses: Iterable[str]) -> dict[str, int]:
    """Launches counted by status, every launch status present (0 when none)."""
    found = Counter(statuses)
    return {status: found.get(status, 0) for status in _LAUNCH_STATUSES}


def verdict_of(report: Report) -> str:
    """The verdict the report's own contents allow, never better than the one it states: a regression
    fails; perf tests that could not be measured, or nothing compared at all, are "not measured"; a kernel
    whose change straddles its threshold is "inconclusive"; only then "pass"."""
    counts = report["summary"]
    compared = sum(counts.get(s.value, 0) for s in COMPARED_STATUSES)
    derived = Verdict.PASS.value
    if counts.get(Status.REGRESSION.value):
        derived = Verdict.FAIL.value
    elif report.get("unmeasured") or not compared:
        derived = Verdict.NOT_MEASURED.value
    elif counts.get(Status.INCONCLUSIVE.value):
        derived = Verdict.INCONCLUSIVE.value
    return worst_verdict(report["verdict"], derived)


# ---------------------------------------------------------------- building

def _finite_list(column: Any) -> list[float | None]:
    """A float column as Python floats, NaN and ±inf as None (JSON has neither)."""
    import numpy as np

    values = column.to_numpy(dtype=float)
    finite = np.isfinite(values)
    if finite.all():
        return cast("list[float | None]", values.tolist())
    boxed = values.astype(object)
    boxed[~finite] = None
    return cast("list[float | None]", boxed.tolist())


def build_report(comparison: Comparison, *, test: str | None = None, path: str | None = None,
                 line: int | None = None, notes: Iterable[str] = (), unchanged_results: bool = True,
                 results_of_first: int | None = None) -> Report:
    """Turn a Comparison into the report; ``test``/``path``/``line`` attribute every launch to a test.

    For a human format only, never for a report that is written as JSON: ``unchanged_results=False``
    leaves out the metric rows of unchanged launches, and ``results_of_first=N`` those of every launch
    after the first N (launches come worst first); the launches and the summary stay whole. The
    terminal view never shows the rows left out, and on 10,000 launches they are most of the work.
    """
    import numpy as np
    import pandas as pd

    frame = comparison.launches
    count = len(frame)
    launches: dict[str, list[Any]] = {name: frame[name].tolist() for name in
                                      ("kind", "kernel", "demangled", "region", "ordinal", "status", "device",
                                       "launch_change")}
    launches["ordinal"] = [int(o) for o in launches["ordinal"]]
    launches.update(_optional_launch_columns(frame, count))
    if comparison.locations:
        located = [comparison.locations.get(name) or {} for name in launches["kernel"]]
        launches["test"] = [where.get("test", test) for where in located]
        launches["path"] = [where.get("path", path) for where in located]
        launches["line"] = [where.get("line", line) for where in located]
    else:
        launches["test"], launches["path"], launches["line"] = [test] * count, [path] * count, [line] * count

    results = comparison.results
    key = ["kind", "kernel", "region", "ordinal"]
    if len(results):
        launch_of = pd.MultiIndex.from_frame(frame[key]).get_indexer(pd.MultiIndex.from_frame(results[key]))
        if (launch_of < 0).any():
            raise ValueError("a result row names no launch of its comparison")
        keep = np.ones(len(results), dtype=bool)
        if not unchanged_results:
            keep &= frame["status"].to_numpy(dtype=object)[launch_of] != Status.UNCHANGED.value
        if results_of_first is not None:
            keep &= launch_of < results_of_first
        order = np.flatnonzero(keep)
        order = order[np.argsort(launch_of[order], kind="stable")]
        results = results.iloc[order]
        launch_of = launch_of[order]
    else:
        launch_of = np.zeros(0, dtype=np.int64)
    # Metric facts once: each distinct (metric, label, unit, threshold, direction) is one metrics row.
    metric_codes = np.zeros(len(results), dtype=np.int64)
    for name in METRIC_COLUMNS:
        column_codes, uniques = pd.factorize(results[name].fillna("").astype(str))
        metric_codes, _ = pd.factorize(metric_codes * (len(uniques) + 1) + column_codes)  # stays < len(results)
    _, first_rows = np.unique(metric_codes, return_index=True)  # codes count up from 0 in order of appearance
    metric_rows = results.iloc[first_rows]
    metrics = {name: metric_rows[name].tolist() for name in METRIC_COLUMNS}
    table = {
        "launch": launch_of.tolist(),
        "metric": metric_codes.tolist(),
        "baseline": _finite_list(results["baseline"]),
        "current": _finite_list(results["current"]),
        "change": _finite_list(results["change"]),
        "delta": _finite_list(results["delta"]),
        "status": results["status"].tolist(),
        "gated": results["gated"].astype(bool).tolist(),
    }
    return {
        "format": FORMAT_NAME,
        "version": FORMAT_VERSION,
        "generator": f"perfgate {__version__}",
        "verdict": comparison.verdict,
        "summary": summarize(launches["status"]),
        "comparisons": [{
            "baseline": comparison.baseline_source, "current": comparison.current_source,
            "baseline_devices": list(comparison.baseline_devices),
            "current_devices": list(comparison.current_devices),
            "settings": comparison.settings, "test": test,
        }],
        "launches": cast(LaunchTable, launches),
        "metrics": cast(MetricTable, metrics),
        "results": cast(ResultTable, table),
        "notes": [*comparison.notes, *notes],
        "unmeasured": [{"test": test or "", "launch": launch, "cause": cause} for launch, cause in comparison.unmeasured],
        "groups": _group_table(comparison.results, metrics),
    }


def _optional_launch_columns(frame: Any, count: int) -> dict[str, list[Any]]:
    """The optional launch columns of a Comparison's launch table (null where it has none)."""
    columns: dict[str, list[Any]] = {}
    if "baseline_kernel" in frame.columns:
        columns["baseline_kernel"] = [old if old and old != new else None
                                      for old, new in zip(frame["baseline_kernel"].tolist(), frame["kernel"].tolist())]
    else:
        columns["baseline_kernel"] = [None] * count
    if "group" in frame.columns:
        columns["group"] = [int(g) if g >= 0 else None for g in frame["group"].tolist()]
    else:
        columns["group"] = [None] * count
    for name in ("findings_appeared", "findings_gone"):
        columns[name] = [list(v) if isinstance(v, (list, tuple)) else None for v in frame[name].tolist()] \
            if name in frame.columns else [None] * count
    return columns


def _group_table(results: Any, metrics: dict[str, list[Any]]) -> GroupTable:
    """One row per (repeated-launch group, metric) judged as one sample, its metric a row of ``metrics``."""
    table = _empty_columns(GROUP_COLUMNS)
    if "group" not in results.columns or not len(results):
        return cast(GroupTable, table)
    judged = results[results["group"] >= 0].drop_duplicates(["group", "metric"])
    if not len(judged):
        return cast(GroupTable, table)
    code_of = {values: code for code, values in enumerate(zip(*(metrics[n] for n in METRIC_COLUMNS)))}
    for row in judged.itertuples(index=False):
        code = code_of.get(tuple(getattr(row, n) for n in METRIC_COLUMNS))
        if code is None:  # its rows were left out of a report built for a human format
            continue
        for name, value in (("group", int(row.group)), ("metric", code), ("n_baseline", int(row.n_baseline)),
                            ("n_current", int(row.n_current))):
            table[name].append(value)
        for name in ("median_baseline", "median_current", "estimate", "ci_low", "ci_high"):
            number = float(getattr(row, name))
            table[name].append(number if math.isfinite(number) else None)
    return cast(GroupTable, table)


# ---------------------------------------------------------------- writing

_ENCODE = json.JSONEncoder(ensure_ascii=False, allow_nan=False, separators=(",", ":")).encode
_TABLES = ("launches", "metrics", "results", "groups")


def dumps(report: Report) -> str:
    """The report as JSON text: one top-level field, table column or comparison per line.

    Every value goes through the json module's C encoder (no ``indent``, which would select the
    pure-Python one); the line breaks are added around its output, so a diff or a pager stays usable.
    """
    fields: list[str] = []
    for key, value in report.items():
        name = _ENCODE(key)
        if key in _TABLES and isinstance(value, dict):
            columns = ",\n".join(f"  {_ENCODE(column)}: {_ENCODE(values)}" for column, values in value.items())
            fields.append(f"{name}: {{\n{columns}\n}}")
        elif key in ("comparisons", "notes") and isinstance(value, list) and value:
            fields.append(f"{name}: [\n" + ",\n".join(f"  {_ENCODE(item)}" for item in value) + "\n]")
        else:
            fields.append(f"{name}: {_ENCODE(value)}")
    return "{\n" + ",\n".join(fields) + "\n}\n"


# ---------------------------------------------------------------- row views

def launch_count(report: Report) -> int:
    return len(report["launches"]["status"])


def launch_row(report: Report, index: int) -> dict[str, Any]:
    """One launch as a v1 launch row: ``{"kind", "kernel", ..., "line"}``."""
    launches = cast("dict[str, list[Any]]", report["launches"])
    row = {name: launches[name][index] for name in LAUNCH_COLUMNS}
    for name in OPTIONAL_LAUNCH_COLUMNS:
        column = launches.get(name)
        row[name] = column[index] if column else None
    return row


def launch_rows(report: Report) -> list[dict[str, Any]]:
    columns = [report["launches"][name] for name in LAUNCH_COLUMNS]  # type: ignore[literal-required]
    return [dict(zip(LAUNCH_COLUMNS, values)) for values in zip(*columns)]


def group_stats(report: Report) -> dict[tuple[int, int], dict[str, Any]]:
    """The ``groups`` table keyed by (group, metric row): the statistics of each repeated-launch judgement."""
    groups = report.get("groups") or cast(GroupTable, _empty_columns(GROUP_COLUMNS))
    columns = [groups[name] for name in GROUP_COLUMNS]  # type: ignore[literal-required]
    return {(row[0], row[1]): dict(zip(GROUP_COLUMNS, row)) for row in zip(*columns)}


def result_span(report: Report, launch: int) -> tuple[int, int]:
    """The rows of ``results`` that belong to ``launch`` (they are contiguous)."""
    column = report["results"]["launch"]
    return bisect_left(column, launch), bisect_right(column, launch)


def result_rows(report: Report, launch: int | None = None) -> list[dict[str, Any]]:
    """Result rows shaped as in version 1: the launch's facts, the metric's, then the result's own.

    ``launch`` limits them to that launch's rows (found by bisection: cheap for a few launches).
    """
    results, metrics, launches = report["results"], report["metrics"], report["launches"]
    start, stop = (0, len(results["launch"])) if launch is None else result_span(report, launch)
    rows: list[dict[str, Any]] = []
    for i in range(start, stop):
        at, code = results["launch"][i], results["metric"][i]
        row = {name: launches[name][at] for name in _ROW_LAUNCH_FIELDS}  # type: ignore[literal-required]
        row.update({name: metrics[name][code] for name in METRIC_COLUMNS})  # type: ignore[literal-required]
        row.update({name: results[name][i] for name in _RESULT_VALUES})  # type: ignore[literal-required]
        rows.append(row)
    return rows


def iter_launches(report: Report, statuses: Iterable[str] | None = None) -> Iterator[int]:
    """Indexes of launches, in report order (worst first), optionally only those with ``statuses``."""
    column = report["launches"]["status"]
    if statuses is None:
        return iter(range(len(column)))
    wanted = set(statuses)
    return (i for i, status in enumerate(column) if status in wanted)


# ---------------------------------------------------------------- merging

def _reorder(table: dict[str, list[Any]], order: Sequence[int]) -> dict[str, list[Any]]:
    return {name: [values[i] for i in order] for name, values in table.items()}


def merge_reports(reports: Iterable[Report]) -> Report:
    """Combine reports (a matrix of GPU jobs, or one per test) into one; fails if any failed.

    Launches are sorted worst first (stable), results follow their launch, and equal metric rows are
    stored once.
    """
    merged = empty_report()
    verdicts: list[str] = []
    launches = cast("dict[str, list[Any]]", merged["launches"])
    results = cast("dict[str, list[Any]]", merged["results"])
    metrics = cast("dict[str, list[Any]]", merged["metrics"])
    metric_index: dict[tuple[Any, ...], int] = {}
    groups = cast("dict[str, list[Any]]", merged["groups"])
    for report in reports:
        offset = len(launches["status"])
        group_offset = max(groups["group"], default=-1) + 1  # group ids are per report: keep them apart
        for name in LAUNCH_COLUMNS:
            launches[name].extend(report["launches"][name])  # type: ignore[literal-required]
        theirs_launches = cast("dict[str, list[Any]]", report["launches"])
        count = len(report["launches"]["status"])
        for name in OPTIONAL_LAUNCH_COLUMNS:
            column = theirs_launches.get(name) or [None] * count
            if name == "group":
                column = [None if g is None else g + group_offset for g in column]
            launches[name].extend(column)
        theirs = report["metrics"]
        remap = []
        for values in zip(*(theirs[name] for name in METRIC_COLUMNS)):  # type: ignore[literal-required]
            if values not in metric_index:
                metric_index[values] = len(metric_index)
                for name, value in zip(METRIC_COLUMNS, values):
                    metrics[name].append(value)
            remap.append(metric_index[values])
        results["launch"].extend(at + offset for at in report["results"]["launch"])
        results["metric"].extend(remap[code] for code in report["results"]["metric"])
        for name in _RESULT_VALUES:
            results[name].extend(report["results"][name])  # type: ignore[literal-required]
        their_groups = cast("dict[str, list[Any]]", report.get("groups") or _empty_columns(GROUP_COLUMNS))
        groups["group"].extend(g + group_offset for g in their_groups["group"])
        groups["metric"].extend(remap[code] for code in their_groups["metric"])
        for name in GROUP_COLUMNS[2:]:
            groups[name].extend(their_groups[name])
        merged["comparisons"].extend(report["comparisons"])
        merged["notes"].extend(n for n in report["notes"] if n not in merged["notes"])
        merged["unmeasured"].extend(u for u in report.get("unmeasured", []) if u not in merged["unmeasured"])
        verdicts.append(report["verdict"])
    statuses = launches["status"]
    order = sorted(range(len(statuses)), key=lambda i: STATUS_RANK.get(statuses[i], 99))
    if order != sorted(order):
        position = [0] * len(order)
        for new, old in enumerate(order):
            position[old] = new
        merged["launches"] = cast(LaunchTable, _reorder(launches, order))
        moved = [position[at] for at in results["launch"]]
        result_order = sorted(range(len(moved)), key=moved.__getitem__)
        results["launch"] = moved
        merged["results"] = cast(ResultTable, _reorder(results, result_order))
    merged["summary"] = summarize(merged["launches"]["status"])
    merged["verdict"] = worst_verdict(*verdicts) if verdicts else Verdict.NOT_MEASURED.value
    merged["verdict"] = verdict_of(merged)
    return merged


# ---------------------------------------------------------------- reading untrusted reports

def _refuse(source: str, message: str, hint: str = "") -> InputError:
    return InputError(source, message, hint) if hint else InputError(source, message)


def upgrade_v1(document: dict[str, Any], source: str) -> dict[str, Any]:
    """A version 1 report (row lists) in the version 2 shape; types are checked afterwards.

    A v1 result row belongs to the launch with the same (test, kind, kernel, region, ordinal, device):
    exactly how v1 renderers grouped them. Rows that match no launch were never shown; they are left
    out, and a note says how many.
    """
    rows_in: dict[str, Any] = {}
    for key in ("launches", "results"):
        rows = document.get(key, [])
        if not isinstance(rows, list):
            raise _refuse(source, f'report "{key}" must be a list')
        for index, row in enumerate(rows):
            if not isinstance(row, dict) or not isinstance(row.get("kernel"), str) or not isinstance(
                    row.get("status"), str):
                raise _refuse(source, f"report {key[:-1]} {index} lacks a string kernel and status")
        rows_in[key] = rows
    launches = {name: [row.get(name) for row in rows_in["launches"]] for name in LAUNCH_COLUMNS}
    launches["ordinal"] = [0 if value is None else value for value in launches["ordinal"]]
    index_of: dict[tuple[Any, ...], int] = {}
    for index, row in enumerate(rows_in["launches"]):
        index_of.setdefault(_v1_launch_key(row), index)
    metric_index: dict[tuple[Any, ...], int] = {}
    metrics: dict[str, list[Any]] = _empty_columns(METRIC_COLUMNS)
    placed: list[tuple[int, int, dict[str, Any]]] = []
    orphans = 0
    for row in rows_in["results"]:
        at = index_of.get(_v1_launch_key(row))
        if at is None:
            orphans += 1
            continue
        threshold = row.get("threshold")
        if isinstance(threshold, (int, float)) and not isinstance(threshold, bool):
            threshold = f"{threshold:g}"  # v1 allowed a bare number
        facts = (row.get("metric"), row.get("label"), row.get("unit"), threshold, row.get("direction"))
        hashable = tuple(_hashable(v) for v in facts)
        if hashable not in metric_index:
            metric_index[hashable] = len(metric_index)
            for name, value in zip(METRIC_COLUMNS, facts):
                metrics[name].append(value)
        placed.append((at, metric_index[hashable], row))
    placed.sort(key=lambda item: item[0])
    results: dict[str, list[Any]] = {"launch": [at for at, _, _ in placed], "metric": [code for _, code, _ in placed]}
    for name in _RESULT_VALUES:
        results[name] = [row.get(name) for _, _, row in placed]
    notes = document.get("notes", [])
    if orphans and isinstance(notes, list):
        notes = [*notes, f"{orphans} result row{'s' if orphans != 1 else ''} of this version 1 report named no "
                         f"launch of it and {'were' if orphans != 1 else 'was'} left out"]
    return {**document, "version": FORMAT_VERSION, "launches": launches, "metrics": metrics, "results": results,
            "notes": notes}


def _v1_launch_key(row: dict[str, Any]) -> tuple[Any, ...]:
    return tuple(_hashable(row.get(name)) for name in ("test", "kind", "kernel", "region", "ordinal", "device"))


def _hashable(value: Any) -> Any:
    return value if isinstance(value, (str, int, float, bool, type(None))) else repr(value)


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _check_column(source: str, table: str, name: str, values: list[Any], kind: str) -> None:
    """Check (and for numbers, clean) one column in place; ``kind`` names the allowed types."""
    where = f'"{table}.{name}"'
    if kind == "str":
        bad = next((i for i, v in enumerate(values) if type(v) is not str), None)
        wanted = "a string"
    elif kind == "str?":
        bad = next((i for i, v in enumerate(values) if v is not None and type(v) is not str), None)
        wanted = "a string or null"
    elif kind == "int":
        bad = next((i for i, v in enumerate(values) if type(v) is not int), None)
        wanted = "an integer"
    elif kind == "int?":
        bad = next((i for i, v in enumerate(values) if v is not None and type(v) is not int), None)
        wanted = "an integer or null"
    elif kind == "strs?":
        bad = next((i for i, v in enumerate(values) if v is not None and not (
            type(v) is list and len(v) <= MAX_FINDINGS and all(type(x) is str and len(x) <= 500 for x in v))), None)
        wanted = f"a list of at most {MAX_FINDINGS} short strings, or null"
    elif kind == "bool?":
        bad = next((i for i, v in enumerate(values) if v is not None and type(v) is not bool), None)
        wanted = "true, false or null"
    else:  # "number?": finite numbers; a non-finite one (1e999 parses as inf) becomes null
        bad = None
        for i, v in enumerate(values):
            kind_of = type(v)
            if kind_of is float:
                if not math.isfinite(v):
                    values[i] = None
            elif kind_of is not int and v is not None:
                bad = i
                break
        wanted = "a number or null"
    if bad is not None:
        raise _refuse(source, f"{where} row {bad}: must be {wanted}")


_LAUNCH_TYPES = {"kind": "str?", "kernel": "str", "demangled": "str?", "region": "str?", "ordinal": "int",
                 "status": "str", "device": "str?", "launch_change": "str?", "test": "str?", "path": "str?",
                 "line": "int?"}
_METRIC_TYPES = {"metric": "str?", "label": "str?", "unit": "str?", "threshold": "str?", "direction": "str?"}
_RESULT_TYPES = {"launch": "int", "metric": "int", "baseline": "number?", "current": "number?", "change": "number?",
                 "delta": "number?", "status": "str", "gated": "bool?"}


_OPTIONAL_LAUNCH_TYPES = {"baseline_kernel": "str?", "group": "int?", "findings_appeared": "strs?",
                          "findings_gone": "strs?"}
_GROUP_TYPES = {"group": "int", "metric": "int", "n_baseline": "int", "n_current": "int", "median_baseline": "number?",
                "median_current": "number?", "estimate": "number?", "ci_low": "number?", "ci_high": "number?"}
MAX_FINDINGS = 200  # rule findings of one launch, each at most 500 characters


def _check_groups(source: str, document: dict[str, Any], metrics: int) -> None:
    """The optional ``groups`` table (absent in older reports: empty)."""
    if document.get("groups") is None:
        document["groups"] = _empty_columns(GROUP_COLUMNS)
    _check_table(source, document, "groups", _GROUP_TYPES)
    codes = document["groups"]["metric"]
    if codes and (min(codes) < 0 or max(codes) >= metrics):
        raise _refuse(source, '"groups.metric" must name a row of "metrics"')


def _check_table(source: str, document: dict[str, Any], table: str, types: dict[str, str],
                 optional: dict[str, str] | None = None) -> int:
    columns = document.get(table)
    if not isinstance(columns, dict):
        raise _refuse(source, f'report "{table}" must be an object of columns')
    length = None
    for name, kind in (*types.items(), *(optional or {}).items()):
        values = columns.get(name)
        if values is None and optional and name in optional:
            values = columns[name] = [None] * (length or 0)  # an older report: not known
        if not isinstance(values, list):
            raise _refuse(source, f'report "{table}.{name}" must be a list')
        if length is None:
            length = len(values)
        elif len(values) != length:
            raise _refuse(source, f'report "{table}" columns differ in length')
        if length > MAX_ROWS:
            raise _refuse(source, f'report "{table}" has more than {MAX_ROWS:,} rows; not a report perfgate wrote')
        _check_column(source, table, name, values, kind)
    document[table] = {name: columns[name] for name in (*types, *(optional or {}))}  # unknown columns are dropped
    return length or 0


def validate_report(document: Any, source: str) -> Report:
    """Check a report read from disk (possibly an untrusted artifact) and return it as version 2.

    Every field a renderer or ``publish`` uses gets its type checked; statuses must be known ones;
    results must point at existing launches and metrics, grouped by launch; the summary is recounted
    and the verdict follows from it (a report cannot claim "pass" over a regression).
    """
    source = str(source)
    if not isinstance(document, dict) or document.get("format") != FORMAT_NAME:
        raise _refuse(source, f'not a perfgate report (no "format": "{FORMAT_NAME}")',
                      "pass the JSON written by 'perfgate compare --format json' or 'pytest --perfgate'")
    version = document.get("version")
    if version not in READ_VERSIONS or isinstance(version, bool):
        raise _refuse(source, f"report version {version!r} is not supported",
                      f"this perfgate reads versions {', '.join(map(str, READ_VERSIONS))}")
    if document.get("verdict") not in VERDICT_RANK:
        raise _refuse(source, f'report "verdict" must be one of {", ".join(repr(v.value) for v in Verdict)}')
    if version == 1:
        document = upgrade_v1(document, source)
    launches = _check_table(source, document, "launches", _LAUNCH_TYPES, _OPTIONAL_LAUNCH_TYPES)
    metrics = _check_table(source, document, "metrics", _METRIC_TYPES)
    results = _check_table(source, document, "results", _RESULT_TYPES)
    statuses = document["launches"]["status"]
    unknown = next((s for s in (*statuses, *document["results"]["status"]) if s not in STATUS_RANK), None)
    if unknown is not None:
        raise _refuse(source, f"report has unknown status {unknown!r}")
    if Status.INFO.value in statuses:
        raise _refuse(source, 'a launch\'s status cannot be "info"')
    pointers = document["results"]["launch"]
    if results and (min(pointers) < 0 or max(pointers) >= launches):
        raise _refuse(source, '"results.launch" must name a row of "launches"')
    if any(a > b for a, b in zip(pointers, pointers[1:])):
        raise _refuse(source, '"results" must be grouped by launch, in launch order')
    codes = document["results"]["metric"]
    if results and (min(codes) < 0 or max(codes) >= metrics):
        raise _refuse(source, '"results.metric" must name a row of "metrics"')
    _check_groups(source, document, metrics)
    comparisons = document.get("comparisons", [])
    if not isinstance(comparisons, list):
        raise _refuse(source, 'report "comparisons" must be a list')
    document["comparisons"] = [_check_comparison(source, i, c) for i, c in enumerate(comparisons)]
    notes = document.get("notes", [])
    if not isinstance(notes, list) or not all(isinstance(n, str) for n in notes):
        raise _refuse(source, '"notes" must be a list of strings')
    document["notes"] = notes
    if not isinstance(document.get("generator"), str):
        document["generator"] = None
    document["unmeasured"] = _check_unmeasured(source, document.get("unmeasured", []))
    document["summary"] = summarize(statuses)
    document["verdict"] = verdict_of(cast(Report, document))
    return cast(Report, {key: document[key] for key in REPORT_FIELDS})


def _check_unmeasured(source: str, entries: Any) -> list[dict[str, str]]:
    if not isinstance(entries, list) or len(entries) > UNMEASURED_LIMIT or not all(
            isinstance(e, dict) and isinstance(e.get("test"), str) and isinstance(e.get("cause"), str)
            and isinstance(e.get("launch", ""), str) for e in entries):
        raise _refuse(source, '"unmeasured" must be a list of {"test", "cause"[, "launch"]} strings')
    return [{"test": e["test"], "cause": e["cause"], **({"launch": e["launch"]} if e.get("launch") else {})}
            for e in entries]


def _check_comparison(source: str, index: int, comparison: Any) -> ComparisonInfo:
    if not isinstance(comparison, dict):
        raise _refuse(source, f"comparison {index} must be an object")
    for field in ("baseline", "current", "test"):
        if comparison.get(field) is not None and not isinstance(comparison[field], str):
            raise _refuse(source, f'comparison {index}: "{field}" must be a string or null')
    for field in ("baseline_devices", "current_devices"):
        devices = comparison.get(field) or []
        if not isinstance(devices, list) or not all(isinstance(d, str) for d in devices):
            raise _refuse(source, f'comparison {index}: "{field}" must be a list of strings')
    settings = comparison.get("settings")
    return {"baseline": comparison.get("baseline"), "current": comparison.get("current"),
            "baseline_devices": list(comparison.get("baseline_devices") or []),
            "current_devices": list(comparison.get("current_devices") or []),
            "settings": settings if isinstance(settings, dict) else {}, "test": comparison.get("test")}


def load_report(path: str | os.PathLike[str]) -> Report:
    """Read and validate a report file that may come from an untrusted artifact (v1 or v2)."""
    file = Path(path)
    if not file.is_file():
        raise InputError(file, "no such file" if not file.exists() else "not a file", "check the path")
    if file.stat().st_size > MAX_REPORT_BYTES:
        raise InputError(file, f"larger than {MAX_REPORT_BYTES // 2**20} MiB; not a report perfgate wrote")
    try:
        text = file.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(file, "not UTF-8 text; expected a JSON report") from exc
    except OSError as exc:
        raise InputError(file, f"cannot read ({exc.strerror})") from exc
    from perfgate.limits import MAX_JSON_DEPTH, json_depth_exceeds

    too_deep = InputError(file, f"JSON nested more than {MAX_JSON_DEPTH} levels deep", "not a report perfgate wrote")
    try:
        document = json.loads(text, parse_constant=_reject_constant)
    except _NonFinite as exc:
        raise InputError(file, f"{exc} is not valid JSON (numbers must be finite)") from None
    except json.JSONDecodeError as exc:
        raise InputError(file, f"broken JSON at line {exc.lineno} column {exc.colno}: {exc.msg}",
                         "it may have been truncated; download or write it again") from None
    except RecursionError:
        raise too_deep from None
    # An untrusted artifact: no later step (validation, rendering) may run out of recursion on it.
    if json_depth_exceeds(document):
        raise too_deep
    return validate_report(document, str(file))


class _NonFinite(ValueError):
    pass


def _reject_constant(name: str) -> Any:
    raise _NonFinite(name)
