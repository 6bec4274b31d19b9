"""The pure parts of publishing: where to publish, what to do with the comment, annotation paths."""

from __future__ import annotations

from typing import Any

import pytest
from helpers.github_server import launch, make_report

from perfgate.errors import ConfigError
from perfgate.publish.body import (
    ALL_CLEAR_TAG,
    FAIL_TAG,
    MARKER,
    CommentPlan,
    annotation_path,
    check_run_requests,
    conclusion,
    find_comment,
    marker,
    plan_comment,
    regression_annotations,
    safe_url,
)
from perfgate.publish.context import resolve_target
from perfgate.render import render_markdown

HEAD = "a" * 40
MERGE = "b" * 40
ENV = {"GITHUB_REPOSITORY": "octo/kernels", "GITHUB_SHA": MERGE, "GITHUB_RUN_ID": "12",
       "GITHUB_SERVER_URL": "https://ghe.example.com", "GITHUB_API_URL": "https://ghe.example.com/api/v3/"}


def pull_request(number: int = 5) -> dict[str, Any]:
    return {"number": number, "pull_request": {"number": number, "head": {"sha": HEAD}}}


def test_pull_request_event_gives_the_head_not_the_merge_commit() -> None:
    target = resolve_target({**ENV, "GITHUB_EVENT_NAME": "pull_request"}, pull_request())
    assert (target.repo, target.pr, target.sha) == ("octo/kernels", 5, HEAD)
    assert target.api_url == "https://ghe.example.com/api/v3"
    assert target.run_url == "https://ghe.example.com/octo/kernels/actions/runs/12"
    assert not target.pr_from_flag


def test_workflow_run_event() -> None:
    event = {"workflow_run": {"head_sha": HEAD, "html_url": "https://ghe.example.com/octo/kernels/actions/runs/3",
                              "pull_requests": [{"number": 9, "head": {"sha": "c" * 40}},
                                                {"number": 4, "head": {"sha": HEAD}}]}}
    target = resolve_target({**ENV, "GITHUB_EVENT_NAME": "workflow_run"}, event)
    assert (target.pr, target.sha, target.event_name) == (4, HEAD, "workflow_run")  # the PR whose head was tested
    assert target.run_url is not None and target.run_url.endswith("/runs/3")  # the run that uploaded the artifact
    fork = resolve_target({**ENV, "GITHUB_EVENT_NAME": "workflow_run"},
                          {"workflow_run": {"head_sha": HEAD, "pull_requests": []}}, pr=4)
    assert (fork.pr, fork.sha, fork.pr_from_flag) == (4, HEAD, True)


def test_flags_win_and_are_checked() -> None:
    target = resolve_target(ENV, pull_request(), repo="me/other", pr=11, sha=("D" * 40))
    assert (target.repo, target.pr, target.sha) == ("me/other", 11, "d" * 40)
    push = resolve_target(ENV, {"ref": "refs/heads/main"})
    assert (push.pr, push.sha) == (None, MERGE)
    for bad in ({"repo": "no-slash"}, {"repo": "a/b/c"}, {"repo": "a/.."}, {"sha": "123"}, {"pr": 0}):
        with pytest.raises(ConfigError):
            resolve_target(ENV, None, **bad)
    with pytest.raises(ConfigError):
        resolve_target({**ENV, "GITHUB_REPOSITORY": "x y/z"}, None)


@pytest.mark.parametrize("failed, existing, only, clear, expected", [
    (True, None, False, False, CommentPlan("create")),
    (True, "old", True, True, CommentPlan("update")),
    (False, None, False, False, CommentPlan("create")),
    (False, None, True, True, "skip"),
    (False, f"{MARKER}\n{FAIL_TAG}\nx", False, True, CommentPlan("update", all_clear=True)),
    (False, f"{MARKER}\n{FAIL_TAG}\nx", True, True, CommentPlan("update", all_clear=True)),
    (False, f"{MARKER}\n{FAIL_TAG}\nx", True, False, "skip"),
    (False, f"{MARKER}\n{ALL_CLEAR_TAG}\nx", False, True, CommentPlan("update", all_clear=True)),
    (False, f"{MARKER}\nx", False, True, CommentPlan("update")),
    (False, f"{MARKER}\nx", True, True, "skip"),
])
def test_comment_plan(failed: bool, existing: str | None, only: bool, clear: bool, expected: Any) -> None:
    plan = plan_comment(failed, existing, only_on_regression=only, all_clear=clear)
    if expected == "skip":
        assert plan.action == "skip" and plan.reason
    else:
        assert plan == expected


def test_own_comment_needs_marker_at_the_start_and_a_bot_author() -> None:
    bot, human = {"login": "github-actions[bot]", "type": "Bot"}, {"login": "mallory", "type": "User"}
    comments = [{"id": 1, "body": f"quoting {MARKER}", "user": bot}, {"id": 2, "body": f"{MARKER}\nx", "user": human},
                {"id": 3, "body": "<!-- perfgate:comment:t4 -->\nx", "user": bot},
                {"id": 4, "body": f"{MARKER}\nours", "user": bot}, {"id": 5, "body": f"{MARKER}\nlater", "user": bot}]
    def found(mark: str, author: str | None) -> Any:
        comment = find_comment(comments, mark, author)
        return comment["id"] if comment else None

    assert found(MARKER, None) == 4
    assert found(marker("t4"), None) == 3
    assert found(MARKER, "mallory") == 2  # --comment-author, for personal tokens
    with pytest.raises(ConfigError):
        marker("a -->")


def test_annotation_paths_stay_in_the_repository() -> None:
    assert annotation_path("tests/test_a.py", None) == "tests/test_a.py"
    assert annotation_path("./tests/../tests/test_a.py", None) == "tests/test_a.py"
    assert annotation_path("/w/repo/tests/test_a.py", "/w/repo") == "tests/test_a.py"
    assert annotation_path("C:\\w\\repo\\tests\\x.py", "C:\\w\\repo") == "tests/x.py"
    for outside in ("/etc/passwd", "../secret.py", "/w/repo2/x.py", "C:\\x.py", "", None):
        assert annotation_path(outside, "/w/repo") is None


def test_annotations_and_conclusions() -> None:
    report = make_report([launch("slow", test="t::a", path="tests/t.py", line=12),
                          launch("nowhere"),  # no file: no annotation
                          launch("fine", status="unchanged", path="tests/t.py", line=20)])
    (note,) = regression_annotations(report)
    assert note == {"path": "tests/t.py", "start_line": 12, "end_line": 12, "annotation_level": "failure",
                    "title": "perfgate: slow regressed on Tesla T4",
                    "message": "slow: duration 100 µs → 150 µs (+50.0%, limit 5% + 1 µs)"}
    assert conclusion(report) == "failure"
    assert conclusion(make_report([launch("x", status="unchanged")])) == "success"
    assert conclusion(make_report([])) == "neutral"
    create, updates = check_run_requests(report, render_markdown(report), name="perfgate", head_sha=HEAD,
                                         report_url="javascript:alert(1)")
    assert "details_url" not in create and updates == []
    assert create["output"]["annotations"] == [note]


def test_safe_url() -> None:
    assert safe_url("https://github.com/o/r/actions/runs/1") == "https://github.com/o/r/actions/runs/1"
    assert safe_url("https://x.example/a b)(<>\"") == "https://x.example/a%20b%29%28%3C%3E%22"
    assert safe_url("javascript:alert(1)") is None and safe_url("") is None
