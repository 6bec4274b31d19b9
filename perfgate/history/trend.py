"""The PR comment's trend section: for each regressed kernel, its recent trend on the base branch as a sparkline
GitHub renders (block characters, no image), whether the change continues a creep, and accepted changes.

``perfgate publish REPORT --history URL`` appends it to the comment, the check run and the job summary.
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from perfgate.history.accept import kernel_matches, load_acceptances
from perfgate.history.changes import P_VALUE
from perfgate.history.culprits import Culprit, load_culprits, mark_culprits
from perfgate.history.db import History
from perfgate.history.keys import facts_key, function_name, series_kernel, series_key, shown_kernel, with_kernel
from perfgate.history.detect import series_changes
from perfgate.history.series import Series, load_branch
from perfgate.render.formatting import md_escape
from perfgate.report import Report, iter_launches, launch_row, result_rows

TREND_COMMITS = 20  # base-branch commits a trend shows, before the current value
KERNELS_SHOWN = 10  # regressed kernels given a trend line; the rest are counted
BLOCKS = "▁▂▃▄▅▆▇█"


def sparkline(values: Sequence[float]) -> str:
    """Values as block characters, lowest to highest of their own range."""
    low, high = min(values), max(values)
    if high == low:
        return BLOCKS[0] * len(values)
    return "".join(BLOCKS[min(int((v - low) / (high - low) * len(BLOCKS)), len(BLOCKS) - 1)] for v in values)


def _regressed_rows(report: Report) -> list[dict[str, Any]]:
    rows = []
    for index in iter_launches(report, ("regression",)):
        launch = launch_row(report, index)
        kernel = series_kernel(launch["kind"], launch["kernel"], launch["demangled"], launch["grid"], launch["block"])
        rows += [{**row, "kind": launch["kind"], "series_kernel": kernel} for row in result_rows(report, index)
                 if row["status"] == "regression" and row["current"] is not None]
    return rows


def _creep(branch: Any, series: Series, culprits: Sequence[Culprit]) -> str:
    """Whether the base branch's latest commits already moved this series the same (worse) way, with the culprit
    commits ``perfgate bisect --record`` found for those changes."""
    recent = set(branch.commits[int(i)] for i in series.commits[-TREND_COMMITS:])
    found = [c for c in series_changes(branch, series, P_VALUE, 0.0) if c["commit"] in recent]
    worse = [c for c in found if c["direction"] == "regression"]
    if not worse:
        return "no"
    mark_culprits(culprits, branch.name, worse)
    named = [md_escape(c["culprit"]["commit"][:12]) for c in worse if c["culprit"]]
    culprit = f" (culprit {', '.join(named)})" if named else ""
    return f"yes: {len(worse)} earlier regression{'s' if len(worse) != 1 else ''} in {TREND_COMMITS} commits{culprit}"


def trend_markdown(history: History, report: Report, branch_name: str) -> str:
    """The section, or "" when nothing regressed."""
    rows = _regressed_rows(report)
    if not rows:
        return ""
    branch = load_branch(history, branch_name)
    by_key = {facts_key(s.facts): s for s in branch.series}
    acceptances = load_acceptances(history)
    culprits = load_culprits(history)
    lines = [f"#### Trend on `{md_escape(branch_name)}` (last {TREND_COMMITS} commits, then this run)", "",
             "| kernel | metric | trend | base → now | continues a creep | accepted before |", "|---|---|---|---|---|---|"]
    for row in rows[:KERNELS_SHOWN]:
        key = series_key(row["device"], row["test"], row["kind"], row["series_kernel"], row["region"], row["metric"])
        name = md_escape(shown_kernel(row["series_kernel"], row["kind"]) + (f" [{row['region']}]" if row["region"]
                                                                              else ""))
        series = by_key.get(key) or by_key.get(with_kernel(key, function_name(key[3], key[2])))  # a history recorded before: by function name
        if series is None or not len(series.values):
            lines.append(f"| {name} | {md_escape(row['metric'])} | no history | | | |")
            continue
        values = [*series.values[-TREND_COMMITS:].tolist(), float(row["current"])]
        base = float(np.median(series.values[-TREND_COMMITS:]))
        change = f"{base:.4g} → {row['current']:.4g} ({row['current'] / base - 1:+.1%})" if base else ""
        accepted = [a for a in acceptances if all(getattr(a, f) in (None, series.facts[f])
                                                  for f in ("gpu", "test", "region", "metric"))
                    and kernel_matches(a.kernel, series.facts["kernel"], series.facts["kind"])]
        said = "; ".join(f"{md_escape(a.commit[:12])} by {md_escape(a.by)}: {md_escape(a.reason)}"
                         for a in accepted[-2:])
        lines.append(f"| {name} | {md_escape(row['metric'])} | {sparkline(values)} | {change} | "
                     f"{_creep(branch, series, culprits)} | {said} |")
    if len(rows) > KERNELS_SHOWN:
        lines.append(f"\n{len(rows) - KERNELS_SHOWN} more regressed values have a trend in the dashboard.")
    return "\n".join(lines) + "\n"
