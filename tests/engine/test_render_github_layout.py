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
      if (!["Metric", "Before", "After", "Δ"].includes(heads[cell])) return;
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
