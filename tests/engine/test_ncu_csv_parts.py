"""The CSV reader's parts, each on a few rows: framing, parsing, the two pages, labels, launches, values.

Inputs are cut from the real exports of ncu 2025.3.1 on an H100 (``tests/data/h100``): the rows are
read from those files at test time (header, NVTX cell, units, thousands separators as ncu wrote
them) and only the rows or cells a test is about are kept or changed.
"""

from __future__ import annotations

import csv
import io
import math
import random
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from perfgate.collect.ncu_csv.details import read_details
from perfgate.collect.ncu_csv.framing import _profiling_lines, find_header, launch_mask, ncu_error, no_table_error
from perfgate.collect.ncu_csv.labels import map_section_labels, qualify_duplicates
from perfgate.collect.ncu_csv.launches import (
    MetricRows,
    attribute_cells,
    Coded,
    combined,
    per_launch,
    with_no_data_rows,
)
from perfgate.collect.ncu_csv.parsing import (
    Unparsed,
    check_header,
    header_fields,
    is_details,
    is_metric_column,
    is_push_pop,
    read_details_csv,
    read_raw_csv,
)
from perfgate.collect.ncu_csv.raw import raw_units, read_raw
from perfgate.collect.ncu_csv.values import numbers, unit_scale
from perfgate.errors import InputError, NcuError
from perfgate.table import COLUMNS
from perfgate.vocabulary import PERMISSION_FIX

H100 = Path(__file__).parents[1] / "data" / "h100"
GPU = "NVIDIA H100 80GB HBM3"
DURATION = "gpu__time_duration.sum"
FEW = {DURATION, "dram__bytes_read.sum", "launch__grid_dim_x", "launch__registers_per_thread",
       "device__attribute_display_name", "device__attribute_compute_capability_major",
       "device__attribute_compute_capability_minor"}


def _rows(name: str) -> list[list[str]]:
    with (H100 / name).open(newline="", encoding="utf-8") as handle:
        return list(csv.reader(handle))


def _csv(rows: list[list[str]]) -> bytes:
    """Rows written back the way ncu writes them: every field quoted."""
    return "".join(",".join('"' + c.replace('"', '""') + '"' for c in row) + "\n" for row in rows).encode()


def _details_rows(name: str, keep: Callable[[dict[str, str]], bool]) -> list[list[str]]:
    """The header and the rows of a real details page that ``keep`` (given the row by column) accepts."""
    header, *rows = _rows(name)
    return [header, *(row for row in rows if keep(dict(zip(header, row, strict=True))))]


def _raw_rows(name: str, columns: Callable[[str], bool], launches: int) -> list[list[str]]:
    """The header, units row and first ``launches`` rows of a real raw page, with the columns kept."""
    header, units, *rows = _rows(name)
    kept = [i for i, column in enumerate(header) if columns(column)]
    return [[row[i] for i in kept] for row in (header, units, *rows[:launches])]


def _details(rows: list[list[str]], source: str = "tiny.csv") -> pd.DataFrame:
    return read_details(read_details_csv(io.BytesIO(_csv(rows)), header=rows[0]), source).table.to_frame()


def _raw(rows: list[list[str]], wanted: frozenset[str] | None = None) -> pd.DataFrame:
    handle = io.BytesIO(_csv(rows))
    header = header_fields(handle.readline())
    units = raw_units(handle, header)
    return read_raw(read_raw_csv(handle, header), header, units, "tiny.csv", wanted).table.to_frame()


def _value(table: pd.DataFrame, metric: str, launch: int = 0) -> float:
    rows = table[(table["launch"] == launch) & (table["metric"] == metric)]
    assert len(rows) == 1, (metric, launch, len(rows))
    return float(rows["value"].iloc[0])


# ---------------------------------------------------------------- framing


def test_header_is_found_after_ncu_and_program_lines() -> None:
    """ncu's stdout with --csv and no --log-file: ==PROF== lines and pytest's own lines, then the page."""
    path = H100 / "vector_add.stdout-raw.log"
    with path.open("rb") as handle:
        found = find_header(handle)
    assert found.offset == path.read_bytes().index(b'"ID",')
    assert found.tool_lines == ["==PROF=="]  # one per launch in real logs: only their presence is kept
    assert found.other_lines == 2  # pytest's progress line and its summary
    assert not (found.text_report or found.binary or found.report or found.empty)


