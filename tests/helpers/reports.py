"""Reports made by hand for the renderers' tests: a metrics table whose labels and units hold what must be escaped
or is missing, and a validated report of given launches and result rows."""

from __future__ import annotations

import json
from typing import Any

from perfgate.report import Report, dumps, empty_report, summarize, validate_report

METRICS = {"metric": ["gpu__time_duration.sum", "dram__bytes_read.sum", "smsp__inst_executed.sum",
                      "launch__registers_per_thread", "sm__warps_active.avg.pct_of_peak_sustained_active",
                      "odd__metric", "odd__spaced"],
           "label": ["duration", "DRAM read", None, "registers", "occupancy <%>", "odd", "spaced"],
           "unit": ["ns", "byte", "inst", "register/thread", "%", "<b>&", "inst "],
           "threshold": ["5%+2000", "2%+4096", "1%", "off", "off", "3%", None],
           "direction": ["lower", "lower", "lower", "lower", "higher", "lower", "lower"]}


def hand_made(launches: list[dict[str, Any]], results: list[tuple[Any, ...]], test: str | None = None) -> Report:
    """A validated report of ``launches`` (facts beyond the defaults) and ``results`` rows (launch, metric,
    baseline, current, change, status, gated)."""
    n = len(launches)
    table: dict[str, list[Any]] = {
        "kind": ["kernel"] * n, "kernel": [f"k<{i % 3}>" for i in range(n)],
        "demangled": [f'void k<{i % 3}>(float *, "q")' for i in range(n)], "region": [""] * n,
        "ordinal": [i // 3 for i in range(n)], "status": ["unchanged"] * n, "device": ["H100"] * n,
        "launch_change": [None] * n, "test": [test] * n, "path": [None] * n, "line": [None] * n}
    for i, facts in enumerate(launches):
        for key, value in facts.items():
            table[key][i] = value
    columns: dict[str, list[Any]] = {k: [] for k in ("launch", "metric", "baseline", "current", "change", "delta",
                                                     "status", "gated")}
    for launch, metric, base, cur, change, status, gated in sorted(results, key=lambda r: r[0]):
        for key, value in (("launch", launch), ("metric", metric), ("baseline", base), ("current", cur),
                           ("change", change), ("delta", None), ("status", status), ("gated", gated)):
            columns[key].append(value)
    report = empty_report()
    report.update(verdict="fail", summary=summarize(table["status"]), launches=table,  # type: ignore[typeddict-item]
                  metrics=METRICS, results=columns)  # type: ignore[typeddict-item]
    return validate_report(json.loads(dumps(report)), "hand-made")
