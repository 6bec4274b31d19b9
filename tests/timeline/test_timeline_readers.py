"""The timeline readers against real traces: every file of ../shared/corpus/timeline checked against the
independent counts of that folder's README (kernels, unique names, copies/sets, host ranges, span, kernel time,
idle share, GPU), and perfgate's own H200 traces (tests/data/h200/timeline) against what their workloads launch."""

from __future__ import annotations

import gzip
import json
import sqlite3
from pathlib import Path
from typing import Any, NamedTuple

import pytest

from perfgate.collect import read_table
from perfgate.collect.timeline.chrome import read_chrome_trace
from perfgate.collect.timeline.cupti_dump import read_cupti_dump
from perfgate.collect.timeline.model import Trace
from perfgate.collect.timeline.nsys import read_nsys_sqlite
from perfgate.collect.timeline.summary import summarize
from perfgate.errors import InputError
from helpers.timeline import OURS, TIMELINE_CORPUS, corpus_trace


class Expected(NamedTuple):
    """A README's row: kernels (unique), copies+sets (None: not stated), ranges, span ms, kernel ms, idle %, GPU."""

    kernels: int
    unique: int
    copies: int | None
    ranges: int | None
    span_ms: float
    kernel_ms: float | None
    idle_pct: float
    gpu: str


A100, T4 = "NVIDIA A100 80GB PCIe", "Tesla T4"
H200, H100 = "NVIDIA H200", "NVIDIA H100 80GB HBM3"
# Spans and times as the README rounds them: compared to that many digits.
EXPECTED: dict[str, Expected] = {
    "switchtransformers-a100/trace_5e8101d.json": Expected(474, 31, 60, 0, 550, 11.19, 98.0, A100),
    "switchtransformers-a100/trace_9a8e4ed.json": Expected(474, 31, 60, 0, 197, 11.10, 94.3, A100),
    "switchtransformers-a100/trace_b99d701.json": Expected(474, 31, 60, 0, 196, 10.62, 94.6, A100),
    "amp-lab-t4/fp32.pt.trace.json": Expected(95, 23, None, 12, 98, 17.22, 82, T4),
    "amp-lab-t4/amp.pt.trace.json": Expected(159, 32, None, 12, 163, 8.05, 95, T4),
    "hta/step_based_trace_2543932.json.gz": Expected(130, 10, None, 10, 7.6, None, 96, "Quadro GP100"),
    "hta/trace_diff_control.json.gz": Expected(8568, 170, None, 288, 463, 447, 16, "NVIDIA A100-PG509-200"),
    "hta/trace_diff_test.json.gz": Expected(9876, 131, None, 288, 745, None, 3.6, "Tesla V100-SXM2-16GB"),
    "param-rtx2080ti/resnet_kineto.json.gz": Expected(9628, 54, 485, 90, 10100, None, 53, "NVIDIA GeForce RTX 2080 Ti"),
    "sevit-a4000/trace.json": Expected(723, 38, 102, 0, 11900, 15.4, 99.9, "NVIDIA RTX A4000"),
    "sevit-a4000/trace1.json": Expected(464, 24, 25, 0, 23, 12.4, 46, "NVIDIA RTX A4000"),
    # SQLite: unique names by nsys' short name, as the README counts them.
    "nvfuser-h200/report1_64ee035.sqlite": Expected(19, 5, None, 652, 508, None, 99.9, H200),
    "nvfuser-h200/report2_ce15be9.sqlite": Expected(19, 5, None, 652, 503, None, 99.9, H200),
    "nvfuser-h200/report3_f6ab0c3.sqlite": Expected(19, 5, None, 652, 554, None, 99.9, H200),
    "nvfuser-h100/report1_8fa9ec2.sqlite": Expected(19, 5, None, 639, 529, None, 99.9, H100),
    "nvfuser-h100/report2_df8f397.sqlite": Expected(19, 5, None, 1054, 531, None, 99.9, H100),
    "nvfuser-h200/report1_a049892_cross_entropy.sqlite": Expected(18, 13, None, 13513, 3190, None, 99.0, H200),
    "llama3-sim-rtx4060ti/real_inference_simulation.sqlite": Expected(1536, 2, 512, 1601, 679, None, 97,
                                                                      "NVIDIA GeForce RTX 4060 Ti"),
}
_SPAN_SLACK = {"switchtransformers-a100/trace_5e8101d.json": 1.0}  # "550 ms": 550.1


