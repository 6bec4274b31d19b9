"""``perfgate publish REPORT.json``: job summary, sticky PR comment and check run (``perfgate.publish.publisher``).

Exit status: 0 published, or nothing to publish, whatever the verdict (the gate is ``compare`` /
``pytest --perfgate``; ``--fail-on-regression`` opts in to 1 for a failing report); 2 unusable
report or usage; 3 publishing failed: GitHub refused or was unreachable, or the job summary could
not be written (one line each on stderr, never a traceback, never the token).
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from perfgate.cli.common import settings_for
from perfgate.errors import EXIT_OK, EXIT_REGRESSION, ConfigError
from perfgate.option_table import add_arguments
from perfgate.options import non_negative_seconds, positive_int
from perfgate.publish import EXIT_PUBLISH_FAILED
from perfgate.text import inert as terminal_text

if TYPE_CHECKING:
    from perfgate.cli.common import SubParsers
    from perfgate.publish.context import Target
    from perfgate.publish.publisher import Publisher


def add_parser(sub: SubParsers) -> None:
    parser = sub.add_parser(
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
    where.add_argument("--pr", type=positive_int, metavar="NUMBER",
                       help="pull request number (default: from the event payload; in a workflow_run from a fork, "
                            "pass the number the test workflow uploaded: it is checked against the PR's head)")
    where.add_argument("--sha", metavar="SHA", help="commit for the check run (default: the PR head from the event "
                                                    "payload, else $GITHUB_SHA)")
    where.add_argument("--report-url", metavar="URL",
                       help="link to the full report in truncated texts and the check run (default: the page of "
                            "the workflow run that uploaded it, from GITHUB_SERVER_URL/GITHUB_REPOSITORY/"
                            "GITHUB_RUN_ID or the workflow_run payload)")
    _add_what(parser.add_argument_group("what to publish"))
    how = parser.add_argument_group("GitHub access")
    how.add_argument("--token-env", default="GITHUB_TOKEN", metavar="NAME",
                     help="environment variable holding the token; never pass a token on the command line "
                          "(default: GITHUB_TOKEN)")
    how.add_argument("--max-time", type=non_negative_seconds, default=60.0, metavar="SECONDS",
                     help="total time for all GitHub requests, retries and waits included; also the longest "
                          "the --history database may keep it waiting (default: 60)")
    how.add_argument("--retry-backoff", type=non_negative_seconds, default=0.5, metavar="SECONDS",
                     help="first wait after a 5xx or network error, doubling up to 8 s; rate limits wait as "
                          "GitHub says (default: 0.5)")
    history = parser.add_argument_group("history (docs/history.md)")
    history.add_argument("--history", metavar="URL",
                         help="add each regressed kernel's trend on the base branch from this history (default: none)")
    add_arguments(history, "publish")
    parser.set_defaults(func=cmd_publish)


def _add_what(what: argparse._ArgumentGroup) -> None:
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


def cmd_publish(args: argparse.Namespace, env: Mapping[str, str] | None = None) -> int:
    from perfgate.publish.body import marker
    from perfgate.publish.context import load_event, resolve_target
    from perfgate.publish.publisher import Choices, Publisher
    from perfgate.render.templates import team_templates
    from perfgate.report import load_report

    env = os.environ if env is None else env
    settings = settings_for(args, "publish")
    report = load_report(args.report)
    target = resolve_target(env, load_event(env.get("GITHUB_EVENT_PATH")), repo=args.repo, pr=args.pr, sha=args.sha)
    marker(args.comment_id)  # a bad key is a usage error before anything is posted
    token = (env.get(args.token_env) or "").strip()
    want_github = not (args.no_comment and args.no_check)
    _refuse_unpublishable(args, token, target, want_github)
    out, err = _scrubbed(sys.stdout, token), _scrubbed(sys.stderr, token)
    choices = Choices(report_url=args.report_url, comment_id=args.comment_id, comment_author=args.comment_author,
                      only_on_regression=args.only_on_regression, all_clear=args.all_clear,
                      check_name=args.check_name, strict=args.strict)
    publisher = Publisher(choices, env, report, target, out)
    if args.history:  # read before anything is posted: a history that cannot be read is a usage error
        from perfgate.history.db import open_history
        from perfgate.history.trend import trend_markdown

        with open_history(args.history, create=False, max_time=args.max_time) as history:
            publisher.trend = trend_markdown(history, report, settings.history_branch)
    publisher.templates = team_templates(settings.templates)
    publisher.lay_out()
    failures = 0 if args.no_summary else _publish_summary(publisher, err)
    if want_github:
        failures += _publish_on_github(args, publisher, token, target.api_url, err)
    if failures:
        return EXIT_PUBLISH_FAILED
    if args.fail_on_regression and publisher.failed:
        return EXIT_REGRESSION
    return EXIT_OK


def _refuse_unpublishable(args: argparse.Namespace, token: str, target: Target, want_github: bool) -> None:
    """Usage errors found before anything is posted: no token, a token that is none, nowhere to publish."""
    if want_github:
        if not token:
            raise ConfigError(f"{args.token_env} is not set: publishing to GitHub needs a token (in Actions: "
                              f"env: {args.token_env}: ${{{{ github.token }}}}), or pass --no-comment --no-check")
        if any(not ch.isprintable() or ch.isspace() for ch in token):
            raise ConfigError(f"{args.token_env} holds whitespace or control characters; it is not a token")
        if target.repo is None:
            raise ConfigError("no repository: pass --repo OWNER/NAME or set GITHUB_REPOSITORY")
    if not args.no_check and not target.sha:
        raise ConfigError("no commit for the check run: pass --sha, or run in GitHub Actions (GITHUB_SHA)")


def _scrubbed(stream: TextIO, token: str) -> Callable[[str], None]:
    """A line writer for ``stream``: lines carry what GitHub answered (URLs, messages), so the token is masked and
    no control character reaches the log."""
    def write(line: str) -> None:
        stream.write(terminal_text(line.replace(token, "***") if token else line) + "\n")

    return write


def _publish_summary(publisher: Publisher, err: Callable[[str], None]) -> int:
    """Append to the job summary; the number of failures (0 or 1)."""
    from perfgate.publish.publisher import PublishFailure

    try:
        publisher.summary()
    except PublishFailure as exc:
        err(f"perfgate: error: {exc}")
        return 1
    return 0


def _publish_on_github(args: argparse.Namespace, publisher: Publisher, token: str, api_url: str,
                       err: Callable[[str], None]) -> int:
    """The PR comment and the check run; the number of failures. A fatal refusal (a bad token, an outage) stops
    the rest, which would be refused too."""
    from perfgate.publish.github import GitHubClient, GitHubError  # requests: only when something is posted
    from perfgate.publish.retry import RetryPolicy

    client = GitHubClient(token, api_url, policy=RetryPolicy(max_time=args.max_time, backoff=args.retry_backoff))
    steps = ([] if args.no_comment else [publisher.comment]) + ([] if args.no_check else [publisher.check])
    failures = 0
    for step in steps:
        try:
            step(client)
        except GitHubError as exc:
            err(f"perfgate: error: {client.scrub(str(exc))}")
            failures += 1
            if exc.fatal:
                break
    return failures
