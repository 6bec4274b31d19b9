"""Append the Markdown report to the job summary (``$GITHUB_STEP_SUMMARY``).

GitHub shows at most 1 MiB of summary per step and drops a larger one with an error, so what we
append is cut (at a line boundary, in UTF-8 bytes) to the room the step's file has left.
"""

from __future__ import annotations

from pathlib import Path

from perfgate.publish.body import fit, truncation_note, utf8_length

STEP_SUMMARY_LIMIT = 1024 * 1024  # bytes per step (GitHub Actions docs, "Adding a job summary")


def summary_text(markdown: str, room: int, report_url: str | None, templates: Path | None = None) -> str:
    """``markdown`` cut to ``room`` UTF-8 bytes, with a pointer to the full report when cut."""
    note = truncation_note(STEP_SUMMARY_LIMIT, "job summary", report_url, templates)
    text = "\n" + markdown if markdown.endswith("\n") else "\n" + markdown + "\n"
    return fit(text, room, note, measure=utf8_length) if room > 0 else ""


def append_step_summary(path: Path, markdown: str, report_url: str | None = None,
                        limit: int = STEP_SUMMARY_LIMIT, templates: Path | None = None) -> int:
    """Append to the step's summary file; returns the bytes written (0 when it is already full)."""
    used = path.stat().st_size if path.exists() else 0
    text = summary_text(markdown, limit - used, report_url, templates)
    if not text:
        return 0
    with path.open("a", encoding="utf-8") as handle:
        handle.write(text)
    return utf8_length(text)
