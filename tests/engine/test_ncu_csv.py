"""The ncu CSV reader: both pages, the noise real ncu runs print, and one-line errors."""

from __future__ import annotations

import json
import math
from pathlib import Path

from helpers import csvgen as csvgen
import numpy as np
import pandas as pd
import pytest
from helpers.common import corpus_file

from perfgate.collect.ncu_csv import (
    _SECTION_LABELS,
    _numbers,
    looks_like_ncu_csv,
    nvtx_region,
    read_ncu_csv,
)
from perfgate.demangled import kernel_function_name
from perfgate.errors import InputError, NcuError, PerfgateError
from perfgate.table import COLUMNS, LAUNCH_KEY, Measurement

DATA = Path(__file__).parents[1] / "data" / "ncu-csv"
MA2D = "matrix_addition2D(float *, float *, float *, int, int)"
GEMM = "void gemm<float, 128>(float *, int)"


def _sorted(frame: pd.DataFrame) -> pd.DataFrame:
    return frame.sort_values(["launch", "metric"]).reset_index(drop=True)


def _value(frame: pd.DataFrame, launch: int, metric: str) -> float:
    rows = frame[(frame["launch"] == launch) & (frame["metric"] == metric)]
    assert len(rows) == 1, f"{metric} of launch {launch}: {len(rows)} rows"
    return float(rows["value"].iloc[0])


def _one_line(err: PerfgateError, path: Path, *fix_words: str) -> str:
    text = str(err)
    assert "\n" not in text
    assert str(path) in text
    for word in fix_words:
        assert word in text, f"{word!r} missing from: {text}"
    return text


# ---------------------------------------------------------------------------------------------
# details page


@pytest.fixture(scope="module")
def rules_read() -> Measurement:
    return read_ncu_csv(DATA / "details_rules.csv")


@pytest.fixture(scope="module")
def rules(rules_read: Measurement) -> pd.DataFrame:
    return rules_read.table.to_frame()


def test_details_with_rule_columns(rules_read: Measurement, rules: pd.DataFrame) -> None:
    assert tuple(rules.columns) == COLUMNS
    assert rules_read.source == str(DATA / "details_rules.csv")
    assert set(rules["kind"]) == {"kernel"}
    launches = rules.drop_duplicates("launch").set_index("launch")
    assert list(launches["kernel"]) == ["matrix_addition2D", "matrix_addition2D", "gemm"]
    assert list(launches["demangled"]) == [MA2D, MA2D, GEMM]  # quoted name with commas kept whole
    assert list(launches["ordinal"]) == [0, 1, 0]
    assert list(launches["grid"]) == ["(63, 63, 1)", "(32, 63, 1)", "(40, 1, 1)"]
    assert list(launches["block"]) == ["(16, 16, 1)", "(16, 16, 1)", "(128, 1, 1)"]
    assert set(zip(rules["device"], rules["cc"])) == {("Tesla T4", "7.5")}  # name from the string metric
    assert set(rules["region"]) == {""}
    # no duplicate (launch, metric): the rule rows (empty metric name) are not metrics
    assert not rules.duplicated(["launch", "metric"]).any()
    assert not rules.duplicated([*LAUNCH_KEY, "metric"]).any()


def test_details_values_units_and_missing(rules: pd.DataFrame) -> None:
    assert _value(rules, 0, "gpu__time_duration.sum") == 52576.0
    assert _value(rules, 2, "dram__bytes_read.sum") == 1_215_000_000.0  # "1,215,000,000.00"
    assert _value(rules, 0, "sm__cycles_elapsed.avg.per_second") == pytest.approx(540_543_213.63)
    assert _value(rules, 1, "launch__registers_per_thread") == 16.0
    # n/a: the launch carries no value -> NaN row kept
    assert math.isnan(_value(rules, 2, "lts__t_sector_hit_rate.pct"))
    # empty cell: the metric is absent for that launch
    assert rules[(rules["launch"] == 2) & (rules["metric"] == "launch__grid_size")].empty
    assert _value(rules, 0, "launch__grid_size") == 3969.0
    # string-valued metrics are not in the (float) table
    assert not rules["metric"].isin(["device__attribute_display_name", "launch__func_cache_config"]).any()
    units = dict(zip(rules["metric"], rules["unit"]))
    assert units["gpu__time_duration.sum"] == "ns"
    assert units["dram__bytes_read.sum"] == "byte"
    assert units["launch__grid_size"] == ""
    assert rules["value"].dtype == np.float64


