"""A region's time is its host range (docs/timeline.md, "What is measured"): from the range's start on the CPU to
the later of its end and its GPU work's end, with the host lead (range start to its first GPU work) beside it.

Real pair (../shared/corpus/timeline-pairs/README.md): the same ResNet-50 training on a V100 under torch.profiler,
DataLoader num_workers 4 and 0. Without workers each step first waits for the data loader on the training thread:
the step +47%, its GPU idle 19% -> 41%, kernels flat. Expected before the first run: 4 -> 0 fails on the step's
wall time, GPU idle and host lead; 0 -> 4 fails on nothing. cuDNN chose other algorithms in the two processes
(kernels no rule pairs, and `nhwcToNchwKernel` with another grid), so both runs accept unpaired kernels.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers.common import CORPUS, run_cli

from perfgate.collect import read_table
from perfgate.collect.timeline.chrome import read_chrome_trace
from perfgate.compare import compare_tables

PAIRS = CORPUS / "timeline-pairs" / "kineto-resnet50-v100"
WORKERS_4 = "resnet50_num_workers_4_worker0.1623212756351.pt.trace.json.gz"
WORKERS_0 = "resnet50_num_workers_0_worker0.1623143089861.pt.trace.json.gz"


def _pair_file(name: str) -> Path:
    path = PAIRS / name
    if not path.is_file():
        pytest.skip(f"corpus file {path} not available (../shared/corpus/timeline-pairs)")
    return path


def _statuses(comparison: object, kind: str) -> dict[tuple[str, str], set[str]]:
    results, launches, at = comparison.results, comparison.launches, comparison.result_launch  # type: ignore[attr-defined]
    found: dict[tuple[str, str], set[str]] = {}
    for i in range(len(results)):
        if str(launches["kind"][at[i]]) == kind:
            found.setdefault((str(results["kernel"][i]), str(results["metric"][i])), set()).add(str(results["status"][i]))
    return found


def test_a_starved_gpu_fails_on_the_step_not_on_a_kernel() -> None:
    base, cur = read_table(_pair_file(WORKERS_4)), read_table(_pair_file(WORKERS_0))
    comparison = compare_tables(base, cur)
    regions = _statuses(comparison, "region")
    for metric in ("timeline.wall_time", "timeline.gpu_idle", "timeline.host_lead"):
        assert regions[("step", metric)] == {"regression"}, metric
    # The only kernel that got slower is one cuDNN launched with another grid in the current run.
    slower = {name for (name, _), status in _statuses(comparison, "kernel").items() if "regression" in status}
    changed = {str(k) for k, note in zip(comparison.launches["kernel"].tolist(),
                                         comparison.launches["launch_change"].tolist(), strict=True) if note}
    assert slower <= changed


def test_the_reverse_pair_fails_nothing(capsys: pytest.CaptureFixture[str]) -> None:
    status, out, _ = run_cli(capsys, "compare", _pair_file(WORKERS_0), _pair_file(WORKERS_4),
                             "--accept-unpaired-kernels")
    assert "REGRESSION" not in out and status == 0, out[-3000:]


def test_autograd_nodes_are_not_regions() -> None:
    for name in (WORKERS_4, WORKERS_0):
        path = _pair_file(name)
        import gzip

        trace = read_chrome_trace(json.loads(gzip.decompress(path.read_bytes())), path)
        names = {r.name.split("#")[0] for r in trace.ranges}
        assert names == {"ProfilerStep", "enumerate(DataLoader)", "Optimizer.zero_grad", "Optimizer.step"}


def _trace(events: list[dict[str, object]]) -> dict[str, object]:
    return {"traceEvents": events}


def _kernel(ts: float, dur: float, correlation: int) -> list[dict[str, object]]:
    return [{"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": ts - 5, "dur": 4,
             "args": {"correlation": correlation}},
            {"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": ts, "dur": dur,
             "args": {"correlation": correlation, "device": 0, "stream": 7}}]


def _step_with_lead(lead: float) -> dict[str, object]:
    """One step: ``lead`` µs of host work, then two 100 µs kernels back to back."""
    events: list[dict[str, object]] = [{"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 1,
                                        "tid": 1, "ts": 1000.0, "dur": lead + 215.0}]
    events += _kernel(1000.0 + lead + 10, 100.0, 1) + _kernel(1000.0 + lead + 110, 100.0, 2)
    return _trace(events)


def test_host_lead_wall_and_idle_of_one_step(tmp_path: Path) -> None:
    path = tmp_path / "t.json"
    path.write_text(json.dumps(_step_with_lead(1000.0)), encoding="utf-8")
    table = read_table(path).table
    values = {m: float(v) for m, v, k in zip(table["metric"].tolist(), table["value"].tolist(),
                                             table["kernel"].tolist(), strict=True) if k == "step"}
    # range start 1000; GPU work 2010..2210; range end 2215
    assert values["timeline.host_lead"] == 1_010_000
    assert values["timeline.wall_time"] == 1_215_000
    assert values["timeline.gpu_idle"] == 1_015_000
    assert values["timeline.gpu_busy"] == 200_000


def test_a_stall_before_the_first_launch_fails_the_step(tmp_path: Path) -> None:
    base, cur = tmp_path / "base.json", tmp_path / "cur.json"
    base.write_text(json.dumps(_step_with_lead(50.0)), encoding="utf-8")
    cur.write_text(json.dumps(_step_with_lead(5050.0)), encoding="utf-8")
    comparison = compare_tables(read_table(base), read_table(cur))
    regions = _statuses(comparison, "region")
    assert {key for key, status in regions.items() if "regression" in status} == {
        ("step", "timeline.wall_time"), ("step", "timeline.gpu_idle"), ("step", "timeline.host_lead")}
    assert all("regression" not in s for s in _statuses(comparison, "kernel").values())


def test_a_trace_without_ranges_has_one_whole_trace_row(tmp_path: Path) -> None:
    path = tmp_path / "t.json"
    path.write_text(json.dumps(_trace(_kernel(100.0, 50.0, 1) + _kernel(400.0, 50.0, 2))), encoding="utf-8")
    table = read_table(path).table
    values = {m: float(v) for m, v, k in zip(table["metric"].tolist(), table["value"].tolist(),
                                             table["kernel"].tolist(), strict=True) if k == "whole trace"}
    # first launch call at 95, GPU work 100..150 and 400..450
    assert values["timeline.wall_time"] == 355_000 and values["timeline.gpu_busy"] == 100_000
    assert values["timeline.gpu_idle"] == 255_000 and values["timeline.host_lead"] == 5_000
    assert values["timeline.launch_overhead"] == 255_000


def test_the_docs_picture_of_the_starved_gpu_is_what_perfgate_draws(capsys: pytest.CaptureFixture[str],
                                                                    tmp_path: Path) -> None:
    """docs/img/timeline-starved-gpu.svg is the step's region timeline of the HTML report of this pair."""
    import re

    page = tmp_path / "report.html"
    run_cli(capsys, "compare", _pair_file(WORKERS_4), _pair_file(WORKERS_0), "--accept-unpaired-kernels",
            "--format", "html", "-o", page)
    figure = re.findall(r'<figure class="region-timeline">.*?</figure>', page.read_text(encoding="utf-8"), re.S)[0]
    drawn = re.findall(r"<svg class=\"timeline\".*?<title>([^<]*)</title>", figure, re.S)
    picture = (Path(__file__).parents[2] / "docs" / "img" / "timeline-starved-gpu.svg").read_text(encoding="utf-8")
    assert drawn == ["baseline: wall 127 ms, GPU idle 19.7%", "current: wall 180 ms, GPU idle 44.0%, host lead 60.9 ms"]
    assert all(f"<title>{title}</title>" in picture for title in drawn)
    assert '<rect class="lead" x="120.0" y="16" width="284.7" height="3" fill="#8250df"><title>host lead 60.9 ms' in picture


