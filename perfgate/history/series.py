"""A branch's series read back from the history, one value per commit in the order the commits were measured.

A commit measured several times (reruns) has the median of its runs; commits are ordered by their first
recording on the branch.
"""

from __future__ import annotations

from typing import Iterator, NamedTuple

import numpy as np

from perfgate.history.db import History, check_sqlite_values

SERIES_COLUMNS = ("gpu", "test", "kind", "kernel", "region", "metric", "unit", "direction")


class Series(NamedTuple):
    id: int
    facts: dict[str, str]  # SERIES_COLUMNS
    commits: np.ndarray  # int: indexes into Branch.commits
    values: np.ndarray  # float: one per commit (median of its runs)


class Branch(NamedTuple):
    name: str
    commits: list[str]  # in measuring order
    times: list[str]  # first recording of each commit
    series: list[Series]


def commit_order(history: History, branch: str) -> tuple[list[str], list[str], dict[int, int]]:
    """The branch's commits in the order first measured, their times, and each run's commit index. Every reader of
    a branch starts here, so a SQLite history's values are checked here first."""
    check_sqlite_values(history)
    runs = history.query("SELECT id, commit_sha, recorded_at FROM perfgate_runs WHERE branch = ? "
                         "ORDER BY recorded_at, id", (branch,))
    commits: dict[str, int] = {}
    times: list[str] = []
    run_commit: dict[int, int] = {}
    for run_id, commit, when in runs:
        if commit not in commits:
            commits[commit] = len(commits)
            times.append(when)
        run_commit[int(run_id)] = commits[commit]
    return list(commits), times, run_commit


def load_branch(history: History, branch: str) -> Branch:
    """Every series with points on ``branch``."""
    commits, times, run_commit = commit_order(history, branch)
    facts = {int(row[0]): dict(zip(SERIES_COLUMNS, row[1:])) for row in history.query(
        f"SELECT id, {', '.join(SERIES_COLUMNS)} FROM perfgate_series")}
    rows = history.query("SELECT p.series_id, p.run_id, p.value FROM perfgate_points p "
                         "JOIN perfgate_runs r ON r.id = p.run_id WHERE r.branch = ?", (branch,))
    if not rows:
        return Branch(branch, commits, times, [])
    table = np.array(rows, dtype=float)
    series_ids = table[:, 0].astype(np.int64)
    commit_of = np.array([run_commit[int(r)] for r in table[:, 1]], dtype=np.int64)
    return Branch(branch, commits, times, list(_split(series_ids, commit_of, table[:, 2], facts)))


def _split(series_ids: np.ndarray, commit_of: np.ndarray, values: np.ndarray,
           facts: dict[int, dict[str, str]]) -> Iterator[Series]:
    """One Series per id: its points sorted by commit, reruns of a commit folded into their median."""
    order = np.lexsort((commit_of, series_ids))
    series_ids, commit_of, values = series_ids[order], commit_of[order], values[order]
    bounds = np.flatnonzero(np.diff(series_ids)) + 1
    for start, stop in zip(np.r_[0, bounds], np.r_[bounds, len(series_ids)]):
        commits, value = commit_of[start:stop], values[start:stop]
        if len(commits) > 1 and np.any(commits[1:] == commits[:-1]):
            unique, first = np.unique(commits, return_index=True)
            value = np.array([np.median(part) for part in np.split(value, first[1:])])
            commits = unique
        yield Series(int(series_ids[start]), facts[int(series_ids[start])], commits, value)


def relative(before: float, after: float) -> float:
    """The change from ``before`` to ``after`` as a fraction (0.25: 25% more)."""
    return after / before - 1.0 if before else (0.0 if after == before else float("inf"))