def load_trace(path: Path) -> Trace:
    if path.suffix == ".sqlite":
        return read_nsys_sqlite(path)
    opener: Any = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as handle:
        document = json.load(handle)
    return read_cupti_dump(document, path) if "records" in document else read_chrome_trace(document, path)


def _rounded_like(value: float, stated: float) -> bool:
    """``value`` written with as many significant digits as ``stated`` is: within half a unit of its last digit."""
    text = f"{stated:g}"
    decimals = len(text.split(".")[1]) if "." in text else 0
    unit = 10.0 ** -decimals
    if decimals == 0 and stated >= 1000:
        unit = 10.0 ** (len(text) - len(text.rstrip("0")))
    return abs(value - stated) <= unit / 2 + 1e-9


def test_corpus_lists_every_file() -> None:
    if not TIMELINE_CORPUS.is_dir():
        pytest.skip("../shared/corpus/timeline not available")
    present = {str(p.relative_to(TIMELINE_CORPUS)) for p in TIMELINE_CORPUS.glob("*/*") if p.is_file()}
    assert present == set(EXPECTED)


@pytest.mark.parametrize("relative", sorted(EXPECTED))
def test_corpus_counts_match_the_readme(relative: str) -> None:
    expected = EXPECTED[relative]
    trace = load_trace(corpus_trace(relative))
    summary = summarize(trace)
    assert summary.kernels == expected.kernels
    names = {op.name if trace.format == "nsys" else op.demangled for op in trace.ops if op.kind == "kernel"}
    assert len(names) == expected.unique
    if expected.copies is not None:
        assert summary.copies_and_sets == expected.copies
    if expected.ranges is not None:
        assert summary.ranges == expected.ranges
    span_ms = summary.span_ns / 1e6
    assert _rounded_like(span_ms, expected.span_ms) or abs(span_ms - expected.span_ms) <= _SPAN_SLACK.get(relative, 0)
    if expected.kernel_ms is not None:
        assert _rounded_like(summary.kernel_time_ns / 1e6, expected.kernel_ms)
    assert abs(100 * summary.idle_share - expected.idle_pct) < 1.0
    assert {trace.devices[op.device].name for op in trace.ops if op.kind == "kernel"} == {expected.gpu}


@pytest.mark.parametrize("relative", sorted(EXPECTED))
def test_corpus_reads_into_the_table(relative: str) -> None:
    measurement = read_table(corpus_trace(relative))
    table = measurement.table
    kernels = table[table.equals("kind", "kernel") & table.equals("metric", "timeline.kernel_duration")]
    assert len(kernels) == EXPECTED[relative].kernels
    assert (kernels["value"] >= 0).all()
    assert measurement.settings["source"] == "timeline"
    assert set(kernels["device"].tolist()) == {EXPECTED[relative].gpu}


def test_nvfuser_kernels_match_the_readme() -> None:
    """The hand-tuned kernel and the cuBLAS reference: 135.1 us / 156 registers and 87.5 us (README)."""
    table = read_table(corpus_trace("nvfuser-h200/report1_64ee035.sqlite")).table
    rows = {(r["kernel"], r["metric"]): r["value"] for r in table.rows() if r["kind"] == "kernel"}
    assert round(rows[("nvfuser_none_f0_c0_r0_g0", "timeline.kernel_duration")] / 1e3, 1) == 135.1
    assert rows[("nvfuser_none_f0_c0_r0_g0", "launch__registers_per_thread")] == 156
    nvjet = [v for (k, m), v in rows.items() if k.startswith("nvjet") and m == "timeline.kernel_duration"]
    assert [round(v / 1e3, 1) for v in nvjet] == [87.5]


NVFUSER_EXPORT = "nvfuser-h100/report1_8fa9ec2.sqlite"


def _copied_export(target: Path) -> Path:
    """A copy of a real Nsight Systems export to change (the corpus stays as it is)."""
    target.write_bytes(corpus_trace(NVFUSER_EXPORT).read_bytes())
    return target


def test_sqlite_text_that_is_not_utf8_is_read(tmp_path: Path) -> None:
    """TARGET_INFO_SYSTEM_ENV can hold bytes that are not UTF-8: the reader must not fail on them."""
    copy = _copied_export(tmp_path / "env.sqlite")
    with sqlite3.connect(copy) as connection:
        connection.execute("UPDATE StringIds SET value = CAST(X'6e76ff' AS TEXT) WHERE id = "
                           "(SELECT shortName FROM CUPTI_ACTIVITY_KIND_KERNEL ORDER BY start LIMIT 1)")
    trace = read_nsys_sqlite(copy)
    assert len(trace.ops) == 21
    assert "nv\ufffd" in {op.name for op in trace.ops}


