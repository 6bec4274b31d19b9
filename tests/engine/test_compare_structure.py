"""Structure changes between runs (issue 35, items 3 and 4; docs/matching.md): a layer added with its own NVTX range
leaves the total comparing the regions both runs hold, and kernels replaced in a region or outside every region
(cuBLAS xmma -> nvjet, split-K adding a reduce kernel, a suite swapping ops) are judged through the smallest total
that holds them: the region's, else that of the launches outside every region (the whole report where it has none). The
runs are ncu details pages of the verdict families (tests/verdicts/structures.py), read and compared as
``perfgate compare`` does."""

from __future__ import annotations

import json
import random
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "verdicts"))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from helpers.common import corpus_file, run_perfgate  # noqa: E402
from scenarios import write_run  # noqa: E402
from structures import Case, cases, compared, run  # noqa: E402

from perfgate.compare import CompareOptions, Comparison, compare_tables  # noqa: E402
from perfgate.collect import read_table  # noqa: E402
from perfgate.regions import with_region_totals  # noqa: E402
from perfgate.vocabulary import OUTSIDE, TOTAL  # noqa: E402

TIME, INST = "gpu__time_duration.sum", "smsp__inst_executed.sum"


def _case(name: str, family: str | None = None) -> Case:
    [case] = [c for c in cases() if c.name == name and family in (None, c.family)]
    return case


def _compared(name: str, tmp_path: Path, seed: int = 3, family: str | None = None) -> Comparison:
    return compared(_case(name, family), tmp_path, random.Random(seed))


def _row(comparison: Comparison, kernel: str, metric: str, region: str | None = None) -> dict[str, object]:
    results = comparison.results
    picked = (results["kernel"] == kernel) & (results["metric"] == metric)
    if region is not None:
        picked &= results["region"] == region
    [row] = results[picked].rows()
    return row


def test_a_layer_added_with_its_own_range_leaves_the_total_comparing_the_shared_layers(tmp_path: Path) -> None:
    comparison = _compared("one added in the middle", tmp_path)
    assert comparison.verdict == "pass", comparison.notes
    assert "regions differ: 1 region only in the current run (added0; new, judged on its own); the total compares " \
           "the 4 regions both runs hold, like with like" in comparison.notes
    total = _row(comparison, TOTAL, TIME, "")
    shared = [_row(comparison, f"layer{i}", TIME) for i in range(4)]
    assert total["baseline"] == sum(row["baseline"] for row in shared)  # type: ignore[misc]
    assert total["current"] == sum(row["current"] for row in shared)  # type: ignore[misc]
    assert abs(total["change"]) < 0.02  # type: ignore[arg-type]
    added = comparison.launches[comparison.launches["region"] == "added0"]
    assert set(added["status"].tolist()) == {"new"}  # judged on its own terms: new


def test_a_shared_layer_slowed_beside_an_added_one_fails(tmp_path: Path) -> None:
    comparison = _compared("one added, layer2's GEMM +15%", tmp_path)
    assert comparison.verdict == "fail"
    assert _row(comparison, "layer2", TIME)["status"] == "regression"
    assert _row(comparison, TOTAL, TIME, "")["status"] in ("unchanged", "regression")  # 1 of 4 layers: +3%


def test_regions_that_share_fewer_than_two_leave_no_total(tmp_path: Path) -> None:
    one = Case("layers", "renamed", "pass", [], [])
    base_case = _case("one added at the end")
    one = one._replace(baseline=[launch for launch in base_case.baseline if launch.region in ("layer0", "layer1")],
                       current=[launch._replace(region="layer9") if launch.region == "layer1" else launch
                                for launch in base_case.baseline if launch.region in ("layer0", "layer1")])
    comparison = compared(one, tmp_path, random.Random(1))
    assert not (comparison.launches["kernel"] == TOTAL).any()
    assert any(note.startswith("regions differ: 1 region only in the current run (layer9; new, judged on its own); "
                               "1 region only in the baseline (layer1; missing); fewer than two regions")
               for note in comparison.notes)


