"""Issue 13: the comment a reviewer decides from, the HTML a kernel engineer investigates from, and the "why".

Real reports where they have the shape (the T4/A10G corpus, perfgate's own H100 captures); where none does
(60 regressed launches of one kernel), a real H100 table is repeated and its values scaled.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest
from helpers.browser import dump_dom, page_requests, recording_proxy, screenshot
from helpers.common import REPO, corpus_file

from perfgate.collect import read_table
from perfgate.columns import Columns
from perfgate.collect.rules import finding_labels
from perfgate.compare import compare_tables
from perfgate.errors import InputError
from perfgate.publish.context import commits_from_environment, resolve_target
from perfgate.render import render_html, render_json, render_markdown, render_text
from perfgate.render.common import plural, source_label
from perfgate.render.kernels import kernel_groups, kernel_row
from perfgate.render.kernels_html import axis, metric_group
from perfgate.report import build_report, merge_reports, validate_report
from perfgate.table import Measurement
from perfgate.vocabulary import bound_of

V3 = "mlp-t4/report_v3_loop_unroll.ncu-rep"
V4 = "mlp-t4/report_v4_8_per_thread.ncu-rep"
H100_SOFTMAX = REPO / "tests" / "data" / "h100" / "softmax.ncu-rep.xz"
BASE, HEAD = "1" * 40, "2" * 40


def report_of(base: str, cur: str) -> dict:
    return build_report(compare_tables(read_table(corpus_file(base)), read_table(corpus_file(cur))))


def repeated(launches: int, slowdown: float) -> dict:
    """A real H100 softmax launch repeated ``launches`` times in the baseline, and again in the current run
    with its duration scaled by ``slowdown`` (a deterministic ±0.5% spread on both sides)."""
    measurement = read_table(H100_SOFTMAX)
    table = measurement.table
    first = table[table["launch"] == table["launch"].min()]

    def side(scale: float, phase: int) -> Measurement:
        copies = []
        for n in range(launches):
            number = np.full(len(first), n, dtype=np.int64)
            jitter = 1 + 0.005 * (((n + phase) * 7) % 11 - 5) / 5
            timed = first["metric"] == "gpu__time_duration.sum"
            value = first["value"].copy()
            value[timed] = value[timed] * scale * jitter
            copies.append(first.assign(ordinal=number, launch=number, value=value))
        return measurement.with_table(Columns.concat(copies))

    return build_report(compare_tables(side(1.0, 0), side(slowdown, 3)))


def test_sixty_regressed_launches_of_one_kernel_are_one_row_with_the_group_statistics() -> None:
    report = repeated(60, 1.25)
    assert report["summary"]["regression"] == 60
    # One group judged on each gated metric (duration and the work counters).
    assert set(report["groups"]["n_baseline"]) == set(report["groups"]["n_current"]) == {60}
    assert len(set(report["groups"]["group"])) == 1
    markdown = render_markdown(report, commits=(BASE, HEAD)).replace("\u00a0", " ")
    rows = [line for line in markdown.splitlines() if line.startswith("| ❌")]
    assert len(rows) == 1 and "| ×60 |" in rows[0] and "duration (median)" in rows[0]
    assert re.search(r"\*\*\+2\d\.\d% \\\[\+2\d\.\d%, \+2\d\.\d%\\\]\*\*", rows[0]), rows[0]
    assert "bound: latency (unchanged) (compute 55.0% → 55.0%" in rows[0]  # real H100 speed-of-light figures
    assert "**GPU:** NVIDIA H100 80GB HBM3 (CC 9.0) · **commits:** base 111111111111 → head 222222222222" in markdown
    assert "Launches: 60 regressions" in markdown and "60 regression " not in markdown
    assert len(markdown) < 2_000  # the whole comment fits a first screen


def test_the_comment_lists_ten_kernels_then_folds_the_rest_with_a_link() -> None:
    report = repeated(1, 1.0)
    merged = merge_reports([_renamed(report, f"gemm_{i}", slower=1.5) for i in range(14)])
    link = "The full report is in the [workflow run's artifacts](https://github.com/o/r/actions/runs/1)."
    markdown = render_markdown(merged, full_report=link)
    head, _, folded = markdown.partition("<details>")
    assert head.count("| ❌ |") == 10 and folded.count("| ❌ |") == 4
    assert "<summary>and 4 more kernels that need attention</summary>" in markdown
    assert f"And 4 more kernels that need attention (above). {link}" in markdown


def _renamed(report: dict, kernel: str, slower: float) -> dict:
    document = json.loads(render_json(report))
    document["launches"]["kernel"] = [kernel] * len(document["launches"]["kernel"])
    results = document["results"]
    for i, status in enumerate(results["status"]):
        if results["gated"][i] and results["metric"][i] == 0:
            results["current"][i] = results["baseline"][i] * slower
            results["change"][i] = slower - 1
            results["status"][i] = "regression"
    document["launches"]["status"] = ["regression"] * len(document["launches"]["status"])
    document["verdict"] = "fail"
    return validate_report(document, kernel)


def test_a_merged_multi_gpu_report_has_a_gpu_column() -> None:
    t4 = report_of(V3, V4)
    a10g = report_of("esmm-a10g/5c6231e.ncu-rep", "esmm-a10g/a62323b_output.ncu-rep")
    merged = merge_reports([t4, a10g])
    markdown = render_markdown(merged)
    assert '<td class="where">Tesla T4</td>' in render_html(merged)  # the HTML table names each row's GPU too
    assert "|  | Kernel | GPU | Launches |" in markdown
    assert "| ❌ | matrix\\_addition2D | Tesla T4 | 1 |" in markdown
    assert "**GPUs:** Tesla T4 (CC 7.5), NVIDIA A10G (CC 8.6)" in markdown


def test_the_why_bound_launch_change_and_findings_in_every_format() -> None:
    report = report_of(V3, V4)
    assert report["launches"]["findings_appeared"] == [["Bottleneck: Latency Issue", "Warp Stall: Lg Throttle Stalls"]]
    assert report["launches"]["findings_gone"] == [[]]
    bound = "bound: memory → latency (compute 17.3% → 6.2%, memory 90.9% → 50.0% of peak)"
    findings = "ncu findings appeared: Bottleneck: Latency Issue, Warp Stall: Lg Throttle Stalls"
    for text in (render_text(report), render_markdown(report), render_html(report)):
        assert bound in text and findings in text
    assert "launch config" in render_html(report)


def test_findings_are_not_known_without_rule_results() -> None:
    """perfgate's own H100 captures were profiled with --metrics only: ncu ran no rule, so "not known"."""
    table = read_table(H100_SOFTMAX)
    assert table.findings is None
    report = build_report(compare_tables(table, read_table(REPO / "tests/data/h100/softmax.rerun.ncu-rep.xz")))
    assert set(report["launches"]["findings_appeared"]) == {None}


