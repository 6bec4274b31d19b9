"""Everything ``publish`` sends, computed from a report: comment, check run, annotations. No I/O.

GitHub's limits (REST docs: "Issue comments" and "Check runs", API version 2022-11-28): a comment
body holds at most 65,536 characters, a check run's ``output.summary`` and ``output.text`` at most
65,535 each, and one request at most 50 annotations (further ones go in PATCHes of the run, which
append). Texts are cut at a line boundary, so no table row or HTML entity is broken, and end with a
pointer to the full report.

A report published from a ``workflow_run`` comes from an artifact a fork's code wrote: untrusted.
``perfgate.report.load_report`` checks the type of every field the renderers and this module use
before anything here sees it, so a crafted report is refused with one line instead of crashing or
slipping a value past the Markdown escaping.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlsplit

from perfgate.errors import ConfigError
from perfgate.render import (
    VERDICT_WORD,
    display_name,
    format_change,
    format_values,
    headline,
    summary_parts,
)
from perfgate.quantities import limit_text
from perfgate.render.templates import render_block
from perfgate.render.untrusted import plain_line
from perfgate.report import Report, iter_launches, launch_row, result_rows
from perfgate.vocabulary import Status, Verdict

COMMENT_LIMIT = 65_536
CHECK_TEXT_LIMIT = 65_535
ANNOTATIONS_PER_REQUEST = 50
MAX_ANNOTATIONS = 500  # 10 requests; past that a reviewer reads the report, not the gutter
ANNOTATION_MESSAGE_LIMIT = 4_000  # GitHub allows 64 KB; a gutter note should stay short
ANNOTATION_TITLE_LIMIT = 255

MARKER = "<!-- perfgate:comment -->"
FAIL_TAG = "<!-- perfgate:verdict=fail -->"  # lets a later run know this comment reported a regression
ALL_CLEAR_TAG = "<!-- perfgate:all-clear -->"
_KEY = re.compile(r"^[A-Za-z0-9_.-]{1,64}$")
_TAG = re.compile(r"<!-- perfgate:[A-Za-z0-9_.:=-]{1,100} -->")
ACTIONS_BOT = "github-actions[bot]"  # whom GITHUB_TOKEN posts as
_DRIVE = re.compile(r"^[A-Za-z]:/")


# ---------------------------------------------------------------- sizes and truncation

def text_length(text: str) -> int:
    """Length in UTF-16 code units: never less than the character count GitHub checks."""
    return len(text.encode("utf-16-le")) // 2


def utf8_length(text: str) -> int:
    return len(text.encode("utf-8"))


def safe_url(url: str | None) -> str | None:
    """An http(s) URL made safe inside Markdown link parentheses, or None."""
    if not url:
        return None
    parts = urlsplit(url.strip())
    if parts.scheme not in ("http", "https") or not parts.netloc:
        return None
    return quote(url.strip(), safe=":/?#&=%+,;~@!$*'-._")  # no spaces, parentheses, brackets or quotes


def full_report_pointer(report_url: str | None, templates: Path | None = None) -> str:
    """The sentence that says where the whole report is (``full_report.md.j2``)."""
    return render_block("full_report.md.j2", templates, url=safe_url(report_url))


def fit(text: str, limit: int, note: str, measure: Callable[[str], int] = text_length) -> str:
    """``text`` if it fits in ``limit``; else its first whole lines, open ``<details>`` closed, then ``note``."""
    if measure(text) <= limit:
        return text
    close = "\n</details>\n"
    tail = "\n" + note + "\n"
    budget = limit - measure(tail)
    if budget < 0:  # not even the note fits: better nothing than half a sentence
        return ""
    kept: list[str] = []
    used = 0
    depth = 0
    for line in text.splitlines(keepends=True):
        opens = line.count("<details")
        closes = line.count("</details>")
        after = max(depth + opens - closes, 0)
        cost = measure(line)
        if used + cost + after * measure(close) > budget:
            break
        kept.append(line)
        used += cost
        depth = after
    body = "".join(kept)
    if body and not body.endswith("\n"):
        body += "\n"
    return body + close * depth + tail


def truncation_note(limit: int, what: str, report_url: str | None, templates: Path | None = None) -> str:
    """The last line of a text cut to ``limit`` (``cut_note.md.j2``); ``what`` "job summary" for the 1 MiB one."""
    return render_block("cut_note.md.j2", templates, limit=limit, what=what,
                pointer=full_report_pointer(report_url, templates))


# ---------------------------------------------------------------- the sticky comment

def marker(key: str | None) -> str:
    """The hidden first line that finds this workflow's comment again; a key gives each workflow its own."""
    if key is None or key == "":
        return MARKER
    if not _KEY.match(key):
        raise ConfigError(f"--comment-id {key!r} may only hold letters, digits, '.', '_' and '-' (at most 64)")
    return f"<!-- perfgate:comment:{key} -->"


