"""``perfgate history changes``: the change points of every series of a branch, as text, Markdown or JSON.

A creep (several same-direction changes in a row, each small enough to pass a PR gate) shows on each of its
later changes as ``creep: true`` with ``cumulative``: the change from before the first one of the run.
"""

from __future__ import annotations

import json
import math
from typing import Any, Sequence

from perfgate.history.accept import acceptance_of, load_acceptances
from perfgate.history.changes import P_VALUE, change_points
from perfgate.history.db import History
from perfgate.history.series import Branch, Series, load_branch, relative
from perfgate.render.formatting import md_escape
from perfgate.text import inert, inert_json

CHANGE_FIELDS = ("gpu", "test", "kind", "kernel", "region", "metric", "unit", "commit", "previous_commit", "time",
                 "change", "direction", "before", "after", "confidence", "p_value", "exact", "creep", "cumulative",
                 "accepted")


def direction_word(change: float, direction: str) -> str:
    """regression, improvement, or change (a metric that is neither better nor worse either way)."""
    if direction == "lower":
        return "regression" if change > 0 else "improvement"
    if direction == "higher":
        return "regression" if change < 0 else "improvement"
    return "change"


def series_changes(branch: Branch, series: Series, p_value: float, min_change: float) -> list[dict[str, Any]]:
    """The change points of one series as JSON-ready objects, creeps marked."""
    found: list[dict[str, Any]] = []
    run_start: float | None = None
    for point in change_points(series.values, p_value=p_value, min_change=min_change):
        change = relative(point.before, point.after)
        word = direction_word(change, series.facts["direction"])
        previous = found[-1] if found else None
        continues = previous is not None and previous["direction"] == word and word != "change"
        run_start = run_start if continues and run_start is not None else point.before
        commit_index = int(series.commits[point.position])
        found.append({
            **{name: series.facts[name] for name in ("gpu", "test", "kind", "kernel", "region", "metric", "unit")},
            "commit": branch.commits[commit_index],
            "previous_commit": branch.commits[int(series.commits[point.position - 1])],
            "time": branch.times[commit_index], "change": change, "direction": word, "before": point.before,
            "after": point.after, "confidence": 1.0 - point.p_value, "p_value": point.p_value, "exact": point.exact,
            "creep": continues, "cumulative": relative(run_start, point.after), "accepted": None})
        if continues:
            previous["creep"] = True  # type: ignore[index]
    return found


def changes_by_series(history: History, branch: str, p_value: float = P_VALUE,
                      min_change: float = 0.0) -> tuple[Branch, dict[int, list[dict[str, Any]]]]:
    """The branch's series and each one's change points, in commit order, accepted ones marked."""
    loaded = load_branch(history, branch)
    acceptances = load_acceptances(history)
    found: dict[int, list[dict[str, Any]]] = {}
    for series in loaded.series:
        changes = series_changes(loaded, series, p_value, min_change)
        for change in changes:
            accepted = acceptance_of(acceptances, change, change["commit"])
            if accepted is not None:
                change["accepted"] = {"by": accepted.by, "reason": accepted.reason, "when": accepted.when}
        found[series.id] = changes
    return loaded, found


def find_changes(history: History, branch: str, p_value: float = P_VALUE,
                 min_change: float = 0.0) -> list[dict[str, Any]]:
    """Every change point of ``branch``, the most recent first."""
    _, by_series = changes_by_series(history, branch, p_value, min_change)
    found = [change for changes in by_series.values() for change in changes]
    found.sort(key=lambda c: (c["time"], c["gpu"], c["test"], c["kernel"], c["region"], c["metric"]), reverse=True)
    return found


def _finite(value: Any) -> Any:
    return None if isinstance(value, float) and not math.isfinite(value) else value


def _name(change: dict[str, Any]) -> str:
    if change["kind"] == "region":
        launch = f"region {change['region'] or '(all)'}"
    else:
        launch = change["kernel"] + (f" [{change['region']}]" if change["region"] else "")
    return f"{launch} ({change['test']}, {change['gpu']})"


def _creep_note(change: dict[str, Any]) -> str:
    return f"; creep: {change['cumulative']:+.1%} in all" if change["creep"] else ""


def render_changes(changes: Sequence[dict[str, Any]], fmt: str) -> str:
    if fmt == "json":  # a change from 0 is infinite: null in JSON, which has no infinity
        return inert_json(json.dumps([{name: _finite(c[name]) for name in CHANGE_FIELDS} for c in changes], indent=1,
                                     allow_nan=False, default=str)) + "\n"
    if fmt == "md":
        return _markdown(changes)
    if not changes:
        return "no change points\n"
    lines = []
    for c in changes:
        exact = " exactly" if c["exact"] else ""
        lines.append(inert(f"{c['direction'].upper()} {c['change']:+.1%} {c['metric']} {_name(c)} at "
                           f"{c['commit'][:12]}{exact}: {c['before']:.6g} -> {c['after']:.6g} (confidence "
                           f"{c['confidence']:.1%}{_creep_note(c)})", 600))
        if c["accepted"]:
            lines.append(inert(f"  accepted by {c['accepted']['by']}: {c['accepted']['reason']}", 600))
    return "\n".join(lines) + "\n"


def _markdown(changes: Sequence[dict[str, Any]]) -> str:
    if not changes:
        return "No change points.\n"
    lines = ["| | change | metric | kernel | commit | before → after | confidence | note |",
             "|---|---:|---|---|---|---|---:|---|"]
    for c in changes:
        note = []
        if c["creep"]:
            note.append(f"creep, {c['cumulative']:+.1%} in all")
        if c["accepted"]:
            note.append(f"accepted by {md_escape(c['accepted']['by'])}: {md_escape(c['accepted']['reason'])}")
        lines.append(f"| {c['direction']} | {c['change']:+.1%} | {md_escape(c['metric'])} | {md_escape(_name(c))} "
                      f"| {md_escape(c['commit'][:12])} | {c['before']:.6g} → {c['after']:.6g} | "
                      f"{c['confidence']:.1%} | {'; '.join(note)} |")
    return "\n".join(lines) + "\n"
