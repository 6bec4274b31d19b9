"""The live timeline source on an H200: what its committed session reports show, read back with today's code.

Files: ``tests/data/h200/timeline-live`` (see its README): five gated timeline runs and three under both sources
of unchanged code, the planted host synchronisation (``PERFGATE_EXAMPLE_SYNC=1``) with its CUPTI trace, and
the deliberate regression under both sources. No GPU is needed here.
"""

from __future__ import annotations

import json
import lzma
import shutil
from pathlib import Path
from typing import Any

import pytest

from perfgate.report import result_rows, validate_report

REPO = Path(__file__).resolve().parents[2]
DATA = REPO / "tests" / "data" / "h200" / "timeline-live"
MLP = "examples/test_torch_mlp_layers.py::test_mlp_layer_by_layer"
VECTOR_ADD = "examples/test_cupy_raw_kernel.py::test_vector_add"
WALL, IDLE, GPU_TIME = "timeline.wall_time", "timeline.gpu_idle", "timeline.kernel_duration"
NCU_TIME = "gpu__time_duration.sum"


def _session(name: str) -> Any:
    """One session report, read and checked as perfgate reads an untrusted report."""
    path = DATA / "sessions" / f"{name}.json.xz"
    return validate_report(json.loads(lzma.decompress(path.read_bytes())), str(path))


def _regressed(name: str) -> list[dict[str, Any]]:
    return [r for r in result_rows(_session(name)) if r["status"] == "regression"]


@pytest.mark.parametrize("name", [*(f"tl-gate{i}" for i in range(1, 6)), *(f"both-gate{i}" for i in range(1, 4))])
def test_unchanged_code_has_no_regression(name: str) -> None:
    report = _session(name)
    assert report["verdict"] == "pass"
    assert report["summary"]["regression"] == 0
    assert _regressed(name) == []
    assert {c["test"] for c in report["comparisons"]} == {MLP, VECTOR_ADD,
                                                          "examples/test_torch_softmax.py::test_softmax"}


def test_the_spurious_improvements_are_the_softmax_regions_wall_time() -> None:
    """Runs 1-3 each reported one improvement: the softmax region's wall time, which its first launch's lazy
    module loading dominates (``docs/timeline.md``, "Lazy module loading")."""
    improved = {name: [(r["kind"], r["kernel"], r["metric"]) for r in result_rows(_session(name))
                       if r["status"] == "improvement"] for name in (f"tl-gate{i}" for i in range(1, 6))}
    softmax_wall = [("region", "softmax", WALL)]
    assert improved == {"tl-gate1": softmax_wall, "tl-gate2": softmax_wall, "tl-gate3": softmax_wall,
                        "tl-gate4": [], "tl-gate5": []}


def _sync_verdict(rows: list[dict[str, Any]]) -> None:
    """The planted host sync's verdict: region ``backward`` fails on wall time and GPU idle, no kernel does."""
    regressed = {(r["kind"], r["kernel"], r["metric"]) for r in rows if r["status"] == "regression"}
    assert regressed == {("region", "backward", WALL), ("region", "backward", IDLE)}
    kernels = [r for r in rows if r["kind"] == "kernel" and r["metric"] == GPU_TIME]
    assert len(kernels) == 26 and {r["status"] for r in kernels} == {"unchanged"}
    wall = next(r for r in rows if r["kernel"] == "backward" and r["metric"] == WALL)
    assert 0.10 < wall["current"] / wall["baseline"] - 1 < 0.14


def test_the_planted_host_sync_fails_on_wall_time_and_idle_with_no_kernel_blamed() -> None:
    report = _session("tl-sync")
    assert report["verdict"] == "fail"
    assert [c["test"] for c in report["comparisons"]] == [MLP]
    _sync_verdict(result_rows(report))
    assert "region `backward`: wall +12%, GPU idle 0.7% → 10.9%, kernels unchanged" in report["notes"]


def test_the_deliberate_regression_fails_under_both_sources() -> None:
    report = _session("both-regression")
    assert report["verdict"] == "fail"
    assert [c["current"] for c in report["comparisons"]] == [f"{VECTOR_ADD} (ncu)", f"{VECTOR_ADD} (timeline)"]
    regressed = {(r["kind"], r["kernel"], r["metric"]) for r in _regressed("both-regression")}
    assert ("kernel", "vector_add", NCU_TIME) in regressed  # ncu's counters
    assert ("kernel", "vector_add", GPU_TIME) in regressed  # the trace
    assert {name for _, name, _ in regressed} == {"vector_add"}


def test_the_recorded_sync_trace_judged_today_gives_the_same_verdict(tmp_path: Path) -> None:
    """The child's CUPTI trace of the sync run, read and gated as the plugin does, against the committed
    timeline baseline of the MLP test."""
    from perfgate.collect import read_table
    from perfgate.compare.sources import for_measurement
    from perfgate.gate import Where, baseline_name, gate
    from perfgate.plugin.options import PluginOptions, compare_options_for
    from perfgate.regions import drop_unscoped_launches

    name = baseline_name(MLP) + ".timeline"
    baselines = tmp_path / "baselines" / "nvidia-h200-sm90"
    baselines.mkdir(parents=True)
    shutil.copy(DATA / "baselines" / f"{name}.json", baselines / f"{name}.json")
    trace = tmp_path / "trace.cupti.json"
    trace.write_bytes(lzma.decompress((DATA / "sessions" / "tl-sync.trace.cupti.json.xz").read_bytes()))

    measured = drop_unscoped_launches(read_table(trace))._replace(source=f"{MLP} (timeline)")
    defaults = PluginOptions(update=False, strict=False, baselines=baselines.parent, report=tmp_path / "report",
                             ncu="ncu", clock_control="base", cache_control="all", timeout=600)
    options = for_measurement(compare_options_for(defaults), measured)
    result = gate(measured, baselines=baselines.parent, options=options, settings=dict(measured.settings),
                  where=Where(name=name, test=MLP))
    assert result.status == "regression"
    rows = result_rows(result.report)
    # The committed baseline was written when a region's time began at its first launch; today it begins when its
    # range opens, so layer0's host work before its first launch (0.1-0.3 ms) is in the trace's wall time only.
    layer0 = [r for r in rows if r["kernel"] == "layer0" and r["status"] == "regression"]
    assert [r["metric"] for r in layer0] == [WALL]
    _sync_verdict([r for r in rows if r["kernel"] != "layer0"])
