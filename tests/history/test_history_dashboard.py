"""perfgate history dashboard in a real headless Chromium: pages render under their Content-Security-Policy,
the charts draw (their canvases hold pixels), links resolve, nothing is fetched from the network, and text from
reports stays text."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest

from helpers.browser import dump_dom, page_requests, recording_proxy, screenshot
from helpers.history import INSTRUCTIONS, KERNEL_TIME, write_report
from perfgate.cli import main

HOSTILE = '</script><script src="https://evil.example/x.js"></script><b>bold'
# A script of the test, not of the dashboard: it counts each canvas' painted pixels after the charts drew,
# and writes the counts into the DOM that --dump-dom returns.
CANVAS_CHECK = """
setTimeout(function () {
  const counts = [];
  for (const canvas of document.querySelectorAll("canvas")) {
    const pixels = canvas.getContext("2d").getImageData(0, 0, canvas.width, canvas.height).data;
    let painted = 0;
    for (let i = 3; i < pixels.length; i += 4) { if (pixels[i] !== 0) { painted++; } }
    counts.push(painted);
  }
  document.body.setAttribute("data-painted", counts.join(","));
}, 300);
"""


def _history(tmp_path: Path) -> str:
    tmp_path.mkdir()
    url = f"sqlite:///{tmp_path / 'h.sqlite'}"
    rng = np.random.default_rng(5)
    for index in range(30):
        time = (100.0 if index < 18 else 108.0) + float(rng.normal(0, 0.4))
        report = write_report(tmp_path / f"r{index}.json", {
            ("gemm", KERNEL_TIME): [time, time + 0.5], ("gemm", INSTRUCTIONS): [4096.0 if index < 10 else 4000.0],
            (HOSTILE, KERNEL_TIME): [50.0 + float(rng.normal(0, 0.2))]})
        assert main(["history", "record", str(report), "--db", url, "--commit", f"{index:02d}" + "ab" * 19,
                     "--branch", "main", "--when", f"2026-01-01T00:00:{index:02d}Z"]) == 0
    assert main(["accept", "--db", url, "--commit", "18" + "ab" * 19, "--kernel", "gemm", "--by", "ada",
                 "--reason", "bigger tiles, <i>on purpose</i>"]) == 0
    return url


def test_dashboard_renders_draws_and_links(tmp_path: Path) -> None:
    url = _history(tmp_path / "runs")
    site = tmp_path / "site"
    assert main(["history", "dashboard", "--db", url, "-o", str(site)]) == 0
    index = site / "index.html"
    text = index.read_text(encoding="utf-8")
    assert "Content-Security-Policy" in text and "<script" not in text  # sparklines are inline SVG
    links = re.findall(r'href="([^"]+)"', text)
    kernels = [link for link in links if link.startswith("kernels/")]
    assert len(kernels) == 3 and len(set(kernels)) == 2  # a row per series, a page per kernel
    assert all((site / link).is_file() for link in links)
    gemm = next(site / link for link in kernels if "gemm" in link)
    page = gemm.read_text(encoding="utf-8")
    scripts = re.findall(r"<script([^>]*)>", page)
    assert all('src="../static/' in s or 'type="application/json"' in s for s in scripts)  # no inline script
    assert all((gemm.parent / m).resolve().is_file() for m in re.findall(r'(?:src|href)="(\.\./[^"]+)"', page))
    assert "accepted by ada: bigger tiles, &lt;i&gt;on purpose&lt;/i&gt;" in page
    payload = json.loads(re.search(r'<script type="application/json"[^>]*>(.*?)</script>', page, re.S).group(1))  # type: ignore[union-attr]
    # Each chart's axes say what they show: the y axis the metric and its unit (instructions had none).
    assert sorted(m["y_label"] for m in payload["metrics"]) == ["duration (ns)", "instructions"]

    (site / "check.js").write_text(CANVAS_CHECK, encoding="utf-8")
    checked = gemm.with_name("checked.html")
    checked.write_text(page.replace("</body>", '<script src="../check.js"></script></body>'), encoding="utf-8")
    with recording_proxy() as (requests, proxy):
        dom = dump_dom(checked, proxy=proxy)
        hostile_dom = dump_dom(site / next(link for link in kernels if "gemm" not in link), proxy=proxy)
    assert page_requests(requests) == []
    painted = [int(n) for n in re.search(r'data-painted="([0-9,]+)"', dom).group(1).split(",")]  # type: ignore[union-attr]
    assert len(painted) == 2 and all(n > 1000 for n in painted), painted  # one chart per metric, each drawn
    assert dom.count('data-drawn="true"') == 2
    assert "evil.example" not in "".join(re.findall(r"<script[^>]*>", hostile_dom))
    assert "&lt;/script&gt;&lt;script" in hostile_dom  # the kernel's name, shown as text

    png = tmp_path / "kernel.png"
    screenshot(gemm, png, "1200,1400")


def test_dashboard_of_an_unknown_branch_writes_nothing(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    url = _history(tmp_path / "runs")
    site = tmp_path / "site"
    assert main(["history", "dashboard", "--db", url, "--branch", "nope", "-o", str(site)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "branch 'nope': has no runs in this history (branches with runs: main;" in err
    assert not site.exists() and list(tmp_path.glob(".site*")) == []


def test_dashboard_replaces_only_an_earlier_dashboard(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    url = _history(tmp_path / "runs")
    work = tmp_path / "work"
    work.mkdir()
    (work / "notes.txt").write_text("mine", encoding="utf-8")
    assert main(["history", "dashboard", "--db", url, "-o", str(work)]) == 2
    assert "holds something other than a perfgate dashboard" in capsys.readouterr().err
    assert (work / "notes.txt").read_text(encoding="utf-8") == "mine"
    site = tmp_path / "site"
    for _ in range(2):  # the second run replaces the first site whole
        assert main(["history", "dashboard", "--db", url, "-o", str(site)]) == 0
    assert (site / "index.html").is_file() and sorted(p.name for p in tmp_path.iterdir()) == ["runs", "site", "work"]


def test_a_names_bidirectional_characters_show_as_escapes_on_every_page(tmp_path: Path) -> None:
    """A kernel named with a right-to-left override and a zero-width space (Trojan Source): the index, the kernel's
    page and its charts' data show the escapes, so no page reorders or hides what the name holds."""
    url = f"sqlite:///{tmp_path / 'h.sqlite'}"
    name = "gemm\u202eevil\u200b"
    for index in range(3):
        report = write_report(tmp_path / f"r{index}.json", {(name, KERNEL_TIME): [100.0 + index]})
        assert main(["history", "record", str(report), "--db", url, "--commit", f"{index:02d}" + "cd" * 19,
                     "--branch", "main", "--when", f"2026-01-01T00:00:{index:02d}Z"]) == 0
    site = tmp_path / "site"
    assert main(["history", "dashboard", "--db", url, "-o", str(site)]) == 0
    pages = [path.read_text(encoding="utf-8") for path in site.rglob("*.html")]
    assert len(pages) >= 2
    assert not any(re.search("[\u202e\u200b]", page) for page in pages)
    assert all("gemm\\u202eevil\\u200b" in page for page in pages if "application/json" not in page)
    for page in pages:  # the charts' data, as the page's script reads it
        for block in re.findall(r'<script type="application/json"[^>]*>(.*?)</script>', page, re.S):
            data = json.dumps(json.loads(block), ensure_ascii=False)
            assert "\u202e" not in data