def test_sqlite_without_kernel_table_is_no_kernels(tmp_path: Path) -> None:
    export = tmp_path / "wsl.sqlite"
    with sqlite3.connect(export) as connection:
        connection.execute("CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT)")
        connection.execute("CREATE TABLE NVTX_EVENTS (start INT, end INT, text TEXT, textId INT, globalTid INT)")
        connection.execute("INSERT INTO NVTX_EVENTS VALUES (1, 5, 'step', NULL, 7)")
    with pytest.raises(InputError, match="no kernels"):
        read_table(export)


def test_chrome_trace_without_kernels_is_no_kernels(tmp_path: Path) -> None:
    """Launch calls recorded, no kernel came back (as in a real zoology trace): never zero time."""
    trace = tmp_path / "cpu.json"
    trace.write_text(json.dumps({"traceEvents": [
        {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "ts": 10, "dur": 3, "pid": 1, "tid": 1,
         "args": {"correlation": 5}}]}), encoding="utf-8")
    with pytest.raises(InputError, match=r"no kernels: this kineto trace holds 1 API call"):
        read_table(trace)


def _regions(path: Path) -> dict[str, dict[str, float]]:
    table = read_table(path).table
    found: dict[str, dict[str, float]] = {}
    for row in table[table.equals("kind", "region")].rows():
        found.setdefault(row["kernel"], {})[row["metric"]] = row["value"]
    return found


MLP_KERNELS = {"layer0": 2, "layer1": 2, "layer2": 2, "layer3": 2, "backward": 18, "step": 26}


@pytest.mark.parametrize("name", ["mlp.cupti.a.cupti.json.gz", "mlp.cupti.b.cupti.json.gz",
                                  "mlp.cupti.c.cupti.json.gz", "mlp.torch.a.pt.trace.json.gz",
                                  "mlp.torch.b.pt.trace.json.gz", "mlp.sync.cupti.cupti.json.gz",
                                  "mlp.sync.torch.pt.trace.json.gz", "mlp.cupti-nvtx.cupti.json.gz"])
def test_our_mlp_traces_attribute_every_kernel_to_its_layer(name: str) -> None:
    """Linear + GELU per layer (2 kernels); backward's 18 kernels, launched on autograd's own thread, count in
    `backward` by time; a step holds all 26 (the counts torch.profiler gives, tests/data/h100)."""
    regions = _regions(OURS / name)
    assert {r: int(v["timeline.kernel_count"]) for r, v in regions.items()} == MLP_KERNELS
    table = read_table(OURS / name).table
    kernels = table[table.equals("kind", "kernel") & table.equals("metric", "timeline.kernel_duration")]
    assert len(kernels) == 260  # 10 steps
    assert set(kernels["region"].tolist()) == {"layer0", "layer1", "layer2", "layer3", "backward"}
    streams = table[table.equals("kind", "kernel") & table.equals("metric", "launch__stream")]
    assert set(streams["value"].tolist()) == {7.0}  # PyTorch's default stream, as CUPTI numbers it


def test_planted_sync_shows_in_the_step_idle_and_wall() -> None:
    calm, synced = _regions(OURS / "mlp.cupti.a.cupti.json.gz"), _regions(OURS / "mlp.sync.cupti.cupti.json.gz")
    # the calm step's idle is mostly its host work before the first layer (0.2-0.4 ms of 8.8 ms)
    assert calm["step"]["timeline.gpu_idle_pct"] < 5 < 10 < synced["step"]["timeline.gpu_idle_pct"]
    assert synced["step"]["timeline.wall_time"] > 1.08 * calm["step"]["timeline.wall_time"]
    assert synced["step"]["timeline.kernel_time"] == pytest.approx(calm["step"]["timeline.kernel_time"], rel=0.01)


def test_region_metrics_add_up() -> None:
    """Each metric is a median over the steps of its own: they add up to within the steps' spread."""
    for values in _regions(OURS / "mlp.torch.a.pt.trace.json.gz").values():
        wall, busy = values["timeline.wall_time"], values["timeline.gpu_busy"]
        assert busy <= wall
        assert values["timeline.launch_overhead"] == pytest.approx(wall - busy, abs=0.01 * wall)
        assert 0 <= values["timeline.gpu_idle"] <= values["timeline.launch_overhead"] + 0.01 * wall


