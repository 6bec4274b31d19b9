"""``perfgate publish REPORT.json``'s parser; ``perfgate.publish.command`` runs it (exit statuses there)."""

from __future__ import annotations

import argparse
from pathlib import Path

from perfgate.publish.command import cmd_publish


def _positive_int(text: str) -> int:
    try:
        value = int(text.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"{text!r} is not a positive number")
    return value


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not value >= 0:
        raise argparse.ArgumentTypeError(f"{text!r} must be 0 or more")
    return value


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "publish", help="post a JSON report to GitHub: PR comment, check run, job summary",
        description="Publish REPORT (perfgate JSON) from GitHub Actions: append it to the job summary, post or "
                    "update one sticky PR comment, and create a check run on the PR's head commit with annotations "
                    "on the regressed tests. Reads GITHUB_TOKEN, GITHUB_REPOSITORY, GITHUB_API_URL and "
                    "GITHUB_EVENT_PATH (pull_request and workflow_run events). Exit 0: published, whatever the "
                    "verdict; 1: --fail-on-regression and the report failed; 2: unusable report or usage; "
                    "3: GitHub refused or was unreachable, or the job summary could not be written.")
    parser.add_argument("report", type=Path, metavar="REPORT", help="perfgate JSON report")
    where = parser.add_argument_group("where to publish")
    where.add_argument("--repo", metavar="OWNER/NAME", help="repository (default: $GITHUB_REPOSITORY)")
    where.add_argument("--pr", type=_positive_int, metavar="NUMBER",
                       help="pull request number (default: from the event payload; in a workflow_run from a fork, "
                            "pass the number the test workflow uploaded: it is checked against the PR's head)")
    where.add_argument("--sha", metavar="SHA", help="commit for the check run (default: the PR head from the event "
                                                    "payload, else $GITHUB_SHA)")
    where.add_argument("--report-url", metavar="URL",
                       help="link to the full report in truncated texts and the check run (default: the page of "
                            "the workflow run that uploaded it, from GITHUB_SERVER_URL/GITHUB_REPOSITORY/"
                            "GITHUB_RUN_ID or the workflow_run payload)")
    what = parser.add_argument_group("what to publish")
    what.add_argument("--no-comment", action="store_true", help="do not post the PR comment (default: post it)")
    what.add_argument("--no-check", action="store_true", help="do not create a check run (default: create one)")
    what.add_argument("--no-summary", action="store_true",
                      help="do not append to $GITHUB_STEP_SUMMARY (default: append when it is set)")
    what.add_argument("--only-on-regression", action="store_true",
                      help="comment only when the report has a regression; an earlier comment is then left alone "
                           "unless --all-clear (default: always comment)")
    what.add_argument("--all-clear", action="store_true",
                      help="when an earlier comment reported a regression and this report has none, edit it into "
                           "an all-clear (default: off)")
    what.add_argument("--comment-id", metavar="KEY",
                      help="own a separate sticky comment per KEY, for several workflows on one PR "
                           "(default: none, one comment per PR)")
    what.add_argument("--comment-author", metavar="LOGIN",
                      help="only update a marked comment written by LOGIN (default: github-actions[bot], whom "
                           "GITHUB_TOKEN posts as; set it when publishing with a personal or GitHub App token)")
    what.add_argument("--check-name", default="perfgate", metavar="NAME", help="check run name (default: perfgate)")
    what.add_argument("--strict", action="store_true",
                      help="a report that measured nothing (perf tests skipped for want of a GPU, ncu or counter "
                           "permission, or nothing compared) makes a failing check run (default: neutral)")
    what.add_argument("--fail-on-regression", action="store_true",
                      help="exit 1 when the report failed, after publishing (default: exit 0, the verdict belongs "
                           "to compare / pytest)")
    how = parser.add_argument_group("GitHub access")
    how.add_argument("--token-env", default="GITHUB_TOKEN", metavar="NAME",
                     help="environment variable holding the token; never pass a token on the command line "
                          "(default: GITHUB_TOKEN)")
    how.add_argument("--max-time", type=_seconds, default=60.0, metavar="SECONDS",
                     help="total time for all GitHub requests, retries and waits included (default: 60)")
    how.add_argument("--retry-backoff", type=_seconds, default=0.5, metavar="SECONDS",
                     help="first wait after a 5xx or network error, doubling up to 8 s; rate limits wait as "
                          "GitHub says (default: 0.5)")
    history = parser.add_argument_group("history (docs/history.md)")
    history.add_argument("--history", metavar="URL",
                         help="add each regressed kernel's trend on the base branch from this history (default: none)")
    history.add_argument("--history-branch", default="main", metavar="NAME",
                         help="the base branch whose trend --history shows (default: main)")
    parser.set_defaults(func=cmd_publish)
