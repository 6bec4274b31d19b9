"""Reading real .ncu-rep files from the corpus, and refusing broken ones with one clear line."""

from __future__ import annotations

import math
import os
from pathlib import Path

import pytest
from helpers.common import NCU_REP, corpus_file, run_perfgate

from perfgate.collect import read_table
from perfgate.collect.ncu_rep import read_ncu_rep
from perfgate.collect.ncu_rep_framing import check_framing
from perfgate.errors import InputError
from perfgate.table import COLUMNS, devices

ALL_REPORTS = sorted(p.relative_to(NCU_REP).as_posix() for p in NCU_REP.glob("*/*.ncu-rep")) if NCU_REP.is_dir() \
    else []


@pytest.mark.parametrize("relative", ALL_REPORTS or ["mlp-t4/report.ncu-rep"])
def test_every_corpus_report_reads(relative: str) -> None:
    measurement = read_table(corpus_file(relative))
    table = measurement.table
    assert tuple(table.columns) == COLUMNS
    assert not table.empty
    assert set(table["kind"]) == {"kernel"}
    # one device per report, with a compute capability
    [(name, cc)] = devices(table)
    assert name and cc.count(".") == 1
    # every launch has a function name and a demangled signature
    launches = table.to_frame().drop_duplicates("launch")
    assert (launches["kernel"] != "").all()
    assert launches["demangled"].str.contains(r"\(").all()
    assert measurement.source.endswith(relative.split("/")[-1])


def test_t4_launch_facts() -> None:
    table = read_ncu_rep(corpus_file("mlp-t4/report_v4_8_per_thread.ncu-rep")).table.to_frame()
    row = table.set_index("metric")
    assert row.loc["gpu__time_duration.sum", "value"] == 151328.0
    assert row.loc["gpu__time_duration.sum", "unit"] == "ns"
    assert row.loc["dram__bytes_read.sum", "value"] == 16182272.0
    assert row.loc["launch__registers_per_thread", "value"] == 18
    first = table.iloc[0]
    assert first["kernel"] == "matrix_addition2D"
    assert first["demangled"] == "matrix_addition2D(float *, float *, float *, int, int)"
    assert (first["device"], first["cc"]) == ("Tesla T4", "7.5")
    assert first["grid"] == "(8, 63, 1)" and first["block"] == "(16, 16, 1)"
    assert first["region"] == "" and first["ordinal"] == 0
    assert len(table) > 1000  # every numeric metric of a 17-section report


def test_metric_filter_keeps_only_asked_metrics() -> None:
    table = read_ncu_rep(corpus_file("mlp-t4/report.ncu-rep"), ["gpu__time_duration.sum", "no__such_metric"]).table
    assert list(table["metric"]) == ["gpu__time_duration.sum"]


@pytest.mark.parametrize(("relative", "kernel"), [("esmm-a10g/5c6231e.ncu-rep", "one_d_vec"),
                                                  ("esmm-a10g/e22c00d.ncu-rep", "vectorized_blocktiling")])
def test_launch_without_data_is_kept_as_nan(relative: str, kernel: str) -> None:
    table = read_ncu_rep(corpus_file(relative)).table.to_frame()
    launch = table[table["kernel"] == kernel]
    assert not launch.empty
    duration = launch[launch["metric"] == "gpu__time_duration.sum"]["value"]
    assert len(duration) == 1 and math.isnan(duration.iloc[0])
    others = table[(table["kernel"] != kernel) & (table["metric"] == "gpu__time_duration.sum")]
    assert others["value"].notna().all()


def test_several_kernels_in_report_order() -> None:
    table = read_ncu_rep(corpus_file("esmm-a10g/b644635.ncu-rep")).table.to_frame()
    launches = table.drop_duplicates("launch").sort_values("launch")
    assert list(launches["kernel"]) == ["one_blocktiling", "two_blocktiling", "vectorized_blocktiling",
                                        "warptiling"]
    assert list(launches["ordinal"]) == [0, 0, 0, 0]


# ------------------------------------------------------------------------- broken inputs

def _expect_input_error(path: Path, fragment: str) -> str:
    with pytest.raises(InputError) as info:
        read_table(path)
    line = str(info.value)
    assert str(path) in line and fragment in line
    assert "\n" not in line
    return line


def test_empty_report(tmp_path: Path) -> None:
    path = tmp_path / "empty.ncu-rep"
    path.write_bytes(b"")
    _expect_input_error(path, "empty")


def test_random_bytes(tmp_path: Path) -> None:
    path = tmp_path / "random.ncu-rep"
    path.write_bytes(os.urandom(4096))
    _expect_input_error(path, "not an Nsight Compute report")


@pytest.mark.parametrize("keep", [10, 1_000, 50_000, 150_000, 250_000, -1])
def test_truncated_anywhere_is_refused(tmp_path: Path, keep: int) -> None:
    """ncu_report itself would load the first few launches of a cut file and drop the rest."""
    data = corpus_file("esmm-a10g/a62323b_output.ncu-rep").read_bytes()
    path = tmp_path / "cut.ncu-rep"
    path.write_bytes(data[:keep])
    _expect_input_error(path, "truncated")


def test_framing_accepts_every_complete_corpus_report() -> None:
    for relative in ALL_REPORTS:
        check_framing(NCU_REP / relative)


def test_a_damaged_message_is_one_line_on_stderr(tmp_path: Path) -> None:
    """One byte of a launch's message changed (found by fuzzing): ncu_report's C++ protobuf wrote "Can't parse
    message of type NV.Profiler.Messages.ProfileResult" and an absl warning straight to file descriptor 2, two
    lines before perfgate's one error line."""
    data = bytearray(corpus_file("mlp-t4/report.ncu-rep").read_bytes())
    data[70770] = 26
    damaged = tmp_path / "damaged.ncu-rep"
    damaged.write_bytes(bytes(data))
    done = run_perfgate("baseline", damaged, "-d", tmp_path / "baselines", cwd=tmp_path)
    assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr
    assert done.stderr.startswith("perfgate: error: ") and "damaged Nsight Compute report" in done.stderr
