"""Per-region totals on real launches: four Tesla T4 profiles of one kernel, as one run's launches."""

from __future__ import annotations

import math

import numpy as np
import pytest
from helpers.plugin import MLP_T4

from perfgate.baseline import baseline_documents
from perfgate.collect.baseline_json import table_from_baseline
from perfgate.collect import read_table
from perfgate.columns import Columns, objects
from perfgate.compare import CompareOptions, compare_tables
from perfgate.regions import (
    TOTAL,
    add_region_totals,
    drop_unscoped_launches,
    is_additive,
)
from perfgate.table import KIND_REGION, Measurement, assign_ordinals, make_table

VERSIONS = ("report_v2", "report_v3_loop_unroll", "report_v4_8_per_thread", "report_v5_4_per_thread")


@pytest.fixture(scope="module")
def launches() -> Measurement:
    """Launch i of this table is the kernel of VERSIONS[i] (real values, one device)."""
    frames = []
    for index, name in enumerate(VERSIONS):
        path = MLP_T4 / f"{name}.ncu-rep"
        if not path.is_file():
            pytest.skip(f"corpus file {path} not available (set PERFGATE_CORPUS to ../shared/corpus)")
        frame = read_table(path, CompareOptions().wanted_metrics())
        frames.append(frame.table.assign(launch=np.full(len(frame.table), index, dtype=np.int64)))
    return Measurement(assign_ordinals(make_table(Columns.concat(frames))), source="four T4 launches")


def _in_regions(measurement: Measurement, regions: dict[int, str]) -> Measurement:
    table = measurement.table
    region = objects([regions.get(at, "") for at in table["launch"].tolist()])
    return measurement.with_table(table.assign(region=region))


def _value(measurement: Measurement, kernel: str, region: str, metric: str) -> float:
    table = measurement.table
    rows = table[(table["kind"] == KIND_REGION) & (table["kernel"] == kernel) & (table["region"] == region)
                 & (table["metric"] == metric)]
    assert len(rows) == 1, rows
    return float(rows["value"][0])


def test_each_top_level_region_and_the_total_sum_their_launches(launches: Measurement) -> None:
    layers = _in_regions(launches, {0: "layer1", 1: "layer1", 2: "layer2 > attention", 3: "layer2"})
    totals = add_region_totals(layers)
    duration = "gpu__time_duration.sum"
    frame = launches.table.to_frame()
    per_launch = frame[frame["metric"] == duration].set_index("launch")["value"]
    assert _value(totals, "layer1", "layer1", duration) == pytest.approx(per_launch[0] + per_launch[1])
    assert _value(totals, "layer2", "layer2", duration) == pytest.approx(per_launch[2] + per_launch[3])
    assert _value(totals, TOTAL, "", duration) == pytest.approx(per_launch.sum())
    total_rows = totals.table.to_frame()
    region_rows = total_rows[total_rows["kind"] == KIND_REGION]
    assert set(region_rows["metric"]) == {m for m in frame["metric"].unique() if is_additive(m)}
    assert "dram__bytes_read.sum" in set(region_rows["metric"]) and "smsp__inst_executed.sum" in set(
        region_rows["metric"])
    assert not any(m.endswith("pct_of_peak_sustained_elapsed") for m in region_rows["metric"])
    assert region_rows[region_rows["kernel"] == "layer1"]["demangled"].iloc[0] == "sum over 2 kernel launches"
    # the kernels themselves are still there, under their full region stack
    assert set(total_rows.loc[total_rows["kind"] == "kernel", "region"]) == {"layer1", "layer2 > attention", "layer2"}


def test_one_region_gets_its_total_but_no_overall_total(launches: Measurement) -> None:
    totals = add_region_totals(_in_regions(launches, {0: "only", 1: "only", 2: "only", 3: "only"}))
    assert set(totals.table["kernel"][totals.table["kind"] == KIND_REGION]) == {"only"}


def test_launches_outside_regions_are_dropped_and_not_counted(launches: Measurement) -> None:
    placed = _in_regions(launches, {0: "layer1", 1: "layer1"})
    kept = drop_unscoped_launches(placed)
    assert sorted(np.unique(kept.table["launch"])) == [0, 1]
    assert (kept.source, kept.unusable) == (placed.source, placed.unusable)
    totals = add_region_totals(kept)
    duration = "gpu__time_duration.sum"
    frame = launches.table.to_frame()
    per_launch = frame[frame["metric"] == duration].set_index("launch")["value"]
    assert _value(totals, "layer1", "layer1", duration) == pytest.approx(per_launch[0] + per_launch[1])


def test_a_report_without_region_information_is_kept_whole(launches: Measurement) -> None:
    assert drop_unscoped_launches(launches) is launches
    assert add_region_totals(launches) is launches


def test_a_launch_without_data_makes_its_region_total_no_data(launches: Measurement) -> None:
    placed = _in_regions(launches, {0: "a", 1: "a", 2: "b", 3: "b"})
    table = placed.table
    value = table["value"].copy()  # a Columns is not changed in place
    value[(table["launch"] == 1) & (table["metric"] == "gpu__time_duration.sum")] = math.nan
    placed = placed.with_table(table.assign(value=value))
    totals = add_region_totals(placed)
    assert math.isnan(_value(totals, "a", "a", "gpu__time_duration.sum"))
    assert not math.isnan(_value(totals, "b", "b", "gpu__time_duration.sum"))


def test_region_totals_round_trip_through_a_baseline_and_gate(launches: Measurement) -> None:
    regions = {0: "layer1", 1: "layer1", 2: "layer2", 3: "layer2"}
    before = add_region_totals(_in_regions(launches, regions))
    (document,) = baseline_documents(before, settings={"clock_control": "base"}).values()
    baseline = table_from_baseline(document, "b.json")  # type: ignore[arg-type]
    # layer2's second kernel gets 30% slower: a kernel, its layer and the total regress; layer1 does not
    slower = _in_regions(launches, regions)
    table = slower.table
    mask = (table["launch"] == 3) & (table["metric"] == "gpu__time_duration.sum")
    value = table["value"].copy()
    value[mask] = value[mask] * 1.3
    slower = slower.with_table(table.assign(value=value))
    comparison = compare_tables(baseline, add_region_totals(slower))
    status = {(row["kind"], row["kernel"], row["region"]): row["status"] for row in comparison.launches.rows()}
    assert status[("region", "layer2", "layer2")] == "regression"
    assert status[("region", TOTAL, "")] == "regression"
    assert status[("region", "layer1", "layer1")] == "unchanged"
    assert ("kernel", "matrix_addition2D", "layer2") in status
    results = comparison.results.to_frame()
    slowed = results[(results["region"] == "layer2") & (results["metric"] == "gpu__time_duration.sum")]
    assert "regression" in set(slowed["status"])
