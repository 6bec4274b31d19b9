"""Untrusted names render inert (comment, job summary, check run, HTML report); bodies fit GitHub's limits."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from html.parser import HTMLParser
from pathlib import Path

import pytest
from helpers.github_server import (
    PR,
    REPO,
    FakeGitHub,
    actions_env,
    assert_clean,
    github,
    launch,
    make_report,
    pull_request_event,
    run_publish,
    write_report,
)

from perfgate.publish.body import CHECK_TEXT_LIMIT, COMMENT_LIMIT, fit, text_length
from perfgate.publish.summary import STEP_SUMMARY_LIMIT, append_step_summary
from perfgate.render import render_html, render_markdown

__all__ = ["github"]

IMG = "<img src=x onerror=alert(1)>"
KERNEL = f"evil{IMG}|`rm -rf`@octocat"
TEST = "tests/test_evil.py::test_@octocat[a|b]"
LABEL = "`rm -rf` <b>bold</b> a|b"


def evil_report() -> dict:
    return make_report([
        launch(KERNEL, test=TEST, path="tests/test_evil.py", line=3, label=LABEL, region="r|@octocat"),
        launch("fine" + IMG, status="unchanged", test="t@octocat|x", label="@octocat|`x`"),
    ], notes=("<script>alert(1)</script> @octocat | `x`",), device="<img src=y onerror=alert(2)>")


class Elements(HTMLParser):
    """Counts elements and table cells of rendered HTML; collects its text."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: dict[str, int] = {}
        self.rows: list[list[int]] = []  # per table: cells of each row
        self.text: list[str] = []
        self._cells = 0

    def handle_starttag(self, tag: str, attrs: list) -> None:
        self.tags[tag] = self.tags.get(tag, 0) + 1
        if tag == "table":
            self.rows.append([])
        elif tag == "tr":
            self._cells = 0
        elif tag in ("td", "th"):
            self._cells += 1

    def handle_endtag(self, tag: str) -> None:
        if tag == "tr" and self.rows:
            self.rows[-1].append(self._cells)

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def assert_inert_markdown(markdown: str) -> None:
    """No raw tag, no notifying mention, no code span, and every table row as wide as its header."""
    assert "<img" not in markdown and "<script" not in markdown and "<b>" not in markdown
    assert "@octocat" not in markdown and "@&#8203;octocat" in markdown
    assert "`" not in markdown
    block: list[str] = []
    for line in [*markdown.splitlines(), ""]:
        if line.startswith("|"):
            block.append(line)
        elif block:
            assert len({row.count("|") for row in block}) == 1, block
            block = []
    markdown_it = pytest.importorskip("markdown_it")
    # CommonMark + GFM tables with raw HTML allowed: anything unescaped would come out as a tag.
    html = markdown_it.MarkdownIt("commonmark", {"html": True}).enable("table").render(markdown)
    parsed = Elements()
    parsed.feed(html)
    assert not {"img", "script", "b", "code"} & set(parsed.tags), parsed.tags
    assert parsed.rows and all(len(set(rows)) == 1 for rows in parsed.rows), parsed.rows
    text = "".join(parsed.text)
    assert IMG in text and "@\u200boctocat" in text and "@octocat" not in text


def test_untrusted_names_are_inert_in_comment_summary_and_check(github: FakeGitHub, tmp_path: Path) -> None:
    report = write_report(tmp_path, evil_report())
    run = run_publish(report, actions_env(github, tmp_path, event=pull_request_event(tmp_path)))
    assert run.returncode == 0, run.output
    assert_clean(run)
    (comment,) = github.comments_on(REPO, PR)
    assert_inert_markdown(comment["body"])
    assert_inert_markdown((tmp_path / "step_summary.md").read_text())
    (check,) = github.check_runs.values()
    assert_inert_markdown(check["output"]["text"])
    assert "<img" not in check["output"]["summary"] and "@octocat" not in check["output"]["summary"]
    (note,) = check["annotations"]  # annotations are plain text: shown as written, on one line
    assert note["path"] == "tests/test_evil.py" and KERNEL in note["message"] and "\n" not in note["message"]


def _chromium() -> str | None:
    found = shutil.which("chromium") or ("/usr/bin/chromium" if Path("/usr/bin/chromium").exists() else None)
    if found is None and os.environ.get("CI"):
        pytest.fail("chromium is required in CI for the HTML inertness check")
    return found


