"""Accepted changes: who accepted the change a commit made to which series, and why.

An acceptance names a commit and optional filters (GPU, test, kernel, region, metric; none = any); it covers the
change points of the matching series at that commit. ``history changes``, the dashboard and the PR comment show
it beside the change, so a regression that was let through keeps its reason.
"""

from __future__ import annotations

import subprocess
from typing import TYPE_CHECKING, Mapping, NamedTuple, Sequence

from perfgate.errors import InputError, PerfgateError
from perfgate.history.db import WAIT_SECONDS, History, open_history, sqlite_path
from perfgate.history.keys import function_name, is_kernel, kernel_name
from perfgate.history.record import provenance

if TYPE_CHECKING:
    from perfgate.carried_item import AcceptanceCheck, Carried

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
        return all(getattr(self, name) in (None, series.get(name)) for name in FILTERS if name != "kernel") and \
            kernel_matches(self.kernel, series.get("kernel"), series.get("kind"))


def kernel_matches(accepted: str | None, kernel: str | None, kind: str | None = None) -> bool:
    """Whether an acceptance's ``--kernel`` names a series' kernel (``perfgate.history.keys.series_kernel``): by
    the series' kernel text, its name without the launch configuration, or its function name (which names every
    kernel of the function: each template instantiation and launch configuration); an acceptance of a kernel
    text also covers its function's series of a history recorded before series had identities."""
    if accepted is None or accepted == kernel:
        return True
    if kernel is None or not is_kernel(kind):
        return False
    return accepted in (kernel_name(kernel), function_name(kernel)) or function_name(accepted) == kernel


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


def record_acceptance(history: History, acceptance: Acceptance, *, given_commit: bool = True) -> int:
    """Store ``acceptance``; returns how many recorded series it matches (refused when none: a typo).
    ``given_commit``: the commit was typed (``--commit``), so one never recorded is refused as a typo; the default,
    the checked-out head, is accepted before its run is recorded: a pull request's runs are recorded only in its
    job's copy of the history, and the update that follows the accept, at the same head, reads it."""
    if not acceptance.reason.strip():
        raise InputError("--reason", "is empty", "say why the change is accepted")
    filters = [name for name in FILTERS if name != "kernel" and getattr(acceptance, name) is not None]
    where = " WHERE " + " AND ".join(f"{name} = ?" for name in filters) if filters else ""
    with history.transaction():
        matched = sum(kernel_matches(acceptance.kernel, kernel, kind) for kind, kernel in history.query(
            f"SELECT kind, kernel FROM perfgate_series{where}", [getattr(acceptance, name) for name in filters]))
        if not matched and not int(history.query("SELECT COUNT(*) FROM perfgate_series")[0][0]):
            # a developer's clone: the CI's history (perfgate init keeps it in the Actions cache) is not here
            raise InputError(history.shown, "holds no recorded run: there is no change in it to accept",
                             "pass --db with the history your CI records into; where that is out of reach (perfgate "
                             "init's Actions cache), skip the accept: the committed baseline is what turns the check "
                             "green")
        if not matched:
            raise InputError("perfgate accept", "no recorded series matches the filters given",
                             "check --gpu/--test/--kernel/--region/--metric against 'perfgate history changes'")
        if given_commit and not _recorded(history, acceptance.commit):
            raise InputError("perfgate accept", f"no run of commit {acceptance.commit[:40]!r} is recorded",
                             "accept a commit that 'perfgate history changes' lists, or record its run first")
        history.execute(
            "INSERT INTO perfgate_acceptances (commit_sha, gpu, test, kernel, region, metric, reason, accepted_by, "
            "accepted_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (acceptance.commit, acceptance.gpu, acceptance.test, acceptance.kernel, acceptance.region,
             acceptance.metric, acceptance.reason, acceptance.by, acceptance.when))
    return matched


def _recorded(history: History, commit: str) -> bool:
    """Whether a run of ``commit`` is recorded (either side may be abbreviated, as :meth:`Acceptance.covers`)."""
    commits = [str(row[0]) for row in history.query("SELECT DISTINCT commit_sha FROM perfgate_runs")]
    return any(found.startswith(commit) or commit.startswith(found) for found in commits)


def load_acceptances(history: History) -> list[Acceptance]:
    rows: Sequence[tuple[str, ...]] = history.query(
        "SELECT commit_sha, gpu, test, kernel, region, metric, reason, accepted_by, accepted_at "
        "FROM perfgate_acceptances ORDER BY accepted_at, id")
    return [Acceptance(*row) for row in rows]


def acceptance_of(acceptances: Sequence[Acceptance], series: Mapping[str, str], commit: str) -> Acceptance | None:
    """The latest acceptance that covers ``series``' change at ``commit``."""
    found = [a for a in acceptances if a.covers(series, commit)]
    return found[-1] if found else None


def acceptances_at(url: str, max_time: float = WAIT_SECONDS) -> list[Acceptance]:
    """Every acceptance in the history at ``url``; none where its SQLite file does not exist yet. ``max_time``:
    seconds it may keep the caller waiting."""
    path = sqlite_path(url)
    if path is not None and not path.exists():
        return []
    with open_history(url, create=False, max_time=max_time) as history:
        return load_acceptances(history)


def acceptance_check(acceptances: Sequence[Acceptance], commit: str, test: str | None) -> AcceptanceCheck:
    """What marks the regressions a baseline update carries as accepted: by an acceptance of their series at
    ``commit`` (the commit being updated at; ``test`` None: the acceptances that name no test)."""
    def check(items: Sequence[Carried], gpu: str) -> list[Carried]:
        marked: list[Carried] = []
        for item in items:
            series = {"gpu": gpu, "kernel": item["kernel"], "region": item["region"], "metric": item["metric"],
                      **({"test": test} if test is not None else {})}
            found = acceptance_of(acceptances, series, commit)
            accepted = None if found is None else {"by": found.by, "reason": found.reason, "commit": found.commit}
            marked.append({**item, "accepted": accepted})  # type: ignore[typeddict-item]
        return marked
    return check


def update_check(url: str, test: str | None, env: Mapping[str, str],
                 max_time: float = WAIT_SECONDS) -> tuple[AcceptanceCheck | None, str]:
    """For a baseline update with a history configured: what marks its regressions accepted (at the commit being
    updated at), or None and the line saying why the history could not be read."""
    try:
        acceptances = acceptances_at(url, max_time)
    except PerfgateError as exc:
        return None, f"cannot check acceptances in the history: {exc}"
    return acceptance_check(acceptances, provenance(env, branch="-", when=None).commit, test), ""
