"""The HTML page at 50,000 and 500,000 launches: its render time and its size, which stays under the page's bound
(``perfgate.render.html_bound.PAGE_BYTES``, 5 MB) at any number of launches.

Inputs: two ncu raw-page exports in which every launch changed (``scale.csv_pair``; two kernels of five
regressed), the worst case for the page. Run with numbers (the 500k inputs take about two minutes to write and
compare, and 2 GB of memory)::

    python -m pytest tests/benchmarks/test_bench_html_page.py --benchmark-enable -p no:xdist

pytest-benchmark times ``render_html`` of the built report; ``extra_info`` records the page's bytes.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from scale import csv_pair

from perfgate.collect import read_table
from perfgate.compare import compare_tables
from perfgate.render import render_html
from perfgate.render.html_bound import PAGE_BYTES
from perfgate.report import build_report


@pytest.mark.parametrize("launches", [50_000, 500_000])
def test_bench_html_page(benchmark, launches: int, scale_data: Path) -> None:  # type: ignore[no-untyped-def]
    if benchmark.disabled:
        pytest.skip("large inputs: run with --benchmark-enable")
    base, cur = csv_pair(scale_data, "raw", launches, changed=True)
    report = build_report(compare_tables(read_table(base), read_table(cur)))
    page = benchmark.pedantic(render_html, args=(report,), rounds=3, iterations=1)
    size = len(page.encode("utf-8"))
    benchmark.extra_info.update(launches=launches, page_bytes=size)
    assert size <= PAGE_BYTES
    assert 'id="launches-summarized"' in page and "gemm_kernel" in page and "softmax_kernel" in page