def test_details_layouts_and_raw_give_equal_tables(rules: pd.DataFrame) -> None:
    plain = read_ncu_csv(DATA / "details_plain.csv").table.to_frame()
    raw = read_ncu_csv(DATA / "raw.csv").table.to_frame()
    pd.testing.assert_frame_equal(_sorted(rules), _sorted(plain))
    pd.testing.assert_frame_equal(_sorted(rules), _sorted(raw))


def test_csv_agrees_with_the_real_report() -> None:
    ncu_report = pytest.importorskip("ncu_report")
    table = read_ncu_csv(DATA / "raw.csv").table.to_frame()
    for launch, name in ((0, "report.ncu-rep"), (1, "report_v2.ncu-rep")):
        action = ncu_report.load_report(str(corpus_file(f"mlp-t4/{name}"))).range_by_idx(0).action_by_idx(0)
        rows = table[table["launch"] == launch]
        assert rows["demangled"].iloc[0] == action.name(action.NameBase_DEMANGLED)
        assert rows["kernel"].iloc[0] == action.name()
        assert rows["device"].iloc[0] == action.metric_by_name("device__attribute_display_name").value()
        for metric, unit, value in rows[["metric", "unit", "value"]].itertuples(index=False):
            reference = action.metric_by_name(metric)
            assert unit == reference.unit(), metric
            assert value == pytest.approx(float(reference.value()), rel=2e-4), metric  # CSV rounds to 2 decimals


def test_legacy_details_labels_units_and_no_launch_columns() -> None:
    path = DATA / "details_legacy.csv"
    table = read_ncu_csv(path).table.to_frame()
    assert table["launch"].nunique() == 2 and list(table.drop_duplicates("launch")["ordinal"]) == [0, 1]
    assert set(table["kernel"]) == {"cuda_compute_step_factor"}
    # no Block/Grid/Device/CC columns in this layout
    assert set(table["grid"]) == set(table["block"]) == set(table["device"]) == set(table["cc"]) == {""}
    first = table[table["launch"] == 0].set_index("metric")
    # auto-scaled units reduced to base units; the first section's old name ("GPU Speed Of Light",
    # not "... Throughput") is not among the mapped ones, so its labels stay
    assert first.loc["Duration", ["unit", "value"]].tolist() == ["ns", pytest.approx(15230.0)]
    assert first.loc["DRAM Frequency", ["unit", "value"]].tolist() == ["hz", pytest.approx(5e9)]
    assert first.loc["SM Frequency", ["unit", "value"]].tolist() == ["hz", pytest.approx(585.13e6)]
    # the labels of sections whose names have not changed become metric names
    assert first.loc["launch__shared_mem_config_size", ["unit", "value"]].tolist() == \
        ["byte", pytest.approx(32770.0)]
    assert first.loc["launch__grid_size", "value"] == 1212.0
    assert first.loc["lts__t_sector_hit_rate.pct", "value"] == 61.02
    # "Memory Throughput" of Memory Workload Analysis is a bandwidth; the SOL one keeps its label
    assert first.loc["dram__bytes.sum.per_second", ["unit", "value"]].tolist() == ["byte/s", pytest.approx(112.35e9)]
    assert first.loc["Memory Throughput", ["unit", "value"]].tolist() == ["%", 39.6]
    assert "Function Cache Configuration" not in first.index  # string value
    assert not table.duplicated(["launch", "metric"]).any()


# ---------------------------------------------------------------------------------------------
# default details page: section labels instead of metric names

DEFAULT_V3 = DATA / "details_default_labels.csv"  # values of mlp-t4/report_v3_loop_unroll.ncu-rep
DEFAULT_V4 = DATA / "details_default_labels_v4.csv"  # values of mlp-t4/report_v4_8_per_thread.ncu-rep
MLP_V3 = "mlp-t4/report_v3_loop_unroll.ncu-rep"
MLP_V4 = "mlp-t4/report_v4_8_per_thread.ncu-rep"