def test_finding_labels_keep_optimization_advice_only() -> None:
    results = [{"name": "Bottleneck", "rule_message": {"title": "Latency Issue", "type": 2}},
               {"name": "Bottleneck", "rule_message": {"title": "High Throughput", "type": 1}},
               {"name": "L2 Compression", "rule_message": {"title": "", "type": 3}},
               {"name": "Uncoalesced Global Accesses", "rule_message": {"title": "", "type": 2}},
               "junk"]
    assert finding_labels(results) == ["Bottleneck: Latency Issue", "Uncoalesced Global Accesses"]


def test_bound_rule() -> None:
    assert bound_of(17.3, 90.9) == "memory" and bound_of(75.0, 20.0) == "compute"
    assert bound_of(6.2, 50.0) == "latency" and bound_of(None, 50.0) is None


def test_the_optional_columns_round_trip_and_are_checked() -> None:
    report = report_of(V3, V4)
    again = validate_report(json.loads(render_json(report)), "r.json")
    assert again["launches"]["findings_appeared"] == report["launches"]["findings_appeared"]
    bad = json.loads(render_json(report))
    bad["launches"]["findings_gone"] = [[1]]
    with pytest.raises(InputError, match="findings_gone"):
        validate_report(bad, "bad.json")
    bad = json.loads(render_json(repeated(8, 1.2)))
    bad["groups"]["metric"] = [99] * len(bad["groups"]["metric"])
    with pytest.raises(InputError, match="groups.metric"):
        validate_report(bad, "bad.json")


def test_a_rename_reads_old_to_new() -> None:
    report = report_of("mlp-t4/report_v7_1d_1_per_thread_blocked.ncu-rep", "mlp-t4/report_v8_1d_1_per_thread_stripped.ncu-rep")
    assert report["launches"]["baseline_kernel"] == ["matrix_addition1D"]
    assert "matrix\\_addition1D → matrix\\_addition1D\\_stripped" in render_markdown(report)
    row = kernel_row(report, kernel_groups(report)[0])
    assert row.name == "matrix_addition1D → matrix_addition1D_stripped"


def test_labels_plurals_and_commits() -> None:
    assert source_label("/home/runner/work/x/base.ncu-rep") == "base.ncu-rep"
    assert source_label("data/base.ncu-rep") == "data/base.ncu-rep"
    assert plural(2, "improvement") == "2 improvements" and plural(3, "no data") == "3 no data"
    assert metric_group("dram__bytes_read.sum") == "Memory"
    assert metric_group("sm__throughput.avg.pct_of_peak_sustained_elapsed") == "Speed of light"
    assert metric_group("launch__registers_per_thread") == "Launch and occupancy"
    assert axis([100.0, 100.3, 100.2])[0] > 99  # a 0.3% change over a 0.2% limit gets a zoomed axis
    assert axis([10.0, 20.0]) == (0.0, pytest.approx(21.6))


def test_publish_and_the_session_name_base_and_head(tmp_path: Path) -> None:
    event = tmp_path / "event.json"
    event.write_text(json.dumps({"pull_request": {"number": 5, "head": {"sha": HEAD}, "base": {"sha": BASE}}}))
    env = {"GITHUB_EVENT_PATH": str(event), "GITHUB_REPOSITORY": "o/r", "GITHUB_SHA": "3" * 40}
    assert commits_from_environment(env) == (BASE, HEAD)
    assert resolve_target(env, json.loads(event.read_text())).base == BASE
    assert commits_from_environment({}) == (None, None)
    assert commits_from_environment({"GITHUB_EVENT_PATH": str(tmp_path / "none")}) == (None, None)


@pytest.mark.browser
@pytest.mark.parametrize("launches", [1, 60])
def test_html_sections_in_headless_chromium(launches: int, tmp_path: Path) -> None:
    report = repeated(launches, 1.25)
    page = tmp_path / "report.html"
    page.write_text(render_html(report, commits=(BASE, HEAD)), encoding="utf-8")
    with recording_proxy() as (requests, proxy):
        dom = dump_dom(page, proxy=proxy)
        assert page_requests(requests) == []
    assert dom.count('class="kernel-section"') == 1
    assert "NVIDIA H100 80GB HBM3" in dom and "commits: base 111111111111 → head 222222222222" in dom
    assert dom.count('class="allowed"') >= 1 and "allowed up to" in dom
    assert "Speed of light" in dom and "Every launch" in dom
    screenshot(page, tmp_path / "report.png")
