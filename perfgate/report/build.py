"""Build the report (or a view for a human format) from a Comparison: numpy's work, in the one module of this
package that imports it (``perfgate.report`` loads it on first use of ``build_report``)."""

from __future__ import annotations

import math
from typing import Any, Iterable, cast

import numpy as np

from perfgate.version import __version__
from perfgate.columns import factorize, first_rows, objects
from perfgate.compare import Comparison
from perfgate.report.contract import (
    FORMAT_NAME,
    FORMAT_VERSION,
    GROUP_COLUMNS,
    METRIC_COLUMNS,
    RESULT_COLUMNS,
    GroupTable,
    Report,
    empty_columns,
    summarize,
)


_FLOAT_RESULTS = ("baseline", "current", "change", "delta")


def _finite_list(column: Any) -> list[float | None]:
    """A float column as Python floats, NaN and ±inf as None (JSON has neither)."""
    values = np.asarray(column, dtype=float)
    finite = np.isfinite(values)
    if finite.all():
        return cast("list[float | None]", values.tolist())
    boxed = values.astype(object)
    boxed[~finite] = None
    return cast("list[float | None]", boxed.tolist())


def build_report(comparison: Comparison, *, test: str | None = None, path: str | None = None,
                 line: int | None = None, notes: Iterable[str] = (), result_arrays: bool = False) -> Report:
    """Turn a Comparison into the report; ``test``/``path``/``line`` attribute every launch to a test.

    Only for a report that is written as JSON (``dump_parts``) or as the HTML page (``render_html``, which reads
    them through ``perfgate.render.result_arrays``) and nothing else: ``result_arrays=True`` leaves the results
    table's columns numpy arrays (null as NaN), which ``dump_parts`` writes as they are. As
    Python lists, the 400,000 results of 50k launches (eight columns) took ~60 MB more at the peak.
    """
    tables = _tables(comparison, test, path, line, notes, result_arrays)
    return cast(Report, {"format": FORMAT_NAME, "version": FORMAT_VERSION, "generator": f"perfgate {__version__}",
                         **tables})


def _tables(comparison: Comparison, test: str | None, path: str | None, line: int | None, notes: Iterable[str],
            result_arrays: bool) -> dict[str, Any]:
    """Everything of a report but its format, version and generator."""
    launches = _launch_columns(comparison, test, path, line)
    results, launch_of, kept = _grouped_results(comparison)
    hint = comparison.result_metric
    metrics, metric_codes = _metric_rows(results, hint if hint is None or kept is None else hint[kept])
    table = {"launch": launch_of, "metric": metric_codes, "status": results["status"],
             "gated": results["gated"].astype(bool)}
    table.update({name: results[name] for name in ("baseline", "current", "change", "delta")})
    table = {name: table[name] for name in RESULT_COLUMNS}
    if not result_arrays:
        table = {name: _finite_list(column) if name in _FLOAT_RESULTS else column.tolist()
                 for name, column in table.items()}
    return {
        "verdict": comparison.verdict,
        "summary": summarize(launches["status"]),
        "comparisons": [{
            "baseline": comparison.baseline_source, "current": comparison.current_source,
            "baseline_devices": list(comparison.baseline_devices),
            "current_devices": list(comparison.current_devices),
            "settings": comparison.settings, "test": test,
        }],
        "launches": launches,
        "metrics": metrics,
        "results": table,
        "notes": [*comparison.notes, *notes],
        "unmeasured": [{"test": test or "", "launch": launch, "cause": cause} for launch, cause in comparison.unmeasured],
        "groups": _group_table(comparison.results, _in_order_of(metric_codes, kept)),
    }


def _launch_columns(comparison: Comparison, test: str | None, path: str | None,
                    line: int | None) -> dict[str, list[Any]]:
    """The launch table: the Comparison's launches, each attributed to its test (its location when known)."""
    frame = comparison.launches
    count = len(frame)
    launches: dict[str, list[Any]] = {name: frame[name].tolist() for name in
                                      ("kind", "kernel", "demangled", "region", "ordinal", "status", "device",
                                       "launch_change")}
    if frame["ordinal"].dtype.kind not in "iu":  # an integer column's list holds ints already
        launches["ordinal"] = [int(o) for o in launches["ordinal"]]
    launches.update(_optional_launch_columns(frame, count))
    if comparison.locations:
        located = [comparison.locations.get(name) or {} for name in launches["kernel"]]
        launches["test"] = [where.get("test", test) for where in located]
        launches["path"] = [where.get("path", path) for where in located]
        launches["line"] = [where.get("line", line) for where in located]
    else:
        launches["test"], launches["path"], launches["line"] = [test] * count, [path] * count, [line] * count
    return launches


def _grouped_results(comparison: Comparison) -> tuple[Any, Any, Any]:
    """The result rows grouped by launch in launch order, each one's launch row, and which rows of the Comparison's
    results they are (None: all, as they are)."""
    frame, results = comparison.launches, comparison.results
    if not len(results):
        return results, np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    if comparison.result_launch is not None:
        launch_of = np.asarray(comparison.result_launch, dtype=np.int64)
    else:
        key = ("kind", "kernel", "region", "ordinal")
        row_of = {k: i for i, k in enumerate(zip(*(frame[name].tolist() for name in key), strict=True))}
        launch_of = np.array([row_of.get(k, -1) for k in zip(*(results[name].tolist() for name in key), strict=True)],
                             dtype=np.int64)
        if (launch_of < 0).any():
            raise ValueError("a result row names no launch of its comparison")
    if bool((launch_of[1:] >= launch_of[:-1]).all()):  # a Comparison's results are, by launch
        return results, launch_of, None
    order = np.argsort(launch_of, kind="stable")
    return results[order], launch_of[order], order