@pytest.mark.parametrize("name", ["softmax.cupti.a.cupti.json.gz", "softmax.torch.pt.trace.json.gz",
                                  "vector_add.cupti.a.cupti.json.gz", "vector_add.torch.pt.trace.json.gz"])
def test_our_single_kernel_traces(name: str) -> None:
    regions = _regions(OURS / name)
    workload = name.split(".")[0]
    assert regions[workload]["timeline.kernel_count"] == 1
    assert regions["step"]["timeline.kernel_count"] == 1


def test_cupti_dump_with_dropped_records_is_refused(tmp_path: Path) -> None:
    trace = tmp_path / "dropped.cupti.json"
    trace.write_text(json.dumps({"format": "perfgate-cupti-trace", "version": 1, "records": [], "regions": [],
                                 "dropped": 12}), encoding="utf-8")
    with pytest.raises(InputError, match="dropped 12 activity records"):
        read_table(trace)


def test_mangled_names_have_the_bare_name_kineto_gives() -> None:
    from perfgate.demangled import bare_name

    assert bare_name("_ZN2at6native29vectorized_elementwise_kernelILi4EZZZNS0_18GeluCUDAKernelImplE") == \
        "vectorized_elementwise_kernel"
    assert bare_name("_ZN7cutlass7Kernel2I43cutlass_80_simt_sgemm_128x256_8x4_nt_align1EEvNT_6ParamsE") == "Kernel2"
    assert bare_name("void at::native::vectorized_elementwise_kernel<4, F>(int, F)") == "vectorized_elementwise_kernel"
    assert bare_name("_Z10vector_addPKfS0_Pfii") == "vector_add"
    assert bare_name("sm80_xmma_gemm_f32f32") == "sm80_xmma_gemm_f32f32"


def test_oldest_kineto_schema(tmp_path: Path) -> None:
    """Kineto before user_annotation (no corpus file has it): ``Operator`` ranges and steps (``aten::`` ops are
    no ranges), ``Runtime`` launches, ``Kernel`` events, ``external id``, integer µs, no deviceProperties; one
    ``cudaGraphLaunch`` owning two kernels; a kernel with no launch event belongs to no region."""
    def event(cat: str, name: str, ts: int, dur: int, **args: Any) -> dict[str, Any]:
        return {"ph": "X", "cat": cat, "name": name, "ts": ts, "dur": dur, "pid": 1, "tid": 1, "args": args}

    trace = tmp_path / "old.json"
    trace.write_text(json.dumps({"traceEvents": [
        event("Operator", "ProfilerStep#1", 1000, 100), event("Operator", "forward", 1010, 50),
        event("Operator", "aten::mm", 1012, 5), event("Runtime", "cudaLaunchKernel", 1013, 2, correlation=7),
        event("Runtime", "cudaGraphLaunch", 1030, 3, correlation=9),
        event("Runtime", "cudaLaunchKernel", 1070, 2, correlation=8),
        event("Kernel", "volta_sgemm_128x64_nn", 1020, 8, correlation=7, device=0, stream=7, **{"external id": 3}),
        event("Kernel", "graph_kernel_a", 1035, 4, correlation=9, device=0, stream=7),
        event("Kernel", "graph_kernel_b", 1040, 4, correlation=9, device=0, stream=7),
        event("Kernel", "after_forward", 1075, 5, correlation=8, device=0, stream=7),
        event("Memset", "Memset (Device)", 1082, 1, correlation=10, device=0, stream=7),
        event("Kernel", "unlaunched", 1090, 5, correlation=99, device=0, stream=7)]}), encoding="utf-8")
    table = read_table(trace).table
    kernels = table[table.equals("kind", "kernel") & table.equals("metric", "timeline.kernel_duration")]
    assert dict(zip(kernels["kernel"].tolist(), kernels["region"].tolist())) == {
        "volta_sgemm_128x64_nn": "forward", "graph_kernel_a": "forward", "graph_kernel_b": "forward",
        "after_forward": "", "unlaunched": ""}
    assert kernels["value"].tolist() == [8000, 4000, 4000, 5000, 5000]
    # A region runs from its range's start on the host to the later of its end and its GPU work's end; the
    # memset and the unlaunched kernel belong to no region but keep the GPU busy in the step's window.
    assert _regions(trace) == {
        "step": pytest.approx({"timeline.kernel_count": 4, "timeline.wall_time": 100_000, "timeline.gpu_busy": 21_000,
                               "timeline.gpu_idle": 73_000, "timeline.gpu_idle_pct": 73.0,
                               "timeline.host_lead": 20_000, "timeline.launch_overhead": 79_000,
                               "timeline.kernel_time": 21_000}),
        "forward": pytest.approx({"timeline.kernel_count": 3, "timeline.wall_time": 50_000,
                                  "timeline.gpu_busy": 16_000, "timeline.gpu_idle": 34_000,
                                  "timeline.gpu_idle_pct": 68.0, "timeline.host_lead": 10_000,
                                  "timeline.launch_overhead": 34_000, "timeline.kernel_time": 16_000})}


