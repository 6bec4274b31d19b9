"""The PR comment's trend section (``perfgate publish --history``): each regressed kernel's recent trend on the
base branch, whether it continues a creep, and what was accepted before."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from helpers.history import KERNEL_TIME, write_report
from perfgate.cli import main
from perfgate.history.trend import sparkline


def test_sparkline() -> None:
    assert sparkline([1.0, 2.0, 3.0, 4.0]) == "▁▃▆█"
    assert sparkline([5.0, 5.0]) == "▁▁"


def test_publish_shows_the_trend_of_a_regressed_kernel(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    url = f"sqlite:///{tmp_path / 'h.sqlite'}"
    rng = np.random.default_rng(2)
    for index in range(24):  # a creep on main: +3% at commits 8 and 16
        time = 100 * 1.03 ** ((index >= 8) + (index >= 16)) + float(rng.normal(0, 0.2))
        report = write_report(tmp_path / f"r{index}.json", {("gemm", KERNEL_TIME): [time]})
        assert main(["history", "record", str(report), "--db", url, "--commit", f"{index:040x}", "--branch", "main",
                     "--when", f"2026-01-01T00:00:{index:02d}Z"]) == 0
    assert main(["accept", "--db", url, "--commit", f"{8:040x}", "--kernel", "gemm", "--by", "ada",
                 "--reason", "wider | tiles"]) == 0
    pr = write_report(tmp_path / "pr.json", {("gemm", KERNEL_TIME): [112.0]}, status="regression")
    summary = tmp_path / "summary.md"
    for name in ("GITHUB_EVENT_PATH", "GITHUB_REPOSITORY", "GITHUB_SHA"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    capsys.readouterr()
    assert main(["publish", str(pr), "--no-comment", "--no-check", "--history", url]) == 0
    text = summary.read_text(encoding="utf-8")
    assert "#### Trend on `main` (last 20 commits, then this run)" in text
    row = next(line for line in text.splitlines() if line.startswith("| gemm |"))
    assert "█" in row and "yes: 2 earlier regressions in 20 commits" in row
    assert "by ada: wider &#124; tiles" in row  # a reason cannot break the table

    assert main(["publish", str(pr), "--no-comment", "--no-check", "--history", "sqlite:///nope.sqlite"]) == 2
    assert "no history here" in capsys.readouterr().err
