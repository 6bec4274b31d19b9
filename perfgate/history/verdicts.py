"""The gate's verdict on each series' newest run: what change-point detection cannot see yet.

E-divisive places a change only with enough points on both sides of it (``search.MIN_SIDE`` runs after it; an
exact counter's step must hold for 2 runs), so a regression in a series' newest run is no change point until
later runs confirm it. The gate judged that run when it was measured (against its baseline, or against the
history's reference), and the report recorded says so per launch and metric: the history keeps the worst of it
per point (``perfgate_points.gate``), and the dashboard shows the newest run's verdict where no change point
covers that run.
"""

from __future__ import annotations

from typing import Any, Iterable, Mapping, Sequence

import numpy as np

from perfgate.history.db import History
from perfgate.history.series import Branch, Series, commit_order, relative
from perfgate.vocabulary import Status

# The gate's statuses a point keeps, worst first; the others (unchanged, new, info...) say nothing to chart.
GATE_STATUSES = (Status.REGRESSION.value, Status.INCONCLUSIVE.value, Status.IMPROVEMENT.value)
RUNS_PER_QUERY = 500  # run ids per statement: bounds its parameters


GATE_RANK = {status: rank for rank, status in enumerate(GATE_STATUSES)}


def worse_gate(held: str | None, status: str) -> str:
    """The worse of a point's gate status so far (None: none yet) and one more of its launches' (in GATE_RANK)."""
    return status if held is None or GATE_RANK[status] < GATE_RANK[held] else held


def point_gate(statuses: Iterable[str]) -> str | None:
    """The worst gate status among a point's launches (a kernel launched repeatedly has one per launch)."""
    held: str | None = None
    for status in statuses:
        if status in GATE_RANK:
            held = worse_gate(held, status)
    return held


def newest_gate_verdicts(history: History, branch: Branch, run_commit: dict[int, int] | None = None) -> dict[int, str]:
    """Per series id, the gate's verdict on its newest commit (the latest run of that commit: a rerun's verdict
    replaces the earlier one's), where that verdict was one of ``GATE_STATUSES``."""
    if not branch.series:
        return {}
    if run_commit is None:  # commit_order's, where the caller has it
        _, _, run_commit = commit_order(history, branch.name)
    return gate_verdicts_at(history, {series.id: int(series.commits[-1]) for series in branch.series}, run_commit)


def gate_verdicts_at(history: History, newest: Mapping[int, int], run_commit: dict[int, int]) -> dict[int, str]:
    """``newest_gate_verdicts`` of the series ids of ``newest``, each at its commit index there."""
    commits = set(newest.values())
    runs = sorted(run for run, commit in run_commit.items() if commit in commits)  # ids grow with recording
    per_commit: dict[int, int] = {}
    for run in runs:
        per_commit[run_commit[run]] = per_commit.get(run_commit[run], 0) + 1
    # a commit's only run: its points without a verdict say nothing (most points; not read). A commit run again:
    # every point, as a rerun's point without a verdict replaces the earlier run's verdict.
    latest: dict[tuple[int, int], tuple[int, str | None]] = {}
    for alone in (True, False):
        picked = [run for run in runs if (per_commit[run_commit[run]] == 1) == alone]
        _read_gates(history, picked, run_commit, latest, " AND gate IS NOT NULL" if alone else "")
    flagged = {series_id for (series_id, commit), (_, gate) in latest.items()
               if gate in GATE_STATUSES and newest.get(series_id) == commit}
    if not flagged:  # most series of a large history: not looked at one by one
        return {}
    return {series_id: str(latest[series_id, commit][1]) for series_id, commit in newest.items()
            if series_id in flagged}


def _read_gates(history: History, runs: Sequence[int], run_commit: dict[int, int],
                latest: dict[tuple[int, int], tuple[int, str | None]], where: str) -> None:
    """Each (series, commit)'s latest run among ``runs`` and its point's gate status, into ``latest``."""
    for start in range(0, len(runs), RUNS_PER_QUERY):
        part = runs[start:start + RUNS_PER_QUERY]
        for series_id, run_id, gate in history.query(
                f"SELECT series_id, run_id, gate FROM perfgate_points WHERE run_id IN ({', '.join('?' * len(part))})"
                f"{where}", part):
            key = (int(series_id), run_commit[int(run_id)])
            if key not in latest or latest[key][0] < int(run_id):
                latest[key] = (int(run_id), gate)


def newest_verdict(branch: Branch, series: Series, status: str, changes: Sequence[Mapping[str, Any]],
                   commit_index: Mapping[str, int]) -> dict[str, Any] | None:
    """The newest run's gate verdict as the dashboard shows it: the newest value against the median of the runs
    since the series' last change point; None when a change point already sits at that run (or it is the only
    run). ``commit_index``: each commit's place in ``branch.commits``."""
    last = len(series.values) - 1
    commit = branch.commits[int(series.commits[-1])]
    if last < 1 or any(change["commit"] == commit for change in changes):
        return None
    since = max((int(np.searchsorted(series.commits, commit_index[c["commit"]])) for c in changes), default=0)
    before, after = float(np.median(series.values[since:last])), float(series.values[last])
    return {"commit": commit, "status": status, "before": before, "after": after, "change": relative(before, after),
            "x": int(series.commits[-1])}