def _metric_rows(results: Any, hint: Any = None) -> tuple[dict[str, list[Any]], Any]:
    """Metric facts once: each distinct (metric, label, unit, threshold, direction) is one metrics row;
    returns that table and each result's row of it. ``hint``: per result, a number that only results with the
    same facts share (``Comparison.result_metric``): the facts of the first result of each are compared only."""
    if hint is not None and len(results):
        candidates = results.select(METRIC_COLUMNS)[first_rows(hint)]
        metrics, candidate_codes = _metric_rows(candidates)
        return metrics, candidate_codes[factorize(hint)[0]]
    metric_codes = np.zeros(len(results), dtype=np.int64)
    for name in METRIC_COLUMNS:
        column_codes, count = _text_codes(results[name])
        metric_codes, _ = factorize(metric_codes * (count + 1) + column_codes)  # stays < len(results)
    _, first_rows_of = np.unique(metric_codes, return_index=True)  # codes count up from 0 in order of appearance
    metric_rows = results[first_rows_of]
    return {name: metric_rows[name].tolist() for name in METRIC_COLUMNS}, metric_codes


def _text_codes(column: Any) -> tuple[Any, int]:
    """Codes of a column's values as text, missing (None, NaN) as "", and how many there are. The few distinct
    values are converted, not the rows."""
    codes, uniques = factorize(column)
    texts = ["" if value is None or value != value else str(value) for value in uniques.tolist()]
    if len(set(texts)) == len(texts):
        return codes, len(texts)
    merged, distinct = factorize(objects(texts))  # values that are the same text (NaN and None: "")
    return merged[codes], len(distinct)


def _optional_launch_columns(frame: Any, count: int) -> dict[str, list[Any]]:
    """The optional launch columns of a Comparison's launch table (null where it has none)."""
    columns: dict[str, list[Any]] = {}
    if "baseline_kernel" in frame.columns:
        old, new = frame["baseline_kernel"], frame["kernel"]
        renamed = (old != "") & (old != new)  # None (falsy) is None either way
        kept: Any = np.where(renamed, old, None)
        columns["baseline_kernel"] = kept.tolist()
    else:
        columns["baseline_kernel"] = [None] * count
    if "group" in frame.columns:
        group = frame["group"]
        if group.dtype.kind in "iu" and not (group < 0).any():
            columns["group"] = group.tolist()
        else:
            columns["group"] = [int(g) if g >= 0 else None for g in group.tolist()]
    else:
        columns["group"] = [None] * count
    for name in ("findings_appeared", "findings_gone"):
        values = frame[name].tolist() if name in frame.columns else [None] * count
        if values.count(None) != len(values):  # none known (no rule results): the list as it is
            values = [list(v) if isinstance(v, (list, tuple)) else None for v in values]
        columns[name] = values
    for name in ("code_id", "baseline_code_id", "code_why"):  # None where no side knows its code
        columns[name] = [v if isinstance(v, str) else None for v in frame[name].tolist()] if name in frame.columns \
            else [None] * count
    for name in ("grid", "block"):
        columns[name] = _known_texts(frame[name]) if name in frame.columns else [None] * count
    return columns


def _known_texts(column: Any) -> list[str | None]:
    """A text column as a list, "" (not known) as None: only its few distinct values are looked at."""
    codes, distinct = factorize(column)
    known = objects([value if isinstance(value, str) and value else None for value in distinct.tolist()])
    return cast("list[str | None]", known[codes].tolist())


_GROUP_FACTS = ("n_baseline", "n_current", "median_baseline", "median_current", "estimate", "ci_low", "ci_high")


def _in_order_of(codes: Any, kept: Any) -> Any:
    """``codes`` of the grouped results (``_grouped_results``) in the order of the Comparison's own results."""
    if kept is None:
        return codes
    ordered = np.empty_like(codes)
    ordered[kept] = codes
    return ordered


def _group_table(results: Any, metric_rows: Any) -> GroupTable:
    """One row per (repeated-launch group, metric) judged as one sample; ``metric_rows``: each result's row of the
    report's ``metrics``."""
    table = empty_columns(GROUP_COLUMNS)
    if "group" not in results.columns or not len(results):
        return cast(GroupTable, table)
    judged = np.flatnonzero(results["group"] >= 0)
    if not len(judged):
        return cast(GroupTable, table)
    # The first row of each (group, metric): a group's rows agree. Metrics told apart by their codes, not names.
    metric_codes, _ = results.coded("metric")
    firsts = judged[first_rows(results["group"][judged], metric_codes[judged])]
    for code, row in zip(metric_rows[firsts].tolist(), results.select(["group", *_GROUP_FACTS])[firsts].rows()):
        for name, value in (("group", int(row["group"])), ("metric", code), ("n_baseline", int(row["n_baseline"])),
                            ("n_current", int(row["n_current"]))):
            table[name].append(value)
        for name in _GROUP_FACTS[2:]:
            number = float(row[name])
            table[name].append(number if math.isfinite(number) else None)
    return cast(GroupTable, table)