def test_a_baseline_written_with_totals_meets_a_run_with_a_layer_added(tmp_path: Path) -> None:
    case = _case("one added at the end")
    rng = random.Random(4)
    write_run(tmp_path / "base.csv", case.baseline, rng)
    write_run(tmp_path / "cur.csv", case.current, rng)
    made = run_perfgate("baseline", tmp_path / "base.csv", "-d", tmp_path / "b", "--name", "model", cwd=tmp_path)
    assert made.returncode == 0, made.stderr
    [written] = (tmp_path / "b").glob("*/model.json")
    done = run_perfgate("compare", written, tmp_path / "cur.csv", cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "the total compares the 4 regions both runs hold" in done.stdout


def test_an_xmma_gemm_replaced_by_nvjet_passes_through_its_region_total(tmp_path: Path) -> None:
    comparison = _compared("xmma -> nvjet, same time", tmp_path, family="replaced")
    assert comparison.verdict == "pass" and not comparison.unmeasured
    [note] = [n for n in comparison.notes if n.startswith("kernels replaced in region forward: ")]
    assert "sm90_xmma_gemm_f16f16_f16f32_f32_tn_n_tilesize128x128x64" in note
    assert "→ nvjet_hsh_256x128_64x4_2x1_v_bz_coopA_NNT (no rule pairs them); judged through region forward's " \
           "total: duration " in note and note.endswith("shown, not gated)")
    # nvjet executes 30% fewer instructions: the total's work counters count other kernels' work, so they inform.
    instructions = _row(comparison, "forward", INST)
    assert instructions["status"] == "info" and not instructions["gated"]
    assert not any("missing and" in n for n in comparison.notes)  # the replacement's own note says it


def test_a_replacement_that_slowed_its_region_fails_on_the_region_total(tmp_path: Path) -> None:
    comparison = _compared("xmma -> split-K + reduce, 15% slower", tmp_path, family="replaced")
    assert comparison.verdict == "fail" and not comparison.unmeasured
    assert _row(comparison, "forward", TIME)["status"] == "regression"
    [note] = [n for n in comparison.notes if n.startswith("kernels replaced in region forward: ")]
    assert "execute_segment_k_on_kernel__5x_cublas, splitKreduce_kernel<32, 16, int" in note
    assert note.endswith("(regression); the replacement is the likely cause of its regression")


def test_a_replacement_beside_a_kernel_that_regressed_is_not_named_the_only_cause(tmp_path: Path) -> None:
    from structures import BIAS, NVJET, SOFTMAX, _scaled
    from scenarios import Launch

    case = _case("xmma -> nvjet, a shared kernel +20%")
    both = case._replace(current=[Launch(_scaled(NVJET, 1.1), "forward"), Launch(BIAS, "forward", time=1.5),
                                  Launch(SOFTMAX, "forward")])  # the region +14%: 10 us of it nvjet's, 10 us the bias'
    comparison = compared(both, tmp_path, random.Random(1))
    assert comparison.verdict == "fail"
    assert _row(comparison, "bias_gelu_kernel", TIME)["status"] == "regression"
    [note] = [n for n in comparison.notes if n.startswith("kernels replaced in region forward: ")]
    assert note.endswith("(regression); the replacement is a likely cause of its regression, besides the kernels that "
                         "regressed in it")


def test_a_replacement_in_a_nested_range_is_judged_by_its_top_level_total(tmp_path: Path) -> None:
    comparison = _compared("xmma -> nvjet x3 in a nested range, 25% slower", tmp_path)
    assert comparison.verdict == "fail"
    assert any(n.startswith("kernels replaced in region forward > mlp: ") and "region forward's total" in n
               for n in comparison.notes)


def test_a_suite_swapping_ops_passes_unless_its_test_got_slower(tmp_path: Path) -> None:
    assert _compared("op1 removed, op3 added (same time)", tmp_path).verdict == "pass"
    slower = _compared("op1 removed, op4 added (+15 us of 90)", tmp_path)
    assert slower.verdict == "fail" and _row(slower, "test_suite", TIME)["status"] == "regression"


def _note(comparison: Comparison, start: str) -> str:
    [note] = [n for n in comparison.notes if n.startswith(start)]
    return note


def test_kernels_replaced_in_a_report_without_regions_are_judged_through_the_whole_report(tmp_path: Path) -> None:
    comparison = _compared("xmma -> nvjet, same time", tmp_path, family="unscoped")
    assert comparison.verdict == "pass" and not comparison.unmeasured, comparison.unmeasured
    note = _note(comparison, "kernels replaced outside any region: sm90_xmma_gemm_f16f16_f16f32_f32_tn_n_tilesize128")
    assert "→ nvjet_hsh_256x128_64x4_2x1_v_bz_coopA_NNT (no rule pairs them); judged through the whole report's total " \
           "(every kernel launch: 3 kernel launches in the baseline, 3 in the current run): duration " in note
    assert note.endswith("not a regression (its work counters count other kernels' work: shown, not gated)")
    total = _row(comparison, TOTAL, TIME, "")
    assert total["status"] in ("unchanged", "improvement") and total["gated"]
    assert _row(comparison, TOTAL, INST, "")["status"] == "info"  # nvjet executes 30% fewer instructions


def test_a_replacement_outside_every_region_is_joined_and_judged_once(tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """Whether the total of the launches outside every region is needed is known from the matched launches: the
    comparison is joined once, with that total, not first without it."""
    import perfgate.compare.flow as flow

    joins: list[int] = []
    join_metrics = flow.join_metrics
    monkeypatch.setattr(flow, "join_metrics", lambda *args: joins.append(1) or join_metrics(*args))
    comparison = _compared("xmma -> nvjet, same time", tmp_path, family="unscoped")
    assert len(joins) == 1 and (comparison.launches["kernel"] == TOTAL).any()


def test_a_replacement_that_slowed_a_report_without_regions_fails_on_its_total(tmp_path: Path) -> None:
    comparison = _compared("xmma -> nvjet 20% slower (the report +14%)", tmp_path)
    assert comparison.verdict == "fail" and not comparison.unmeasured
    total = _row(comparison, TOTAL, TIME, "")
    assert total["status"] == "regression" and 0.12 < total["change"] < 0.17  # type: ignore[operator]
    assert _note(comparison, "kernels replaced outside any region: ").endswith(
        "(regression); the replacement is the likely cause of its regression")
    beside = _compared("xmma -> nvjet, a shared kernel +50%", tmp_path)
    assert _row(beside, "bias_gelu_kernel", TIME)["status"] == "regression"
    assert _note(beside, "kernels replaced outside any region: ").endswith(
        "the replacement is a likely cause of its regression, besides the kernels that regressed in it")


@pytest.mark.parametrize("name", ["a kernel added, the others unchanged", "a kernel removed, the others unchanged",
                                  "identical"])
def test_a_report_without_replacement_gets_no_whole_report_total(tmp_path: Path, name: str) -> None:
    comparison = _compared(name, tmp_path)
    assert comparison.verdict == "pass" and not comparison.unmeasured
    assert not (comparison.launches["kind"] == "region").any()
    assert not any(n.startswith("kernels replaced") for n in comparison.notes)


def test_kernels_replaced_outside_the_regions_both_runs_hold_are_judged_through_their_total(tmp_path: Path) -> None:
    comparison = _compared("xmma -> nvjet beside a region both hold, 25% slower", tmp_path)
    assert comparison.verdict == "fail" and not comparison.unmeasured
    assert _row(comparison, OUTSIDE, TIME, "")["status"] == "regression"
    assert _row(comparison, "forward", TIME)["status"] == "unchanged"
    assert "judged through the total of the launches outside every region (1 kernel launch in the baseline, 1 in " \
           "the current run; both runs hold the same regions): duration +" in \
           _note(comparison, "kernels replaced outside any region: ")
    assert _compared("xmma -> nvjet beside a region both hold, same time", tmp_path).verdict == "pass"


def test_kernels_replaced_outside_regions_the_runs_do_not_share_are_still_not_measured(tmp_path: Path) -> None:
    comparison = _compared("xmma -> nvjet, the runs hold different regions", tmp_path)
    assert comparison.verdict == "not measured"
    [(where, cause)] = comparison.unmeasured
    assert where == "launches outside any region"
    assert cause.startswith("kernels no rule paired (perhaps one renamed), no total holds them: missing ")
    assert cause.endswith("new nvjet_hsh_256x128_64x4_2x1_v_bz_coopA_NNT (after review accept them with "
                          "--accept-unpaired-kernels or accept_unpaired_kernels, or pair them with kernel_aliases)")
    assert "kernels replaced outside any region: no total holds them: the runs hold different regions (backward " \
           "only in the current run), so their launches outside every region are not the same part of the " \
           "program" in comparison.notes
    assert not (comparison.launches["kernel"] == OUTSIDE).any()


def test_real_reports_whose_kernel_was_replaced_are_judged_from_the_command_line(tmp_path: Path) -> None:
    # mlp-t4 v5 -> v6: matrix_addition2D (81.4 us, grid 1008) rewritten as matrix_addition1D (47.1 us, grid 3907).
    v5, v6 = (corpus_file(f"mlp-t4/{name}.ncu-rep") for name in ("report_v5_4_per_thread",
                                                                          "report_v6_1d_1_per_thread"))
    for before, after, status, change in ((v5, v6, 0, "duration -42.2% (improvement); not a regression"),
                                          (v6, v5, 1, "duration +72.9% (regression); the replacement is the likely "
                                                      "cause of its regression")):
        done = run_perfgate("compare", before, after, cwd=tmp_path)
        assert done.returncode == status, done.stdout + done.stderr
        assert "Traceback" not in done.stderr
        assert "judged through the whole report's total (every kernel launch: 1 kernel launch in the baseline, 1 " \
               f"in the current run): {change}" in done.stdout


def test_accepting_unpaired_kernels_still_judges_a_total_that_regressed(tmp_path: Path) -> None:
    case = _case("xmma -> nvjet, 25% slower")
    rng = random.Random(2)
    write_run(tmp_path / "base.csv", case.baseline, rng)
    write_run(tmp_path / "cur.csv", case.current, rng)
    sides = [with_region_totals(read_table(tmp_path / name)) for name in ("base.csv", "cur.csv")]
    assert compare_tables(*sides, CompareOptions(accept_unpaired_kernels=True)).verdict == "fail"


def test_from_the_command_line(tmp_path: Path) -> None:
    rng = random.Random(6)
    for name, family, status in (("xmma -> nvjet, 10% faster", "replaced", 0),
                                 ("xmma -> nvjet, 25% slower", "replaced", 1),
                                 ("xmma -> nvjet, 10% faster", "unscoped", 0),
                                 ("xmma -> split-K + reduce, 15% slower", "unscoped", 1),
                                 ("xmma -> nvjet, the runs hold different regions", "unscoped", 2)):
        case = _case(name, family)
        write_run(tmp_path / "base.csv", case.baseline, rng)
        write_run(tmp_path / "cur.csv", case.current, rng)
        done = run_perfgate("compare", tmp_path / "base.csv", tmp_path / "cur.csv", cwd=tmp_path)
        assert done.returncode == status, (name, done.stdout, done.stderr)
        assert "Traceback" not in done.stderr


def test_every_family_gets_its_expected_verdict() -> None:
    wrong = [(o.case.family, o.case.name, o.case.expect, o.verdict) for o in run(reruns=2, seed=11) if not o.right]
    assert not wrong


def _trace(path: Path, kernels: list[tuple[str, float]], inside: int | None = None) -> Path:
    """A torch.profiler trace of one ``step`` region launching ``kernels`` (name, µs) back to back; ``inside``: how
    many of them the region launches (the others are launched after it, outside every region)."""
    events: list[dict[str, object]] = [{"ph": "X", "cat": "user_annotation", "name": "step", "ts": 0.0, "dur": 30.0,
                                        "pid": 1, "tid": 1, "args": {}}]
    start = 20.0
    for at, (name, duration) in enumerate(kernels):
        launched = 1.0 + 2 * at if inside is None or at < inside else 100.0 + 2 * at
        events.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "ts": launched, "dur": 1.0,
                       "pid": 1, "tid": 1, "args": {"correlation": at + 1}})
        events.append({"ph": "X", "cat": "kernel", "name": name, "ts": start, "dur": duration, "pid": 0, "tid": 7,
                       "args": {"correlation": at + 1, "device": 0, "stream": 7}})
        start += duration + 1.0
    path.write_text(json.dumps({"traceEvents": events}), encoding="utf-8")
    return path