def test_a_log_without_table_says_so() -> None:
    log = (H100 / "vector_add.rerun.ncu.log").read_bytes()
    found = find_header(io.BytesIO(log))
    assert found.offset == -1 and found.other_lines == 0
    assert "only ncu log lines, no profiled kernel" in str(no_table_error(found, "ncu.log"))
    assert "empty file" in str(no_table_error(find_header(io.BytesIO(b"")), "x"))
    assert ".ncu-rep" in str(no_table_error(find_header(io.BytesIO(b"NVR\x00\x02\x00")), "x"))


@pytest.mark.parametrize(("line", "words"), [
    ("==ERROR== ERR_NVGPUCTRPERM - The user does not have permission", (PERMISSION_FIX,)),
    ("==ERROR== The application returned an error code (1).", ("run the application without ncu",)),
    ("==ERROR== unrecognised option '--metricz'", ("correct the ncu command line",)),
    ("==ERROR== Failed to prepare kernel for profiling", ("fix what ncu reports",)),
])
def test_ncu_error_lines_get_a_fix(line: str, words: tuple[str, ...]) -> None:
    error = ncu_error(line, "out.csv")
    assert isinstance(error, NcuError) and str(error).startswith("out.csv: ")
    for word in words:
        assert word in str(error)


def test_launch_mask_leaves_out_lines_that_are_not_launches() -> None:
    ids = ["0", "==PROF== Disconnected from process 1079", "1", ""]
    assert launch_mask(ids, "x").tolist() == [True, False, True, False]
    with pytest.raises(NcuError, match="ncu reported an error"):
        launch_mask(["0", "==ERROR== LaunchFailed"], "x")
    with pytest.raises(InputError, match="binary data"):
        launch_mask(["0", "\ufffd\ufffd"], "x")
    with pytest.raises(InputError, match="header but no launch"):
        launch_mask(["==PROF== Report: x.ncu-rep"], "x")


# ---------------------------------------------------------------- parsing


@pytest.mark.parametrize("name", sorted(p.name for p in H100.glob("*.csv")))
def test_real_headers(name: str) -> None:
    first = (H100 / name).read_bytes().split(b"\n", 1)[0]
    header = header_fields(first)
    assert header == _rows(name)[0]
    check_header(header, name)
    assert is_details(header) == ("details" in name)
    assert sum(map(is_push_pop, header)) == 1  # --nvtx: the push/pop column (start/stop is not a stack)
    metrics = [c for c in header if is_metric_column(c)]
    assert (DURATION in metrics) == ("raw" in name)  # the details page names metrics in rows
    assert not any(is_metric_column(c) for c in header[:13])  # the leading columns


def test_header_errors() -> None:
    header = _rows("vector_add.rerun.details.csv")[0]
    with pytest.raises(InputError, match="no \"Kernel Name\" column"):
        check_header([c for c in header if c != "Kernel Name"], "x")
    with pytest.raises(InputError, match="repeats columns \\['CC'\\]"):
        check_header([*header, "CC"], "x")


def test_a_row_longer_than_the_header_is_unparsed() -> None:
    rows = _details_rows("vector_add.rerun.details.csv", lambda r: r["Metric Name"] == DURATION)
    rows[1] = [*rows[1], "extra"]
    with pytest.raises(Unparsed):
        read_details_csv(io.BytesIO(_csv(rows)), header=rows[0])


@pytest.mark.parametrize(("text", "problem"), [
    ('"0","a"\n"1","b","c"\n', "Expected 2 fields in line 2, saw 3"),  # wider than the header and the first row
    ('"0","a","c"\n"1","b"\n', "Length of header or names does not match length of data"),  # a first row too wide
    ('"0","a"\n\n  \n"1","b","c"\n', "Expected 2 fields in line 4, saw 3"),  # blank lines count as lines
    ('"0","a"\n"1","b\n', "EOF inside string starting at row 1"),
])
def test_raw_rows_fail_in_pandas_words(text: str, problem: str) -> None:
    """The raw page's parse fails as pandas' C parser does, in its words."""
    with pytest.raises(Unparsed, match=problem):
        read_raw_csv(io.BytesIO(text.encode()), ["ID", "A"])


def test_raw_rows_as_pandas_gave_them() -> None:
    text = ('"0","a",\n'            # a trailing comma (one empty cell more) on the first row: dropped
            '\n \t\n'              # blank lines: skipped
            '==PROF== x, "y"\n'      # ncu's lines between rows: a row, left out later by its "ID"
            '"1"\n'                 # a short row: filled with ""
            '"2","multi\nline"\n'   # a cell across lines
            '"  "\n')               # a quoted cell of spaces is a row
    frame = read_raw_csv(io.BytesIO(text.encode()), ["ID", "A"])
    assert [frame[name].tolist() for name in ("ID", "A")] == [
        ["0", "==PROF== x", "1", "2", "  "],  # column by column
        ["a", ' "y"', "", "multi\nline", ""]]


