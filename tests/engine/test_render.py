"""Renderers: Markdown that fits a PR comment, self-contained HTML checked in a real headless Chromium."""

from __future__ import annotations

import html
import random
import re
from pathlib import Path

import pytest
from helpers.browser import dump_dom, page_requests, recording_proxy, screenshot
from helpers.common import corpus_file
from helpers.reports import hand_made

from perfgate.collect import read_table
from perfgate.compare import compare_tables
from perfgate.render import (
    format_change,
    format_value,
    format_values,
    md_escape,
    render_html,
    render_markdown,
    render_text,
)
from perfgate.report import build_report
from perfgate.units import scale_si

V3 = "mlp-t4/report_v3_loop_unroll.ncu-rep"
V4 = "mlp-t4/report_v4_8_per_thread.ncu-rep"


def report_of(base: str, cur: str) -> dict:
    return build_report(compare_tables(read_table(corpus_file(base)), read_table(corpus_file(cur))))


def test_format_value() -> None:
    assert format_value(151328.0, "ns") == "151.3 µs"
    assert format_value(1.2e9, "ns") == "1.2 s"
    assert format_value(16182272.0, "byte") == "16.2 MB"
    assert format_value(0.00135, "s") == "1.35 ms"
    assert format_value(86.5, "%") == "86.5%"
    assert format_value(18.0, "register/thread") == "18"
    assert format_value(None, "ns") == "—"
    assert format_change(1.2328) == "+123.3%" and format_change(-0.5) == "-50.0%" and format_change(None) == "—"


def test_quantities_take_the_prefix_scale_si_picks() -> None:
    """The formatters inline ``units.scale_si``'s choice (one call a value): the same prefix, the same digits."""
    rng = random.Random(5)
    values = [0.0, -0.0, 999.0, 999.5, 999.9999, 1000.0, 1e9, -1.5e12, 2.5e15, 123456789.5]
    values += [rng.choice([-1, 1]) * 10 ** rng.uniform(-3, 16) for _ in range(5000)]
    for value in values:
        scaled, prefix = scale_si(value)
        number = f"{scaled:.3g} {prefix}" if prefix else f"{value:.4g} "
        whole = float(value).is_integer() and abs(value) < 1e9  # counts below 1e9 are written whole
        assert format_value(value, "byte") == number + "B"
        assert format_value(value, "inst ") == (f"{int(value):,} inst" if whole else number + "inst")
        assert format_value(value, "register/thread") == (f"{int(value)}" if whole else number.rstrip())


def test_the_values_of_one_row_share_one_scale() -> None:
    """A row's baseline and current value are written at the scale the larger reaches, so they compare at a
    glance; a count stays whole while both are whole; values 10,000 times apart keep their own (the smaller
    would read "1.2e-05 GB")."""
    assert format_values([3_429_796.0, 3_160_000.5], "inst") == ["3.43 Minst", "3.16 Minst"]
    assert format_values([3_429_796, 3_160_000], "inst") == ["3,429,796 inst", "3,160,000 inst"]
    assert format_values([54_000.0, 4_093_000.0], "ns") == ["0.054 ms", "4.093 ms"]
    assert format_values([950.0, 1.5e6, 2.5e6], "byte") == ["0.00095 MB", "1.5 MB", "2.5 MB"]
    assert format_values([12_000.0, 1.2e9], "byte") == ["12 KB", "1.2 GB"]
    assert format_values([None, 3_160_000.5], "inst") == ["—", "3.16 Minst"]
    assert format_values([0.0, 2.5e-3], "s") == ["0 ms", "2.5 ms"]
    assert format_values([12.5, 80.0], "%") == ["12.5%", "80.0%"]


def test_an_instruction_count_and_its_median_read_in_one_unit_in_every_format() -> None:
    """The row of the report that showed "3,429,796 inst" beside "3.16 Minst": text, Markdown and HTML."""
    report = hand_made([{"status": "regression", "kernel": "gemm"}],
                       [(0, 2, 3_429_796, 3_160_000.5, -0.0787, "regression", True)])
    for text in (render_text(report), render_markdown(report).replace("\u00a0", " "), render_html(report)):  # non-breaking spaces read as spaces
        assert "3.43 Minst" in text and "3.16 Minst" in text and "3,429,796" not in text


