"""Upgrade a version 1 report (row lists) to the version 2 shape (column tables)."""

from __future__ import annotations

from typing import Any

from perfgate.report.contract import FORMAT_VERSION, LAUNCH_COLUMNS, METRIC_COLUMNS, RESULT_VALUES, empty_columns, refuse


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
            raise refuse(source, f'report "{key}" must be a list')
        for index, row in enumerate(rows):
            if not isinstance(row, dict) or not isinstance(row.get("kernel"), str) or not isinstance(
                    row.get("status"), str):
                raise refuse(source, f"report {key[:-1]} {index} lacks a string kernel and status")
        rows_in[key] = rows
    launches = {name: [row.get(name) for row in rows_in["launches"]] for name in LAUNCH_COLUMNS}
    launches["ordinal"] = [0 if value is None else value for value in launches["ordinal"]]
    index_of: dict[tuple[Any, ...], int] = {}
    for index, row in enumerate(rows_in["launches"]):
        index_of.setdefault(_v1_launch_key(row), index)
    metric_index: dict[tuple[Any, ...], int] = {}
    metrics: dict[str, list[Any]] = empty_columns(METRIC_COLUMNS)
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
    for name in RESULT_VALUES:
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