def test_default_details_labels_become_metric_names() -> None:
    table = read_ncu_csv(DEFAULT_V3).table.to_frame()
    assert not table.duplicated(["launch", "metric"]).any()
    rows = table.set_index("metric")
    expected = {
        # GPU Speed Of Light Throughput
        "gpu__time_duration.sum": ("ns", 67780.0),  # "Duration","usecond","67.78"
        "gpc__cycles_elapsed.max": ("cycle", 39626.0),
        "gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed": ("%", 90.91),
        "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed": ("%", 90.91),
        "sm__throughput.avg.pct_of_peak_sustained_elapsed": ("%", 17.34),
        "gpc__cycles_elapsed.avg.per_second": ("hz", 584.56e6),  # "SM Frequency","cycle/usecond"
        "dram__cycles_elapsed.avg.per_second": ("hz", 4.66e9),  # "DRAM Frequency","cycle/nsecond"
        # Launch Statistics
        "launch__registers_per_thread": ("register/thread", 16.0),
        "launch__grid_size": ("", 2016.0),
        "launch__block_size": ("", 256.0),
        "launch__thread_count": ("thread", 516096.0),
        "launch__waves_per_multiprocessor": ("", 12.6),
        "launch__shared_mem_per_block_static": ("byte/block", 0.0),
        "launch__shared_mem_per_block_dynamic": ("byte/block", 0.0),
        "launch__shared_mem_config_size": ("byte", 32770.0),  # "Kbyte","32.77"
        # Occupancy
        "sm__warps_active.avg.pct_of_peak_sustained_active": ("%", 86.35),
        "sm__maximum_warps_per_active_cycle_pct": ("%", 100.0),
    }
    for metric, (unit, value) in expected.items():
        assert rows.loc[metric, "unit"] == unit, metric
        assert rows.loc[metric, "value"] == pytest.approx(value), metric
    # every numeric label of the three sections was known: no label is left
    assert all("__" in metric for metric in table["metric"])
    assert "launch__func_cache_config" not in rows.index  # a string value
    # the details page's "Device" is an index: no name without device__attribute_display_name
    assert set(table["device"]) == {""} and set(table["cc"]) == {"7.5"}
    assert (table["grid"].iloc[0], table["block"].iloc[0]) == ("(32, 63, 1)", "(16, 16, 1)")


def test_default_details_agree_with_the_real_reports() -> None:
    ncu_report = pytest.importorskip("ncu_report")
    for csv_path, name in ((DEFAULT_V3, MLP_V3), (DEFAULT_V4, MLP_V4)):
        action = ncu_report.load_report(str(corpus_file(name))).range_by_idx(0).action_by_idx(0)
        table = read_ncu_csv(csv_path).table.to_frame()
        assert len(table) == 29
        for metric, unit, value in table[["metric", "unit", "value"]].itertuples(index=False):
            reference = action.metric_by_name(metric)
            assert reference is not None, metric
            assert unit == reference.unit(), metric
            # two decimals of the display unit (67.78 usecond for 67,776 ns)
            assert value == pytest.approx(float(reference.value()), rel=1e-3, abs=5e-3), metric
    rows = read_ncu_csv(DEFAULT_V4).table.to_frame().set_index("metric")
    assert rows.loc["gpu__time_duration.sum", "value"] == 151330.0


def test_section_label_table_matches_the_sections_stored_in_real_reports() -> None:
    """Each (section, label) -> (name, unit) entry as the section definitions inside a real report say."""
    ncu_report = pytest.importorskip("ncu_report")
    if not hasattr(ncu_report.IAction, "sections"):  # 2026.2.0, perfgate's lowest ncu-report, has none
        pytest.skip("this ncu_report cannot list a report's sections (a newer ncu-report checks the table)")
    # In a fresh process: ncu_report keeps section definitions process-wide, and a report loaded
    # earlier (another test) can change the units this one reports.
    import json
    import subprocess
    import sys

    script = (
        "import json, sys, ncu_report\n"
        "action = ncu_report.load_report(sys.argv[1]).range_by_idx(0).action_by_idx(0)\n"
        "print(json.dumps([[s.name(), m.label(), m.name(), m.unit()] for s in action.sections() "
        "for m in s.header_metrics()]))\n"
    )
    done = subprocess.run([sys.executable, "-c", script, str(corpus_file(MLP_V3))], capture_output=True, text=True,
                          timeout=120, check=True)
    stored = {(section, label): (name, unit) for section, label, name, unit in json.loads(done.stdout)}
    for section, labels in _SECTION_LABELS.items():
        for label, entry in labels.items():
            assert stored.get((section, label)) == entry, (section, label)
    # the brief's minimum, spelled out
    sol, launch, occupancy = (_SECTION_LABELS[s] for s in ("GPU Speed Of Light Throughput", "Launch Statistics",
                                                            "Occupancy"))
    assert sol["Duration"][0] == "gpu__time_duration.sum"
    assert sol["Elapsed Cycles"][0] == "gpc__cycles_elapsed.max"
    assert sol["DRAM Throughput"][0] == "gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed"
    assert sol["Memory Throughput"][0] == "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed"
    assert sol["Compute (SM) Throughput"][0] == "sm__throughput.avg.pct_of_peak_sustained_elapsed"
    assert _SECTION_LABELS["Memory Workload Analysis"]["Memory Throughput"][0] == "dram__bytes.sum.per_second"
    assert launch["Registers Per Thread"][0] == "launch__registers_per_thread"
    assert launch["Static Shared Memory Per Block"][0] == "launch__shared_mem_per_block_static"
    assert launch["Dynamic Shared Memory Per Block"][0] == "launch__shared_mem_per_block_dynamic"
    assert launch["Grid Size"][0] == "launch__grid_size" and launch["Block Size"][0] == "launch__block_size"
    assert launch["Threads"][0] == "launch__thread_count"
    assert launch["Waves Per SM"][0] == "launch__waves_per_multiprocessor"
    assert occupancy["Achieved Occupancy"][0] == "sm__warps_active.avg.pct_of_peak_sustained_active"
    assert occupancy["Theoretical Occupancy"][0] == "sm__maximum_warps_per_active_cycle_pct"
    assert _SECTION_LABELS["Instruction Statistics"]["Executed Instructions"][0] == "smsp__inst_executed.sum"