def test_md_escape_makes_names_inert() -> None:
    nasty = '<img src=x onerror=alert(1)> @octocat a|b `rm -rf` [link](http://x) *bold*\nnext'
    escaped = md_escape(nasty)
    assert "<" not in escaped and ">" not in escaped
    assert "|" not in escaped.replace("&#124;", "")
    assert "`" not in escaped
    assert "@octocat" not in escaped and "@&#8203;octocat" in escaped
    assert "\n" not in escaped
    assert "\\[link\\]" in escaped and "\\*bold\\*" in escaped


def test_markdown_regressions_first_rest_folded() -> None:
    md = render_markdown(report_of("esmm-a10g/b644635.ncu-rep", "esmm-a10g/a62323b_output.ncu-rep"))
    assert md.startswith("### ✅ perfgate: no regression in 4 compared")
    assert "<details><summary>4 other kernels (unchanged)</summary>" in md
    md = render_markdown(report_of(V3, V4)).replace("\u00a0", " ")
    head, _, _ = md.partition("<details>")
    assert "| ❌ | matrix\\_addition2D | 1 | duration<br>DRAM read | 67.78 µs<br>14.2 MB | 151.3 µs<br>16.2 MB | " \
           "**+123.3%**<br>**+13.6%**<br><sub>limit 5% + 2 µs, 2% + 4.1 KB</sub> |" in head
    assert "launch config: grid (32, 63, 1) → (8, 63, 1); registers 16 → 18" in head
    assert "bound: memory → latency (compute 17.3% → 6.2%, memory 90.9% → 50.0% of peak)" in head
    assert "ncu findings appeared: Bottleneck: Latency Issue, Warp Stall: Lg Throttle Stalls" in head


def test_markdown_tables_keep_their_columns() -> None:
    md = render_markdown(report_of("esmm-a10g/5c6231e.ncu-rep", "esmm-a10g/a62323b_output.ncu-rep"))
    for table in re.findall(r"(?:^\|.*\|$\n?)+", md, flags=re.M):
        rows = [r for r in table.strip().splitlines()]
        widths = {len(re.findall(r"(?<!\\)\|", r)) for r in rows}
        assert len(widths) == 1, rows


def test_text_output_lists_only_what_needs_attention() -> None:
    text = render_text(report_of("esmm-a10g/b644635.ncu-rep", "esmm-a10g/a62323b_output.ncu-rep"))
    assert text.splitlines()[-1] == "PASS: no regression in 4 compared (4 unchanged)"
    assert "warptiling" not in text


@pytest.mark.browser
def test_html_report_in_headless_chromium(tmp_path: Path) -> None:
    page = tmp_path / "report.html"
    page.write_text(render_html(report_of(V3, V4)), encoding="utf-8")
    control = tmp_path / "control.html"
    control.write_text('<!DOCTYPE html><img src="http://perfgate-control.invalid/x.png">')
    with recording_proxy() as (requests, proxy):
        dump_dom(control, proxy=proxy)
        assert page_requests(requests), "the proxy must see a page's fetches for this test to mean anything"
        requests.clear()
        dom = dump_dom(page, proxy=proxy)
        assert page_requests(requests) == []  # self-contained: not one fetch
    assert 'id="verdict"' in dom and "FAIL: perfgate — 1 regression in 1 compared" in dom
    assert dom.count("<rect") >= 3  # the chart drew bars for the gated metrics
    assert "matrix_addition2D" in dom and "+123.3%" in dom
    assert "launch config changed: grid (32, 63, 1) → (8, 63, 1)" in dom
    screenshot(page, tmp_path / "report.png")


@pytest.mark.browser
def test_html_report_renders_hostile_names_as_text(tmp_path: Path) -> None:
    report = report_of(V3, V4)
    hostile = '<img src=x onerror="document.title=\'pwned\'"><script>document.title="pwned"</script> @octocat |`x`'
    count = len(report["launches"]["kernel"])
    report["launches"].update(kernel=[hostile] * count, test=[hostile] * count)
    page = tmp_path / "report.html"
    page.write_text(render_html(report), encoding="utf-8")
    dom = dump_dom(page)
    assert "<img" not in dom and "<script>document" not in dom
    assert "pwned" not in re.search(r"<title>(.*?)</title>", dom, re.S).group(1)
    assert html.escape('<img src=x onerror="document.title=', quote=False) in dom


