"""The HTML page stays under 5 MB at any number of launches (``perfgate.render.html_bound``): every launch while
they fit, else the launches that need attention in full and the others summarized per kernel, every regressed
kernel named; the kernel table, the sections, the timelines and the notes each kept to their room."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

import pytest
from helpers.browser import dump_dom, page_requests, recording_proxy
from helpers.common import REPO, run_perfgate
from helpers.reports import METRICS

from perfgate.render import render_html
from perfgate.render.html import NOTES_BYTES, listed_notes
from perfgate.render import html_bound
from perfgate.render.html_bound import LISTED_MAX, PAGE_BYTES
from perfgate.render.timeline_html import TIMELINES_BYTES, timeline_sections
from perfgate.report import Report, dumps, empty_report, summarize, validate_report

sys.path.insert(0, str(REPO / "tests" / "benchmarks"))
from scale import METRICS as CSV_METRICS  # noqa: E402
from scale import csv_pair  # noqa: E402

LAUNCHES = 12_000  # past LISTED_MAX: the page of every launch (17 MB) cannot be written


def _table(page: str, table_id: str) -> str:
    start = page.index(f'<table id="{table_id}">')
    return page[start:page.index("</table>", start)]


def _kernels(table: str) -> set[str]:
    """The kernels of the launches a table of launches lists."""
    return {name.strip() for name in re.findall(r'<td class="kernel" title="[^"]*">([^<#]+)', table)}


@pytest.fixture(scope="module")
def changed_page(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``perfgate compare`` of two ncu raw-page exports of 12,000 launches, every launch changed: two kernels of
    five regressed (2,400 launches each), three improved."""
    folder = tmp_path_factory.mktemp("bound")
    base, cur = csv_pair(folder, "raw", LAUNCHES, changed=True)
    page = folder / "report.html"
    done = run_perfgate("compare", base, cur, "--format", "html", "-o", page)
    assert done.returncode == 1, done.stderr
    return page


def test_a_page_of_many_changed_launches_lists_the_regressed_and_summarizes_the_rest(changed_page: Path) -> None:
    assert LAUNCHES > LISTED_MAX and CSV_METRICS == 20
    size = changed_page.stat().st_size
    page = changed_page.read_text(encoding="utf-8")
    assert size <= PAGE_BYTES
    listed = _table(page, "results")
    # Both regressed kernels have launches listed in full, and only launches that need attention are.
    assert _kernels(listed) == {"gemm_kernel", "softmax_kernel"}
    note = re.search(r'id="launches-summarized">([\d,]+) of 12,000 launches are listed here', page)
    assert note is not None and 1_000 < int(note.group(1).replace(",", "")) < 4_800
    assert "Every launch is in the JSON report (perfgate compare … --format json)." in page
    summarized = _table(page, "summarized-table")
    counts = [int(n.replace(",", "")) for n in re.findall(r'<td class="num"(?: rowspan="\d+")?>([\d,]+)<br>',
                                                          summarized)]
    assert sum(counts) + int(note.group(1).replace(",", "")) == LAUNCHES  # each launch listed or summarized
    for kernel in ("gemm_kernel", "softmax_kernel", "matrix_addition2D", "reduce_sum", "vectorized_elementwise"):
        assert kernel in summarized
    assert 'id="summarized-rest"' not in page  # five kernels: every one has its summary rows


def test_the_page_names_the_json_report_written_beside_it() -> None:
    report = validate_report(json.loads(dumps(_many_regressed(11_000, kernels=4))), "many")
    page = render_html(report, json_report="perfgate-report.json")
    assert "Every launch is in the JSON report perfgate-report.json." in page


