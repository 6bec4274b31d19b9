"""The publications of ``perfgate publish REPORT.json`` (``perfgate.cli.publish``): the job summary, the sticky PR
comment and the check run, each rendered from one Markdown text of the report.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from perfgate.publish.body import (
    check_run_requests,
    comment_body,
    find_comment,
    full_report_pointer,
    marker,
    plan_comment,
    truncation_note,
)
from perfgate.publish.summary import append_step_summary
from perfgate.render import render_markdown
from perfgate.text import inert as terminal_text

if TYPE_CHECKING:
    from perfgate.publish.context import Target
    from perfgate.publish.github import GitHubClient
    from perfgate.report import Report


@dataclass(frozen=True)
class Choices:
    """What ``perfgate publish`` was asked for, beyond where (``Target``): its options of the same names."""

    report_url: str | None = None
    comment_id: str | None = None
    comment_author: str | None = None
    only_on_regression: bool = False
    all_clear: bool = False
    check_name: str = "perfgate"
    strict: bool = False


class Publisher:
    """Runs the publications of one ``publish``; every line it prints passes through ``scrub``."""

    def __init__(self, choices: Choices, env: Mapping[str, str], report: Report, target: Target,
                 out: Callable[[str], None]) -> None:
        self.choices, self.env, self.report, self.target, self._out = choices, env, report, target, out
        self.report_url = choices.report_url or target.run_url
        self.failed = report["verdict"] == "fail"
        self._markdown: str | None = None
        self.trend = ""  # the regressed kernels' trend from the history (perfgate.history.trend), if asked
        self.templates: Path | None = None  # [tool.perfgate] templates: a team's Markdown templates

    @property
    def markdown(self) -> str:
        """The report as Markdown, rendered once for the summary, the comment and the check run."""
        if self._markdown is None:
            self._markdown = render_markdown(self.report, full_report=full_report_pointer(self.report_url, self.templates),
                                             commits=(self.target.base, self.target.sha), templates=self.templates)
            if self.trend:
                self._markdown += "\n" + self.trend
        return self._markdown

    def lay_out(self) -> None:
        """Render every template a publication may use, so that a broken one is a usage error before anything
        is posted (``ConfigError``)."""
        _ = self.markdown
        comment_body("", failed=False, report_url=self.report_url, all_clear=True, all_clear_sha=self.target.sha,
                     limit=0, templates=self.templates)
        for what in ("a check run", "job summary"):
            truncation_note(0, what, self.report_url, self.templates)

    def say(self, line: str) -> None:
        self._out(f"perfgate: {line}")

    def summary(self) -> None:
        path = self.env.get("GITHUB_STEP_SUMMARY")
        if not path:
            return
        try:
            written = append_step_summary(Path(path), self.markdown, self.report_url, templates=self.templates)
        except OSError as exc:
            raise PublishFailure(f"cannot append the job summary to {path} ({exc.strerror})") from None
        self.say(f"job summary: appended {written:,} bytes" if written else "job summary: full (1 MiB), skipped")

    def comment(self, client: GitHubClient) -> None:
        target = self.target
        if target.pr is None:
            self.say("comment: skipped, no pull request in the event payload (pass --pr)")
            return
        assert target.repo is not None
        if target.pr_from_flag and target.event_name == "workflow_run" and target.sha:
            # The number came from an artifact the PR's own code could write: it must name this commit's PR.
            head = client.get_pull(target.repo, target.pr).get("head", {})
            head_sha = head.get("sha") if isinstance(head, dict) else None
            if head_sha != target.sha:
                self.say(f"comment: skipped, PR #{target.pr}'s head is {str(head_sha)[:12]}, not the tested "
                         f"commit {target.sha[:12]} (a newer push, or a PR number that does not belong to this run)")
                return
        mark = marker(self.choices.comment_id)
        existing = find_comment(client.iter_issue_comments(target.repo, target.pr), mark, self.choices.comment_author)
        existing_body = existing.get("body") if existing else None
        plan = plan_comment(self.failed, existing_body if isinstance(existing_body, str) else None,
                            only_on_regression=self.choices.only_on_regression, all_clear=self.choices.all_clear)
        if plan.action == "skip":
            self.say(f"comment: nothing posted, {plan.reason}")
            return
        body = comment_body(self.markdown, failed=self.failed, key=self.choices.comment_id, report_url=self.report_url,
                            all_clear=plan.all_clear, all_clear_sha=target.sha, templates=self.templates)
        if existing is not None:
            posted = client.update_issue_comment(target.repo, int(existing["id"]), body)
            verb = "updated" + (" into an all-clear" if plan.all_clear else "")
        else:
            posted = client.create_issue_comment(target.repo, target.pr, body)
            verb = "created"
        self.say(f"comment: {verb} {terminal_text(posted.get('html_url') or posted.get('id'), 300)}")

    def check(self, client: GitHubClient) -> None:
        target = self.target
        assert target.repo is not None and target.sha is not None
        create, updates = check_run_requests(self.report, self.markdown, name=self.choices.check_name, head_sha=target.sha,
                                             report_url=self.report_url, strict=self.choices.strict,
                                             workspace=self.env.get("GITHUB_WORKSPACE"), templates=self.templates)
        run = client.create_check_run(target.repo, create)
        for update in updates:
            client.update_check_run(target.repo, int(run["id"]), update)
        count = len(create["output"]["annotations"]) + sum(len(u["output"]["annotations"]) for u in updates)
        self.say(f"check run: '{self.choices.check_name}' {create['conclusion']} on {target.sha[:12]} with {count} "
                 f"annotation{'s' if count != 1 else ''} ({1 + len(updates)} request{'s' if updates else ''}) "
                 f"{terminal_text(run.get('html_url') or '', 300)}".rstrip())


class PublishFailure(Exception):
    """A publication that failed for a reason other than GitHub (the job summary file)."""
