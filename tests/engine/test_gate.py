"""The gate stage both shells share (``perfgate.gate``): hand-built tables, real baseline files."""

from __future__ import annotations

from pathlib import Path

from helpers.common import run_perfgate
from typing import Any

from perfgate.baseline import baseline_documents, save_baselines
from perfgate.gate import Where, gate
from perfgate.verdict import GateStatus
from perfgate.options import selection
from perfgate.report import result_rows
from perfgate.table import Measurement, make_table

REPO = Path(__file__).resolve().parents[2]
OPTIONS = selection(metrics=None, thresholds={}, significance=0.01, allow_device_mismatch=False)


def _table(durations: dict[str, float]) -> Measurement:
    """One kernel launch per GPU, with its duration in ns."""
    rows = [{"kind": "kernel", "kernel": "gemm", "demangled": "gemm", "region": "", "ordinal": 0, "launch": i,
             "device": device, "cc": "9.0", "grid": "(1, 1, 1)", "block": "(1, 1, 1)",
             "metric": "gpu__time_duration.sum", "unit": "ns", "value": value}
            for i, (device, value) in enumerate(durations.items())]
    return Measurement(make_table(rows))


def test_a_regression_on_one_gpu_is_not_hidden_by_a_missing_baseline_on_another(tmp_path: Path) -> None:
    """Formerly the per-device loop kept only the last device's status: regression, then "new"."""
    save_baselines(baseline_documents(_table({"NVIDIA A100": 100_000.0}), OPTIONS.wanted_metrics()), tmp_path, "t")
    current = _table({"NVIDIA A100": 150_000.0, "NVIDIA H100": 90_000.0})
    result = gate(current, baselines=tmp_path, where=Where(name="t", test="t.py::t"), options=OPTIONS, settings={})
    assert result.status == GateStatus.REGRESSION and result.failed
    assert len(result.regressions) == 1 and "gemm" in result.regressions[0]
    assert result.found == 1 and [p.parent.name for p in result.missing] == ["nvidia-h100-sm90"]
    assert result.report["verdict"] == "fail"
    assert result.report["summary"]["regression"] == 1 and result.report["summary"]["new"] == 1

    strict = gate(current, baselines=tmp_path, where=Where(name="t"), options=OPTIONS, settings={}, strict=True)
    assert strict.regressions and strict.problems == [
        f"no baseline for NVIDIA H100 (CC 9.0) at {tmp_path / 'nvidia-h100-sm90' / 't.json'} (--strict); "
        "create it with perfgate baseline"]


def test_statuses_new_updated_compared(tmp_path: Path) -> None:
    where = Where(name="t")
    current = _table({"NVIDIA H100": 90_000.0})
    assert gate(current, baselines=tmp_path, where=where, options=OPTIONS, settings={}).status == GateStatus.NEW
    updated = gate(current, baselines=tmp_path, where=where, options=OPTIONS, settings={"clock_control": "base"},
                   update=True)
    assert updated.status == GateStatus.UPDATED and [p.name for p in updated.written] == ["t.json"]
    again = gate(_table({"NVIDIA H100": 91_000.0}), baselines=tmp_path, where=where, options=OPTIONS,
                 settings={"clock_control": "none"})
    assert again.status == GateStatus.COMPARED and not again.failed
    assert any("clock_control 'base' → 'none'" in note for note in again.report["notes"])


def test_compare_gates_against_a_baselines_directory_like_the_plugin() -> None:
    """The committed H100 baselines (written by the plugin) against the rerun report: region totals
    included, so all 26 kernel launches and 6 totals compare, none missing; backward's repeated kernels count once
    each in the headline (21 kernels and totals)."""
    done = run_perfgate("compare", "baselines", "tests/data/h100/default-metrics/mlp.rerun.ncu-rep.xz",
                    "--name", "examples.test_torch_mlp_layers__test_mlp_layer_by_layer")
    assert done.returncode == 0, done.stderr
    assert done.stdout.rstrip().endswith("PASS: no regression in 21 compared (launches: 32 unchanged)")


def test_compare_against_a_directory_without_that_baseline_is_exit_2() -> None:
    done = run_perfgate("compare", "baselines", "tests/data/h100/mlp.rerun.ncu-rep.xz")
    assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr
    assert ("perfgate: error: baselines: holds no baseline for nvidia-h100-80gb-hbm3-sm90/mlp.rerun.json "
            "(create it with 'perfgate baseline") in done.stderr