def is_own_comment(comment: Mapping[str, Any], mark: str, author: str | None) -> bool:
    """Ours: its first line is our marker and its author is ``author`` (default: the Actions bot that
    ``GITHUB_TOKEN`` posts as, ``github-actions[bot]``, of type Bot).

    Anyone can post a comment holding the marker, another bot included; requiring the token's own
    identity keeps us from overwriting (or being steered by) someone else's comment.
    """
    body = comment.get("body")
    user = comment.get("user")
    if not isinstance(user, dict):
        user = {}
    if not isinstance(body, str) or body.split("\n", 1)[0].rstrip("\r") != mark:
        return False
    if author:
        return user.get("login") == author
    return user.get("login") == ACTIONS_BOT and user.get("type") == "Bot"


def header_tags(body: str) -> set[str]:
    """perfgate's own tags of a comment: its first lines that are whole ``<!-- perfgate:… -->`` comments.

    Only perfgate writes these lines: every report string in the Markdown below them is escaped
    (``<`` becomes ``&lt;``), so no report can add a tag, and a tag further down is not read.
    """
    tags = set()
    for line in body.split("\n"):
        line = line.rstrip("\r")
        if not _TAG.fullmatch(line):
            break
        tags.add(line)
    return tags


def find_comment(comments: Iterable[Mapping[str, Any]], mark: str, author: str | None) -> Mapping[str, Any] | None:
    """The first (oldest) comment of ours; stops reading (and paginating) once found."""
    for comment in comments:
        if is_own_comment(comment, mark, author):
            return comment
    return None


@dataclass(frozen=True)
class CommentPlan:
    action: str  # "create" | "update" | "skip"
    all_clear: bool = False
    reason: str = ""


def plan_comment(failed: bool, existing_body: str | None, *, only_on_regression: bool, all_clear: bool) -> CommentPlan:
    """What to do with the PR comment, from the verdict and the comment already there (if any)."""
    flagged = existing_body is not None and bool(header_tags(existing_body) & {FAIL_TAG, ALL_CLEAR_TAG})
    if failed:
        return CommentPlan("update" if existing_body is not None else "create")
    if existing_body is None:
        if only_on_regression:
            return CommentPlan("skip", reason="no regression and no earlier comment (--only-on-regression)")
        return CommentPlan("create")
    if all_clear and flagged:
        return CommentPlan("update", all_clear=True)
    if only_on_regression:
        return CommentPlan("skip", reason="no regression; the earlier comment is left as it is "
                                          "(--only-on-regression without --all-clear)")
    return CommentPlan("update")


def comment_body(markdown: str, *, failed: bool, key: str | None = None, report_url: str | None = None,
                 all_clear_sha: str | None = None, all_clear: bool = False, limit: int = COMMENT_LIMIT,
                 templates: Path | None = None) -> str:
    """Marker + (all-clear line) + the Markdown report, cut to ``limit`` with a pointer to the full one.

    The marker and tag lines are perfgate's protocol (how a later run finds and reads its comment), not
    layout: no template writes them."""
    head = [marker(key)]
    if failed:
        head.append(FAIL_TAG)
    if all_clear:
        head.append(ALL_CLEAR_TAG)
        head.append(render_block("all_clear.md.j2", templates, sha=all_clear_sha or "") + "\n")
    prefix = "\n".join(head) + "\n"
    note = truncation_note(limit, "a comment", report_url, templates)
    return prefix + fit(markdown, limit - text_length(prefix), note)


# ---------------------------------------------------------------- the check run

def conclusion(report: Report, strict: bool = False) -> str:
    """The check run's conclusion: only a pass is a success. Nothing measured (no GPU or ncu on the runner,
    nothing compared) and inconclusive changes are neutral, or, ``strict``, not measured is a failure."""
    verdict = report["verdict"]
    if verdict == Verdict.FAIL.value or (strict and verdict == Verdict.NOT_MEASURED.value):
        return "failure"
    return "success" if verdict == Verdict.PASS.value else "neutral"


