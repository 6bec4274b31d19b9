"""Culprits: the first bad commit ``perfgate bisect --record`` found for a change point of a test.

A change point is found between two recorded commits; when the history records only some commits (nightly runs,
merges), the commit that made the change is one of those between, and bisect names it. It is kept per branch,
test and the change point's commit, and shown beside that change point by ``history changes``, the dashboard and
the PR trend. A test is the series' test (``pytest --perfgate``'s node id) or its kernel (a pytest-benchmark's
full name, which is its node id).
"""

from __future__ import annotations

from typing import Any, Iterable, Mapping, NamedTuple, Sequence

from perfgate.history.db import History


class Culprit(NamedTuple):
    branch: str
    test: str
    change_commit: str
    culprit: str
    good: str
    runs: int
    when: str

    def covers(self, change: Mapping[str, Any]) -> bool:
        """Whether this culprit is of ``change`` (a change point of ``history changes``)."""
        return change.get("commit") == self.change_commit and self.test in (change.get("test"), change.get("kernel"))


def of_test(change: Mapping[str, Any], test: str) -> bool:
    """Whether the change point is of ``test``'s series (its test, or its kernel for a pytest-benchmark)."""
    return test in (change.get("test"), change.get("kernel"))


def record_culprit(history: History, culprit: Culprit) -> None:
    with history.transaction():
        history.execute(
            "INSERT INTO perfgate_culprits (branch, test, change_commit, culprit, good, runs, recorded_at) "
            "VALUES (?, ?, ?, ?, ?, ?, ?)", tuple(culprit))


def load_culprits(history: History) -> list[Culprit]:
    rows: Sequence[tuple[Any, ...]] = history.query(
        "SELECT branch, test, change_commit, culprit, good, runs, recorded_at FROM perfgate_culprits "
        "ORDER BY recorded_at, id")
    return [Culprit(str(r[0]), str(r[1]), str(r[2]), str(r[3]), str(r[4]), int(r[5]), str(r[6])) for r in rows]


def mark_culprits(culprits: Sequence[Culprit], branch: str, changes: Iterable[dict[str, Any]]) -> None:
    """Each change point's ``culprit`` (the latest recorded for it on ``branch``), or None."""
    mine = [c for c in culprits if c.branch == branch]
    for change in changes:
        found = [c for c in mine if c.covers(change)]
        change["culprit"] = None if not found else {"commit": found[-1].culprit, "good": found[-1].good,
                                                     "runs": found[-1].runs, "when": found[-1].when}
