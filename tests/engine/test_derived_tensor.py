"""Tensor-core operation rates (issue 37): ``derived.tensor_ops_per_s`` and ``derived.sparse_tensor_ops_per_s``,
computed wherever a report holds the tensor aggregate counters, dense and sparse apart.

No report perfgate was tested on holds these counters (no corpus report, no GPU here), so the inputs are ncu CSV
files of the details page written here, read by the real reader; the values are checked against a computation of
our own from the numbers written."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers.common import corpus_file

from perfgate.collect import read_table
from perfgate.compare import CompareOptions, compare_tables
from perfgate.derived import METRIC_GROUPS, TENSOR_METRICS
from perfgate.options import resolve_metrics
from perfgate.plugin.ncu_run import profiling_metrics
from perfgate.prepare import read_prepared, with_derived
from perfgate.table import Measurement
from perfgate.tensor_counters import TENSOR_AGGREGATES, group_name, tensor_counter

DENSE, SPARSE = TENSOR_METRICS
HEADER = ("ID", "Process ID", "Process Name", "Host Name", "Kernel Name", "Context", "Stream", "Block Size",
          "Grid Size", "Device", "CC", "Section Name", "Metric Name", "Metric Unit", "Metric Value")
DURATION, SM_CLOCK = "gpu__time_duration.sum", "sm__cycles_elapsed.avg.per_second"


def _quoted(*fields: str) -> str:
    return ",".join('"' + field + '"' for field in fields) + "\n"


def _write(path: Path, launches: list[dict[str, float]], cc: str = "9.0") -> Path:
    """An ``ncu --csv --page details`` file: one kernel launched once per dict of metric -> value."""
    lines = ["==PROF== Connected to process 4242 (/usr/bin/python3)\n", _quoted(*HEADER)]
    for launch, values in enumerate(launches):
        head = (str(launch), "4242", "python3", "127.0.0.1", "hgemm(const half *, half *, int)", "1", "7",
                "(128, 1, 1)", "(64, 1, 1)", "0", cc, "Command line profiler metrics")
        rows = {**values, "device__attribute_display_name": "NVIDIA H100 80GB HBM3"}
        for name, value in sorted(rows.items()):
            unit = "ns" if name == DURATION else ""
            lines.append(_quoted(*head, name, unit, value if isinstance(value, str) else repr(value)))
    lines.append("==PROF== Disconnected from process 4242\n")
    path.write_text("".join(lines), encoding="utf-8")
    return path


def _rates(measurement: Measurement, options: CompareOptions) -> dict[tuple[int, str], float]:
    derived = with_derived(measurement, options.compared_metrics())
    rows = derived.table[[str(m) in TENSOR_METRICS for m in derived.table["metric"].tolist()]]
    return {(int(r["launch"]), str(r["metric"])): float(r["value"]) for r in rows.rows()}


HOPPER = CompareOptions(metrics=resolve_metrics(["+" + group_name("9.0")], None))


def test_the_counts_over_the_duration_are_the_rates_dense_and_sparse_apart(tmp_path: Path) -> None:
    counts = [{"src_bf16_dst_fp32": 3.0e9, "src_fp8_sparsity_off": 5.0e9, "src_fp8_sparsity_on": 2.0e9,
               "src_fp64": 1.0e6},
              {"src_bf16_dst_fp32": 1.5e9, "src_fp8_sparsity_off": 0.0, "src_fp8_sparsity_on": 0.0,
               "src_fp64": 0.0}]
    durations = [250_000.0, 125_000.0]  # ns
    launches = [{**{tensor_counter(k): v for k, v in c.items()}, DURATION: d} for c, d in zip(counts, durations)]
    measurement = read_table(_write(tmp_path / "h100.csv", launches), HOPPER.wanted_metrics())
    rates = _rates(measurement, HOPPER)
    launch_ids = sorted({launch for launch, _ in rates})
    for launch, c, d in zip(launch_ids, counts, durations):
        seconds = d / 1e9
        dense = (c["src_bf16_dst_fp32"] + c["src_fp8_sparsity_off"] + c["src_fp64"]) / seconds
        assert rates[(launch, DENSE)] == pytest.approx(dense, rel=1e-12)
        assert rates[(launch, SPARSE)] == pytest.approx(c["src_fp8_sparsity_on"] / seconds, rel=1e-12)
    assert rates[(launch_ids[0], DENSE)] == pytest.approx((3.0e9 + 5.0e9 + 1.0e6) / 250e-6)  # 3.2e13 OP/s


def test_the_sections_per_cycle_form_times_the_sm_clock_gives_the_same_rate(tmp_path: Path) -> None:
    cycles, clock = 400_000.0, 1.6e9  # 250 µs at 1.6 GHz
    count = {"src_fp16_dst_fp32_sparsity_off": 8.0e9, "src_fp16_dst_fp32_sparsity_on": 4.0e9}
    per_cycle = {tensor_counter(k, ".sum.per_cycle_elapsed"): v / cycles for k, v in count.items()}
    options = CompareOptions(metrics=resolve_metrics([f"+{name}" for name in per_cycle], None))
    measurement = read_table(_write(tmp_path / "a100.csv", [{**per_cycle, SM_CLOCK: clock}], cc="8.0"),
                             options.wanted_metrics())
    rates = _rates(measurement, options)
    assert {metric: value for (_, metric), value in rates.items()} == pytest.approx(
        {DENSE: 8.0e9 / (cycles / clock), SPARSE: 4.0e9 / (cycles / clock)}, rel=1e-12)


def test_a_split_aggregate_is_counted_once_never_beside_its_unsplit_total(tmp_path: Path) -> None:
    launch = {tensor_counter("src_fp16_dst_fp32"): 9.0e9, tensor_counter("src_fp16_dst_fp32_sparsity_off"): 6.0e9,
              tensor_counter("src_fp16_dst_fp32_sparsity_on"): 3.0e9, DURATION: 1.0e6}
    options = CompareOptions(metrics=resolve_metrics([f"+{name}" for name in launch if name != DURATION], None))
    rates = _rates(read_table(_write(tmp_path / "both.csv", [launch]), options.wanted_metrics()), options)
    assert {metric: value for (_, metric), value in rates.items()} == pytest.approx({DENSE: 6.0e12, SPARSE: 3.0e12})


def test_each_capabilitys_group_asks_ncu_for_its_aggregates_and_roofline_never_does() -> None:
    assert set(TENSOR_AGGREGATES) == {"7.5", "8.0", "8.6", "8.7", "8.9", "9.0", "10.0", "10.3", "11.0", "12.0", "12.1"}
    for capability, names in TENSOR_AGGREGATES.items():
        asked = profiling_metrics(CompareOptions(metrics=resolve_metrics(
            ["+" + group_name(capability)], None)).wanted_metrics())
        assert {tensor_counter(name) for name in names} <= set(asked)
        assert not any(m.startswith("derived.") or m.endswith(".per_cycle_elapsed") for m in asked)
    alone = profiling_metrics(CompareOptions(metrics=resolve_metrics(["+tensor-cc90"], None)).wanted_metrics())
    assert not any("sass_thread_inst" in m or m.endswith(".peak_sustained") for m in alone)  # no roofline counter
    assert not any("sm__ops_path_tensor" in m for m in profiling_metrics(
        CompareOptions(metrics=resolve_metrics(["+roofline"], None)).wanted_metrics()))
    assert not set(TENSOR_METRICS) & set(METRIC_GROUPS["roofline"])
    # Never the per-instruction breakdown (it counts the aggregates' operations again).
    assert not any("tensor_op_" in name for group in METRIC_GROUPS.values() for name in group)


def test_a_user_who_collects_a_tensor_counter_gets_the_rates() -> None:
    compared = CompareOptions(metrics=resolve_metrics(
        ["+sm__ops_path_tensor_src_fp16_dst_fp32.sum"], None)).compared_metrics()
    assert set(TENSOR_METRICS) <= set(compared)
    assert not set(TENSOR_METRICS) & set(CompareOptions().compared_metrics())


def test_without_the_counters_there_is_no_row_and_nothing_else_changes() -> None:
    report = corpus_file("esmm-a10g/a62323b_output.ncu-rep")
    measurement = read_prepared(report, HOPPER)
    assert with_derived(measurement, TENSOR_METRICS) is measurement  # no row added: the same measurement back
    comparison = compare_tables(measurement, measurement, HOPPER)
    assert not any(row["metric"] in TENSOR_METRICS for row in comparison.results.rows())
    assert comparison.verdict == "pass"


def test_a_halved_tensor_rate_is_shown_and_never_gated(tmp_path: Path) -> None:
    base = {tensor_counter("src_bf16_dst_fp32"): 4.0e9, DURATION: 100_000.0}
    slow = {**base, tensor_counter("src_bf16_dst_fp32"): 2.0e9}
    options = CompareOptions(metrics=resolve_metrics(["+" + tensor_counter("src_bf16_dst_fp32")], None))
    result = compare_tables(read_table(_write(tmp_path / "a.csv", [base]), options.wanted_metrics()),
                            read_table(_write(tmp_path / "b.csv", [slow]), options.wanted_metrics()), options)
    rows = {row["metric"]: row for row in result.results.rows()}
    assert rows[DENSE]["baseline"] == pytest.approx(4.0e13) and rows[DENSE]["current"] == pytest.approx(2.0e13)
    assert rows[DENSE]["status"] != "regression" and result.verdict == "pass"