@pytest.mark.parametrize("first", [1, 700])
def test_launches_laid_out_a_chunk_at_a_time_give_the_same_page(first: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """The rows of the launches that need attention are laid out FIRST_LAID_OUT at a time until the page is full:
    a launch's rows are the same whichever others are laid out with it, so the page does not depend on the size."""
    made = _many_regressed(11_000, kernels=4, name_length=40)
    for launch in range(0, 11_000, 3):  # listed after the regressions of their rank: not in report order
        made["launches"]["status"][launch] = made["results"]["status"][3 * launch] = "inconclusive"
    made["summary"] = summarize(made["launches"]["status"])
    report = validate_report(json.loads(dumps(made)), "many")
    whole = render_html(report)
    monkeypatch.setattr(html_bound, "FIRST_LAID_OUT", first)
    assert render_html(report) == whole


def _many_regressed(launches: int, kernels: int, name_length: int = 120, status: str = "regression") -> Report:
    """Every one of ``launches`` regressed (or of ``status``), spread over ``kernels`` kernels with long names: the
    worst case for the page's size (every launch needs attention, a kernel table and sections full of names)."""
    kernel = [f"k{i % kernels:05d}_" + "t" * name_length for i in range(launches)]
    table: dict[str, list[Any]] = {
        "kind": ["kernel"] * launches, "kernel": kernel, "demangled": [f"void {k}(float *, int)" for k in kernel],
        "region": ["step"] * launches, "ordinal": [i // kernels for i in range(launches)],
        "status": [status] * launches, "device": ["H100"] * launches, "launch_change": [None] * launches,
        "test": ["tests/test_model.py::test_step"] * launches, "path": [None] * launches, "line": [None] * launches}
    rows = [(launch, metric, base, base * (1 + change), change, result, gated)
            for launch in range(launches)
            for metric, base, change, result, gated in ((0, 1000.0 + launch % 7, 0.2, status, True),
                                                        (1, 4e6, 0.01, "unchanged", True),
                                                        (4, 50.0, -0.3, "info", False))]
    results = {key: [row[i] for row in rows] for i, key in enumerate(("launch", "metric", "baseline", "current",
                                                                        "change", "status", "gated"))}
    results["delta"] = [None] * len(rows)
    report = empty_report()
    report.update(verdict="fail", summary=summarize(table["status"]), launches=table,  # type: ignore[typeddict-item]
                  metrics=METRICS, results=results)  # type: ignore[typeddict-item]
    return report


def test_thousands_of_regressed_kernels_keep_to_the_bound_and_count_what_is_left_out() -> None:
    report = validate_report(json.loads(dumps(_many_regressed(20_000, kernels=5_000))), "many")
    page = render_html(report)
    assert len(page.encode("utf-8")) <= PAGE_BYTES
    note = re.search(r'id="launches-summarized">([\d,]+) of 20,000 launches', page)
    assert note is not None
    listed = int(note.group(1).replace(",", ""))
    # Each kernel's first launch comes before any kernel's second: the listed launches are distinct kernels.
    assert len(_kernels(_table(page, "results"))) == listed
    summarized = _table(page, "summarized-table")
    counts = [int(n.replace(",", "")) for n in re.findall(r'<td class="num"(?: rowspan="\d+")?>([\d,]+)<br>',
                                                          summarized)]
    rest = re.search(r'id="summarized-rest">And ([\d,]+) more kernels with ([\d,]+) launches \(([\d,]+) '
                     r"regression\), not listed", page)
    assert rest is not None and rest.group(2) == rest.group(3)
    assert listed + sum(counts) + int(rest.group(2).replace(",", "")) == 20_000
    assert re.search(r'id="kernels-truncated">The first [\d,]+ of 5,000 kernels are listed', page)
    assert re.search(r'id="sections-truncated">Sections for the first \d+ of 5,000', page)


def test_a_page_with_nothing_to_attend_to_summarizes_every_launch() -> None:
    report = validate_report(json.loads(dumps(_many_regressed(12_000, kernels=3, status="unchanged"))), "calm")
    page = render_html(report)
    assert len(page.encode("utf-8")) <= PAGE_BYTES
    assert 'id="launches-summarized">0 of 12,000 launches are listed here' in page
    assert "<tbody>\n</tbody>" in _table(page, "results")
    summarized = _table(page, "summarized-table")
    assert re.findall(r'<td class="num" rowspan="2">([\d,]+)<br>', summarized) == ["4,000"] * 3


def test_a_small_page_lists_every_launch() -> None:
    report = validate_report(json.loads(dumps(_many_regressed(300, kernels=3))), "small")
    page = render_html(report)
    assert '<h2 id="every-launch">Every launch</h2>' in page
    assert "launches-summarized" not in page and "summarized-table" not in page
    listed = _table(page, "results")
    assert listed.count('<tr class="regression">') == listed.count('<tr class="unchanged">') == 300


def test_timelines_past_their_room_are_counted() -> None:
    ops = [[i * 100, 50, "kernel", f"k{i}", 1] for i in range(400)]
    sketch = json.dumps({"version": 1, "regions": {"step": {"wall": 40_000, "lanes": {"7": ops}, "idle_pct": 50.0}}})
    side = {"timeline_sketch": sketch}
    report = {"comparisons": [{"settings": {"baseline": side, "current": side}, "test": f"t{i}"} for i in range(40)]}
    html = timeline_sections(report)  # type: ignore[arg-type]
    assert len(html.encode("utf-8")) <= TIMELINES_BYTES + 2_000
    drawn = html.count('<figure class="region-timeline">')
    assert 0 < drawn < 40
    assert f"{40 - drawn:,} more region timelines not drawn" in html


def test_notes_past_their_room_are_counted() -> None:
    notes = [f"note {i}: " + "n" * 990 for i in range(300)]
    kept = listed_notes(notes)
    assert sum(len(n) for n in kept[:-1]) <= NOTES_BYTES < sum(len(n) for n in kept[:-1]) + 1_000
    assert kept[-1] == f"{300 - len(kept) + 1:,} more notes are in the JSON report."
    assert listed_notes(notes[:3]) == notes[:3]


@pytest.mark.browser
def test_the_bounded_page_opens_in_chromium_with_its_summary(changed_page: Path) -> None:
    with recording_proxy() as (requests, proxy):
        dom = dump_dom(changed_page, proxy=proxy)
        assert page_requests(requests) == []
    assert 'id="launches-summarized"' in dom and "launches are listed here" in dom
    summarized = dom[dom.index('<table id="summarized-table">'):]
    assert "matrix_addition2D" in summarized and "improvement" in summarized
    assert dom.rstrip().endswith("</html>") and "perfgate " in dom[-300:]  # parsed to its end


@pytest.mark.parametrize("fmt", ["md", "text"])
def test_a_cut_comment_or_log_still_names_every_regressed_kernel(changed_page: Path, fmt: str) -> None:
    """2,400 launches of each regressed kernel: more than a PR comment's and a CI log's launches. The cut
    listing names each kernel before any kernel's second launch, so the second regressed kernel is not lost
    behind the first one's launches."""
    folder = changed_page.parent
    base, cur = csv_pair(folder, "raw", LAUNCHES, changed=True)
    done = run_perfgate("compare", base, cur, "--format", fmt)
    assert done.returncode == 1, done.stderr
    for kernel in ("gemm\\_kernel", "softmax\\_kernel") if fmt == "md" else ("gemm_kernel", "softmax_kernel"):
        assert kernel in done.stdout, kernel
    assert "improvements launches" not in done.stdout