# The range ends before its GPU work does: the step's wall time is the GPU's (timeline.wall_time's floor is 200 µs).
@pytest.mark.parametrize(("nvjet_us", "verdict"), [(996.0, "pass"), (1400.0, "fail")])
def test_a_trace_judges_a_replacement_through_its_region(tmp_path: Path, nvjet_us: float, verdict: str) -> None:
    base = _trace(tmp_path / "base.json", [("sm90_xmma_gemm_f16f16_tn_n_execute_segment_k_off_kernel__5x_cublas",
                                            1000.0), ("bias_gelu_kernel", 200.0)])
    cur = _trace(tmp_path / "cur.json", [("nvjet_hsh_256x128_64x4_2x1_v_bz_coopA_NNT", nvjet_us),
                                         ("bias_gelu_kernel", 200.0)])
    comparison = compare_tables(*(with_region_totals(read_table(path)) for path in (base, cur)))
    assert comparison.verdict == verdict and not comparison.unmeasured
    assert any(note.startswith("kernels replaced in region step: sm90_xmma_gemm") and "region step's total" in note
               for note in comparison.notes), comparison.notes


@pytest.mark.parametrize(("nvjet_us", "verdict"), [(1000.0, "pass"), (1400.0, "fail")])
def test_a_trace_judges_a_replacement_outside_its_ranges_through_their_total(tmp_path: Path, nvjet_us: float,
                                                                               verdict: str) -> None:
    base = _trace(tmp_path / "base.json", [("bias_gelu_kernel", 200.0), ("sm90_xmma_gemm_f16f16_tn_n_execute_segment"
                                           "_k_off_kernel__5x_cublas", 1000.0), ("softmax_kernel", 100.0)], inside=1)
    cur = _trace(tmp_path / "cur.json", [("bias_gelu_kernel", 200.0), ("nvjet_hsh_256x128_64x4_2x1_v_bz_coopA_NNT",
                                         nvjet_us), ("softmax_kernel", 100.0)], inside=1)
    comparison = compare_tables(*(with_region_totals(read_table(path)) for path in (base, cur)))
    assert comparison.verdict == verdict and not comparison.unmeasured
    total = _row(comparison, OUTSIDE, "timeline.kernel_duration", "")
    assert (total["baseline"], total["current"]) == (1_100_000.0, (nvjet_us + 100.0) * 1000.0)
    assert "judged through the total of the launches outside every region (2 kernel launches in the baseline, 2 in " \
           "the current run; both runs hold the same regions)" in _note(comparison, "kernels replaced outside any region")


def test_a_total_over_more_launches_names_no_template_change(tmp_path: Path) -> None:
    from structures import REDUCE, XMMA
    from scenarios import Launch

    one = Case("replaced", "a kernel added to a region of one", "pass", [Launch(XMMA, "forward")],
               [Launch(XMMA, "forward"), Launch(REDUCE, "forward")])
    comparison = compared(one, tmp_path, random.Random(1))
    totals = comparison.launches[comparison.launches["kind"] == "region"]
    assert totals["kernel"].tolist() == ["forward"] and totals["launch_change"].tolist() == [""]