@pytest.mark.browser
def test_html_report_is_inert_in_a_real_browser(tmp_path: Path) -> None:
    chromium = _chromium()
    if chromium is None:
        pytest.skip("chromium not installed")
    page = tmp_path / "report.html"
    page.write_text(render_html(evil_report()), encoding="utf-8")
    done = subprocess.run([chromium, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                           "--disable-background-networking", "--disable-component-update", "--disable-sync",
                           f"--user-data-dir={tmp_path / 'profile'}", "--dump-dom", page.as_uri()],
                          capture_output=True, text=True, timeout=90)
    assert done.returncode == 0, done.stderr[-2000:]
    dom = Elements()
    dom.feed(done.stdout)
    assert dom.tags.get("table") and dom.tags.get("body")  # the page did load and render
    assert "img" not in dom.tags and "script" not in dom.tags and "b" not in dom.tags
    text = "".join(dom.text)
    assert IMG in text and "@octocat" in text and "`rm -rf`" in text  # shown as text, exactly


def test_5000_regressions_fit_githubs_limits(github: FakeGitHub, tmp_path: Path) -> None:
    report = make_report([launch(f"kernel_{i:04d}_" + "x" * 60, test=f"tests/test_k.py::test_{i}",
                                 path="tests/test_k.py", line=i + 1) for i in range(5000)])
    path = write_report(tmp_path, report)
    run = run_publish(path, actions_env(github, tmp_path, event=pull_request_event(tmp_path)))
    assert run.returncode == 0, run.output  # the fake refuses (422) anything over a limit
    (comment,) = github.comments_on(REPO, PR)
    body = comment["body"]
    # The Markdown itself is bounded to fit: the first regressions, then what was left out and where it is.
    assert COMMENT_LIMIT - 4000 < len(body) <= COMMENT_LIMIT
    assert "Launches not listed here, to fit a PR comment: 4," in body
    pointer = "[workflow run's artifacts](https://github.com/octo/kernels/actions/runs/9001)"
    assert pointer in body and body.rstrip().endswith(pointer + ".")
    assert_rows_whole(body)
    (check,) = github.check_runs.values()
    assert len(check["output"]["text"]) <= CHECK_TEXT_LIMIT and pointer in check["output"]["text"]
    assert "500 of 5000 regressions annotated" in check["output"]["summary"]
    batches = [len(r.body["output"]["annotations"]) for r in github.requests if "check-runs" in r.path]
    assert batches == [50] * 10 and len(check["annotations"]) == 500
    assert [r.method for r in github.requests if "check-runs" in r.path] == ["POST"] + ["PATCH"] * 9
    assert (tmp_path / "step_summary.md").stat().st_size <= STEP_SUMMARY_LIMIT


def assert_rows_whole(markdown: str) -> None:
    """Cut at a line: every table line has its closing pipe and no entity is broken."""
    for line in markdown.splitlines():
        if line.startswith("|"):
            assert line.endswith("|"), line[-80:]
        assert not re.search(r"&#?[0-9A-Za-z]*$", line), line[-40:]


def test_fit_closes_an_open_details_and_keeps_whole_lines() -> None:
    text = "# head\n\n<details><summary>x</summary>\n\n" + "".join(f"| row {i} &#124; x |\n" for i in range(500))
    text += "\n</details>\n"
    cut = fit(text, 1000, "> pointer")
    assert text_length(cut) <= 1000 and cut.rstrip().endswith("> pointer")
    assert cut.count("<details") == cut.count("</details>") == 1
    assert_rows_whole(cut)
    assert fit("short", 1000, "> pointer") == "short"
    wide = fit("😀" * 10, 12, "")  # astral characters count twice (UTF-16), as a conservative measure
    assert text_length(wide) <= 12


def test_job_summary_respects_the_room_left(tmp_path: Path) -> None:
    summary = tmp_path / "summary.md"
    summary.write_text("x" * (STEP_SUMMARY_LIMIT - 3000))
    report = make_report([launch(f"kernel_{i}", test="t") for i in range(200)])
    written = append_step_summary(summary, render_markdown(report), "https://github.com/o/r/actions/runs/1")
    assert 0 < written <= 3000 and summary.stat().st_size <= STEP_SUMMARY_LIMIT
    assert "Cut to fit the 1 MiB job summary" in summary.read_text()
    room = STEP_SUMMARY_LIMIT - summary.stat().st_size
    assert append_step_summary(summary, render_markdown(report)) <= room
    assert summary.stat().st_size <= STEP_SUMMARY_LIMIT


def test_renderer_escapes_units_and_summary_keys_of_a_crafted_report() -> None:
    """Fields outside the name columns reach the Markdown too: a crafted report must not slip HTML through."""
    from perfgate.report import validate_report

    report = make_report([launch("k", status="unchanged"), launch("j")])
    report["metrics"]["unit"] = [IMG] * len(report["metrics"]["unit"])  # printed after every value
    crafted = validate_report({**report, "summary": {IMG: 1, "@octocat": 2}}, "crafted")
    markdown = render_markdown(crafted)
    assert "<img" not in markdown and "@octocat" not in markdown
    assert "&lt;img src=x onerror=alert(1)&gt;" in markdown
