"""Derived metrics and the roofline gate (issue 37): computed when compared, from each side's raw counters.

The values are checked against a computation of our own from other forms of the same counters (ncu's own DRAM
rate, the per-cycle FLOP rates) on every corpus report that holds them; the gate on a real report whose FLOP
counters are halved at the same duration."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from helpers.common import NCU_REP, corpus_file

from perfgate.baseline import baseline_documents
from perfgate.collect import read_table
from perfgate.compare import CompareOptions, compare_tables
from perfgate.config import settings_from_table
from perfgate.derived import DERIVED, METRIC_GROUPS, derived_inputs, expand_groups
from perfgate.errors import ConfigError
from perfgate.metrics import Threshold, direction_of, is_time_like, parse_threshold
from perfgate.options import resolve_metrics, selection
from perfgate.plugin.ncu_run import profiling_metrics
from perfgate.prepare import prepare, read_prepared, with_derived
from perfgate.render import render
from perfgate.quantities import limit_text
from perfgate.report import build_report
from perfgate.table import Measurement

ROOFLINE = CompareOptions(metrics=resolve_metrics(["+roofline"], None))  # the defaults and the group
REPORTS = sorted(p.relative_to(NCU_REP).as_posix() for p in NCU_REP.glob("*/*.ncu-rep")) if NCU_REP.is_dir() else []
OPS = {"fadd": 1, "fmul": 1, "ffma": 2, "dadd": 1, "dmul": 1, "dfma": 2, "hadd": 2, "hmul": 2, "hfma": 4}
H100 = Path(__file__).resolve().parents[1] / "data" / "h100"


def _per_launch(measurement: Measurement) -> dict[int, dict[str, float]]:
    values: dict[int, dict[str, float]] = {}
    for row in measurement.table.rows():
        values.setdefault(int(row["launch"]), {}).setdefault(str(row["metric"]), float(row["value"]))
    return values


def _expected(raw: dict[str, float]) -> dict[str, float] | None:
    """The roofline of one launch, as ncu's sections compute it from the forms a report holds: the per-cycle FLOP
    rates times the SM sub-partitions' clock, ncu's own DRAM byte rate; None without them."""
    rate = "smsp__sass_thread_inst_executed_op_{}_pred_on.sum.per_cycle_elapsed"
    needed = [rate.format(op) for op in ("fadd", "fmul", "ffma")] + [
        "smsp__cycles_elapsed.avg.per_second", "dram__bytes.sum.per_second", "dram__bytes.sum.peak_sustained",
        "dram__cycles_elapsed.avg.per_second", "sm__sass_thread_inst_executed_op_ffma_pred_on.sum.peak_sustained",
        "sm__cycles_elapsed.avg.per_second"]
    if not all(name in raw for name in needed):
        return None
    flop = sum(weight * raw.get(rate.format(op), 0.0) for op, weight in OPS.items()) \
        * raw["smsp__cycles_elapsed.avg.per_second"]
    dram = raw["dram__bytes.sum.per_second"]
    peak = 2 * raw["sm__sass_thread_inst_executed_op_ffma_pred_on.sum.peak_sustained"] \
        * raw["sm__cycles_elapsed.avg.per_second"]
    bandwidth = raw["dram__bytes.sum.peak_sustained"] * raw["dram__cycles_elapsed.avg.per_second"]
    intensity = flop / dram
    expected = {"derived.flop_per_s": flop, "derived.dram_bytes_per_s": dram, "derived.arithmetic_intensity": intensity,
                "derived.peak_flop_per_s": peak, "derived.peak_dram_bytes_per_s": bandwidth,
                "derived.ridge_ratio": intensity / (peak / bandwidth)}
    if flop > 0:
        expected["derived.roofline_pct"] = flop / min(peak, intensity * bandwidth) * 100
    elif dram > 0:  # no FLOP: intensity 0, on the memory roof, where the share is the bandwidth's
        expected["derived.roofline_pct"] = dram / bandwidth * 100
    return expected


@pytest.mark.parametrize("relative", REPORTS or ["mlp-t4/report.ncu-rep"])
def test_derived_values_equal_our_own_computation_on_every_corpus_report(relative: str) -> None:
    measurement = read_prepared(corpus_file(relative), ROOFLINE)
    raw = _per_launch(measurement)
    derived = _per_launch(with_derived(measurement, ROOFLINE.compared_metrics()))
    checked = 0
    for launch, values in raw.items():
        expected = _expected(values)
        got = {k: v for k, v in derived[launch].items() if k.startswith("derived.")}
        if expected is None:  # a report of the default set: no row of any derived metric
            assert not got, (launch, got)
            continue
        assert set(got) == set(expected), launch
        for name, value in expected.items():
            assert got[name] == pytest.approx(value, rel=0.01), (launch, name)
        checked += 1
    if relative.startswith("mlp-t4/") or relative == "esmm-a10g/a62323b_output.ncu-rep":
        assert checked == len(raw)  # the reports the roofline facts name hold the counters for every launch


def test_a_derived_metric_is_there_only_where_its_inputs_are() -> None:
    measurement = read_prepared(H100 / "vector_add.ncu-rep", ROOFLINE)  # perfgate's default set: DRAM bytes, time
    table = with_derived(measurement, ROOFLINE.compared_metrics()).table
    derived = {str(m): float(v) for m, v in zip(table["metric"].tolist(), table["value"].tolist())
               if str(m).startswith("derived.")}
    assert list(derived) == ["derived.dram_bytes_per_s"]  # no FLOP counter: no FLOP rate, intensity or roofline
    assert derived["derived.dram_bytes_per_s"] == pytest.approx((1.34230272e8 + 56897792) / 78880e-9)


def _halved_flop(measurement: Measurement, factor: float = 0.5) -> Measurement:
    """The same launches with ``factor`` times the FLOP at the same duration: the FLOP counters scaled, alone."""
    table = measurement.table
    flop = np.array([str(m).startswith("smsp__sass_thread_inst_executed_op_") for m in table["metric"].tolist()])
    return measurement.with_table(table.assign(value=np.where(flop, table["value"] * factor, table["value"])))


@pytest.fixture(scope="module")
def esmm() -> Measurement:
    return read_prepared(corpus_file("esmm-a10g/a62323b_output.ncu-rep"), ROOFLINE)


def _roofline_statuses(comparison: object) -> list[str]:
    results = comparison.results  # type: ignore[attr-defined]
    return [row["status"] for row in results.rows() if row["metric"] == "derived.roofline_pct"]


def test_flop_halved_at_the_same_duration_fails_on_the_roofline(esmm: Measurement) -> None:
    comparison = compare_tables(esmm, _halved_flop(esmm), ROOFLINE)
    # Compute-bound kernels (18-36% of the FP32 roof): half the FLOP is half the share, 9-18 points lost.
    assert _roofline_statuses(comparison) == ["regression"] * 4
    assert comparison.verdict == "fail"
    durations = [row["status"] for row in comparison.results.rows() if row["metric"] == "gpu__time_duration.sum"]
    assert set(durations) == {"unchanged"}


def test_flop_doubled_back_passes(esmm: Measurement) -> None:
    comparison = compare_tables(_halved_flop(esmm), esmm, ROOFLINE)
    assert _roofline_statuses(comparison) == ["improvement"] * 4
    assert comparison.verdict == "pass"


def test_a_fall_within_five_points_passes(esmm: Measurement) -> None:
    # warptiling 36.0% -> 32.4% (-3.6 points, -10%): judged in points, not percent.
    comparison = compare_tables(esmm, _halved_flop(esmm, 0.9), ROOFLINE)
    assert set(_roofline_statuses(comparison)) == {"unchanged"}
    assert comparison.verdict == "pass"


def test_baselines_keep_raw_counters_and_are_judged_by_todays_formulas(esmm: Measurement) -> None:
    documents = baseline_documents(esmm, ROOFLINE.wanted_metrics())
    [document] = documents.values()
    stored = {name for entry in document["entries"] for name in entry["metrics"]}
    assert not any(name.startswith("derived.") for name in stored)
    assert "smsp__sass_thread_inst_executed_op_ffma_pred_on.sum.per_cycle_elapsed" in stored


def test_the_roofline_group_names_the_derived_metrics_and_their_counters() -> None:
    assert resolve_metrics(["+roofline"], None) is not None
    compared = CompareOptions(metrics=resolve_metrics(["+roofline"], None)).compared_metrics()
    assert set(METRIC_GROUPS["roofline"]) <= set(compared) and "roofline" not in compared
    wanted = CompareOptions(metrics=compared).wanted_metrics()
    assert set(derived_inputs(compared)) <= set(wanted)
    asked = profiling_metrics(wanted)  # what ncu is asked for: counts, never a derived name or a section's form
    assert "smsp__sass_thread_inst_executed_op_hfma_pred_on.sum" in asked
    assert not any(m.startswith("derived.") or m.endswith(".per_cycle_elapsed") for m in asked)
    assert expand_groups(["gpu__time_duration.sum", "roofline"])[0] == "gpu__time_duration.sum"


def test_each_derived_metric_is_one_row_of_the_table() -> None:
    defaults = CompareOptions().effective_thresholds()
    for derived in DERIVED:
        assert derived.name.startswith("derived.") and derived.unit is not None
        assert direction_of(derived.name).value == derived.direction
        assert is_time_like(derived.name) == derived.time_like
        assert derived.name in defaults
    assert defaults["derived.roofline_pct"] == Threshold(absolute=5.0)  # 5 points of a share


def test_prepare_drops_unscoped_launches_and_adds_region_totals() -> None:
    measurement = read_table(H100 / "nested-regions.ncu-rep")
    prepared, unplaced = prepare(measurement, scoped=True)
    assert unplaced == 0 and len(prepared.table) > len(measurement.table)  # the regions' totals
    again, _ = prepare(prepared)  # a stored baseline has them: not added twice
    assert len(again.table) == len(prepared.table)
    assert not math.isnan(float(prepared.table["value"][-1]))


def test_a_floor_fails_a_kernel_below_it_whatever_its_change(esmm: Measurement) -> None:
    # one_blocktiling sits at 18.5% of its roof, the other three at 27-36%: unchanged, and below a floor of 20.
    floored = ROOFLINE._replace(thresholds={"derived.roofline_pct": parse_threshold(">=20")})
    comparison = compare_tables(esmm, esmm, floored)
    statuses = {row["kernel"]: row["status"] for row in comparison.results.rows()
                if row["metric"] == "derived.roofline_pct"}
    assert statuses == {"one_blocktiling": "regression", "two_blocktiling": "unchanged",
                        "vectorized_blocktiling": "unchanged", "warptiling": "unchanged"}
    assert comparison.verdict == "fail"
    assert "below its floor: 18.5% of the roof, at least 20% required" in render(build_report(comparison), "md")
    assert compare_tables(esmm, esmm, ROOFLINE._replace(
        thresholds={"derived.roofline_pct": parse_threshold("5+>=18")})).verdict == "pass"


def test_a_floor_is_written_and_read_back() -> None:
    assert parse_threshold("5+>=60") == Threshold(absolute=5.0, floor=60.0)
    assert parse_threshold(">=60").spec == ">=60" and parse_threshold("5+>=60").spec == "5+>=60"
    assert limit_text("5+>=60", "%") == "5 pp + at least 60.0%"
    with pytest.raises(ConfigError):
        parse_threshold(">=60+>=70")


def test_a_regime_change_is_a_finding_in_every_formats_why(esmm: Measurement) -> None:
    # A quarter of the FLOP at the same duration and bytes: one_blocktiling's intensity falls from 2.3 to 0.58 x
    # the ridge point, compute-bound to memory-bound.
    report = build_report(compare_tables(esmm, _halved_flop(esmm, 0.25), ROOFLINE))
    for fmt in ("text", "md", "html"):
        page = render(report, fmt)
        assert "regime: compute-bound → memory-bound (intensity 2.31 → 0.577 x the ridge point)" in page, fmt
        assert "roofline: 4.98 TFLOP/s of a 26.9 TFLOP/s roof (18.5%) →" in page, fmt
    assert {"derived.roofline_pct", "derived.flop_per_s", "derived.ridge_ratio"} <= set(report["metrics"]["metric"])
    html = render(report, "html")  # each regressed kernel's section draws it on its device's roofline, both sides
    assert html.count('<svg class="roofline"') == 4
    assert 'aria-label="roofline: baseline: 4.98 TFLOP/s at 104 FLOP/byte → current: 1.24 TFLOP/s at 26 FLOP/byte"' \
        in html


def test_the_band_of_a_metric_that_should_rise_says_how_far_it_may_fall(esmm: Measurement) -> None:
    html = render(build_report(compare_tables(esmm, _halved_flop(esmm, 0.25), ROOFLINE)), "html")
    assert "· allowed down to 13.5%" in html  # one_blocktiling's 18.5% of the roof, less its 5 points
    assert "· allowed up to" in html  # the duration's band, for a metric that should not rise


def test_the_configuration_adds_the_group_to_the_curated_set(tmp_path: Path) -> None:
    settings = settings_from_table({"metrics": ["+roofline"]})
    assert settings.metrics is not None and settings.metrics[0] == "gpu__time_duration.sum"
    assert "derived.roofline_pct" in CompareOptions(metrics=settings.metrics).compared_metrics()


def _in_regions(measurement: Measurement, regions: list[str]) -> Measurement:
    """The report's kernel launches placed in ``regions`` (in launch order, one each, cycling): as if each ran
    inside ``perfgate.region(name)``."""
    table = measurement.table
    launches = sorted(set(table["launch"].tolist()))
    place = {launch: regions[i % len(regions)] for i, launch in enumerate(launches)}
    named = np.array([place[int(launch)] for launch in table["launch"].tolist()], dtype=object)
    return measurement.with_table(table.assign(region=named))


def test_a_region_totals_roofline_is_its_flop_over_the_duration_weighted_roofs() -> None:
    """Σ FLOP_i / Σ (duration_i x roof_i), each launch's roof at its own intensity, computed here from the raw
    counters of each launch (ncu's per-cycle forms), never from the derived values."""
    measurement = read_table(corpus_file("esmm-a10g/a62323b_output.ncu-rep"), ROOFLINE.wanted_metrics())
    placed, _ = prepare(_in_regions(measurement, ["layer1", "layer2"]))
    derived = with_derived(placed, ROOFLINE.compared_metrics())
    raw = _per_launch(placed)
    kernels = {launch: values for launch, values in raw.items() if _expected(values) is not None}
    assert len(kernels) == 4
    region_of = {int(r["launch"]): str(r["region"]) for r in placed.table.rows()}
    totals = {(str(r["kernel"]), int(r["launch"])): float(r["value"]) for r in derived.table.rows()
              if r["kind"] == "region" and r["metric"] == "derived.roofline_pct"}
    assert {name for name, _ in totals} == {"layer1", "layer2", "total"}
    for (name, _), got in totals.items():
        inside = [launch for launch in kernels if name == "total" or region_of[launch] == name]
        flop = allowed = 0.0
        for launch in inside:
            expected = _expected(kernels[launch])
            assert expected is not None
            seconds = kernels[launch]["gpu__time_duration.sum"] / 1e9
            flop += expected["derived.flop_per_s"] * seconds
            roof = min(expected["derived.peak_flop_per_s"],
                       expected["derived.arithmetic_intensity"] * expected["derived.peak_dram_bytes_per_s"])
            allowed += roof * seconds
        assert got == pytest.approx(flop / allowed * 100, rel=0.01), name
    # Between its kernels' shares, nearer the longer ones' (the roofs weigh by duration).
    shares = [v for (name, _), v in totals.items()]
    kernel_shares = [float(r["value"]) for r in derived.table.rows()
                     if r["kind"] == "kernel" and r["metric"] == "derived.roofline_pct"]
    assert min(kernel_shares) <= min(shares) and max(shares) <= max(kernel_shares)


def test_a_per_kernel_floor_in_the_config_fails_only_the_kernels_it_names(esmm: Measurement) -> None:
    # warptiling sits at 36.0% of its roof, the others at 18.5-30.4%: a floor of 40 for "*warp*" fails it alone;
    # the others keep the metric's 5 points (no floor), and a floor for a pattern no kernel matches gates nothing.
    settings = settings_from_table({"metrics": ["+roofline"], "kernel_thresholds": {
        "*warp*": {"derived.roofline_pct": ">=40"}, "*tiling": {"derived.roofline_pct": ">=10"},
        "nothing*": {"derived.roofline_pct": ">=99"}}})
    options = selection(metrics=settings.metrics, thresholds=settings.thresholds, significance=0.01,
                        allow_device_mismatch=False, kernel_thresholds=settings.kernel_thresholds)
    comparison = compare_tables(esmm, esmm, options)
    rows = {row["kernel"]: row for row in comparison.results.rows() if row["metric"] == "derived.roofline_pct"}
    assert {k: r["status"] for k, r in rows.items()} == {
        "one_blocktiling": "unchanged", "two_blocktiling": "unchanged", "vectorized_blocktiling": "unchanged",
        "warptiling": "regression"}
    # The first pattern a kernel matches is its threshold: warptiling's ">=40" (it matches "*tiling" too).
    assert {k: r["threshold"] for k, r in rows.items()} == {
        "one_blocktiling": ">=10", "two_blocktiling": ">=10", "vectorized_blocktiling": ">=10",
        "warptiling": ">=40"}
    assert comparison.verdict == "fail"
    assert "below its floor: 36.0% of the roof, at least 40% required" in render(build_report(comparison), "md")
    # Without the config's kernel table the same comparison passes: the floor was the kernel's alone.
    assert compare_tables(esmm, esmm, options._replace(kernel_thresholds={})).verdict == "pass"


def test_a_per_kernel_floor_alone_leaves_the_kernels_change_ungated_and_five_points_keeps_it(esmm: Measurement) -> None:
    halved = _halved_flop(esmm)  # every kernel loses 9-18 points, all stay above 5% of the roof
    floor_only = ROOFLINE._replace(kernel_thresholds={"warptiling": {"derived.roofline_pct": parse_threshold(">=5")}})
    statuses = {row["kernel"]: row["status"] for row in compare_tables(esmm, halved, floor_only).results.rows()
                if row["metric"] == "derived.roofline_pct"}
    assert statuses["warptiling"] == "unchanged" and statuses["one_blocktiling"] == "regression"
    both = ROOFLINE._replace(kernel_thresholds={"warptiling": {"derived.roofline_pct": parse_threshold("5+>=5")}})
    statuses = {row["kernel"]: row["status"] for row in compare_tables(esmm, halved, both).results.rows()
                if row["metric"] == "derived.roofline_pct"}
    assert statuses["warptiling"] == "regression"


@pytest.mark.parametrize("value", [{"sgemm*": ">=60"}, ["sgemm*"], {"sgemm*": {}},
                                   {"sgemm*": {"derived.roofline_pct": 60}}])
def test_a_malformed_kernel_thresholds_table_is_one_line_of_bad_config(value: object) -> None:
    with pytest.raises(ConfigError, match="kernel_thresholds"):
        settings_from_table({"kernel_thresholds": value})


# mlp-t4's matrix_addition2D adds two 1000 x 1000 float matrices, one FADD per element: 10^6 FLOP of useful work
# (its 63 x 63 blocks of 16 x 16 threads are ceil(1000 / 16) = 63 a side; the threads outside add nothing).
ADDITION_FLOP = 1000 * 1000


def _declared(flops: float) -> CompareOptions:
    return selection(metrics=None, thresholds={}, significance=0.01, allow_device_mismatch=False,
                     declared_flops=flops)


def _values(comparison: object, metric: str) -> list[tuple[float, float]]:
    results = comparison.results  # type: ignore[attr-defined]
    return [(row["baseline"], row["current"]) for row in results.rows() if row["metric"] == metric]


def test_the_counted_flop_of_a_real_report_are_its_useful_work_and_match_nothing_redundant() -> None:
    report = read_prepared(corpus_file("mlp-t4/report.ncu-rep"), _declared(ADDITION_FLOP))
    comparison = compare_tables(report, report, _declared(ADDITION_FLOP))
    [(_, counted)] = _values(comparison, "derived.flop")
    assert counted == pytest.approx(ADDITION_FLOP, rel=0.01)
    [(_, ratio)] = _values(comparison, "derived.declared_work")
    assert ratio == pytest.approx(1.0, rel=0.01)
    assert not any("redundant" in note for note in comparison.notes)


def test_counted_flop_well_above_the_declared_are_redundant_work_in_every_formats_why() -> None:
    # Declared 400,000 FLOP (as if the test's useful work were a 632 x 632 addition): counted 2.5x it.
    options = _declared(4e5)
    base = read_prepared(corpus_file("mlp-t4/report.ncu-rep"), options)
    cur = read_prepared(corpus_file("mlp-t4/report_v2.ncu-rep"), options)  # slower: the why is shown
    comparison = compare_tables(base, cur, options)
    [(before, after)] = _values(comparison, "derived.declared_work")
    assert before == pytest.approx(2.5, rel=0.01) and after == pytest.approx(2.5, rel=0.01)
    [note] = [note for note in comparison.notes if note.startswith("redundant work")]
    assert note.startswith("redundant work: the kernels counted 2.5× the declared FLOP (1e+06 counted, 4e+05 declared")
    report = build_report(comparison)
    for fmt in ("text", "md", "html"):
        assert "counted 2.5× the declared FLOP: redundant work (2.5× in the baseline)" in render(report, fmt), fmt
    # Declared 700,000: counted 1.43x, under the 1.5x of a finding.
    quiet = compare_tables(base, cur, _declared(7e5))
    assert not any("redundant" in note for note in quiet.notes)
    assert "redundant work" not in render(build_report(quiet), "md")


def test_a_declared_work_without_flop_counters_says_so() -> None:
    measurement = read_prepared(H100 / "vector_add.ncu-rep", _declared(1e6))  # the default set: no FLOP counter
    comparison = compare_tables(measurement, measurement, _declared(1e6))
    assert any(note.startswith("declared work: the test declares 1e+06 FLOP but") for note in comparison.notes)


@pytest.mark.parametrize("arranged", ["in order", "shuffled", "a row dropped"])
def test_the_derived_rows_follow_their_launchs_raw_rows_in_launch_order(tmp_path: Path, arranged: str,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """``with_derived`` places each derived row after its launch's raw rows (in their order), the derived metrics of
    a launch in the order they are compared in: a stable sort of the joined rows by launch, whether the rows
    came in launch order (placed without a sort: as a grid where every launch has as many rows and every derived
    metric, else row by row) or not."""
    from helpers.csvgen import write_raw_csv

    from perfgate.columns import Columns

    path = tmp_path / "raw.csv"
    write_raw_csv(path, 300, 20, seed=3, roofline=True)
    measurement = read_prepared(path, ROOFLINE)
    if arranged == "shuffled":
        measurement = measurement.with_table(measurement.table[np.random.default_rng(7).permutation(
            len(measurement.table))])
    elif arranged == "a row dropped":  # launch 4's duration: fewer rows, and no rates, for it
        table = measurement.table
        measurement = measurement.with_table(table[~((table["launch"] == table["launch"][4 * 20])
                                                     & (table["metric"] == "gpu__time_duration.sum"))])
    grids: list[int] = []
    interleaved = Columns.interleaved
    monkeypatch.setattr(Columns, "interleaved", staticmethod(lambda *a: grids.append(1) or interleaved(*a)))
    table = measurement.table
    compared = ROOFLINE.compared_metrics()
    derived = with_derived(measurement, compared).table
    assert len(grids) == (arranged == "in order")
    order = {name: at for at, name in enumerate(compared)}
    added = derived[np.flatnonzero(np.array([str(m).startswith("derived.") for m in derived["metric"].tolist()]))]
    assert len(added) > len(set(table["launch"].tolist()))  # several derived metrics a launch
    added = added[np.lexsort((np.array([order[str(m)] for m in added["metric"].tolist()]), added["launch"]))]
    expected = Columns.concat([table, added])
    expected = expected[np.argsort(expected["launch"], kind="stable")]
    for name in expected.columns:
        assert derived[name].tolist() == expected[name].tolist(), name


# ---------------------------------------------------------------- hand-built launches: a copy, a repeated kernel

_SASS = "smsp__sass_thread_inst_executed_op_{}_pred_on.sum"
_DEVICE = {"sm__sass_thread_inst_executed_op_ffma_pred_on.sum.peak_sustained": 16_896.0,  # H100-like: 50.7 TFLOP/s
           "sm__cycles_elapsed.avg.per_second": 1.5e9, "dram__bytes.sum.peak_sustained": 2_048.0,
           "dram__cycles_elapsed.avg.per_second": 1.6e9}  # 3.28 TB/s


def _launches(kernels: list[tuple[str, float, float, float]], source: str) -> Measurement:
    """One launch per (kernel, duration in ns, FFMA instructions, DRAM bytes read), with the device's peaks."""
    from perfgate.table import make_table

    rows = []
    for number, (kernel, duration, ffma, read) in enumerate(kernels):
        counters = {"gpu__time_duration.sum": duration, _SASS.format("ffma"): ffma, _SASS.format("fadd"): 0.0,
                    _SASS.format("fmul"): 0.0, "dram__bytes_read.sum": read, "dram__bytes_write.sum": 0.0, **_DEVICE}
        rows += [{"kind": "kernel", "kernel": kernel, "demangled": f"{kernel}()", "region": "",
                  "ordinal": sum(k[0] == kernel for k in kernels[:number]), "launch": number, "device": "NVIDIA H100",
                  "cc": "9.0", "grid": "(132, 1, 1)", "block": "(256, 1, 1)", "metric": metric, "unit": "",
                  "value": value} for metric, value in counters.items()]
    return Measurement(make_table(rows), source=source)


def _roofline_of(measurement: Measurement) -> dict[str, float]:
    table = with_derived(measurement, ["derived.roofline_pct", "derived.dram_bytes_per_s"]).table
    return {str(row["kernel"]): float(row["value"]) for row in table.rows() if row["metric"] == "derived.roofline_pct"}


def test_a_copy_sits_on_the_memory_roof_its_share_the_bandwidths() -> None:
    """No FLOP: intensity 0, where the roof is the bandwidth's and the share the formula's limit, DRAM B/s over its
    peak (the docs' own floor for copies, ``"*_memcpy*" = {"derived.roofline_pct" = ">=80"}``, gated nothing: the
    share was 0/0). A kernel that moves nothing has no share."""
    shares = _roofline_of(_launches([("copy", 100_000.0, 0.0, 164e6), ("idle", 2_000.0, 0.0, 0.0)], "a"))
    assert shares == {"copy": pytest.approx(164e6 / 100e-6 / 3.2768e12 * 100)}  # 50% of 3.28 TB/s
    floored = ROOFLINE._replace(kernel_thresholds={"copy": {"derived.roofline_pct": parse_threshold(">=80")}})
    copy = _launches([("copy", 100_000.0, 0.0, 164e6)], "a")
    assert compare_tables(copy, copy, floored).verdict == "fail"  # 50% of the bandwidth, under its floor of 80


def test_a_repeated_kernels_share_that_moved_a_fraction_of_a_point_is_unchanged() -> None:
    """20 launches of a compute-bound GEMM at 70% of the roof, 0.1% jitter, then 0.4% slower: -0.3 points, well
    measured. The 5 points say what fall matters; they stood divided by the launches' jitter and √n (0.03 points),
    and the kernel failed (a blind set: 2 of 3 unchanged runs)."""
    rng = np.random.default_rng(3)

    def side(scale: float, source: str) -> Measurement:
        return _launches([("sgemm", 100_000.0 * scale * (1 + 0.001 * rng.standard_normal()), 1.775e9, 1e8)
                          for _ in range(20)], source)

    comparison = compare_tables(side(1.0, "base"), side(1.004, "cur"), ROOFLINE)
    assert set(_roofline_statuses(comparison)) == {"unchanged"}
    row = next(row for row in comparison.results.rows() if row["metric"] == "derived.roofline_pct")
    assert -0.005 < row["estimate"] and row["ci_high"] < 0  # it did fall, measurably, by a fraction of a point