# ---------------------------------------------------------------- details page


def test_details_page_of_one_real_launch() -> None:
    table = _details(_details_rows("vector_add.rerun.details.csv", lambda r: r["Metric Name"] in FEW))
    assert tuple(table.columns) == COLUMNS and table["launch"].unique().tolist() == [0]
    assert _value(table, DURATION) == pytest.approx(79390.0)  # "us", "79.39"
    assert _value(table, "dram__bytes_read.sum") == pytest.approx(134.23e6)  # "Mbyte", "134.23"
    assert _value(table, "launch__grid_dim_x") == 65536.0  # "65,536"
    assert _value(table, "launch__registers_per_thread") == 16.0
    units = dict(zip(table["metric"], table["unit"], strict=True))
    assert units[DURATION] == "ns" and units["dram__bytes_read.sum"] == "byte"
    assert units["launch__registers_per_thread"] == "register/thread"
    launch = table.iloc[0]
    assert (launch["kernel"], launch["region"], launch["device"], launch["cc"]) == ("vector_add", "vector_add", GPU,
                                                                                    "9.0")
    assert (launch["grid"], launch["block"]) == ("(65536, 1, 1)", "(256, 1, 1)")
    assert "device__attribute_display_name" not in set(table["metric"])  # a string: it names the device


def test_details_page_splits_launches_where_the_id_changes() -> None:
    rows = _details_rows("mlp.rerun.details.csv", lambda r: int(r["ID"]) < 4 and r["Metric Name"] in FEW)
    table = _details(rows)
    launches = table.drop_duplicates("launch")
    assert launches["launch"].tolist() == [0, 1, 2, 3]
    assert launches["kernel"].tolist()[1] == "vectorized_elementwise_kernel"  # bare name of a templated kernel
    assert launches["region"].tolist() == ["layer0", "layer0", "layer1", "layer1"]
    assert launches["ordinal"].tolist() == [0, 0, 0, 0]  # same kernels, other regions
    assert not table.duplicated(["launch", "metric"]).any()


def test_details_without_launch_columns_take_them_from_identity_metrics() -> None:
    """The older layout has no "Block Size", "Grid Size", "Device", "CC": the metrics fill them in."""
    dims = {f"launch__{what}_dim_{axis}" for what in ("grid", "block") for axis in "xyz"}
    rows = _details_rows("vector_add.rerun.details.csv", lambda r: r["Metric Name"] in FEW | dims)
    dropped = [rows[0].index(c) for c in ("Block Size", "Grid Size", "Device", "CC")]
    table = _details([[cell for i, cell in enumerate(row) if i not in dropped] for row in rows])
    launch = table.iloc[0]
    assert (launch["device"], launch["cc"], launch["grid"], launch["block"]) == (GPU, "9.0", "(65536, 1, 1)",
                                                                                "(256, 1, 1)")


def test_a_launch_with_only_a_string_metric_is_kept_as_no_data() -> None:
    rows = _details_rows("vector_add.rerun.details.csv",
                         lambda r: r["Metric Name"] == "device__attribute_display_name")
    table = _details(rows)
    assert table[["metric", "unit", "device"]].values.tolist() == [[DURATION, "ns", GPU]]
    assert math.isnan(table["value"].iloc[0])


def _labelled(changes: list[tuple[str, str, str, str]]) -> list[list[str]]:
    """Real rows of vector_add's launch with (section, label, unit, value) put in, as ncu prints sections."""
    rows = _details_rows("vector_add.rerun.details.csv", lambda r: r["Metric Name"] == DURATION)
    header, template = rows[0], rows[1]
    at = [header.index(c) for c in ("Section Name", "Metric Name", "Metric Unit", "Metric Value")]
    out = [header]
    for change in changes:
        row = list(template)
        for index, cell in zip(at, change, strict=True):
            row[index] = cell
        out.append(row)
    return out


