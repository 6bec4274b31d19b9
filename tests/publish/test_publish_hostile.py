"""A report a fork wrote, published by the real ``perfgate publish`` into the loopback GitHub: nothing in it
reaches the comment, the check run or the job summary as HTML, a mention, a line of its own or a marker, and a
later ``--all-clear`` run is not fooled by a forged verdict marker."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from helpers.github_server import (
    BOT,
    PR,
    REPO,
    FakeGitHub,
    actions_env,
    assert_clean,
    github,
    pull_request_event,
    run_publish,
    write_report,
)

from perfgate.publish.body import ALL_CLEAR_TAG, FAIL_TAG, MARKER, header_tags, is_own_comment, plan_comment
from perfgate.render.untrusted import html_text, md_inline, plain_line, terminal_text
from helpers.hostile import HOSTILE, hostile_report

__all__ = ["github"]


def assert_inert(markdown: str) -> None:
    """No raw tag or comment, no mention, no control character, and only perfgate's own marker lines."""
    for raw in ("<img", "<!-- hide", "@octocat", "@org/team", "\x1b", "\u202e", "\u2028", "`"):
        assert raw not in markdown, (raw, markdown[:2000])
    assert not re.search(r"^#+ ✅", markdown, re.M), "a forged heading"
    tags = [line for line in markdown.splitlines() if "<!--" in line]
    assert all(re.fullmatch(r"<!-- perfgate:[a-z:=-]+ -->", line) for line in tags), tags
    assert markdown.count("<!--") == len(tags)


@pytest.mark.parametrize("fail", [True, False])
def test_a_hostile_report_is_published_inert(github: FakeGitHub, tmp_path: Path, fail: bool) -> None:
    report = write_report(tmp_path, hostile_report(fail))
    run = run_publish(report, actions_env(github, tmp_path, event=pull_request_event(tmp_path)))
    assert run.returncode == 0, run.output
    assert_clean(run)
    (comment,) = github.comments_on(REPO, PR)
    body = comment["body"]
    assert_inert(body)
    assert header_tags(body) == ({MARKER, FAIL_TAG} if fail else {MARKER})
    assert_inert((tmp_path / "step_summary.md").read_text())
    (check,) = github.check_runs.values()
    for field in ("summary", "text"):
        assert_inert(check["output"][field])
    assert "\x1b" not in check["output"]["title"] and "\n" not in check["output"]["title"]
    for note in check["annotations"]:
        assert "\x1b" not in note["message"] and "\n" not in note["message"]


def test_a_forged_marker_does_not_fool_a_later_all_clear(github: FakeGitHub, tmp_path: Path) -> None:
    # First run: no regression, but the report's text holds the FAIL and ALL-CLEAR tags.
    env = actions_env(github, tmp_path, event=pull_request_event(tmp_path))
    first = run_publish(write_report(tmp_path, hostile_report(False), "first.json"), env)
    assert first.returncode == 0, first.output
    # Second run with --all-clear: the earlier comment never reported a regression, so no all-clear.
    second = run_publish(write_report(tmp_path, hostile_report(False), "second.json"), env, "--all-clear")
    assert second.returncode == 0, second.output
    (comment,) = github.comments_on(REPO, PR)
    assert "All clear" not in comment["body"] and ALL_CLEAR_TAG not in comment["body"]


def test_another_bots_marked_comment_is_not_ours(github: FakeGitHub, tmp_path: Path) -> None:
    other_bot = {"login": "mallory-app[bot]", "id": 666, "type": "Bot"}
    (theirs,) = github.add_comments(REPO, PR, 1, user=other_bot, body=f"{MARKER}\n{FAIL_TAG}\nmine")
    run = run_publish(write_report(tmp_path, hostile_report(False)),
                      actions_env(github, tmp_path, event=pull_request_event(tmp_path)), "--all-clear")
    assert run.returncode == 0, run.output
    comments = github.comments_on(REPO, PR)
    assert github.comments[theirs]["body"] == f"{MARKER}\n{FAIL_TAG}\nmine 0"  # left alone
    assert len(comments) == 2 and comments[1]["user"] == BOT and "All clear" not in comments[1]["body"]


def test_only_perfgates_first_lines_are_its_tags() -> None:
    forged_below = f"{MARKER}\nsome text\n{FAIL_TAG}\n{ALL_CLEAR_TAG}"
    assert header_tags(forged_below) == {MARKER}
    assert plan_comment(False, forged_below, only_on_regression=True, all_clear=True).action == "skip"
    assert plan_comment(False, f"{MARKER}\n{FAIL_TAG}\nreport", only_on_regression=True,
                        all_clear=True).all_clear
    mine = {"body": f"{MARKER}\nx", "user": BOT}
    assert is_own_comment(mine, MARKER, None)
    assert not is_own_comment({**mine, "user": {"login": "other[bot]", "type": "Bot"}}, MARKER, None)
    assert not is_own_comment({**mine, "body": f"x {MARKER}\n"}, MARKER, None)
    assert not is_own_comment({**mine, "body": f"{MARKER}<img>\n"}, MARKER, None)


@pytest.mark.parametrize("text", HOSTILE)
def test_every_escape_is_inert_for_its_format(text: str) -> None:
    md = md_inline(text, None)
    assert "\n" not in md and "<" not in md and "`" not in md and "\x1b" not in md and "@o" not in md
    assert "<" not in html_text(text) and '"' not in html_text(text)
    for line in (terminal_text(text), plain_line(text)):
        assert "\x1b" not in line and "\n" not in line and "\u202e" not in line


@pytest.mark.parametrize("number", [True, -5, 0, 1e30, 10**40, "7", None], ids=repr)
def test_a_bad_pr_number_in_the_event_payload_names_no_pr(number: object) -> None:
    from perfgate.publish.context import resolve_target

    head = "1f0e5c3a9b8d7e6f5a4b3c2d1e0f9a8b7c6d5e4f"
    pull = {"pull_request": {"number": number, "head": {"sha": head}}}
    run = {"workflow_run": {"head_sha": head, "pull_requests": [{"number": number, "head": {"sha": head}}]}}
    for event in (pull, run):
        assert resolve_target({}, event, repo=REPO).pr is None
    assert resolve_target({}, {"pull_request": {"number": 7, "head": {"sha": head}}}, repo=REPO).pr == 7


def test_an_ansi_html_url_from_the_api_reaches_the_log_inert(github: FakeGitHub, tmp_path: Path) -> None:
    from helpers.github_server import Fault

    answer = {"id": 1, "html_url": "https://github.com/x\x1b]52;c;ZXZpbA==\x07\x1b[2J"}
    github.faults.extend([Fault(200, {}, []), Fault(201, {}, answer)])
    run = run_publish(write_report(tmp_path, hostile_report(True)),
                      actions_env(github, tmp_path, event=pull_request_event(tmp_path)), "--no-check")
    assert run.returncode == 0, run.output
    assert "\x1b" not in run.output and "\x07" not in run.output and "\\x1b]52" in run.stdout
