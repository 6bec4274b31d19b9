"""Regressions a baseline update carries: a new baseline whose values are worse than the one it replaces, beyond
their threshold, says so, on the terminal and in the file itself (its ``regressions`` list, which the pull
request's diff shows), with whether an acceptance in the history covers each (``perfgate accept``).

One item per (kind, kernel, region, metric): the repeated launches of a kernel are one regression, their
medians before and after.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping, Sequence

import numpy as np

from perfgate.baseline import baseline_file
from perfgate.carried_item import AcceptanceCheck, Carried
from perfgate.collect.baseline_json import read_baseline
from perfgate.compare import Comparison, compare_tables
from perfgate.errors import PerfgateError
from perfgate.history.accept import acceptance_check, acceptances_at
from perfgate.history.db import WAIT_SECONDS
from perfgate.history.record import provenance
from perfgate.text import inert
from perfgate.vocabulary import Status

if TYPE_CHECKING:
    from perfgate.compare import CompareOptions
    from perfgate.table import Measurement


def carried_regressions(comparison: Comparison) -> list[Carried]:
    """The regressions of ``comparison`` (old baseline -> new one), one per kernel, region and metric."""
    results = comparison.results
    if not len(results):
        return []
    regressed = np.flatnonzero((results["status"] == Status.REGRESSION.value) & results["gated"])
    if not regressed.size:
        return []
    found: dict[tuple[str, str, str, str], tuple[list[float], list[float], str]] = {}
    for index in regressed.tolist():
        row = results.row(int(index))
        key = (str(row["kind"]), str(row["kernel"]), str(row["region"]), str(row["metric"]))
        before, after, _ = found.setdefault(key, ([], [], str(row["threshold"])))
        before.append(float(row["baseline"]))
        after.append(float(row["current"]))
    items: list[Carried] = []
    for (kind, kernel, region, metric), (before, after, threshold) in sorted(found.items()):
        old, new = float(np.median(before)), float(np.median(after))
        items.append(Carried(kind=kind, kernel=kernel, region=region, metric=metric, before=_number(old),
                             after=_number(new), change=round(new / old - 1, 6) if old else None,
                             threshold=threshold, accepted=None))
    return items


def _number(value: float) -> float:
    return float(f"{value:.6g}")


def carried_lines(items: Sequence[Carried], where: str, history: bool) -> list[str]:
    """What the update prints: one line per regression carried, with its acceptance where a history is
    configured (the fix where there is none)."""
    lines = []
    for item in items:
        change = f" ({item['change']:+.1%})" if item["change"] is not None else ""
        name = item["kernel"] + (f" [{item['region']}]" if item["region"] else "")
        line = (f"{where}: the new baseline carries a regression: {name} {item['metric']} {item['before']:g} → "
                f"{item['after']:g}{change}, beyond {item['threshold']}")
        accepted = item["accepted"]
        if accepted is not None:
            line += f"; accepted by {accepted['by']} at {accepted['commit'][:12]}: {accepted['reason']}"
        elif history:
            line += f"; no acceptance in the history (perfgate accept --kernel {item['kernel']} --metric " \
                    f"{item['metric']} --reason ...)"
        lines.append(inert(line, 600))
    return lines


def with_carried(document: Mapping[str, Any], items: Sequence[Carried]) -> dict[str, Any]:
    """A baseline document with its ``regressions`` list (none when it carries none)."""
    updated = {key: value for key, value in document.items() if key != "regressions"}
    if items:
        updated["regressions"] = [dict(item) for item in items]
    return updated


def carried_in_update(documents: Mapping[tuple[str, str], dict[str, Any]], directory: Path, name: str,
                      measurement: Measurement, options: CompareOptions, history: str | None,
                      max_time: float = WAIT_SECONDS) -> tuple[dict[tuple[str, str], dict[str, Any]], list[str]]:
    """``perfgate baseline``: each new document compared with the file it replaces, with the regressions it
    carries, and the lines that say so. A file that cannot be compared is replaced without a word here, as the
    update replaces it anyway. ``max_time``: seconds the history may keep it waiting (``--max-time``)."""
    check = _history_check(history, max_time) if history else None
    marked: dict[tuple[str, str], dict[str, Any]] = {}
    lines: list[str] = []
    table = measurement.table
    for key, document in documents.items():
        path = baseline_file(directory, key, name)
        items: list[Carried] = []
        if path.is_file():
            sub = measurement.with_table(table[(table["device"] == key[0]) & (table["cc"] == key[1])])
            try:
                items = carried_regressions(compare_tables(read_baseline(path), sub, options))
            except PerfgateError:
                items = []
        if items and check is not None:
            items = check(items, key[0])
        marked[key] = with_carried(document, items)
        lines += carried_lines(items, str(path), check is not None)
    return marked, lines


def _history_check(url: str, max_time: float) -> AcceptanceCheck:
    """Acceptances of the commit being updated at (as ``perfgate accept`` defaults it), from ``url``."""
    return acceptance_check(acceptances_at(url, max_time), provenance(os.environ, branch="-", when=None).commit, None)
