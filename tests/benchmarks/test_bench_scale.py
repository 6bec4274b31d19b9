"""``perfgate compare`` of two ncu CSV files against the floor: a bare pandas script that only reads
both files and joins them (issue 10). CPU time and peak memory of each process, interleaved rounds,
median of the per-round ratios (``scale.py`` explains the method).

Two kinds of test:

* ``test_csv_compare_stays_near_the_floor`` runs in the normal suite: 10,000 changed launches, three
  rounds, HTML on the details page, JSON and HTML on the raw page (the costliest formats). It asserts peak
  memory only, with room for a loaded machine (CPU time on a shared 2-core machine moves too much to be a
  test; it is printed), and the JSON report's size.
* ``test_bench_csv_compare`` holds the goal (issue 25: 1.5x the floor's CPU and peak memory, any format, 1k to
  50k launches, both pages) and runs only with ``--benchmark-enable``; pytest-benchmark times perfgate's run
  and records both ratios in ``extra_info``. ``test_bench_csv_compare_500k`` holds it on the raw page at 500k
  launches (229 MB a file; every format), where JSON and HTML meet it narrowly (docs/performance.md).
  ``test_bench_csv_compare_roofline`` holds issue 37's: the same 1.5x of CPU with ``--metrics +roofline`` (7 of
  the 20 metrics the roofline's counters, its derived metrics compared too), 1k to 500k launches; peak memory is
  recorded, not held (1.5-1.7x at 50k and 500k). Not met at 500k (docs/performance.md).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from scale import FORMATS, csv_commands, csv_pair, interleaved, measure

# (page) -> peak memory ratio allowed in the normal suite (measured: details 0.3x, raw 1.0-1.1x).
GENEROUS_PEAK = {"details": 1.0, "raw": 1.5}
GOAL = 1.5


@pytest.mark.parametrize(("page", "fmt"), [("details", "html"), ("raw", "json"), ("raw", "html")])
def test_csv_compare_stays_near_the_floor(page: str, fmt: str, scale_data: Path, tmp_path: Path) -> None:
    base, cur = csv_pair(scale_data, page, 10_000, changed=True)
    floor, ours = csv_commands(base, cur, fmt, tmp_path / f"report.{fmt}")
    pair = interleaved(floor, ours, repeat=3)
    print(f"\n{page} 10k {fmt}: floor {pair.median('floor', 'cpu'):.2f} s, perfgate {pair.median('ours', 'cpu'):.2f} s: "
          f"CPU {pair.cpu_ratio:.2f}x, peak {pair.peak_ratio:.2f}x")
    assert pair.peak_ratio <= GENEROUS_PEAK[page], pair
    if fmt == "json":
        written = json.loads((tmp_path / "report.json").read_text(encoding="utf-8"))
        assert written["version"] == 2 and len(written["launches"]["status"]) == 10_000
        assert (tmp_path / "report.json").stat().st_size < 10_000_000  # version 1 wrote 56 MB


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("page", ["details", "raw"])
@pytest.mark.parametrize("launches", [1_000, 10_000, 50_000])
def test_bench_csv_compare(benchmark, launches: int, page: str, fmt: str,  # type: ignore[no-untyped-def]
                           scale_data: Path, tmp_path: Path) -> None:
    if benchmark.disabled:
        pytest.skip("a precise goal on large inputs: run with --benchmark-enable")
    base, cur = csv_pair(scale_data, page, launches, changed=True)
    floor, ours = csv_commands(base, cur, fmt, tmp_path / f"report.{fmt}")
    pair = interleaved(floor, ours, repeat=5 if launches <= 10_000 else 3)
    benchmark.pedantic(measure, args=(ours,), rounds=1, iterations=1)
    benchmark.extra_info.update(cpu_ratio=round(pair.cpu_ratio, 3), peak_ratio=round(pair.peak_ratio, 3),
                                floor_cpu=round(pair.median("floor", "cpu"), 3),
                                cpu=round(pair.median("ours", "cpu"), 3),
                                floor_peak_mib=round(pair.median("floor", "peak")),
                                peak_mib=round(pair.median("ours", "peak")))
    if fmt == "json":
        benchmark.extra_info["json_bytes"] = (tmp_path / "report.json").stat().st_size
    assert pair.cpu_ratio <= GOAL and pair.peak_ratio <= GOAL, benchmark.extra_info


@pytest.mark.parametrize("fmt", FORMATS)
def test_bench_csv_compare_500k(benchmark, fmt: str, scale_data: Path,  # type: ignore[no-untyped-def]
                                tmp_path: Path) -> None:
    if benchmark.disabled:
        pytest.skip("a precise goal on large inputs: run with --benchmark-enable")
    base, cur = csv_pair(scale_data, "raw", 500_000, changed=True)
    floor, ours = csv_commands(base, cur, fmt, tmp_path / f"report.{fmt}")
    pair = interleaved(floor, ours, repeat=3)
    benchmark.pedantic(measure, args=(ours,), rounds=1, iterations=1)
    benchmark.extra_info.update(cpu_ratio=round(pair.cpu_ratio, 3), peak_ratio=round(pair.peak_ratio, 3),
                                floor_cpu=round(pair.median("floor", "cpu"), 3),
                                cpu=round(pair.median("ours", "cpu"), 3))
    assert pair.cpu_ratio <= GOAL and pair.peak_ratio <= GOAL, benchmark.extra_info


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("launches", [1_000, 50_000, 500_000])
def test_bench_csv_compare_roofline(benchmark, launches: int, fmt: str,  # type: ignore[no-untyped-def]
                                    scale_data: Path, tmp_path: Path) -> None:
    if benchmark.disabled:
        pytest.skip("a precise goal on large inputs: run with --benchmark-enable")
    base, cur = csv_pair(scale_data, "raw", launches, changed=True, roofline=True)
    floor, ours = csv_commands(base, cur, fmt, tmp_path / f"report.{fmt}", extra=("--metrics", "+roofline"))
    pair = interleaved(floor, ours, repeat=3)
    benchmark.pedantic(measure, args=(ours,), rounds=1, iterations=1)
    benchmark.extra_info.update(cpu_ratio=round(pair.cpu_ratio, 3), peak_ratio=round(pair.peak_ratio, 3),
                                floor_cpu=round(pair.median("floor", "cpu"), 3),
                                cpu=round(pair.median("ours", "cpu"), 3))
    assert pair.cpu_ratio <= GOAL, benchmark.extra_info
