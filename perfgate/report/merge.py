"""Merge reports (a matrix of GPU jobs, or one per test) into one."""

from __future__ import annotations

from typing import Any, Iterable, Sequence, cast

from perfgate.report.contract import (
    GROUP_COLUMNS,
    LAUNCH_COLUMNS,
    METRIC_COLUMNS,
    OPTIONAL_LAUNCH_COLUMNS,
    RESULT_VALUES,
    LaunchTable,
    Report,
    ResultTable,
    empty_columns,
    empty_report,
    summarize,
    verdict_of,
)
from perfgate.vocabulary import STATUS_RANK, Verdict, worst_verdict


def _reorder(table: dict[str, list[Any]], order: Sequence[int]) -> dict[str, list[Any]]:
    return {name: [values[i] for i in order] for name, values in table.items()}


def merge_reports(reports: Iterable[Report]) -> Report:
    """Combine reports (a matrix of GPU jobs, or one per test) into one; fails if any failed.

    Launches are sorted worst first (stable), results follow their launch, and equal metric rows are
    stored once. A test measured on the same device in several reports (a job run twice) is kept from the
    last report that has it, with a note, so its rows are neither doubled nor mixed.
    """
    merged = empty_report()
    verdicts: list[str] = []
    metric_index: dict[tuple[Any, ...], int] = {}
    reports, superseded = _latest_per_test_and_device(list(reports))
    for report in reports:
        _append(merged, report, metric_index)
        merged["comparisons"].extend(report["comparisons"])
        merged["notes"].extend(n for n in report["notes"] if n not in merged["notes"])
        merged["unmeasured"].extend(u for u in report.get("unmeasured", []) if u not in merged["unmeasured"])
        verdicts.append(report["verdict"])
    merged["notes"].extend(n for n in superseded if n not in merged["notes"])
    _sort_worst_first(merged)
    merged["summary"] = summarize(merged["launches"]["status"])
    merged["verdict"] = worst_verdict(*verdicts) if verdicts else Verdict.NOT_MEASURED.value
    merged["verdict"] = verdict_of(merged)
    return merged


def _latest_per_test_and_device(reports: list[Report]) -> tuple[list[Report], list[str]]:
    """The reports without the launches of a (test, device) that a later report measured too, and a note for
    each such test. Launches that name no test (a ``perfgate compare`` report) are all kept."""
    latest: dict[tuple[str | None, str | None], int] = {}  # (test, device) -> the last report (0-based) that has it
    kept: list[Report] = []
    notes: list[str] = []
    for position in range(len(reports) - 1, -1, -1):
        report = reports[position]
        keys = list(zip(report["launches"]["test"], report["launches"]["device"]))
        drop = {i for i, key in enumerate(keys) if key[0] is not None and latest.get(key, position) > position}
        notes[:0] = [f"merge: {test} on {device or 'an unnamed device'} is in report {position + 1} and report "
                     f"{latest[(test, device)] + 1}: kept report {latest[(test, device)] + 1}, the later one"
                     for test, device in dict.fromkeys(keys[i] for i in drop)]
        for key in keys:
            if key[0] is not None:
                latest.setdefault(key, position)
        kept.append(_without_launches(report, drop) if drop else report)
    return kept[::-1], notes


def _without_launches(report: Report, drop: set[int]) -> Report:
    """``report`` less the launches ``drop`` names, their results, and the groups no kept launch is in."""
    launches = cast("dict[str, list[Any]]", report["launches"])
    keep = [i for i in range(len(launches["status"])) if i not in drop]
    position = {old: new for new, old in enumerate(keep)}
    slim = cast("dict[str, Any]", dict(report))
    slim["launches"] = {name: [column[i] for i in keep] for name, column in launches.items()}
    gone = set(launches["test"]) - set(slim["launches"]["test"])
    slim["comparisons"] = [c for c in report["comparisons"] if c.get("test") not in gone]
    results = cast("dict[str, list[Any]]", report["results"])
    rows = [r for r, at in enumerate(results["launch"]) if at in position]
    slim["results"] = {name: [column[r] for r in rows] for name, column in results.items()}
    slim["results"]["launch"] = [position[at] for at in slim["results"]["launch"]]
    if report.get("groups"):
        groups = cast("dict[str, list[Any]]", report["groups"])
        live = {g for g in slim["launches"].get("group") or [] if g is not None}
        rows = [r for r, g in enumerate(groups["group"]) if g in live]
        slim["groups"] = {name: [column[r] for r in rows] for name, column in groups.items()}
    return cast(Report, slim)


def _append(merged: Report, report: Report, metric_index: dict[tuple[Any, ...], int]) -> None:
    """Append ``report``'s tables to ``merged``'s: launch rows and group ids shifted past those already there,
    metric rows stored once (``metric_index``: a metrics row's facts -> its row in ``merged``)."""
    launches = cast("dict[str, list[Any]]", merged["launches"])
    results = cast("dict[str, list[Any]]", merged["results"])
    metrics = cast("dict[str, list[Any]]", merged["metrics"])
    groups = cast("dict[str, list[Any]]", merged["groups"])
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
    for name in RESULT_VALUES:
        results[name].extend(report["results"][name])  # type: ignore[literal-required]
    their_groups = cast("dict[str, list[Any]]", report.get("groups") or empty_columns(GROUP_COLUMNS))
    groups["group"].extend(g + group_offset for g in their_groups["group"])
    groups["metric"].extend(remap[code] for code in their_groups["metric"])
    for name in GROUP_COLUMNS[2:]:
        groups[name].extend(their_groups[name])


def _sort_worst_first(merged: Report) -> None:
    """Sort the launches worst first (stable) and move each result row with its launch."""
    launches = cast("dict[str, list[Any]]", merged["launches"])
    results = cast("dict[str, list[Any]]", merged["results"])
    statuses = launches["status"]
    order = sorted(range(len(statuses)), key=lambda i: STATUS_RANK.get(statuses[i], 99))
    if order == sorted(order):
        return
    position = [0] * len(order)
    for new, old in enumerate(order):
        position[old] = new
    merged["launches"] = cast(LaunchTable, _reorder(launches, order))
    moved = [position[at] for at in results["launch"]]
    result_order = sorted(range(len(moved)), key=moved.__getitem__)
    results["launch"] = moved
    merged["results"] = cast(ResultTable, _reorder(results, result_order))
