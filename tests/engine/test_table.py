"""The normalized table's helpers."""

from __future__ import annotations

import math

from perfgate.table import (
    NO_DATA_METRIC,
    Measurement,
    assign_ordinals,
    devices,
    make_table,
    no_data_row,
    restrict_metrics,
)


def _row(launch: int, kernel: str, metric: str, value: float, device: str = "Tesla T4") -> dict:
    return {"kind": "kernel", "kernel": kernel, "demangled": kernel, "region": "", "ordinal": 0, "launch": launch,
            "device": device, "cc": "7.5", "grid": "", "block": "", "metric": metric, "unit": "", "value": value}


def test_ordinals_count_launches_of_the_same_kernel() -> None:
    table = assign_ordinals(make_table([_row(0, "a", "m", 1), _row(1, "b", "m", 1), _row(2, "a", "m", 1)]))
    assert list(table["ordinal"]) == [0, 0, 1]


def test_restrict_metrics_keeps_launches_visible() -> None:
    table = make_table([_row(0, "a", "keep", 1.0), _row(0, "a", "drop", 2.0), _row(1, "b", "drop", 3.0)])
    restricted = restrict_metrics(Measurement(table, source="x.csv"), ["keep"])
    kept = restricted.table.to_frame()
    assert list(kept["kernel"]) == ["a", "b"]
    assert list(kept["metric"]) == ["keep", "gpu__time_duration.sum"]
    assert math.isnan(kept["value"].iloc[1])
    assert restricted.source == "x.csv"


def test_no_data_row_per_kind() -> None:
    launch = {k: v for k, v in _row(3, "a", "m", 1.0).items() if k not in ("metric", "unit", "value")}
    row = no_data_row(launch)
    assert {k: row[k] for k in launch} == launch
    assert (row["metric"], row["unit"]) == ("gpu__time_duration.sum", "ns") and math.isnan(row["value"])
    benchmark = no_data_row({**launch, "kind": "benchmark"})
    assert (benchmark["metric"], benchmark["unit"]) == NO_DATA_METRIC["benchmark"] == ("time.min", "s")
    assert no_data_row({"kind": "region"})["metric"] == "gpu__time_duration.sum"  # a kernel's for other kinds
    table = make_table([no_data_row(launch)]).to_frame()
    assert table["metric"].tolist() == ["gpu__time_duration.sum"] and table["value"].isna().all()


def test_devices() -> None:
    table = make_table([_row(0, "a", "m", 1), _row(1, "a", "m", 1, device="NVIDIA A10G")])
    assert devices(table) == [("NVIDIA A10G", "7.5"), ("Tesla T4", "7.5")]


def test_metric_hint_keeps_identity_of_raw_csv_launches() -> None:
    from helpers.common import REPO

    from perfgate.collect import read_table

    raw = REPO / "tests" / "data" / "ncu-csv" / "raw.csv"
    full, hinted = read_table(raw).table.to_frame(), read_table(raw, ["gpu__time_duration.sum"]).table.to_frame()
    assert set(hinted["metric"]) == {"gpu__time_duration.sum"}
    columns = ["kernel", "device", "cc", "grid", "block", "ordinal"]
    expected = full.drop_duplicates("launch")[columns].reset_index(drop=True)
    assert hinted.drop_duplicates("launch")[columns].reset_index(drop=True).equals(expected)