def test_emit_nvtx_operator_ranges_are_not_regions(tmp_path: Path) -> None:
    """torch.autograd.profiler.emit_nvtx() wraps every operator and autograd node in an NVTX range named
    "aten::addmm, seq = 12, op_id = 5, ...": planted around the nvFuser export's launches, they are no regions."""
    import sqlite3

    from helpers.timeline import corpus_trace

    source = corpus_trace("nvfuser-h200/report2_ce15be9.sqlite")
    planted = tmp_path / source.name
    planted.write_bytes(source.read_bytes())
    with sqlite3.connect(planted) as connection:
        connection.execute("INSERT INTO NVTX_EVENTS (start, end, eventType, text, globalTid) SELECT start - 10, "
                           "end + 10, 59, 'aten::addmm, seq = 12, op_id = 5, sizes = [[2, 3]]', globalTid "
                           "FROM CUPTI_ACTIVITY_KIND_RUNTIME")
        connection.execute("INSERT INTO NVTX_EVENTS (start, end, eventType, text, globalTid) SELECT start - 5, "
                           "end + 5, 59, 'AddmmBackward0, seq = 12', globalTid FROM CUPTI_ACTIVITY_KIND_RUNTIME")
    original, changed = read_table(source), read_table(planted)
    assert list(changed.table.rows()) == list(original.table.rows())
