"""Where to publish: repository, pull request and commit, from the Actions environment and event.

Pure over a dict environment and a parsed event payload, so every case is a plain test. Facts
(GitHub Actions docs, "Events that trigger workflows" and "Variables"):
- ``pull_request``: ``GITHUB_SHA`` is a test merge commit; the PR's head is
  ``pull_request.head.sha`` and its number ``pull_request.number`` in the payload.
- ``workflow_run``: the payload's ``workflow_run.head_sha`` is the commit the triggering run tested;
  ``workflow_run.pull_requests`` is empty when the PR comes from a fork, hence ``--pr`` (read from
  the artifact) — a number that comes from an artifact is untrusted and is checked against the PR.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from perfgate.errors import ConfigError, InputError
from perfgate.limits import check_regular_file, parse_json
from perfgate.publish import DEFAULT_API_URL

_REPO = re.compile(r"^[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+$")
_SHA = re.compile(r"^[0-9a-f]{40}([0-9a-f]{24})?$")  # SHA-1, or SHA-256 repositories


@dataclass(frozen=True)
class Target:
    repo: str | None
    pr: int | None
    sha: str | None
    api_url: str
    run_url: str | None  # a page holding the full report: the run that uploaded the artifact
    event_name: str | None
    pr_from_flag: bool  # --pr given: in a workflow_run, check it against the PR's head before commenting
    base: str | None = None  # the PR's base commit, for the comment's headline (None when not known)


def check_repo(value: str, source: str) -> str:
    if not _REPO.match(value) or value.split("/")[1] in (".", ".."):
        raise ConfigError(f"{source} {value!r} is not OWNER/NAME")
    return value


def check_sha(value: str, source: str) -> str:
    lowered = value.strip().lower()
    if not _SHA.match(lowered):
        raise ConfigError(f"{source} {value!r} is not a full commit SHA (40 hex digits)")
    return lowered


MAX_EVENT_BYTES = 64 << 20  # GitHub caps a webhook's payload at 25 MB
_EVENT_FIX = "check GITHUB_EVENT_PATH"


def load_event(path: str | None) -> dict[str, Any] | None:
    """The event payload at ``GITHUB_EVENT_PATH`` (None outside Actions): a regular file the runner wrote, read
    as any JSON input is (finite, shallow), so that a device, a FIFO or a deep document is one line, not a hang."""
    if not path:
        return None
    file = Path(path)
    try:
        check_regular_file(file, "the event payload", _EVENT_FIX, MAX_EVENT_BYTES)
        text = file.read_text(encoding="utf-8")
    except OSError as exc:
        raise InputError(path, f"cannot read the event payload ({exc.strerror})", _EVENT_FIX) from None
    except UnicodeDecodeError:
        raise InputError(path, "the event payload is not JSON", _EVENT_FIX) from None
    try:
        document = parse_json(text, path, _EVENT_FIX)
    except InputError as exc:
        raise InputError(path, f"the event payload is not JSON ({exc.problem})", _EVENT_FIX) from None
    return document if isinstance(document, dict) else None


def _get(document: Any, *keys: str) -> Any:
    for key in keys:
        if not isinstance(document, dict):
            return None
        document = document.get(key)
    return document


def _run_prs(event: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The pull requests of a ``workflow_run`` payload (none where ``pull_requests`` is no list of objects)."""
    prs = _get(event, "workflow_run", "pull_requests")
    return [p for p in prs if isinstance(p, dict)] if isinstance(prs, list) else []


def _pr_number(value: Any) -> int | None:
    """A pull request number from the payload: a positive int (JSON ``true`` is not one), below 2**31."""
    return value if type(value) is int and 0 < value < 2**31 else None


def _from_event(event: Mapping[str, Any] | None) -> tuple[int | None, str | None, str | None]:
    """(PR number, head sha, page of the run that holds the report) as the payload tells them."""
    if not event:
        return None, None, None
    pull = event.get("pull_request")
    if isinstance(pull, dict):
        number = pull.get("number", event.get("number"))
        return _pr_number(number), _get(pull, "head", "sha"), None
    run = event.get("workflow_run")
    if isinstance(run, dict):
        head = run.get("head_sha") if isinstance(run.get("head_sha"), str) else None
        prs = [p for p in _run_prs(event) if _pr_number(p.get("number"))]
        # Several PRs can share a branch: take the one whose head is the tested commit.
        matching = [p for p in prs if _get(p, "head", "sha") == head] or prs
        url = run.get("html_url") if isinstance(run.get("html_url"), str) else None
        return (matching[0]["number"] if matching else None), head, url
    return None, None, None


def _base_from_event(event: Mapping[str, Any] | None, head: str | None) -> str | None:
    """The pull request's base commit: ``pull_request.base.sha``, or that of the ``workflow_run``'s PR."""
    if not event:
        return None
    base = _get(event, "pull_request", "base", "sha")
    if base is None:
        prs = _run_prs(event)
        matching = [p for p in prs if _get(p, "head", "sha") == head] or prs
        base = _get(matching[0], "base", "sha") if matching else None
    return base.lower() if isinstance(base, str) and _SHA.match(base.lower()) else None


def commits_from_environment(env: Mapping[str, str]) -> tuple[str | None, str | None]:
    """(base, head) of the change a GitHub Actions job measures, from its event payload; (None, None) outside
    Actions or when the payload cannot be read (a headline is no reason to fail)."""
    try:
        event = load_event(env.get("GITHUB_EVENT_PATH"))
    except InputError:
        event = None
    _, head, _ = _from_event(event)
    head = head if isinstance(head, str) and _SHA.match(head.lower()) else None
    if head is None and env.get("GITHUB_SHA") and _SHA.match(env["GITHUB_SHA"].lower()):
        head = env["GITHUB_SHA"]
    return _base_from_event(event, head), head.lower() if head else None


def resolve_target(env: Mapping[str, str], event: Mapping[str, Any] | None, *, repo: str | None = None,
                   pr: int | None = None, sha: str | None = None) -> Target:
    """Flags win over the event payload, which wins over ``GITHUB_SHA`` (a merge commit on PRs)."""
    event_pr, event_sha, event_run_url = _from_event(event)
    repo_value = repo or env.get("GITHUB_REPOSITORY") or None
    if repo_value is not None:
        repo_value = check_repo(repo_value, "--repo" if repo else "GITHUB_REPOSITORY")
    if sha:
        head: str | None = check_sha(sha, "--sha")
    elif event_sha:
        head = check_sha(str(event_sha), "the event payload's head sha")
    elif env.get("GITHUB_SHA"):
        head = check_sha(env["GITHUB_SHA"], "GITHUB_SHA")
    else:
        head = None
    if pr is not None and _pr_number(pr) is None:
        raise ConfigError(f"--pr {pr} is not a pull request number")
    server = (env.get("GITHUB_SERVER_URL") or "https://github.com").rstrip("/")
    run_url = event_run_url
    if run_url is None and env.get("GITHUB_RUN_ID") and repo_value:
        run_url = f"{server}/{repo_value}/actions/runs/{env['GITHUB_RUN_ID']}"
    return Target(
        repo=repo_value,
        pr=pr if pr is not None else event_pr,
        sha=head,
        api_url=(env.get("GITHUB_API_URL") or DEFAULT_API_URL).rstrip("/"),
        run_url=run_url,
        event_name=env.get("GITHUB_EVENT_NAME") or ("workflow_run" if event and "workflow_run" in event else None),
        pr_from_flag=pr is not None,
        base=_base_from_event(event, head),
    )
