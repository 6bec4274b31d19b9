"""What the dashboard's index shows of real series: each latest value in its metric's unit, and a kernel whose
template arguments run to 1,500 characters in a few lines (its full name is the link's tooltip). The nvFuser H200
exports of the corpus, recorded as three runs (skipped where ../shared/corpus is absent)."""

from __future__ import annotations

import html
import re
from pathlib import Path

import pytest
from helpers.common import run_cli
from helpers.timeline import corpus_trace

from perfgate.cli import main

RUNS = ("report1_64ee035", "report2_ce15be9", "report3_f6ab0c3")


def _index(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> str:
    url = f"sqlite:///{tmp_path / 'h.sqlite'}"
    first = corpus_trace(f"nvfuser-h200/{RUNS[0]}.sqlite")
    for number, name in enumerate(RUNS, 1):
        report = tmp_path / f"{name}.json"
        status, _, err = run_cli(capsys, "compare", first, corpus_trace(f"nvfuser-h200/{name}.sqlite"),
                                 "--format", "json", "-o", report)
        assert status == 0, err
        assert main(["history", "record", str(report), "--db", url, "--commit", f"c{number}", "--branch", "main",
                     "--when", f"2026-12-0{number}T10:00:00Z"]) == 0
    assert main(["history", "dashboard", "--db", url, "-o", str(tmp_path / "site")]) == 0
    return (tmp_path / "site" / "index.html").read_text(encoding="utf-8")


def test_the_index_says_each_latest_value_in_its_unit_and_keeps_long_names_short(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    page = _index(tmp_path, capsys)
    latest = re.findall(r'<td class="num">([^<]*)</td>', page)
    # The nvFuser kernel's 124,702 ns and the cuBLAS kernel's 87,711 ns; the series of 40,338 ns read "4.034e+04".
    assert "124.7 µs" in latest and "87.71 µs" in latest and "40.34 µs" in latest
    assert not [value for value in latest if "e+" in value], latest
    names = [html.unescape(name) for name in re.findall(r'<td class="name"><a [^>]*>([^<]*)</a>', page)]
    [distribution] = [name for name in names if name.startswith("distribution_elementwise_grid_stride_kernel<")]
    assert len(distribution) < 200, distribution  # its full name: 1,458 characters
    assert 'title="distribution_elementwise_grid_stride_kernel&lt;float, (int)4, void at::native::' in page
