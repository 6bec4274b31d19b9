"""A branch's series read back from the history, one value per commit in the order the commits were measured.

A commit measured several times (reruns) has the median of its runs; commits are ordered by their first
recording on the branch.
"""

from __future__ import annotations

import itertools
from typing import Iterator, NamedTuple, Sequence

import numpy as np

from perfgate.history.db import History, check_sqlite_values, damaged
from perfgate.history.keys import SERIES_FIELDS

SERIES_COLUMNS = (*SERIES_FIELDS, "unit", "direction")


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


def commit_order(history: History, branch: str,
                 check_points: bool = True) -> tuple[list[str], list[str], dict[int, int]]:
    """The branch's commits in the order first measured, their times, and each run's commit index. Every reader of
    a branch starts here, so a SQLite history's values are checked here first (``check_points`` False: a reader
    of only some points checks those with ``checked_points``)."""
    check_sqlite_values(history, check_points)
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
    return Branch(branch, commits, times, load_series(history, branch, run_commit))


def load_series(history: History, branch: str, run_commit: dict[int, int],
                ids: Sequence[int] | None = None, with_facts: bool = True) -> list[Series]:
    """The series of ``ids`` (None: every one) with their points on ``branch``; ``run_commit`` from
    ``commit_order``; ``with_facts`` False: the Series carry no facts (a search needs none). Read a million points
    at a time into arrays: a Python tuple per point would cost GBs."""
    facts = series_facts(history, ids) if with_facts else None
    if not run_commit:
        return []
    lookup = np.full(max(run_commit) + 1, -1, dtype=np.int64)
    lookup[list(run_commit)] = list(run_commit.values())
    select = ("SELECT p.series_id, p.run_id, p.value FROM perfgate_points p JOIN perfgate_runs r ON r.id = p.run_id "
              "WHERE r.branch = ?")
    parts: list[np.ndarray] = []
    if ids is None:
        parts += _read_points(history, _whole_branch(history, select, len(run_commit)), (branch,))
    else:
        wanted = sorted(ids)
        by_series = _points_first(select)  # each series' points by the key's index (not each run's)
        for start in range(0, len(wanted), IDS_PER_QUERY):
            chunk = wanted[start:start + IDS_PER_QUERY]
            parts += _read_points(history, f"{by_series} AND p.series_id IN ({', '.join('?' * len(chunk))})",
                                  (branch, *chunk))
    if not parts:
        return []
    table = np.concatenate(parts)
    series_ids = table[:, 0].astype(np.int64)
    commit_of = lookup[table[:, 1].astype(np.int64)]
    return list(split_series(series_ids, commit_of, table[:, 2], facts))


def series_facts(history: History, ids: Sequence[int] | None = None) -> dict[int, dict[str, str]]:
    """The SERIES_COLUMNS of the series of ``ids`` (None: every one), by id."""
    select = f"SELECT id, {', '.join(SERIES_COLUMNS)} FROM perfgate_series"
    if ids is None:
        rows = history.query(select)
    else:
        wanted = sorted(set(ids))
        rows = [row for start in range(0, len(wanted), IDS_PER_QUERY) for row in history.query(
            f"{select} WHERE id IN ({', '.join('?' * len(wanted[start:start + IDS_PER_QUERY]))})",
            wanted[start:start + IDS_PER_QUERY])]
    return {int(row[0]): dict(zip(SERIES_COLUMNS, row[1:])) for row in rows}


def _whole_branch(history: History, select: str, runs: int) -> str:
    """``select`` for every point of a branch. SQLite, which keeps no statistics, reads such a join by the points'
    run index, a lookup per point (4x the time of reading the table in order); where the branch holds most runs,
    a CROSS JOIN (SQLite's way to fix the order) scans the points and looks each run up by its id."""
    if history.dialect != "sqlite" or runs * 2 < int(history.query("SELECT count(*) FROM perfgate_runs")[0][0]):
        return select
    return _points_first(select)


def _points_first(select: str) -> str:
    """``select`` with the points as SQLite's outer loop (its CROSS JOIN keeps the order written; PostgreSQL plans
    it as any join), each point's run looked up by its id."""
    return select.replace("JOIN perfgate_runs r ON r.id = p.run_id WHERE", "CROSS JOIN perfgate_runs r WHERE r.id = p.run_id AND")


IDS_PER_QUERY = 500  # series ids per statement: bounds its parameters
FETCH_ROWS = 1_000_000


def _read_points(history: History, statement: str, params: Sequence[object]) -> list[np.ndarray]:
    parts = []
    with history.reading(statement, params) as cursor:
        while True:
            rows = cursor.fetchmany(FETCH_ROWS)
            if not rows:
                break
            parts.append(checked_points(history, rows))
    return parts


def checked_points(history: History, rows: Sequence[Sequence[object]]) -> np.ndarray:
    """(series id, run id, value) rows as an array; InputError for a value no perfgate wrote (text, a number
    past a double's range, an id that is no integer): what ``check_sqlite_values`` refuses, for these rows."""
    try:
        # fromiter over the flattened rows: a third of the time of np.array on a list of tuples
        table = np.fromiter(itertools.chain.from_iterable(rows), dtype=float, count=3 * len(rows)).reshape(-1, 3)
    except (TypeError, ValueError):
        raise damaged(history, "perfgate_points holds a value of the wrong type") from None
    if not np.all(np.isfinite(table)) or np.any(table[:, :2] != np.round(table[:, :2])):
        raise damaged(history, "perfgate_points holds a value of the wrong type")
    return table


def split_series(series_ids: np.ndarray, commit_of: np.ndarray, values: np.ndarray,
                 facts: dict[int, dict[str, str]] | None) -> Iterator[Series]:
    """One Series per id: its points sorted by commit, reruns of a commit folded into their median (``facts``
    None: the Series carry none)."""
    if not len(series_ids):
        return
    order = np.lexsort((commit_of, series_ids))
    series_ids, commit_of, values = series_ids[order], commit_of[order], values[order]
    bounds = np.flatnonzero(np.diff(series_ids)) + 1
    reruns = bool(np.any((series_ids[1:] == series_ids[:-1]) & (commit_of[1:] == commit_of[:-1])))
    for start, stop in zip(np.r_[0, bounds].tolist(), np.r_[bounds, len(series_ids)].tolist()):
        commits, value = commit_of[start:stop], values[start:stop]
        if reruns and len(commits) > 1 and np.any(commits[1:] == commits[:-1]):
            unique, first = np.unique(commits, return_index=True)
            value = np.array([np.median(part) for part in np.split(value, first[1:])])
            commits = unique
        series_id = int(series_ids[start])
        yield Series(series_id, {} if facts is None else facts[series_id], commits, value)


def relative(before: float, after: float) -> float:
    """The change from ``before`` to ``after`` as a fraction (0.25: 25% more)."""
    return after / before - 1.0 if before else (0.0 if after == before else float("inf"))