def _details_rows(*rows: tuple[str, str, str, str], launch: str = "0") -> str:
    lead = f'"{launch}","4242","app","127.0.0.1","k(int)","1","7","(32, 1, 1)","(8, 1, 1)","0","8.6"'
    return "".join(f'{lead},"{section}","{name}","{unit}","{value}",\n' for section, name, unit, value in rows)


def test_section_labels_need_their_section_and_unit(tmp_path: Path) -> None:
    header = (DATA / "details_default_labels.csv").read_text().splitlines()[4] + "\n"
    assert header.startswith('"ID",')
    text = header + _details_rows(
        ("Command line profiler metrics", "gpu__time_duration.sum", "nsecond", "1,499"),
        ("GPU Speed Of Light Throughput", "Duration", "usecond", "1.50"),  # the --metrics row wins
        ("GPU Speed Of Light Throughput", "Memory Throughput", "%", "40.00"),
        ("Memory Workload Analysis", "Memory Throughput", "Gbyte/second", "112.35"),
        ("Launch Statistics", "Static Shared Memory Per Block", "Kbyte/block", "1.02"),
        ("Launch Statistics", "Dynamic Shared Memory Per Block", "Mbyte/block", "0.05"),
        ("Launch Statistics", "Threads", "%", "12"),  # a unit that says it is something else
        ("Instruction Statistics", "Executed Instructions", "inst", "3,200"),
        ("GPU Speed Of Light Throughput", "SM Active Cycles", "cycle", "100.00"),
        ("GPU and Memory Workload Distribution", "Average SM Active Cycles", "cycle", "100.00"),  # the same metric
        ("GPU Speed Of Light", "Elapsed Cycles", "cycle", "7"),  # an old section name: not mapped
        ("My Section", "Elapsed Cycles", "cycle", "8"),  # an unknown section, same label
        ("My Section", "sm__cycles_active.avg", "cycle", "99"),  # a name is a name: a real duplicate
    )
    path = _variant(tmp_path, "labels.csv", text.encode())
    table = read_ncu_csv(path).table.to_frame()
    rows = table.set_index("metric")
    assert rows.loc["gpu__time_duration.sum", ["unit", "value"]].tolist() == ["ns", 1499.0]
    assert rows.loc["gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed", "value"] == 40.0
    assert rows.loc["dram__bytes.sum.per_second", ["unit", "value"]].tolist() == ["byte/s", pytest.approx(112.35e9)]
    assert rows.loc["launch__shared_mem_per_block_static", ["unit", "value"]].tolist() == \
        ["byte/block", pytest.approx(1020.0)]
    assert rows.loc["launch__shared_mem_per_block_dynamic", ["unit", "value"]].tolist() == \
        ["byte/block", pytest.approx(50_000.0)]
    assert rows.loc["Threads", ["unit", "value"]].tolist() == ["%", 12.0]
    assert "launch__thread_count" not in rows.index
    assert rows.loc["smsp__inst_executed.sum", ["unit", "value"]].tolist() == ["inst", 3200.0]
    # left-over labels that repeat in a launch are told apart by section
    assert rows.loc["GPU Speed Of Light: Elapsed Cycles", "value"] == 7.0
    assert rows.loc["My Section: Elapsed Cycles", "value"] == 8.0
    assert "gpc__cycles_elapsed.max" not in rows.index
    # by-name row first, then the first label
    assert table.loc[table["metric"] == "sm__cycles_active.avg", "value"].tolist() == [99.0]
    assert not table.duplicated(["launch", "metric"]).any()
    assert len(table) == 10


