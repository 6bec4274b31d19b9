"""The history dashboard's kernel page in a narrow window (headless Chromium): a templated kernel's name, its
page's heading, stays in the window."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from helpers.browser import run_chromium
from helpers.history import KERNEL_TIME, write_report
from perfgate.cli import main

CUTLASS = ("void cutlass::Kernel<cutlass::gemm::kernel::GemmUniversal<cutlass::gemm::threadblock::MmaMultistage<"
           "cutlass::gemm::GemmShape<128, 128, 32>, cutlass::gemm::GemmShape<64, 64, 32>>>>")
# A script of the test: how far the page scrolls sideways once drawn.
SIDEWAYS = ('setTimeout(function () { document.body.setAttribute("data-sideways", '
            "String(document.documentElement.scrollWidth - window.innerWidth)); }, 300);")


@pytest.mark.browser
def test_a_long_kernel_name_keeps_its_page_in_an_800_pixel_window(tmp_path: Path) -> None:
    """A CUTLASS kernel's page: its heading, the name in one unbroken run past "GemmUniversal<cutlass::gemm::",
    made the page scroll sideways in 800 pixels, the name cut at the window's edge."""
    url = f"sqlite:///{tmp_path / 'h.sqlite'}"
    for index in range(8):
        report = write_report(tmp_path / f"r{index}.json", {(CUTLASS, KERNEL_TIME): [70.0 + index % 2]})
        assert main(["history", "record", str(report), "--db", url, "--commit", f"{index:02d}" + "ab" * 19,
                     "--branch", "main", "--when", f"2026-01-01T00:00:{index:02d}Z"]) == 0
    site = tmp_path / "site"
    assert main(["history", "dashboard", "--db", url, "-o", str(site)]) == 0
    (page,) = (site / "kernels").glob("*.html")
    (site / "sideways.js").write_text(SIDEWAYS, encoding="utf-8")
    checked = page.with_name("checked.html")
    checked.write_text(page.read_text(encoding="utf-8").replace(
        "</body>", '<script src="../sideways.js"></script></body>'), encoding="utf-8")
    dom = run_chromium(checked, "--dump-dom", "--virtual-time-budget=2000", "--window-size=800,900")
    sideways = re.search(r'data-sideways="(-?\d+)"', dom)
    assert sideways is not None, "the page's check did not run"
    assert int(sideways.group(1)) <= 0
