"""Thresholds of single series (``CompareOptions.series_thresholds``): a (kernel, region, metric) gated at its own
threshold, launch by launch and as a group of repeated launches; the others at their metric's; the report shows
the threshold each row was judged at."""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from perfgate.compare import CompareOptions, compare_tables
from perfgate.metrics import OFF, Threshold
from perfgate.report import build_report
from perfgate.table import Measurement, make_table

TIME, INST = "gpu__time_duration.sum", "smsp__inst_executed.sum"


def _run(kernels: dict[str, Sequence[float]], region: str = "") -> Measurement:
    """kernel -> its launches' durations (ns); instructions 1,000,000 each."""
    rows: list[dict[str, Any]] = []
    for kernel, durations in kernels.items():
        for ordinal, duration in enumerate(durations):
            for metric, value in ((TIME, duration), (INST, 1_000_000.0)):
                rows.append({"kind": "kernel", "kernel": kernel, "demangled": kernel, "region": region,
                             "ordinal": ordinal, "launch": len(rows) // 2, "device": "NVIDIA H100", "cc": "9.0",
                             "grid": "(64, 1, 1)", "block": "(256, 1, 1)", "metric": metric, "unit": "ns",
                             "value": float(value)})
    return Measurement(make_table(rows), source=f"{len(rows)} rows")


def _statuses(options: CompareOptions, before: Measurement, after: Measurement) -> dict[str, str]:
    launches = compare_tables(before, after, options).launches
    return dict(zip(launches["kernel"].tolist(), launches["status"].tolist()))


def test_a_series_is_gated_at_its_own_threshold_the_others_at_their_metric_s() -> None:
    before = _run({"steady": [100_000.0], "noisy": [100_000.0]})
    after = _run({"steady": [103_000.0], "noisy": [103_000.0]})  # both +3%
    per_metric = CompareOptions(thresholds={TIME: Threshold(relative=0.05)})
    assert _statuses(per_metric, before, after) == {"steady": "unchanged", "noisy": "unchanged"}
    own = per_metric._replace(series_thresholds={("steady", "", TIME): Threshold(relative=0.01)})
    assert _statuses(own, before, after) == {"steady": "regression", "noisy": "unchanged"}

    report = build_report(compare_tables(before, after, own))
    metrics = report["metrics"]
    shown = {(metrics["metric"][m], metrics["threshold"][m]) for m in set(report["results"]["metric"])}
    assert shown == {(TIME, "1%"), (TIME, "5%"), (INST, "1%")}  # INST: the catalog's, for every kernel
    by_row = {(report["launches"]["kernel"][launch], metrics["metric"][m]): metrics["threshold"][m]
              for launch, m in zip(report["results"]["launch"], report["results"]["metric"])}
    assert by_row[("steady", TIME)] == "1%" and by_row[("noisy", TIME)] == "5%"


def test_the_region_and_the_metric_are_part_of_the_series() -> None:
    before, after = _run({"k": [100_000.0]}, region="loop"), _run({"k": [103_000.0]}, region="loop")
    options = CompareOptions(thresholds={TIME: Threshold(relative=0.05)})
    elsewhere = options._replace(series_thresholds={("k", "", TIME): Threshold(relative=0.01),
                                                    ("k", "loop", INST): Threshold(relative=0.01)})
    assert _statuses(elsewhere, before, after) == {"k": "unchanged"}
    here = options._replace(series_thresholds={("k", "loop", TIME): Threshold(relative=0.01)})
    assert _statuses(here, before, after) == {"k": "regression"}


def test_a_series_threshold_never_turns_a_gate_on() -> None:
    before, after = _run({"k": [100_000.0]}), _run({"k": [150_000.0]})
    options = CompareOptions(thresholds={TIME: OFF}, metrics=[TIME, INST],
                             series_thresholds={("k", "", TIME): Threshold(relative=0.01)})
    comparison = compare_tables(before, after, options)
    assert comparison.launches["status"].tolist() == ["unchanged"]  # +50% of an ungated metric: information
    assert comparison.results["status"][comparison.results["metric"] == TIME].tolist() == ["info"]


def test_a_group_of_repeated_launches_is_judged_at_its_series_threshold() -> None:
    rng = np.random.default_rng(26)
    base = 100_000.0 * (1 + 0.002 * rng.standard_normal(40))
    cur = 103_000.0 * (1 + 0.002 * rng.standard_normal(40))  # +3%, clearly, on 40 launches each
    before, after = _run({"gemm": base.tolist()}), _run({"gemm": cur.tolist()})
    options = CompareOptions(thresholds={TIME: Threshold(relative=0.05)})
    comparison = compare_tables(before, after, options)
    assert comparison.results["group"].max() >= 0  # judged as a group
    assert set(comparison.launches["status"].tolist()) == {"unchanged"}
    own = options._replace(series_thresholds={("gemm", "", TIME): Threshold(relative=0.01)})
    assert set(compare_tables(before, after, own).launches["status"].tolist()) == {"regression"}


def test_a_launch_that_moved_alone_is_judged_at_its_series_threshold() -> None:
    rng = np.random.default_rng(24)
    base = 100_000.0 * (1 + 0.0005 * rng.standard_normal(12))
    cur = base * (1 + 0.0005 * rng.standard_normal(12))
    cur[3::4] *= 1.02  # call site #3 of a loop of 4 (3 iterations): +2%, within the metric's 5%, past the series' 1%
    before, after = _run({"layer_norm": base.tolist()}), _run({"layer_norm": cur.tolist()})
    options = CompareOptions(thresholds={TIME: Threshold(relative=0.05)})
    comparison = compare_tables(before, after, options)
    assert set(comparison.launches["status"].tolist()) == {"unchanged"}
    assert not [note for note in comparison.notes if "moved alone" in note]

    own = compare_tables(before, after, options._replace(
        series_thresholds={("layer_norm", "", TIME): Threshold(relative=0.01)}))
    launches = own.launches
    assert launches["ordinal"][launches["status"] == "regression"].tolist() == [3, 7, 11]
    assert (launches["status"] == "unchanged").sum() == 9  # the group as a whole did not move
    alone = [note for note in own.notes if "moved alone" in note]
    assert len(alone) == 3 and alone[0].startswith("layer_norm #3") and "past its limit 1%" in alone[0]
