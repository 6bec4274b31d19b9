"""Accepted changes: who accepted the change a commit made to which series, and why.

An acceptance names a commit and optional filters (GPU, test, kernel, region, metric; none = any); it covers the
change points of the matching series at that commit. ``history changes``, the dashboard and the PR comment show
it beside the change, so a regression that was let through keeps its reason.
"""

from __future__ import annotations

import subprocess
from typing import Mapping, NamedTuple, Sequence

from perfgate.errors import InputError
from perfgate.history.db import History

FILTERS = ("gpu", "test", "kernel", "region", "metric")


class Acceptance(NamedTuple):
    commit: str
    gpu: str | None
    test: str | None
    kernel: str | None
    region: str | None
    metric: str | None
    reason: str
    by: str
    when: str

    def covers(self, series: Mapping[str, str], commit: str) -> bool:
        """Whether this acceptance is of ``series``' change at ``commit`` (a commit may be given abbreviated)."""
        if not (commit.startswith(self.commit) or self.commit.startswith(commit)):
            return False
        return all(getattr(self, name) in (None, series.get(name)) for name in FILTERS)


def accepted_by(env: Mapping[str, str]) -> str:
    """Who accepts: the GitHub actor in Actions, else git's user.name, else the login name."""
    if env.get("GITHUB_ACTOR"):
        return env["GITHUB_ACTOR"]
    try:
        name = subprocess.run(["git", "config", "user.name"], capture_output=True, text=True, timeout=30,
                              check=False).stdout.strip()
    except (OSError, subprocess.TimeoutExpired):
        name = ""
    return name or env.get("USER") or env.get("USERNAME") or "unknown"


def record_acceptance(history: History, acceptance: Acceptance) -> int:
    """Store ``acceptance``; returns how many recorded series it matches (refused when none: a typo)."""
    if not acceptance.reason.strip():
        raise InputError("--reason", "is empty", "say why the change is accepted")
    clauses = [f"{name} = ?" for name in FILTERS if getattr(acceptance, name) is not None]
    values = [getattr(acceptance, name) for name in FILTERS if getattr(acceptance, name) is not None]
    where = " WHERE " + " AND ".join(clauses) if clauses else ""
    with history.transaction():
        matched = int(history.query(f"SELECT COUNT(*) FROM perfgate_series{where}", values)[0][0])
        if not matched:
            raise InputError("perfgate accept", "no recorded series matches the filters given",
                             "check --gpu/--test/--kernel/--region/--metric against 'perfgate history changes'")
        history.execute(
            "INSERT INTO perfgate_acceptances (commit_sha, gpu, test, kernel, region, metric, reason, accepted_by, "
            "accepted_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (acceptance.commit, acceptance.gpu, acceptance.test, acceptance.kernel, acceptance.region,
             acceptance.metric, acceptance.reason, acceptance.by, acceptance.when))
    return matched


def load_acceptances(history: History) -> list[Acceptance]:
    rows: Sequence[tuple[str, ...]] = history.query(
        "SELECT commit_sha, gpu, test, kernel, region, metric, reason, accepted_by, accepted_at "
        "FROM perfgate_acceptances ORDER BY accepted_at, id")
    return [Acceptance(*row) for row in rows]


def acceptance_of(acceptances: Sequence[Acceptance], series: Mapping[str, str], commit: str) -> Acceptance | None:
    """The latest acceptance that covers ``series``' change at ``commit``."""
    found = [a for a in acceptances if a.covers(series, commit)]
    return found[-1] if found else None