def test_default_details_regression_fails_the_gate(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The 2.2x slower kernel in two default exports (labels only) is a regression, not "no data"."""
    from perfgate.cli import main
    from perfgate.report import result_rows

    out = tmp_path / "report.json"
    status = main(["compare", str(DEFAULT_V3), str(DEFAULT_V4), "--format", "json", "-o", str(out)])
    report = json.loads(out.read_text())
    assert status == 1, capsys.readouterr()
    assert report["verdict"] == "fail"
    [regression] = [r for r in result_rows(report) if r["status"] == "regression"]
    assert (regression["kernel"], regression["metric"], regression["unit"]) == \
        ("matrix_addition2D", "gpu__time_duration.sum", "ns")
    assert (regression["baseline"], regression["current"]) == (67780.0, 151330.0)
    assert regression["change"] == pytest.approx(1.233, abs=1e-3)  # +123%
    assert main(["compare", str(DEFAULT_V3), str(DEFAULT_V3)]) == 0
    capsys.readouterr()


def test_default_details_compare_with_the_report(capsys: pytest.CaptureFixture[str]) -> None:
    from perfgate.cli import main

    assert main(["compare", str(DEFAULT_V3), str(corpus_file(MLP_V4))]) == 1
    assert "+123.3%" in capsys.readouterr().out
    assert main(["compare", str(corpus_file(MLP_V3)), str(DEFAULT_V3), "--metrics",
                 "gpu__time_duration.sum"]) == 0  # 67.78 us vs 67,776 ns
    capsys.readouterr()
    # The default details page has no DRAM bytes or instructions: gated in the report, absent in the CSV, so
    # those values are not measured, which is no pass.
    assert main(["compare", str(corpus_file(MLP_V3)), str(DEFAULT_V3)]) == 2
    assert "not measured: 3 gated values not measured" in capsys.readouterr().err


# ---------------------------------------------------------------------------------------------
# raw page


def test_legacy_raw_takes_device_and_dimensions_from_metrics() -> None:
    table = read_ncu_csv(DATA / "raw_legacy.csv").table.to_frame()
    row = table.iloc[0]
    assert (row["kernel"], row["device"], row["cc"]) == ("vectorAdd", "NVIDIA GeForce RTX 3060", "8.6")
    assert (row["grid"], row["block"]) == ("(196, 1, 1)", "(256, 1, 1)")
    assert _value(table, 0, "gpu__time_duration.sum") == pytest.approx(3070.0)  # 3.07 usecond
    assert _value(table, 0, "sm__warps_active.avg.pct_of_peak_sustained_active") == pytest.approx(77.969567)
    assert set(table["unit"][table["metric"] == "gpu__time_duration.sum"]) == {"ns"}


# ---------------------------------------------------------------------------------------------
# NVTX


@pytest.mark.parametrize("name", ["details_nvtx.csv", "raw_nvtx.csv"])
def test_nvtx_push_pop_stack_becomes_region(name: str) -> None:
    table = read_ncu_csv(DATA / name).table.to_frame()
    launches = table.drop_duplicates("launch")
    assert list(launches["region"]) == [
        "train_step > forward",
        "train_step > layer:0",  # a ':' inside a range name survives
        "test_gemm[128]",  # perfgate's own domain wins over the others
        "train_step > forward",
        "",  # outside any range
    ]
    # ordinals count per (kernel, region)
    assert list(launches["ordinal"]) == [0, 0, 0, 1, 0]
    assert not table.duplicated([*LAUNCH_KEY, "metric"]).any()


def test_nvtx_tables_are_equal() -> None:
    pd.testing.assert_frame_equal(_sorted(read_ncu_csv(DATA / "details_nvtx.csv").table.to_frame()),
                                  _sorted(read_ncu_csv(DATA / "raw_nvtx.csv").table.to_frame()))


@pytest.mark.parametrize(("cell", "region"), [
    ("", ""),
    ("12345", ""),
    ('12345  "<default domain>:outer:none:none:none:none:none:none"  '
     '"<default domain>:inner:none:none:none:none:none:none" ', "outer > inner"),
    ('7  "CCCL:cub::DeviceReduce::Reduce:none:none:none:none:none:none"', "cub::DeviceReduce::Reduce"),
    ('7  "<default domain>:step:none:none:none:none:none:none"  "perfgate:test_x:none:none:none:none:none:none"',
     "test_x"),
    ('7  "<default domain>:none:none:none:none:none:ascii:from_message"', "from_message"),
    ('7  "<default domain>:short"', "short"),
])
def test_nvtx_region_cells(cell: str, region: str) -> None:
    assert nvtx_region(cell) == region


# ---------------------------------------------------------------------------------------------
# kernel names


@pytest.mark.parametrize(("demangled", "bare"), [
    (MA2D, "matrix_addition2D"),
    (GEMM, "gemm"),
    ("void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>, std::array<char *, 1UL>>"
     "(int, at::native::FillFunctor<float>, std::array<char *, 1UL>)", "vectorized_elementwise_kernel"),
    ("void cask__5x_cudnn::computeOffsetsKernel<(bool)0, (bool)0>(cask__5x_cudnn::ComputeOffsetsParams)",
     "computeOffsetsKernel"),
    ("void warptiling<(int)128, (int)128, (int)16>(int, int, int, float *, float *, float *)", "warptiling"),
    ("<unnamed>::transposeNaive(const float *, float *, int)", "transposeNaive"),
    ("void at::native::(anonymous namespace)::fill_kernel<float>(float *, void (*)(int))", "fill_kernel"),
    ("ampere_sgemm_128x64_nn", "ampere_sgemm_128x64_nn"),
    ("_Z17matrix_addition2DPfS_S_ii", "_Z17matrix_addition2DPfS_S_ii"),
    ("broken<int(float", "broken<int(float"),
])
def test_kernel_function_name(demangled: str, bare: str) -> None:
    assert kernel_function_name(demangled) == bare


# ---------------------------------------------------------------------------------------------
# tolerance of what real runs print


def _variant(tmp_path: Path, name: str, data: bytes) -> Path:
    path = tmp_path / name
    path.write_bytes(data)
    return path


@pytest.mark.parametrize("encode", [
    pytest.param(lambda t: t.replace("\n", "\r\n").encode(), id="crlf"),
    pytest.param(lambda t: b"\xef\xbb\xbf" + t.encode(), id="utf8-bom"),
    pytest.param(lambda t: t.encode("utf-16"), id="utf16-powershell"),
    pytest.param(lambda t: t.replace('"ID","Process ID"', "compiling...\nok\n\"ID\",\"Process ID\"", 1).encode(),
                 id="more-app-output"),
    pytest.param(lambda t: t.replace('\n"1",', '\n==PROF== Profiling "x" - 9: 0%\nDone.\n"1",', 1).encode(),
                 id="lines-between-rows"),
    pytest.param(lambda t: t.replace('\n"1",', "\nepoch 1, loss 0.3, acc 0.9, lr 1e-3, a, b, c, d, e, f, g, h, i, j\n"
                                               '"1",', 1).encode(), id="app-csv-line-between-rows"),
])
def test_tolerates_noise(tmp_path: Path, encode) -> None:  # type: ignore[no-untyped-def]
    text = (DATA / "details_plain.csv").read_text()
    path = _variant(tmp_path, "run.csv", encode(text))
    expected = read_ncu_csv(DATA / "details_plain.csv").table.to_frame()
    got = read_ncu_csv(path)
    pd.testing.assert_frame_equal(_sorted(got.table.to_frame()), _sorted(expected))
    assert got.source == str(path)


def test_cells_to_numbers() -> None:
    cells = np.array([1.5, "2,000", "n/a", np.nan, "CachePreferNone", "-3.5e-05", ""], dtype=object)
    values, keep = _numbers(cells)
    assert values[:2].tolist() == [1.5, 2000.0] and values[5] == -3.5e-05
    assert keep.tolist() == [True, True, True, False, False, True, False]  # n/a kept as "no data"
    assert math.isnan(values[2])


def test_launch_with_only_string_metrics_is_kept_as_no_data(tmp_path: Path) -> None:
    lines = (DATA / "details_plain.csv").read_text().splitlines()
    header = next(i for i, line in enumerate(lines) if line.startswith('"ID"'))
    row = lines[header + 1].split('","')
    row[0], row[12], row[13], row[14] = '"3', "launch__func_cache_config", "", 'CachePreferNone"'
    path = _variant(tmp_path, "strings.csv", ("\n".join(lines + ['","'.join(row)]) + "\n").encode())
    table = read_ncu_csv(path).table.to_frame()
    last = table[table["launch"] == 3]
    assert list(last["metric"]) == ["gpu__time_duration.sum"] and math.isnan(last["value"].iloc[0])
    assert list(last["ordinal"]) == [2]


# ---------------------------------------------------------------------------------------------
# errors: one line, naming the file, the cause and the fix


def test_err_nvgpuctrperm_is_an_ncu_error() -> None:
    path = DATA / "err_nvgpuctrperm.log"
    with pytest.raises(NcuError) as info:
        read_ncu_csv(path)
    text = _one_line(info.value, path, "ERR_NVGPUCTRPERM", "CAP_SYS_ADMIN", "CAP_PERFMON", "--cap-add=SYS_ADMIN",
                     "NVreg_RestrictProfilingToAdminUsers=0", "/etc/modprobe.d", "reboot")
    assert len(text) - len(str(path)) < 300


def test_error_line_after_the_table_is_an_ncu_error(tmp_path: Path) -> None:
    text = (DATA / "details_plain.csv").read_text() + "==ERROR== The application returned an error code (1).\n"
    path = _variant(tmp_path, "crashed.csv", text.encode())
    with pytest.raises(NcuError) as info:
        read_ncu_csv(path)
    _one_line(info.value, path, "error code (1)", "run the application without ncu")


def test_error_line_in_filtered_path(tmp_path: Path) -> None:
    # An app line with too many cells forces the line-by-line path; the error must still win.
    text = (DATA / "details_plain.csv").read_text()
    text += "a,b,c,d,e,f,g,h,i,j,k,l,m,n,o,p,q\n==ERROR== unrecognised option '--foo'\n"
    path = _variant(tmp_path, "badopt.csv", text.encode())
    with pytest.raises(NcuError) as info:
        read_ncu_csv(path)
    _one_line(info.value, path, "--foo", "ncu --help")


@pytest.mark.parametrize(("name", "content", "words"), [
    ("empty.csv", b"", ("empty", "ncu --csv")),
    ("blank.csv", b"\n\n  \n", ("no ncu CSV header", "ncu --csv")),
    ("notes.txt", b"hello\nworld, this is not ncu\n", ("no ncu CSV header", "ncu --csv")),
    ("junk.bin", bytes(range(256)) * 4, ("binary", "ncu --csv")),
    ("report.ncu-rep", b"NVR\x00\x02\x00\x00\x00" + bytes(64), ("Nsight Compute report", ".ncu-rep")),
    ("header_only.csv", b'==PROF== x\n"ID","Process ID","Kernel Name","Metric Name","Metric Unit","Metric Value"\n',
     ("no launch", "--kernel-name")),
    ("raw_units_only.csv", b'"ID","Kernel Name","gpu__time_duration.sum"\n"","","ns"\n',
     ("no launch", "--kernel-name")),
    ("no_kernel_column.csv", b'"ID","Process ID","Metric Value"\n"0","1","2"\n', ("Kernel Name", "ncu --csv")),
    ("dupes.csv", b'"ID","Kernel Name","a__b","a__b"\n"","","",""\n"0","k","1","2"\n', ("repeats", "export it again")),
    ("junk_inside.csv", (DATA / "details_plain.csv").read_bytes() + b"\x00\x01\x02garbage\xff\xfe\n",
     ("binary", "export it again")),
])
def test_input_errors(tmp_path: Path, name: str, content: bytes, words: tuple[str, ...]) -> None:
    path = _variant(tmp_path, name, content)
    with pytest.raises(InputError) as info:
        read_ncu_csv(path)
    assert info.value.path == str(path) and info.value.fix
    _one_line(info.value, path, *words)


@pytest.mark.parametrize(("name", "words"), [
    ("prof_only.log", ("No kernels were profiled", "--kernel-name")),
    ("text_report.log", ("text report", "--csv")),
    ("ragged.csv", ("malformed CSV", "Expected 15 fields in line 35, saw 18", "export it again")),
    ("truncated.csv", ("malformed CSV", "EOF inside string starting at line 37", "export it again")),
])
def test_input_error_fixtures(name: str, words: tuple[str, ...]) -> None:
    path = DATA / name
    with pytest.raises(InputError) as info:
        read_ncu_csv(path)
    _one_line(info.value, path, *words)


def test_missing_file(tmp_path: Path) -> None:
    path = tmp_path / "nope.csv"
    with pytest.raises(InputError) as info:
        read_ncu_csv(path)
    _one_line(info.value, path, "cannot read")


# ---------------------------------------------------------------------------------------------
# format sniffing


@pytest.mark.parametrize("name", ["details_rules.csv", "details_plain.csv", "raw.csv", "details_legacy.csv",
                                  "raw_legacy.csv", "details_nvtx.csv", "details_default_labels.csv",
                                  "err_nvgpuctrperm.log", "prof_only.log"])
def test_looks_like_ncu_csv(name: str) -> None:
    head = (DATA / name).read_bytes()[:8192]
    assert looks_like_ncu_csv(head.decode("utf-8", errors="replace"))
    assert looks_like_ncu_csv(head.decode().encode("utf-16-le").decode("latin-1"))  # UTF-16 read byte-wise
    assert looks_like_ncu_csv(head.decode().encode("utf-16").decode("utf-8", errors="replace"))  # with its BOM


@pytest.mark.parametrize("head", [
    "", '{"benchmarks": []}', "ID,Name\n1,2\n", "hello world\n", "NVR\x00\x02\x00\x00\x00" + "\x00" * 40,
    "\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR",
])
def test_does_not_look_like_ncu_csv(head: str) -> None:
    assert not looks_like_ncu_csv(head)


def test_read_table_routes_ncu_csv_here() -> None:
    from perfgate.collect import read_table

    pd.testing.assert_frame_equal(read_table(DATA / "raw.csv").table.to_frame(),
                                  read_ncu_csv(DATA / "raw.csv").table.to_frame())
    with pytest.raises(NcuError):
        read_table(DATA / "err_nvgpuctrperm.log")
    with pytest.raises(InputError, match="No kernels were profiled"):
        read_table(DATA / "prof_only.log")


# ---------------------------------------------------------------------------------------------
# the generated 10,000 launches x 20 metrics files of the speed benchmark


@pytest.fixture(scope="module")
def generated(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("csvgen")
    paths = {"details": folder / "details.csv", "raw": folder / "raw.csv", "regressed": folder / "regressed.csv"}
    csvgen.write_details_csv(paths["details"], 10_000, 20)
    csvgen.write_raw_csv(paths["raw"], 10_000, 20)
    csvgen.write_raw_csv(paths["regressed"], 10_000, 20, scale=1.25)
    return paths


@pytest.fixture(scope="module")
def generated_tables(generated: dict[str, Path]) -> dict[str, pd.DataFrame]:
    return {name: read_ncu_csv(path).table.to_frame() for name, path in generated.items()}


def test_generated_files_read_back(generated_tables: dict[str, pd.DataFrame]) -> None:
    details, raw = generated_tables["details"], generated_tables["raw"]
    for table in (details, raw):
        assert len(table) == 200_000
        assert set(table["kind"]) == {"kernel"}
        assert set(zip(table["device"], table["cc"])) == {(csvgen.DEVICE_NAME, csvgen.CC)}
        launches = table.drop_duplicates("launch")
        assert list(launches["launch"]) == list(range(10_000))
        per_kernel = launches.groupby("kernel")["ordinal"]
        assert per_kernel.size().to_dict() == {k[3]: 2000 for k in csvgen.KERNELS}
        assert all(list(ordinals) == list(range(2000)) for _, ordinals in per_kernel)
        assert set(table["metric"]) == {m.name for m in csvgen.metrics(20)}
        assert table["value"].notna().all()
        assert not table.duplicated([*LAUNCH_KEY, "metric"]).any()
    # both list a launch's metrics by name, so even the row order agrees
    pd.testing.assert_frame_equal(details, raw)


def test_generated_regression_scales_values(generated_tables: dict[str, pd.DataFrame]) -> None:
    base = generated_tables["raw"].set_index([*LAUNCH_KEY, "metric"])["value"]
    worse = generated_tables["regressed"].set_index([*LAUNCH_KEY, "metric"])["value"]
    ratio = worse / base
    # same seed, same jitter: every value scaled (small counters such as registers round to integers)
    assert ratio.between(1.2, 1.3).all()
    assert ratio.xs("gpu__time_duration.sum", level="metric").between(1.2499, 1.2501).all()


# ---------------------------------------------------------------------------------------------
# pandas only where it earns its import


def _pandas_after(*args: str | Path) -> tuple[bool, int]:
    """(whether pandas was imported, exit status) of ``perfgate ARGS`` in a fresh interpreter."""
    import subprocess
    import sys

    probe = ("import sys; from perfgate.cli import main; code = main(sys.argv[1:]); "
             "print('pandas' in sys.modules, code)")
    done = subprocess.run([sys.executable, "-c", probe, *map(str, args)], capture_output=True, text=True,
                          check=False, timeout=120)
    imported, code = done.stdout.splitlines()[-1].split()
    return imported == "True", int(code)


def test_an_application_line_wider_than_the_header_between_rows_is_left_out(tmp_path: Path) -> None:
    """pandas refuses the line (more cells than the header); the filtered path keeps ncu's quoted rows, and the
    table is the one without it (DATA / "raw.csv" has ncu's and the application's lines around its table too)."""
    lines = (DATA / "raw.csv").read_text().splitlines(keepends=True)
    odd = _variant(tmp_path, "odd.csv", "".join(lines[:-2] + ["app," * 40 + "\n"] + lines[-2:]).encode())
    assert _pandas_after("compare", DATA / "raw.csv", odd, "-o", tmp_path / "odd.json") == (True, 0)
    pd.testing.assert_frame_equal(read_ncu_csv(odd).table.to_frame(), read_ncu_csv(DATA / "raw.csv").table.to_frame())


def test_both_pages_are_read_by_pandas(tmp_path: Path) -> None:
    details = DATA.parent / "h100" / "vector_add.rerun.details.csv"
    raw = DATA.parent / "h100" / "vector_add.rerun.raw.csv"
    for page in (details, raw):
        assert _pandas_after("compare", page, page, "-o", tmp_path / "report.json") == (True, 0)