def test_a_gated_value_on_one_side_only_is_not_measured_and_fails_strict(tmp_path: Path) -> None:
    duration = _table({"NVIDIA H100": 100_000.0}).table
    inst = {**duration.row(0), "metric": "smsp__inst_executed.sum", "unit": "", "value": 5_000.0}
    base = Measurement(make_table([*duration.rows(), inst]))
    save_baselines(baseline_documents(base, OPTIONS.wanted_metrics()), tmp_path, "t")
    current = _table({"NVIDIA H100": 100_000.0})  # the instructions were not measured this time
    where = Where(name="t", test="t.py::t")
    result = gate(current, baselines=tmp_path, where=where, options=OPTIONS, settings={})
    assert not result.failed and result.report["verdict"] == "not measured"
    [entry] = result.report["unmeasured"]
    assert entry["test"] == "t.py::t" and entry["launch"] == "gemm #0"
    assert entry["cause"].startswith("smsp__inst_executed.sum has no value in the current run")
    strict = gate(current, baselines=tmp_path, where=where, options=OPTIONS, settings={}, strict=True)
    assert strict.failed and "smsp__inst_executed.sum has no value in the current run" in strict.problems[0]


def _with_write(measurement: Measurement, written: float) -> Measurement:
    table = measurement.table
    write = [{**row, "metric": "dram__bytes_write.sum", "unit": "byte", "value": written} for row in table.rows()]
    return measurement.with_table(make_table([*table.rows(), *write]))


def test_dram_write_is_not_judged_between_one_pass_and_several(tmp_path: Path) -> None:
    """Recorded in 1 replay pass, run in 13 (sections, or a metric that needs more): DRAM writes read higher for
    the replay's sake alone (perfgate.compare.replay), so they are shown but not judged; the duration still is.
    Several passes on both sides (10 and 13 agreed within 4% on the H100) are judged as ever."""

    where = Where(name="t", test="t.py::t")
    base = _with_write(_table({"NVIDIA H100": 100_000.0}), 16_800_000.0)
    gate(base, baselines=tmp_path, where=where, options=OPTIONS, settings={"replay_passes": 1}, update=True)
    more_writes = _with_write(_table({"NVIDIA H100": 100_000.0}), 19_200_000.0)  # +14%, as measured

    def run(passes: int, current: Measurement = more_writes, strict: bool = False) -> Any:
        return gate(current._replace(settings={"replay_passes": passes}), baselines=tmp_path, where=where,
                    options=OPTIONS, settings={}, strict=strict)

    assert run(1).status == GateStatus.REGRESSION  # the same replay: a real change of DRAM writes fails
    other = run(13)
    assert other.status == GateStatus.COMPARED and not other.failed and other.report["verdict"] == "not measured"
    assert other.report["unmeasured"] == [{"test": "t.py::t", "launch": "every launch", "cause": (
        "dram__bytes_write.sum not judged: ncu replayed the kernels differently than for the baseline "
        "(1 replay pass → 13), and this count depends on the replay; record the baseline again with these "
        "settings")}]
    assert [r["gated"] for r in result_rows(other.report) if r["metric"] == "dram__bytes_write.sum"] == [False]
    strict = run(13, strict=True)
    assert strict.failed and "a gated value not judged fails" in strict.problems[0]
    slower = _with_write(_table({"NVIDIA H100": 150_000.0}), 19_200_000.0)
    assert run(13, slower).status == GateStatus.REGRESSION  # the duration is judged as ever
    unknown = gate(more_writes, baselines=tmp_path, where=where, options=OPTIONS, settings={})
    assert unknown.status == GateStatus.REGRESSION  # a side that does not say (a CSV export): judged


def test_several_passes_on_both_sides_are_judged_alike(tmp_path: Path) -> None:

    where = Where(name="t", test="t.py::t")
    base = _with_write(_table({"NVIDIA H100": 100_000.0}), 16_800_000.0)._replace(settings={"replay_passes": 10})
    gate(base, baselines=tmp_path, where=where, options=OPTIONS, settings={"replay_passes": 10}, update=True)
    current = _with_write(_table({"NVIDIA H100": 100_000.0}), 19_200_000.0)._replace(settings={"replay_passes": 13})
    assert gate(current, baselines=tmp_path, where=where, options=OPTIONS, settings={}).status == GateStatus.REGRESSION