def test_the_metrics_picture_is_what_perfgate_measures(tmp_path: Path) -> None:
    """docs/img/timeline-metrics.svg as a trace: launches A-D on one thread inside `step`, kernels A, B, D on
    stream 7 and C on stream 8 overlapping B (µs); the figures the picture states."""
    def event(cat: str, name: str, ts: int, dur: int, correlation: int, **args: Any) -> dict[str, Any]:
        return {"ph": "X", "cat": cat, "name": name, "ts": ts, "dur": dur, "pid": 1, "tid": 1,
                "args": {"correlation": correlation, **args}}

    trace = tmp_path / "picture.json"
    launches = [event("cuda_runtime", "cudaLaunchKernel", t, 1, c) for t, c in ((10, 1), (30, 2), (36, 3), (70, 4))]
    kernels = [event("kernel", f"kernel_{n}", s, e - s, c, device=0, stream=st)
               for n, s, e, c, st in (("A", 14, 28, 1, 7), ("B", 32, 50, 2, 7), ("C", 40, 60, 3, 8),
                                      ("D", 74, 88, 4, 7))]
    trace.write_text(json.dumps({"traceEvents": [event("user_annotation", "step", 4, 92, 0), *launches, *kernels]}),
                     encoding="utf-8")
    assert _regions(trace)["step"] == pytest.approx({
        "timeline.wall_time": 92_000, "timeline.gpu_busy": 56_000, "timeline.gpu_idle": 36_000,
        "timeline.gpu_idle_pct": 100 * 36 / 92, "timeline.host_lead": 10_000, "timeline.launch_overhead": 36_000,
        "timeline.kernel_time": 66_000, "timeline.kernel_count": 4})
    picture = (Path(__file__).parents[2] / "docs" / "img" / "timeline-metrics.svg").read_text(encoding="utf-8")
    assert all(figure in picture for figure in ("92 µs", "10 µs", "56 µs", "36 µs", "(39%)", "= 66 µs",
                                                "kernel count = 4"))


def test_sqlite_labels_in_textid_old_metadata_table_and_extra_columns(tmp_path: Path) -> None:
    """A real export changed the three ways other exports differ: NVTX labels only in ``textId`` (registered
    strings, as TensorRT writes them), the older ``EXPORT_META_DATA`` table, a column another tool added. It
    reads as the original does."""
    source, copy = corpus_trace(NVFUSER_EXPORT), _copied_export(tmp_path / "registered.sqlite")
    with sqlite3.connect(copy) as connection:
        connection.execute("INSERT INTO StringIds (id, value) SELECT 900000 + rowid, text FROM NVTX_EVENTS "
                           "WHERE text IS NOT NULL")
        connection.execute("UPDATE NVTX_EVENTS SET textId = 900000 + rowid, text = NULL WHERE text IS NOT NULL")
        connection.execute("ALTER TABLE META_DATA_EXPORT RENAME TO EXPORT_META_DATA")
        connection.execute("ALTER TABLE CUPTI_ACTIVITY_KIND_KERNEL ADD COLUMN someToolsColumn TEXT DEFAULT 'x'")
        assert connection.execute("SELECT count(*) FROM NVTX_EVENTS WHERE text IS NOT NULL").fetchone() == (0,)
    original, changed = read_table(source), read_table(copy)
    assert list(changed.table.rows()) == list(original.table.rows())
    assert _regions(copy) == _regions(source) and len(_regions(copy)) == 5
    assert changed.settings["trace_nsys_version"] == original.settings["trace_nsys_version"] == "2024.6.2.25"
