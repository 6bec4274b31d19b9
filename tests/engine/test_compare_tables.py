"""compare_tables on small hand-built tables: matching, joining and the policies working together.

No corpus and no files: each table is a few rows made with ``make_table``.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Any

import pytest

from perfgate.compare import CompareOptions, Comparison, compare_tables
from perfgate.errors import DeviceMismatchError, InputError
from perfgate.metrics import Threshold
from perfgate.table import Measurement, make_table
from perfgate.vocabulary import Status

TIME, INST, READ = "gpu__time_duration.sum", "smsp__inst_executed.sum", "dram__bytes_read.sum"


class Launches:
    """Rows for a table: ``add`` one launch at a time, numbered in order."""

    def __init__(self) -> None:
        self.rows: list[dict[str, Any]] = []
        self.count = 0

    def add(self, kernel: str, values: dict[str, float], *, kind: str = "kernel", region: str = "", ordinal: int = 0,
            grid: str = "(8, 1, 1)", device: str = "NVIDIA H100", cc: str = "9.0") -> Launches:
        for metric, value in values.items():
            self.rows.append({"kind": kind, "kernel": kernel, "demangled": f"{kernel}()", "region": region,
                              "ordinal": ordinal, "launch": self.count, "device": device, "cc": cc, "grid": grid,
                              "block": "(128, 1, 1)", "metric": metric, "unit": "", "value": value})
        self.count += 1
        return self

    def table(self, source: str, samples: dict[str, list[float]] | None = None) -> Measurement:
        return Measurement(make_table(self.rows), source=source, samples=samples or {})


def _compare(base: Launches, cur: Launches, options: CompareOptions | None = None,
             base_samples: dict[str, list[float]] | None = None,
             cur_samples: dict[str, list[float]] | None = None) -> Comparison:
    return compare_tables(base.table("base.json", base_samples), cur.table("cur.json", cur_samples), options)


def _status(comparison: Comparison, kernel: str, **where: Any) -> str:
    launches = comparison.launches
    rows = launches[launches["kernel"] == kernel]
    for column, value in where.items():
        rows = rows[rows[column] == value]
    assert len(rows) == 1
    return str(rows["status"][0])


def _rows(comparison: Comparison, kernel: str) -> Iterator[tuple[str, str]]:
    results = comparison.results
    for row in results[results["kernel"] == kernel].rows():
        yield row["metric"], row["status"]


def test_launches_match_by_ordinal_within_kernel_and_region() -> None:
    base = (Launches().add("k", {TIME: 100_000}).add("k", {TIME: 100_000}, ordinal=1)
            .add("k", {TIME: 100_000}, ordinal=2).add("k", {TIME: 100_000}, region="step"))
    cur = (Launches().add("k", {TIME: 100_000}).add("k", {TIME: 200_000}, ordinal=1)
           .add("k", {TIME: 100_000}, ordinal=2).add("k", {TIME: 100_000}, region="step"))
    comparison = _compare(base, cur)
    assert _status(comparison, "k", ordinal=0, region="") == Status.UNCHANGED.value
    # The second launch of the three, and only it, moved: alone once, so inconclusive (a time, unlike a count, is
    # moved by another process on the GPU too).
    assert _status(comparison, "k", ordinal=1) == Status.INCONCLUSIVE.value
    assert _status(comparison, "k", ordinal=2) == Status.UNCHANGED.value
    assert _status(comparison, "k", region="step") == Status.UNCHANGED.value
    assert comparison.verdict == "inconclusive"
    assert comparison.launches["status"][0] == Status.INCONCLUSIVE.value  # what needs attention first


def test_a_kernel_on_one_side_only_is_missing_or_new_and_a_rename_is_suspected() -> None:
    # Another grid: not the same launch configuration, so not paired as a rename (test_compare_renames).
    base = Launches().add("kept", {TIME: 100_000}).add("old_name", {TIME: 100_000})
    cur = Launches().add("kept", {TIME: 100_000}).add("new_name", {TIME: 100_000}, grid="(16, 1, 1)")
    comparison = _compare(base, cur)
    assert _status(comparison, "old_name") == Status.MISSING.value
    assert _status(comparison, "new_name") == Status.NEW.value
    # One may be the other renamed: judged through the smallest total holding both, the whole report's.
    assert comparison.verdict == "pass" and not comparison.unmeasured
    assert any(note.startswith("kernels replaced outside any region: old_name → new_name (no rule pairs them); "
                               "judged through the whole report's total") for note in comparison.notes)
    assert _status(comparison, "total") == Status.UNCHANGED.value
    assert comparison.counts()[Status.MISSING.value] == comparison.counts()[Status.NEW.value] == 1
    new_rows = comparison.results[comparison.results["kernel"] == "new_name"]
    assert math.isnan(new_rows["baseline"][0]) and new_rows["current"][0] == 100_000


def test_a_nan_value_is_no_data_for_its_metric_and_its_launch() -> None:
    base = Launches().add("k", {TIME: 100_000, INST: 1000}).add("j", {TIME: 100_000})
    cur = Launches().add("k", {TIME: math.nan, INST: 1000}).add("j", {TIME: math.nan})
    comparison = _compare(base, cur)
    assert dict(_rows(comparison, "k")) == {TIME: Status.NO_DATA.value, INST: Status.UNCHANGED.value}
    assert _status(comparison, "k") == Status.UNCHANGED.value  # the comparable gated metric decides
    assert _status(comparison, "j") == Status.NO_DATA.value
    row = comparison.results[comparison.results["kernel"] == "j"].row(0)
    assert math.isnan(row["change"]) and math.isnan(row["delta"])


def test_nothing_comparable_is_refused() -> None:
    base = Launches().add("k", {TIME: 100_000})
    cur = Launches().add("k", {TIME: math.nan})
    with pytest.raises(InputError, match="nothing to compare"):
        _compare(base, cur)


def test_a_gated_metric_on_one_side_only_is_noted() -> None:
    base = Launches().add("k", {TIME: 100_000, READ: 4096})
    cur = Launches().add("k", {TIME: 100_000})
    comparison = _compare(base, cur)
    assert f"gated metric {READ} is only in base.json: not compared" in comparison.notes
    assert f"gated metrics dram__bytes_write.sum and {INST} are in neither input: not compared" in comparison.notes


def test_a_launch_with_no_compared_metric_keeps_a_row_for_its_status() -> None:
    base = Launches().add("k", {TIME: 100_000}).add("lonely", {"launch__shared_mem_per_block_static": 32})
    cur = Launches().add("k", {TIME: 100_000}).add("lonely", {"launch__shared_mem_per_block_static": 40})
    comparison = _compare(base, cur)
    lonely = list(_rows(comparison, "lonely"))
    assert lonely == [(TIME, Status.NO_DATA.value)]
    assert _status(comparison, "lonely") == Status.NO_DATA.value
    lonely_launch = comparison.launches[comparison.launches["kernel"] == "lonely"]
    assert len(lonely_launch) == 1
    note = lonely_launch["launch_change"][0]
    assert note == "static shared mem 32 → 40"


def test_launch_configuration_changes_are_noted() -> None:
    base = Launches().add("k", {TIME: 100_000}, grid="(8, 1, 1)")
    cur = Launches().add("k", {TIME: 100_000}, grid="(4, 1, 1)")
    assert list(_compare(base, cur).launches["launch_change"]) == ["grid (8, 1, 1) → (4, 1, 1)"]


def test_speed_up_trade_off_end_to_end() -> None:
    base = Launches().add("k", {TIME: 100_000, INST: 1000})
    cur = Launches().add("k", {TIME: 50_000, INST: 2000})
    comparison = _compare(base, cur)
    assert dict(_rows(comparison, "k")) == {TIME: Status.IMPROVEMENT.value, INST: Status.INFO.value}
    assert _status(comparison, "k") == Status.IMPROVEMENT.value
    traded_rows = comparison.results[comparison.results["metric"] == INST]
    assert len(traded_rows) == 1
    traded = traded_rows.row(0)
    assert not traded["gated"]


def test_info_metric_never_fails_even_when_it_moves_a_lot() -> None:
    throughput = "sm__throughput.avg.pct_of_peak_sustained_elapsed"
    base = Launches().add("k", {TIME: 100_000, throughput: 90.0})
    cur = Launches().add("k", {TIME: 100_000, throughput: 10.0})
    comparison = _compare(base, cur, CompareOptions(metrics=[TIME, throughput]))
    assert dict(_rows(comparison, "k"))[throughput] == Status.INFO.value
    assert comparison.verdict == "pass"
    # Rows of a launch: gated before info.
    assert list(comparison.results["metric"]) == [TIME, throughput]


def test_thresholds_from_options_override_the_catalog() -> None:
    base = Launches().add("k", {TIME: 100_000})
    cur = Launches().add("k", {TIME: 103_000})
    assert _compare(base, cur).verdict == "pass"  # 3% is under the default 5%
    strict = CompareOptions(thresholds={TIME: Threshold(relative=0.01)})
    comparison = _compare(base, cur, strict)
    assert comparison.verdict == "fail"
    assert comparison.results["threshold"][0] == "1%"


def _benchmarks(min_time: float) -> Launches:
    return Launches().add("test_sort", {"time.min": min_time, "time.median": min_time * 1.1}, kind="benchmark",
                          grid="", device="CPU", cc="")


def test_benchmark_slowdown_without_samples_is_judged_by_threshold_alone() -> None:
    comparison = _compare(_benchmarks(1.0), _benchmarks(1.5))
    assert dict(_rows(comparison, "test_sort")) == {"time.min": Status.REGRESSION.value,
                                                    "time.median": Status.INFO.value}


def test_benchmark_slowdown_with_overlapping_samples_is_not_significant() -> None:
    base_samples = {"test_sort": [1.0, 1.6, 1.2, 1.9, 1.1, 1.5, 1.3, 1.7]}
    cur_samples = {"test_sort": [1.5, 1.65, 1.25, 1.95, 1.55, 1.6, 1.35, 1.75]}
    comparison = _compare(_benchmarks(1.0), _benchmarks(1.5), base_samples=base_samples, cur_samples=cur_samples)
    assert _status(comparison, "test_sort") == Status.UNCHANGED.value
    separated = {"test_sort": [x + 10 for x in base_samples["test_sort"]]}
    comparison = _compare(_benchmarks(1.0), _benchmarks(1.5), base_samples=base_samples, cur_samples=separated)
    assert _status(comparison, "test_sort") == Status.REGRESSION.value


def test_different_devices_are_refused_unless_allowed() -> None:
    base = Launches().add("k", {TIME: 100_000}, device="NVIDIA H100", cc="9.0")
    cur = Launches().add("k", {TIME: 100_000}, device="Tesla T4", cc="7.5")
    with pytest.raises(DeviceMismatchError):
        _compare(base, cur)
    comparison = _compare(base, cur, CompareOptions(allow_device_mismatch=True))
    assert comparison.baseline_devices == ("NVIDIA H100 (CC 9.0)",)
    assert comparison.current_devices == ("Tesla T4 (CC 7.5)",)


def test_empty_tables_compare_to_nothing() -> None:
    comparison = _compare(Launches(), Launches())
    assert comparison.results.empty and comparison.launches.empty
    assert comparison.verdict == "pass"


def test_matching_gives_every_launch_an_id_and_joining_pairs_values_by_it() -> None:
    from perfgate.compare.joining import SideValues, join_metrics, metric_codes
    from perfgate.compare.matching import BASELINE_ONLY, BOTH_SIDES, CURRENT_ONLY, match_launches

    base = Launches().add("a", {TIME: 1.0, INST: 10.0}).add("gone", {TIME: 2.0}).table("b").table
    cur = Launches().add("fresh", {TIME: 3.0}).add("a", {TIME: 4.0, "unasked__metric.sum": 5.0}).table("c").table
    unit = cur["unit"].copy()
    unit[cur["metric"] == TIME] = "ns"
    cur = cur.assign(unit=unit)
    launches = match_launches(base, cur)
    side = dict(zip(launches.frame["kernel"], launches.side, strict=True))
    assert side == {"a": BOTH_SIDES, "gone": BASELINE_ONLY, "fresh": CURRENT_ONLY}
    ids = {kernel: i for i, kernel in enumerate(launches.frame["kernel"])}
    assert list(launches.base_ids) == [ids["a"], ids["a"], ids["gone"]]
    assert list(launches.cur_ids) == [ids["fresh"], ids["a"], ids["a"]]

    codes = metric_codes([TIME, INST])
    rows = join_metrics(SideValues(base, launches.base_ids, codes), SideValues(cur, launches.cur_ids, codes), codes,
                        [TIME, INST], launches.kinds)
    joined = {(launches.frame["kernel"][i], m): (b, c, u)
              for i, m, b, c, u in zip(rows.launch_id, rows.metric, rows.baseline, rows.current, rows.unit,
                                       strict=True)}
    assert joined.keys() == {("a", TIME), ("a", INST), ("gone", TIME), ("fresh", TIME)}  # the unasked metric is not
    assert joined["a", TIME] == (1.0, 4.0, "ns")  # the current run's unit wins
    base_inst, cur_inst, _ = joined["a", INST]
    assert base_inst == 10.0 and math.isnan(cur_inst)
    assert list(rows.launch_id) == sorted(rows.launch_id)
