"""Whether a kernel's machine code changed at a change point: the ``code_id`` its points hold (``perfgate.collect
.sass``; schema version 6) at the change's previous commit and at its commit.

Same code on both sides says the change is not the kernel's code (its input, launch configuration, a library or the
runner); other code says where to look first. A point with no ``code_id`` (a report without SASS, a benchmark, a
history recorded before version 6) says nothing, and neither side is guessed.
"""

from __future__ import annotations

from typing import Any, Iterable, Mapping

from perfgate.history.db import History

PAIRS = 400  # (series, run) pairs per statement: bounds its parameters


def mark_code(history: History, branch: str, by_series: Mapping[int, Iterable[dict[str, Any]]]) -> None:
    """Each change point's ``code``: ``{"before", "after", "changed"}`` (a side's code_id(s), space-separated, or
    None where not recorded; ``changed`` None unless both are), or None where neither side is recorded."""
    wanted = {sid: list(changes) for sid, changes in by_series.items()}
    wanted = {sid: changes for sid, changes in wanted.items() if changes}
    if not wanted:
        return
    runs: dict[str, list[int]] = {}
    for run_id, commit in history.query("SELECT id, commit_sha FROM perfgate_runs WHERE branch = ?", (branch,)):
        runs.setdefault(str(commit), []).append(int(run_id))
    commit_of = {run: commit for commit, ids in runs.items() for run in ids}
    # each side's points looked up by their key, one by one (SQLite's CROSS JOIN keeps the pairs the outer loop):
    # a join of runs and points judged 100 series x every commit of their changes a statement
    pairs = sorted({(sid, run) for sid, changes in wanted.items() for change in changes
                    for name in ("commit", "previous_commit") for run in runs.get(change[name], [])})
    codes: dict[tuple[int, str], set[str]] = {}
    for start in range(0, len(pairs), PAIRS):
        part = pairs[start:start + PAIRS]
        for series_id, run_id, code_id in history.query(
                f"WITH wanted (s, r) AS (VALUES {', '.join(['(?, ?)'] * len(part))}) "
                "SELECT p.series_id, p.run_id, p.code_id FROM wanted CROSS JOIN perfgate_points p "
                "WHERE p.series_id = wanted.s AND p.run_id = wanted.r AND p.code_id IS NOT NULL",
                [number for pair in part for number in pair]):
            codes.setdefault((int(series_id), commit_of[int(run_id)]), set()).update(str(code_id).split())
    for sid, changes in wanted.items():
        for change in changes:
            before = codes.get((sid, change["previous_commit"]))
            after = codes.get((sid, change["commit"]))
            change["code"] = None if before is None and after is None else {
                "before": _joined(before), "after": _joined(after),
                "changed": None if before is None or after is None else before != after}


def _joined(found: set[str] | None) -> str | None:
    return None if found is None else " ".join(sorted(found))


def code_note(code: Mapping[str, Any] | None) -> str:
    """One line on a change point's code (empty where nothing is recorded)."""
    if not code:
        return ""
    if code["changed"] is False:
        return f"same code ({_short(code['after'])}) on both sides: not the kernel's code"
    if code["changed"]:
        return f"code changed: {_short(code['before'])} -> {_short(code['after'])}"
    return f"code: {_short(code['before'])} -> {_short(code['after'])}"


def _short(code_ids: str | None) -> str:
    return "not recorded" if code_ids is None else " ".join(part[:12] for part in code_ids.split())
