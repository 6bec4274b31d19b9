"""The Markdown comment, the job summary and the HTML page of every real report stay byte-identical to the digests recorded
in ``tests/data/render-digests.json`` (SHA-256 of each output): the session reports recorded on the H100 and
the H200, ``perfgate compare`` reports of the H100's CSV exports, and the hostile reports a fork could write.

Record again (only for an intended change of the output) with ``PERFGATE_RECORD_DIGESTS=1``.
"""

from __future__ import annotations

import hashlib
import json
import lzma
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from helpers.common import REPO, run_cli
from helpers.hostile import hostile_report

from perfgate.publish.body import check_run_requests, comment_body, full_report_pointer
from perfgate.publish.summary import STEP_SUMMARY_LIMIT, summary_text
from perfgate.render import render_html, render_markdown
from perfgate.report import Report, validate_report

DATA = REPO / "tests" / "data"
DIGESTS = DATA / "render-digests.json"
URL = "https://github.com/o/r/actions/runs/1"
COMMITS = ("0123456789abcdef0123", "fedcba9876543210fedc")
COMPARED = [(kernel, page) for kernel in ("vector_add", "mlp") for page in ("details", "raw")]


def _sessions() -> Iterator[tuple[str, Report]]:
    for path in sorted(DATA.glob("h*/**/sessions/*.json.xz")):
        if ".trace." in path.name:
            continue
        name = str(path.relative_to(DATA))
        yield name, validate_report(json.loads(lzma.decompress(path.read_bytes())), name)


def _compared(tmp: Path, capsys: pytest.CaptureFixture[str]) -> Iterator[tuple[str, Report]]:
    for kernel, page in COMPARED:
        base, current = (DATA / "h100" / f"{kernel}.rerun.{page}{side}.csv" for side in ("-base", ""))
        for name, pair in ((f"{kernel}.{page}", (base, current)), (f"{kernel}.{page}.reversed", (current, base))):
            out = tmp / f"{name}.json"
            status, _, err = run_cli(capsys, "compare", *pair, "--format", "json", "-o", out)
            assert status in (0, 1), err
            yield f"compare:{name}", validate_report(json.loads(out.read_text()), name)


def _outputs(report: Report) -> dict[str, str]:
    """Every Markdown text ``publish`` and the plugin write, and the cut ones a small budget gives."""
    failed = report["verdict"] == "fail"
    plain = render_markdown(report)
    published = render_markdown(report, full_report=full_report_pointer(URL), commits=COMMITS)
    return {
        "markdown": plain,
        "comment": comment_body(published, failed=failed, key="gpu", report_url=URL),
        "all-clear": comment_body(published, failed=False, report_url=None, all_clear=True,
                                  all_clear_sha="0123456789abcdef"),
        "summary": summary_text(plain, STEP_SUMMARY_LIMIT, None),
        "summary-cut": summary_text(plain, 900, URL),
        "budget": render_markdown(report, budget=2_500, top=2),
        "comment-cut": comment_body(published, failed=failed, limit=1_500),
        "html": render_html(report, commits=COMMITS),
        "check-run": _check_run_summary(report, URL),
        "check-run-local": _check_run_summary(report, None),
    }


def _check_run_summary(report: Report, url: str | None) -> str:
    """The check run's summary (``check_summary.md.j2``), with the annotation count it states."""
    create, _ = check_run_requests(report, "", name="perfgate", head_sha="0" * 40, report_url=url, workspace="/w")
    return str(create["output"]["summary"])


def _digests(tmp: Path, capsys: pytest.CaptureFixture[str]) -> dict[str, str]:
    reports: list[tuple[str, Any]] = [*_sessions(), *_compared(tmp, capsys),
                                      *((f"hostile:{fail}", hostile_report(fail)) for fail in (True, False))]
    found = {}
    for name, report in reports:
        for kind, text in _outputs(report).items():
            found[f"{name} {kind}"] = hashlib.sha256(text.encode("utf-8")).hexdigest()
    return found


def test_every_real_report_renders_the_recorded_markdown(tmp_path: Path,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    found = _digests(tmp_path, capsys)
    assert len(found) >= 10 * 30  # 31 session reports, 8 compare reports, 2 hostile ones: 10 outputs each
    if os.environ.get("PERFGATE_RECORD_DIGESTS"):
        DIGESTS.write_text(json.dumps(found, indent=1, sort_keys=True) + "\n")
    recorded = json.loads(DIGESTS.read_text())
    changed = sorted(name for name in recorded if found.get(name) != recorded[name])
    assert not changed and found.keys() == recorded.keys(), changed[:20]
