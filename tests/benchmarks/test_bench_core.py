"""Benchmarks of perfgate's own hot paths: reading reports, comparing, building, writing, reading back,
merging and rendering the report.

Run them with numbers: ``python -m pytest tests/benchmarks --benchmark-enable -p no:xdist``. In the
default test run (``--benchmark-disable``) each body runs once, so they also act as smoke tests. The
end-to-end comparisons with the floors are in ``test_bench_scale.py`` (CSV) and
``test_bench_ncu_rep.py`` (.ncu-rep); ``scale.py`` prints the tables of docs/performance.md.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from perfgate.collect import read_table
from perfgate.compare import CompareOptions, compare_tables
from perfgate.files import write_atomically
from perfgate.render import render_html, render_json, render_markdown, render_text
from perfgate.render.html import render_html_chunks
from perfgate.report import build_report, dumps, merge_reports, validate_report

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from helpers.common import corpus_file  # noqa: E402
from scale import csv_pair  # noqa: E402

LAUNCHES = 10_000


@pytest.fixture(scope="module")
def big_csvs(scale_data: Path) -> tuple[Path, Path]:
    """Worst case for compare and render: every launch of 10,000 changed."""
    return csv_pair(scale_data, "details", LAUNCHES, changed=True)


@pytest.fixture(scope="module")
def rerun_csvs(scale_data: Path) -> tuple[Path, Path]:
    """The usual CI case: the same kernels measured again."""
    return csv_pair(scale_data, "details", LAUNCHES, changed=False)


@pytest.fixture(scope="module")
def rerun_raw_csvs(scale_data: Path) -> tuple[Path, Path]:
    return csv_pair(scale_data, "raw", LAUNCHES, changed=False)


@pytest.fixture(scope="module")
def big_report(big_csvs: tuple[Path, Path]) -> dict:
    base, cur = big_csvs
    return build_report(compare_tables(read_table(base), read_table(cur)))


def test_bench_read_ncu_rep(benchmark) -> None:  # type: ignore[no-untyped-def]
    path = corpus_file("mlp-t4/report_v4_8_per_thread.ncu-rep")
    wanted = CompareOptions().wanted_metrics()
    measurement = benchmark(read_table, path, wanted)
    assert not measurement.table.empty


def test_bench_read_ncu_rep_all_metrics(benchmark) -> None:  # type: ignore[no-untyped-def]
    measurement = benchmark(read_table, corpus_file("mlp-t4/report_v4_8_per_thread.ncu-rep"))
    assert len(measurement.table) > 1000


def test_bench_read_details_csv(benchmark, big_csvs: tuple[Path, Path]) -> None:  # type: ignore[no-untyped-def]
    measurement = benchmark(read_table, big_csvs[0])
    assert len(set(measurement.table["launch"].tolist())) == LAUNCHES


def test_bench_read_raw_csv(benchmark, rerun_raw_csvs: tuple[Path, Path]) -> None:  # type: ignore[no-untyped-def]
    measurement = benchmark(read_table, rerun_raw_csvs[0])
    assert len(set(measurement.table["launch"].tolist())) == LAUNCHES


def test_bench_compare_10k_rerun(benchmark, rerun_csvs: tuple[Path, Path]) -> None:  # type: ignore[no-untyped-def]
    base, cur = (read_table(p) for p in rerun_csvs)
    comparison = benchmark(compare_tables, base, cur)
    assert len(comparison.launches) == LAUNCHES


def test_bench_compare_10k_all_changed(benchmark, big_csvs: tuple[Path, Path]) -> None:  # type: ignore[no-untyped-def]
    base, cur = (read_table(p) for p in big_csvs)
    comparison = benchmark(compare_tables, base, cur)
    assert len(comparison.launches) == LAUNCHES


def test_bench_build_report_10k(benchmark, big_csvs: tuple[Path, Path]) -> None:  # type: ignore[no-untyped-def]
    comparison = compare_tables(*(read_table(p) for p in big_csvs))
    report = benchmark(build_report, comparison)
    assert len(report["launches"]["status"]) == LAUNCHES


@pytest.mark.parametrize("renderer", [render_text, render_markdown, render_json, render_html],
                         ids=["text", "md", "json", "html"])
def test_bench_render_10k(benchmark, big_report: dict, renderer) -> None:  # type: ignore[no-untyped-def]
    out = benchmark(renderer, big_report)
    assert out


def test_bench_write_html_10k(benchmark, big_report: dict, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """The page of 10,000 changed launches (the launches that need attention, the rest summarized: under 5 MB)
    written a piece at a time (render_html_chunks)."""
    page = tmp_path / "page.html"
    benchmark(lambda: write_atomically(page, render_html_chunks(big_report)))
    assert page.stat().st_size > 1_000_000


def test_bench_write_json_10k(benchmark, big_report: dict) -> None:  # type: ignore[no-untyped-def]
    text = benchmark(dumps, big_report)
    assert len(text) < 10_000_000  # launch facts once, metric facts once: 7.8 MB (version 1: 56 MB)


def test_bench_read_back_10k(benchmark, big_report: dict) -> None:  # type: ignore[no-untyped-def]
    """What ``merge`` and ``publish`` do with an artifact: parse it and check every field."""
    text = dumps(big_report)
    report = benchmark(lambda: validate_report(json.loads(text), "artifact.json"))
    assert report["summary"] == big_report["summary"]


def test_bench_merge_10k(benchmark, big_report: dict) -> None:  # type: ignore[no-untyped-def]
    merged = benchmark(merge_reports, [big_report, big_report])
    assert len(merged["launches"]["status"]) == 2 * LAUNCHES


def test_bench_markdown_of_10k_regressions_fits_a_comment(benchmark, big_report: dict) -> None:  # type: ignore[no-untyped-def]
    """Issue 10: the Markdown of 10k regressed launches fits one PR comment and says what it left out."""
    assert big_report["summary"]["regression"] >= 4000
    markdown = benchmark(render_markdown, big_report)
    assert len(markdown.encode("utf-16-le")) // 2 <= 65_536
    # Rows are kernels (their launches summarized): what does not fit is said, and what fits names every kernel.
    assert ("Launches not listed here, to fit a PR comment:" in markdown
            or all(kernel.replace("_", "\\_") in markdown for kernel in set(big_report["launches"]["kernel"])))
