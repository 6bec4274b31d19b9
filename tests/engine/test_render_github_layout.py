"""The Markdown comment as GitHub lays it out: rendered to HTML (markdown-it, GitHub's table rules), then drawn by
headless Chromium in a comment's width (GitHub's table CSS: a block that scrolls, cells padded 6px 13px)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from helpers.browser import run_chromium
from helpers.timeline import OURS

from perfgate.collect import read_table
from perfgate.compare import compare_tables
from perfgate.render import render_markdown
from perfgate.report import build_report

# GitHub's markdown-body rules that size a table, and a pull request comment's width.
GITHUB_CSS = """body { font: 14px/1.5 -apple-system, "Segoe UI", Helvetica, Arial, sans-serif; width: 760px; margin: 16px; }
table { display: block; width: max-content; max-width: 100%; overflow: auto; border-collapse: collapse; }
th, td { padding: 6px 13px; border: 1px solid #d1d9e0; } sub { font-size: 75%; }"""

# Per metric cell (Metric, Before, After, Δ) of each row, the items (between <br>s) that take more than one line: a
# wrapped "8.765 ms" pushes the values below it out of line with their metrics' names. The limits (<sub>) may wrap.
# Then the widest Kernel column, in pixels: what it leaves the numbers.
_CHECK = """<script>
const out = [];
document.querySelectorAll("table").forEach((table, t) => {
  const heads = Array.from(table.querySelectorAll("th")).map(th => th.textContent.trim());
  table.querySelectorAll("tbody tr").forEach((tr, row) => {
    tr.querySelectorAll("td").forEach((td, cell) => {
      if (!["Metric", "Baseline", "Current", "Change"].includes(heads[cell])) return;
      const items = [[]];
      td.childNodes.forEach(node => node.nodeName === "BR" ? items.push([]) : items[items.length - 1].push(node));
      items.forEach((nodes, item) => {
        if (!nodes.length || (nodes.length === 1 && nodes[0].nodeName === "SUB")) return;
        const range = document.createRange();
        range.setStartBefore(nodes[0]);
        range.setEndAfter(nodes[nodes.length - 1]);
        const lines = new Set(Array.from(range.getClientRects()).map(r => Math.round(r.top))).size;
        if (lines > 1) out.push(`${t}:${row}:${heads[cell]}:${item}:${lines}`);
      });
    });
  });
});
const names = Array.from(document.querySelectorAll("th")).filter(th => th.textContent.trim() === "Kernel");
const widest = Math.max(0, ...names.map(th => Math.round(th.getBoundingClientRect().width)));
document.body.insertAdjacentHTML("beforeend", `<pre id="wrapped">${out.join(" ")}</pre><pre id="kernel">${widest}</pre>`);
</script>"""


def _github_page(markdown: str, folder: Path) -> Path:
    markdown_it = pytest.importorskip("markdown_it")
    body = markdown_it.MarkdownIt("commonmark", {"html": True}).enable("table").render(markdown)
    page = folder / "comment.html"
    page.write_text(f'<!DOCTYPE html><html><head><meta charset="utf-8"><style>{GITHUB_CSS}</style></head>'
                    f"<body>{body.replace('<details>', '<details open>')}{_CHECK}</body></html>", encoding="utf-8")
    return page


def _laid_out(markdown: str, folder: Path) -> tuple[str, int]:
    dom = run_chromium(_github_page(markdown, folder), "--dump-dom", "--virtual-time-budget=2000",
                       "--window-size=800,900")
    wrapped = re.findall(r'<pre id="wrapped">(.*?)</pre>', dom, flags=re.S)
    kernel = re.findall(r'<pre id="kernel">(\d+)</pre>', dom)
    assert len(wrapped) == 2 and len(kernel) == 1, "the page's check did not run"  # the script's text, then its output
    return wrapped[1], int(kernel[0])


@pytest.mark.browser
def test_a_rows_values_stay_in_line_with_their_metrics_in_a_comment(tmp_path: Path) -> None:
    """The H200 MLP pair with a host synchronisation planted: the `step` row lists wall time and GPU idle. In a
    comment's width "8.765 ms" and "wall time" wrapped at their spaces (the Before cell read 8.765 / ms / 367.9 /
    µs beside wall / time / GPU / idle), so a value sat beside the other metric's name."""
    report = build_report(compare_tables(read_table(OURS / "mlp.torch.a.pt.trace.json.gz"),
                                         read_table(OURS / "mlp.sync.torch.pt.trace.json.gz")))
    markdown = render_markdown(report)
    wrapped, _ = _laid_out(markdown, tmp_path)
    assert wrapped == ""
    assert "wall\u00a0time<br>GPU\u00a0idle" in markdown  # non-breaking spaces: the raw text reads the same


@pytest.mark.browser
def test_a_long_kernel_name_wraps_and_leaves_the_numbers_in_view(tmp_path: Path) -> None:
    """cuBLAS names its kernels in 117 characters without a space: the Kernel column took that width (900 pixels of
    a 760-pixel comment) and GitHub's table scrolled the numbers out of view. It wraps at its underscores."""
    report = build_report(compare_tables(read_table(Path("tests/data/h100/mlp.rerun.raw-base.csv")),
                                         read_table(Path("tests/data/h100/mlp.rerun.raw.csv"))))
    markdown = render_markdown(report)
    wrapped, kernel = _laid_out(markdown, tmp_path)
    assert wrapped == "" and kernel < 300, kernel
    assert "sm80\\_<wbr>xmma\\_<wbr>gemm" in markdown


# The HTML report in a window: how far the page scrolls sideways, and the kernel table's names of 20 characters or
# fewer that take more than one line (a name broken at a letter: "matrix_addition2 / D"), and the sections' limits
# that do ("10% / + 262 / KB": a number apart from its unit).
_PAGE_CHECK = """<script>
const broken = Array.from(document.querySelectorAll("#kernel-table .kernel")).filter(span => {
  if (span.textContent.length > 20) return false;
  const range = document.createRange();
  range.selectNodeContents(span);
  return new Set(Array.from(range.getClientRects()).map(r => Math.round(r.top))).size > 1;
}).map(span => span.textContent);
const lines = cell => { const range = document.createRange(); range.selectNodeContents(cell);
  return new Set(Array.from(range.getClientRects()).map(r => Math.round(r.top))).size; };
document.querySelectorAll("table.metrics tbody tr").forEach(tr => {
  const limit = tr.querySelectorAll("td")[tr.children.length - 2];
  if (lines(limit) > 1) broken.push("limit " + limit.textContent);
});
const sideways = document.documentElement.scrollWidth - window.innerWidth;
document.body.insertAdjacentHTML("beforeend", `<pre id="page">${sideways}|${broken.join(",")}</pre>`);
</script>"""


def _page_laid_out(page_html: str, folder: Path, width: int) -> tuple[int, str]:
    page = folder / f"report-{width}.html"
    text = re.sub(r'<meta http-equiv="Content-Security-Policy"[^>]*>', "", page_html)  # it bars scripts
    page.write_text(text.replace("</body>", _PAGE_CHECK + "</body>"), encoding="utf-8")
    dom = run_chromium(page, "--dump-dom", "--virtual-time-budget=2000", f"--window-size={width},900")
    found = re.findall(r'<pre id="page">(-?\d+)\|(.*?)</pre>', dom, flags=re.S)
    assert len(found) == 1, "the page's check did not run"
    return int(found[0][0]), found[0][1]


@pytest.mark.browser
def test_the_html_report_keeps_to_the_window_and_short_names_whole(tmp_path: Path) -> None:
    """The H100 MLP reruns' HTML report: in an 800-pixel window its tables made the whole page scroll sideways
    (the kernel table's Why column and the sections' numbers off screen); a table now scrolls inside its own box."""
    from perfgate.render import render_html

    report = build_report(compare_tables(read_table(Path("tests/data/h100/mlp.rerun.raw-base.csv")),
                                         read_table(Path("tests/data/h100/mlp.rerun.raw.csv"))))
    page = render_html(report)
    sideways, _ = _page_laid_out(page, tmp_path, 800)
    assert sideways <= 0


@pytest.mark.browser
def test_a_short_kernel_name_stays_whole_beside_a_long_why(tmp_path: Path) -> None:
    """The T4 v3 → v4 regression in 1300 pixels: its kernel's name broke at a letter ("matrix_addition2 / D") while
    the Why column beside it took 340 pixels: a name now breaks only where it does not fit its column. Its section's
    limits wrapped apart from their units ("10% / + 262 / KB"); they keep to one line as the kernel table's do."""
    from helpers.common import corpus_file

    from perfgate.render import render_html

    report = build_report(compare_tables(read_table(corpus_file("mlp-t4/report_v3_loop_unroll.ncu-rep")),
                                         read_table(corpus_file("mlp-t4/report_v4_8_per_thread.ncu-rep"))))
    _, broken = _page_laid_out(render_html(report), tmp_path, 1300)
    assert broken == ""


@pytest.mark.browser
def test_a_regions_timeline_scales_to_a_narrow_window(tmp_path: Path) -> None:
    """The H200 MLP traces, sync after each layer: the region timelines (inline SVG, 900 pixels wide) made an
    800-pixel window scroll sideways; a chart now scales down to the page's width."""
    from perfgate.prepare import prepare
    from perfgate.render import render_html

    folder = Path("tests/data/h200/timeline")
    sides = [prepare(read_table(folder / name)).measurement
             for name in ("mlp.torch.a.pt.trace.json.gz", "mlp.sync.torch.pt.trace.json.gz")]
    sideways, _ = _page_laid_out(render_html(build_report(compare_tables(*sides))), tmp_path, 800)
    assert sideways <= 0


@pytest.mark.browser
def test_the_band_and_roofline_charts_scale_to_a_narrow_window(tmp_path: Path) -> None:
    """The T4 v3 → v4 regression with ``+roofline``: its section's band charts (840 pixels, their axis label past
    the track) scrolled an 800-pixel window 89 pixels sideways; they scale down to the page's width."""
    from helpers.common import corpus_file

    from perfgate.compare import CompareOptions
    from perfgate.options import resolve_metrics
    from perfgate.prepare import read_prepared
    from perfgate.render import render_html

    options = CompareOptions(metrics=resolve_metrics(["+roofline"], None))
    sides = [read_prepared(corpus_file(f"mlp-t4/{name}.ncu-rep"), options)
             for name in ("report_v3_loop_unroll", "report_v4_8_per_thread")]
    sideways, _ = _page_laid_out(render_html(build_report(compare_tables(*sides, options))), tmp_path, 800)
    assert sideways <= 0