def annotation_path(path: str | None, workspace: str | None) -> str | None:
    """A repository-relative POSIX path for an annotation, or None when the file is outside the repo."""
    if not path:
        return None
    text = path.replace("\\", "/")
    if text.startswith("/") or _DRIVE.match(text):  # absolute, on Linux or on a Windows runner
        root = (workspace or "").replace("\\", "/").rstrip("/")
        if not root or not text.startswith(root + "/"):
            return None
        text = text[len(root) + 1:]
    text = posixpath.normpath(text)
    if text in (".", "..") or text.startswith("../") or text.startswith("/"):
        return None
    return text


def _plain(text: Any, limit: int) -> str:
    """Annotation text is shown as plain text; keep it to one tidy line without control characters."""
    return plain_line(text, limit)


def annotatable(report: Report, workspace: str | None = None) -> list[tuple[int, str]]:
    """(launch, repository path) of each regressed launch that knows its test file."""
    found = []
    for index in iter_launches(report, (Status.REGRESSION.value,)):
        path = annotation_path(report["launches"]["path"][index], workspace)
        if path is not None:
            found.append((index, path))
    return found


def regression_annotations(report: Report, workspace: str | None = None,
                           limit: int | None = None) -> list[dict[str, Any]]:
    """One ``failure`` annotation per regressed launch that knows its test file and line (the first
    ``limit`` of them)."""
    found: list[dict[str, Any]] = []
    for index, path in annotatable(report, workspace)[:limit]:
        launch = launch_row(report, index)
        moved = []
        for row in result_rows(report, index):
            if row.get("status") == Status.REGRESSION.value and row.get("gated"):
                label = row.get("label") or row.get("metric")
                before, after = format_values([row.get("baseline"), row.get("current")], row.get("unit"))
                moved.append(f"{label} {before} → {after} ({format_change(row.get('change'))}, limit "
                             f"{limit_text(row.get('threshold'), row.get('unit'))})")
        line = launch.get("line") if isinstance(launch.get("line"), int) and launch["line"] > 0 else 1
        where = f" [{launch['region']}]" if launch.get("region") else ""
        device = f" on {launch['device']}" if launch.get("device") else ""
        details = "; ".join(moved) or "regressed"
        found.append({
            "path": path,
            "start_line": line,
            "end_line": line,
            "annotation_level": "failure",
            "title": _plain(f"perfgate: {display_name(launch)}{where} regressed{device}", ANNOTATION_TITLE_LIMIT),
            "message": _plain(f"{display_name(launch)}{where}: {details}", ANNOTATION_MESSAGE_LIMIT),
        })
    return found


def check_summary(report: Report, report_url: str | None, annotated: int, regressed: int,
                  templates: Path | None = None) -> str:
    """The check run's summary (``check_summary.md.j2``): ``annotated`` of the ``regressed`` launches that know
    their test file carry an annotation."""
    return render_block("check_summary.md.j2", templates, verdict=VERDICT_WORD.get(report["verdict"], "FAIL"),
                        headline=headline(report), summary=summary_parts(report), annotated=annotated,
                        regressed=regressed, pointer=full_report_pointer(report_url, templates))


def without_heading(markdown: str) -> str:
    """The Markdown report without its first line where that is a heading (``### ❌ perfgate: <headline>``): in a
    check run the title above it is that headline already."""
    first, newline, rest = markdown.partition("\n")
    return rest.lstrip("\n") if newline and first.startswith("#") else markdown


def check_run_requests(report: Report, markdown: str, *, name: str, head_sha: str,
                       report_url: str | None = None, strict: bool = False,
                       workspace: str | None = None,
                       templates: Path | None = None) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The POST creating the check run (with the first 50 annotations) and the PATCHes adding the rest.

    ``markdown`` is ``render_markdown(report)``, rendered once by the caller for every publication.
    """
    every = len(annotatable(report, workspace))
    kept = regression_annotations(report, workspace, MAX_ANNOTATIONS)
    output = {
        "title": _plain(headline(report), 255),
        "summary": fit(check_summary(report, report_url, len(kept), every, templates), CHECK_TEXT_LIMIT, ""),
        "text": fit(without_heading(markdown), CHECK_TEXT_LIMIT,
                    truncation_note(CHECK_TEXT_LIMIT, "a check run", report_url, templates)),
    }
    create: dict[str, Any] = {"name": name, "head_sha": head_sha, "status": "completed",
                              "conclusion": conclusion(report, strict),
                              "output": {**output, "annotations": kept[:ANNOTATIONS_PER_REQUEST]}}
    url = safe_url(report_url)
    if url:
        create["details_url"] = url
    updates = [{"output": {**output, "annotations": kept[start:start + ANNOTATIONS_PER_REQUEST]}}
               for start in range(ANNOTATIONS_PER_REQUEST, len(kept), ANNOTATIONS_PER_REQUEST)]
    return create, updates