def test_section_labels_become_names_only_with_their_section_and_unit() -> None:
    table = _details(_labelled([
        ("GPU Speed Of Light Throughput", "Duration", "us", "79.39"),
        ("GPU Speed Of Light Throughput", "Memory Throughput", "%", "71.85"),
        ("Memory Workload Analysis", "Memory Throughput", "Gbyte/s", "2.42"),
        ("GPU Speed Of Light Throughput", "SM Frequency", "%", "5"),  # another unit: another quantity
        ("Launch Statistics", "Registers Per Thread", "register/thread", "16"),
    ]))
    metrics = dict(zip(table["metric"], table["value"], strict=True))
    assert metrics[DURATION] == pytest.approx(79390.0)
    assert metrics["gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed"] == 71.85
    assert metrics["dram__bytes.sum.per_second"] == pytest.approx(2.42e9)
    assert metrics["SM Frequency"] == 5.0
    assert metrics["launch__registers_per_thread"] == 16.0


def test_a_metric_given_by_name_wins_over_its_label() -> None:
    table = _details(_labelled([
        ("GPU Speed Of Light Throughput", "Duration", "us", "79.39"),
        ("Command line profiler metrics", DURATION, "ns", "79,392"),
    ]))
    assert table[["metric", "value"]].values.tolist() == [[DURATION, 79392.0]]  # not rounded to 2 decimals


def test_labels_of_unknown_sections_that_repeat_are_qualified() -> None:
    table = _details(_labelled([("Custom A", "Busy", "%", "10"), ("Custom B", "Busy", "%", "20"),
                                ("Custom A", "Alone", "%", "30")]))
    assert dict(zip(table["metric"], table["value"], strict=True)) == {"Custom A: Busy": 10.0,
                                                                        "Custom B: Busy": 20.0, "Alone": 30.0}


def test_label_mapping_on_codes() -> None:
    """The same on the arrays the page passes: two launches, "Duration" (us) and by name (ns) in the second."""
    names = ["Duration", DURATION, "Busy"]
    sections = np.array(["GPU Speed Of Light Throughput", "GPU Speed Of Light Throughput",
                         "Command line profiler metrics", "X", "Y"], dtype=object)
    row_launch, codes = np.array([0, 1, 1, 1, 1]), np.array([0, 0, 1, 2, 2])
    units, unit_codes = ["ns", "%"], np.array([0, 0, 0, 1, 1])
    keep = np.ones(5, dtype=bool)
    codes2, names2, keep2 = map_section_labels(sections, row_launch, codes, names, unit_codes, units, keep)
    assert [names2[c] for c in codes2] == [DURATION, DURATION, DURATION, "Busy", "Busy"]
    assert keep2.tolist() == [True, False, True, True, True]  # launch 1: the named row stays
    codes3, names3 = qualify_duplicates(sections, row_launch, codes2, names2, keep2)
    assert [names3[c] for c in codes3][3:] == ["X: Busy", "Y: Busy"]


# ---------------------------------------------------------------- raw page


def _few_columns(column: str) -> bool:
    return not is_metric_column(column) or column in FEW


def test_raw_units_row_is_consumed() -> None:
    rows = _raw_rows("vector_add.rerun.raw.csv", _few_columns, 1)
    handle = io.BytesIO(_csv(rows))
    header = header_fields(handle.readline())
    units = dict(zip(header, raw_units(handle, header), strict=True))
    assert (units[DURATION], units["dram__bytes_read.sum"], units["Kernel Name"]) == ("us", "Mbyte", "")
    assert handle.readline().startswith(b'"0","1079"')  # the first launch is next


def test_profiling_lines_counted_or_split() -> None:
    rng = random.Random(5)
    prefixes = [b"", b"\n", b"==PROF== a\n==PROF== b\n", b"==PROF== a\nx", b"x\n==PROF== a\n", b"==PROF=="]
    parts = [b"==PROF== x", b"\n", b"==PROF==", b"a", b"==PR", b"OF==", b"\r"]
    prefixes += [b"".join(rng.choice(parts) for _ in range(rng.randint(0, 8))) for _ in range(2000)]
    for prefix in prefixes:
        lines = prefix.split(b"\n")
        others = [line for line in lines if not line.startswith(b"==PROF==")]
        assert _profiling_lines(prefix) == (len(others) < len(lines), others), prefix
        # Read in place from the buffer that holds them (find_header's), whatever comes before and after.
        before, after = rng.choice(parts) * rng.randint(0, 2), rng.choice(parts) * rng.randint(0, 2)
        held = bytearray(before + prefix + after)
        assert _profiling_lines(held, len(before), len(before) + len(prefix)) == (len(others) < len(lines), others)


def test_raw_page_without_units_row() -> None:
    rows = _raw_rows("vector_add.rerun.raw.csv", _few_columns, 1)
    del rows[1]
    handle = io.BytesIO(_csv(rows))
    header = header_fields(handle.readline())
    assert raw_units(handle, header) == [""] * len(header)
    assert handle.readline().startswith(b'"0","1079"')


