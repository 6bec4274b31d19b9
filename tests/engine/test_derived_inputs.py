"""The counters only the derived metrics' formulas read (issue 37): left out of the tables a comparison judges
(``with_derived(..., keep_inputs=False)``), and still summed into a total of the launches outside every region
where one is made, so that the total's derived metrics are those of its summed counters."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from helpers.csvgen import write_raw_csv

from perfgate.columns import Columns
from perfgate.compare import CompareOptions, compare_tables
from perfgate.derived import derived_inputs
from perfgate.metrics import LAUNCH_CONFIG_METRICS
from perfgate.options import resolve_metrics
from perfgate.prepare import read_prepared, with_derived
from perfgate.regions import add_outside_total, is_additive
from perfgate.table import Measurement, make_table
from perfgate.vocabulary import TOTAL

ROOFLINE = CompareOptions(metrics=resolve_metrics(["+roofline"], None))


def _formula_only(compared: tuple[str, ...]) -> set[str]:
    return {name for name in derived_inputs(compared) if name not in {*compared, *LAUNCH_CONFIG_METRICS}}


@pytest.mark.parametrize("arranged", ["in order", "shuffled", "a row dropped", "a derived rate held"])
def test_the_formulas_counters_are_left_out_and_every_other_row_kept_in_its_place(
        tmp_path: Path, arranged: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Row for row the table ``with_derived`` gives, less the formulas' own counters: left out by their places in
    a launch's rows where it joins a grid (a raw page in launch order), else row by row."""
    path = tmp_path / "raw.csv"
    write_raw_csv(path, 200, 20, seed=5, roofline=True)
    measurement = read_prepared(path, ROOFLINE)
    table = measurement.table
    if arranged == "shuffled":
        measurement = measurement.with_table(table[np.random.default_rng(3).permutation(len(table))])
    elif arranged == "a row dropped":  # launch 4's duration: fewer rows, and no rates, for it
        measurement = measurement.with_table(table[~((table["launch"] == table["launch"][4 * 15])
                                                     & (table["metric"] == "gpu__time_duration.sum"))])
    elif arranged == "a derived rate held":  # a row a formula's latest word replaces
        held = table[:1].assign(metric=np.array(["derived.flop_per_s"], dtype=object), value=np.array([1.0]))
        measurement = measurement.with_table(Columns.concat([table, held])[np.argsort(
            np.r_[table["launch"], held["launch"]], kind="stable")])
    compared = ROOFLINE.compared_metrics()
    inputs = _formula_only(compared) & set(measurement.table["metric"].tolist())
    assert len(inputs) == 7  # of the 15 metrics a launch read
    grids: list[object] = []
    interleaved = Columns.interleaved
    monkeypatch.setattr(Columns, "interleaved", staticmethod(lambda *a: grids.append(a[2:]) or interleaved(*a)))
    whole = with_derived(measurement, compared).table
    judged = with_derived(measurement, compared, keep_inputs=False).table
    if arranged == "in order":
        assert len(grids) == 2 and grids[0] == (None,) and len(grids[1][0]) == 15 - 7  # each launch's 8 others kept
    expected = whole[np.flatnonzero(~np.isin(whole["metric"], list(inputs)))]
    assert len(judged) == len(expected) < len(whole)
    for name in expected.columns:
        assert judged[name].tolist() == expected[name].tolist(), name


def _side(source: str, kernels: list[str], flop: float) -> Measurement:
    """A launch of each kernel with the roofline's counters, in no region (a kernel's grid: its name's length, so
    that no rule pairs kernels of other names)."""
    counters = {"gpu__time_duration.sum": 2_000.0, "dram__bytes_read.sum": 3e6, "dram__bytes_write.sum": 1e6,
                "dram__bytes.sum": 4e6, "smsp__sass_thread_inst_executed_op_ffma_pred_on.sum": flop,
                "smsp__sass_thread_inst_executed_op_fadd_pred_on.sum": flop / 4,
                "smsp__sass_thread_inst_executed_op_fmul_pred_on.sum": flop / 8,
                "sm__sass_thread_inst_executed_op_ffma_pred_on.sum.peak_sustained": 256.0,
                "sm__cycles_elapsed.avg.per_second": 1.7e9, "dram__bytes.sum.peak_sustained": 48.0,
                "dram__cycles_elapsed.avg.per_second": 2.6e9}
    rows = [{"kind": "kernel", "kernel": kernel, "demangled": f"{kernel}()", "region": "", "ordinal": 0,
             "launch": launch, "device": "NVIDIA H100", "cc": "9.0", "grid": f"({len(kernel)}, 1, 1)",
             "block": "(128, 1, 1)", "metric": metric, "unit": "", "value": value}
            for launch, kernel in enumerate(kernels) for metric, value in counters.items()]
    return Measurement(make_table(rows), source=source)


def test_a_total_outside_every_region_has_the_derived_metrics_of_its_summed_counters() -> None:
    """A kernel replaced outside every region is judged through a total of both sides' launches: its derived
    metrics come from the counters summed over them, which the judged tables no longer hold."""
    base, cur = _side("base", ["kept", "old_name"], 1e6), _side("cur", ["kept", "the_new_name"], 2e6)
    comparison = compare_tables(base, cur, ROOFLINE)
    assert any(note.startswith("kernels replaced outside any region: old_name → the_new_name") for note in comparison.notes)
    results = comparison.results
    total = results[results["kernel"] == TOTAL]
    shown = dict(zip(total["metric"].tolist(), zip(total["baseline"].tolist(), total["current"].tolist())))
    compared = ROOFLINE.compared_metrics()
    for side, at in ((base, 0), (cur, 1)):
        summed = with_derived(add_outside_total(side, TOTAL, is_additive), compared).table
        own = summed[summed["kind"] == "region"]
        for metric, value in zip(own["metric"].tolist(), own["value"].tolist()):
            if metric in shown:
                assert shown[metric][at] == value or math.isnan(value), metric
    assert shown["derived.flop_per_s"][1] > shown["derived.flop_per_s"][0] > 0
    assert not _formula_only(compared) & set(results["metric"].tolist())
