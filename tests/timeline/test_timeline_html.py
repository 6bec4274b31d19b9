"""The HTML report's region timelines (inline SVG), on perfgate's own H200 traces, in headless Chromium."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers.browser import dump_dom, page_requests, recording_proxy, screenshot
from helpers.common import run_cli
from helpers.timeline import OURS

from perfgate.render.timeline_html import timeline_sections


def _html(capsys: pytest.CaptureFixture[str], tmp_path: Path, base: Path, cur: Path) -> Path:
    page = tmp_path / "report.html"
    status, _, err = run_cli(capsys, "compare", base, cur, "--format", "html", "-o", page)
    assert status in (0, 1), err
    return page


@pytest.mark.browser
def test_timelines_draw_baseline_above_current_in_chromium(capsys: pytest.CaptureFixture[str],
                                                           tmp_path: Path) -> None:
    page = _html(capsys, tmp_path, OURS / "mlp.torch.a.pt.trace.json.gz", OURS / "mlp.sync.torch.pt.trace.json.gz")
    with recording_proxy() as (requests, proxy):
        dom = dump_dom(page, proxy=proxy)
        assert page_requests(requests) == []  # self-contained: no script, no fetch
    assert 'id="timelines"' in dom
    assert dom.count('class="timeline"') == 12  # 6 regions (step, layer0..3, backward) x baseline and current
    step = dom[dom.index("region <code>step</code>"):]
    assert step.index(">baseline<") < step.index(">current<")
    assert "baseline: wall 8.77 ms, GPU idle 4.4%" in step and "current: wall 9.48 ms, GPU idle 11.5%" in step  # host ranges
    assert dom.count('class="idle"') > 6  # idle gaps shaded
    screenshot(page, tmp_path / "report.png")


def test_a_baseline_from_a_trace_keeps_its_picture(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    status, _, err = run_cli(capsys, "baseline", OURS / "mlp.torch.a.pt.trace.json.gz", "--dir", tmp_path,
                             "--name", "mlp")
    assert status == 0, err
    [baseline] = list(tmp_path.rglob("mlp.json"))
    assert len(json.loads(baseline.read_text(encoding="utf-8"))["settings"]["timeline_sketch"]) < 20_000
    page = _html(capsys, tmp_path, baseline, OURS / "mlp.torch.b.pt.trace.json.gz")
    assert page.read_text(encoding="utf-8").count('<svg class="timeline"') == 12


def test_hostile_or_broken_sketches_are_text_or_left_out() -> None:
    hostile = '<script>alert(1)</script>'
    sketch = json.dumps({"version": 1, "regions": {
        hostile: {"wall": 1000, "lanes": {hostile: [[0, 500, "kernel", hostile, 1], ["x", 1, "kernel", "k", 1]]},
                  "idle_pct": 50.0},
        "broken": {"wall": "NaN", "lanes": {}}, "also": [1, 2]}})
    report = {"comparisons": [{"settings": {"baseline": {"timeline_sketch": "{not json"},
                                            "current": {"timeline_sketch": sketch}}, "test": hostile}]}
    html = timeline_sections(report)  # type: ignore[arg-type]
    assert "<script>" not in html and "&lt;script&gt;" in html
    assert html.count("<svg") == 1 and html.count("<rect x=") == 1  # the malformed op is left out
    assert timeline_sections({"comparisons": [{"settings": {}}]}) == ""  # type: ignore[arg-type]


@pytest.mark.parametrize(("lead", "marked"), [(400, True), (5, False), (-400, False), (5000, False),
                                              ("400", False), (True, False), (float("nan"), False)])
def test_the_host_lead_is_marked_only_when_it_is_a_real_share_of_the_wall(lead: object, marked: bool) -> None:
    """A sketch's host lead comes from a file: marked where it is a number from 1% of the wall time up to it."""
    sketch = json.dumps({"version": 1, "regions": {"step": {"wall": 1000, "lead": lead, "idle_pct": 40.0,
                                                            "lanes": {"stream 7": [[400, 600, "kernel", "k", 1]]}}}})
    html = timeline_sections({"comparisons": [{"settings": {"current": {"timeline_sketch": sketch}}}]})  # type: ignore[arg-type]
    assert ('class="lead"' in html) == marked and ("host lead 0.4 µs" in html) == marked