def test_raw_page_of_real_launches_matches_the_details_page() -> None:
    raw = _raw(_raw_rows("mlp.rerun.raw.csv", _few_columns, 4))
    details = _details(_details_rows("mlp.rerun.details.csv", lambda r: int(r["ID"]) < 4 and r["Metric Name"] in FEW))
    key = ["launch", "metric"]
    raw, details = raw.sort_values(key).reset_index(drop=True), details.sort_values(key).reset_index(drop=True)
    pd.testing.assert_frame_equal(raw.drop(columns="value"), details.drop(columns="value"))
    # the raw page prints more digits ("79.392000" where details prints "79.39")
    assert np.allclose(raw["value"], details["value"], rtol=5e-3)


def test_raw_page_hint_keeps_identity_metrics() -> None:
    table = _raw(_raw_rows("vector_add.rerun.raw.csv", _few_columns, 1), wanted=frozenset({DURATION}))
    assert set(table["metric"]) == {DURATION, "launch__grid_dim_x", "device__attribute_compute_capability_major",
                                    "device__attribute_compute_capability_minor"}
    assert table["device"].iloc[0] == GPU


# ---------------------------------------------------------------- launches and values


def test_launches_without_rows_get_the_no_data_row() -> None:
    rows = MetricRows(launch=np.array([0, 2]), metric_codes=np.array([0, 0]), metric_names=["dram__bytes_read.sum"],
                      unit_codes=np.array([0, 0]), unit_names=["byte"], values=np.array([1.0, 2.0]))
    filled = with_no_data_rows(rows, count=4)
    assert filled.launch.tolist() == [0, 1, 2, 3]
    assert [filled.metric_names[c] for c in filled.metric_codes] == ["dram__bytes_read.sum", DURATION,
                                                                     "dram__bytes_read.sum", DURATION]
    assert [filled.unit_names[c] for c in filled.unit_codes] == ["byte", "ns", "byte", "ns"]
    assert np.isnan(filled.values[[1, 3]]).all()
    assert with_no_data_rows(rows, count=3).launch.tolist() == [0, 1, 2]
    assert with_no_data_rows(filled, count=4) is filled


def listed(column: Coded) -> list[object]:
    """A coded column as one value per launch."""
    return [column.distinct[code] for code in column.codes.tolist()]


def test_attribute_cells_and_per_launch_values() -> None:
    cells = np.array([f" {GPU} ", np.nan, "65,536", 9], dtype=object)
    assert listed(attribute_cells("device__attribute_display_name", cells)) == [GPU, None, "65,536", 9]
    assert listed(attribute_cells("launch__grid_dim_x", cells)) == [GPU, None, "65536", 9]  # separators go
    column = pd.Series(["(256, 1, 1)", np.nan, "(256, 1, 1)"], dtype=object)
    assert listed(per_launch(column, 3)) == ["(256, 1, 1)", "", "(256, 1, 1)"]
    assert per_launch(column, 3).codes.tolist() == [0, 1, 0]  # codes into the distinct cells, not a text per launch
    assert listed(per_launch(None, 2)) == ["", ""]
    assert listed(per_launch(pd.Series([" 9.0 "], dtype=object), 1, str.strip)) == ["9.0"]
    made = combined([per_launch(column, 3), per_launch(pd.Series(["x", "y", "x"], dtype=object), 3)],
                    lambda dims, name: f"{name}{dims}")
    assert listed(made) == ["x(256, 1, 1)", "y", "x(256, 1, 1)"]  # made once per distinct pair
    assert len(made.distinct) == 2


def test_cells_to_numbers_by_metric() -> None:
    cells = np.array(["134,226,176", "n/a", np.nan, "CachePreferNone", "16", "79.39"], dtype=object)
    groups = np.array([0, 1, 2, 3, 4, 5])
    values, keep = numbers(cells, suspects=np.array([False, False, False, True, False, False]), groups=groups)
    assert keep.tolist() == [True, True, False, False, True, True]  # n/a kept as "no data"; empty and text dropped
    assert values[[0, 4, 5]].tolist() == [134226176.0, 16.0, 79.39]
    assert math.isnan(values[1])


def test_unit_scale_uses_the_unit_table() -> None:
    names, factors = unit_scale(["us", "Mbyte", "Kbyte/block", "", "register/thread"])
    assert names == ["ns", "byte", "byte/block", "", "register/thread"]
    assert factors.tolist() == [1e3, 1e6, 1e3, 1.0, 1.0]