def test_html_report_shows_bidirectional_and_invisible_characters_as_escapes() -> None:
    """A kernel name with a right-to-left override (Trojan Source) or a zero-width space: the page shows the escapes,
    so a name cannot read reordered or pass for another; its other characters (µ, →) are kept as they are."""
    report = report_of(V3, V4)
    count = len(report["launches"]["kernel"])
    report["launches"].update(kernel=["add\u202e2D\u200bx"] * count, test=["t.py::test_\u2066a"] * count)
    page = render_html(report)
    assert not re.search("[\u202e\u200b\u2066]", page)
    assert "add\\u202e2D\\u200bx" in page and "test_\\u2066a" in page
    assert "µs" in page and "→" in page


@pytest.mark.parametrize(("spec", "unit", "shown"), [
    ("5%+2000", "ns", "5% + 2 µs"), ("10%+262144", "byte", "10% + 262 KB"), ("1%", "", "1%"),
    ("off", "ns", "off"), ("500", "ns", "500 ns"), ("not a spec", "ns", "not a spec"), (None, "ns", ""),
])
def test_limits_read_in_the_metrics_unit(spec: str | None, unit: str, shown: str) -> None:
    from perfgate.quantities import limit_text

    assert limit_text(spec, unit) == shown


def test_a_replaced_kernels_total_says_why_in_every_table_and_a_one_sided_bound_says_whose() -> None:
    """The unscoped replacement of mlp-t4 (``matrix_addition1D`` → ``matrix_addition2D``) is judged on the report's
    total, which has no findings, bound or launch change: the HTML table's Why shows the counter that moved most,
    as the Markdown does; a missing or new kernel's bound names its one side instead of arrows to nothing."""
    report = report_of("mlp-t4/report_v6_1d_1_per_thread.ncu-rep", "mlp-t4/report_v5_4_per_thread.ncu-rep")
    page, md = render_html(report), render_markdown(report)
    total = re.search(r'<tr class="regression">.*?</tr>', page, flags=re.S)
    assert total is not None and '<span class="kernel">total</span>' in total.group(0)
    assert '<td class="why">DRAM read 8.76 MB → 14.9 MB (+69.7%)</td>' in total.group(0)
    assert "| DRAM read 8.76 MB → 14.9 MB (+69.7%) |" in md
    for text in (page, md, render_text(report)):
        assert "→ —" not in text
    assert "bound: memory in the baseline (compute 24.6%, memory 89.5% of peak)" in md
    assert "bound: memory in the current run (compute 12.0%, memory 73.6% of peak)" in page


# Per row of the kernel table, each multi-line cell whose lines do not sit one per item (a wrapped value pushes the
# values below it out of line with their metric's name): "row:cell:items:lines".
_MISALIGNED = """<script>
const out = [];
document.querySelectorAll("table")[0].querySelectorAll("tr").forEach((tr, row) => {
  tr.querySelectorAll("td").forEach((td, cell) => {
    const items = td.innerHTML.split("<br>").length;
    if (items < 2 || td.classList.contains("why")) return;
    const range = document.createRange();
    range.selectNodeContents(td);
    const lines = new Set(Array.from(range.getClientRects()).map(r => Math.round(r.top))).size;
    if (lines !== items) out.push(`${row}:${cell}:${items}:${lines}`);
  });
});
document.body.insertAdjacentHTML("beforeend", `<pre id="misaligned">${out.join(" ")}</pre>`);
</script>"""


@pytest.mark.browser
def test_a_rows_metrics_stay_in_line_in_a_narrow_window(tmp_path: Path) -> None:
    """The AMP vs FP32 pair's `step` row lists wall time, GPU idle and host lead with their values and limits: in
    a 1000-pixel window (headless Chromium) each value and limit stays on its metric's line (``8% + 200 µs`` and
    ``3.223 ms`` wrapped there, so the limits of two metrics read as four lines)."""
    from helpers.timeline import corpus_trace

    report = build_report(compare_tables(read_table(corpus_trace("amp-lab-t4/fp32.pt.trace.json")),
                                         read_table(corpus_trace("amp-lab-t4/amp.pt.trace.json"))))
    page = tmp_path / "report.html"
    text = re.sub(r'<meta http-equiv="Content-Security-Policy"[^>]*>', "", render_html(report))  # it bars scripts
    page.write_text(text.replace("</body>", _MISALIGNED + "</body>"), encoding="utf-8")
    from helpers.browser import run_chromium

    dom = run_chromium(page, "--dump-dom", "--virtual-time-budget=2000", "--window-size=1000,800")
    found = re.findall(r'<pre id="misaligned">(.*?)</pre>', dom, flags=re.S)
    assert len(found) == 2, "the page's check did not run"  # the script's text, then what it wrote
    assert '<span class="kernel">step</span>' in dom and found[1] == ""
