"""Regenerated kernels are still compared (issue 9, section 2).

A kernel whose name changed between builds (a TorchInductor counter, a cuBLAS heuristic, a hand
rename) is paired with its baseline name by ``perfgate.compare.renames``: the normalization of
generated names, the position rule, and the user's ``kernel_aliases``. Real files where they exist
(the T4 corpus pair v7 -> v8 renames its kernel: ``test_cli_compare``; the H100 MLP's cuBLAS kernels
here), hand-built tables for the generated names no real file has.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from perfgate.cli import main
from perfgate.collect import read_table
from perfgate.compare import CompareOptions, Comparison, compare_tables
from perfgate.compare.renames import normalized_name
from perfgate.config import settings_from_table
from perfgate.errors import ConfigError
from perfgate.plugin.options import PluginOptions, compare_options_for
from perfgate.report import launch_rows
from perfgate.table import Measurement, make_table
from perfgate.vocabulary import Status

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from helpers.common import REPO, corpus_file  # noqa: E402

TIME, INST = "gpu__time_duration.sum", "smsp__inst_executed.sum"
H100 = REPO / "tests" / "data" / "h100"


# A kernel both sides share, so that a comparison of unpaired renames still compares something (one that
# compares nothing at all is refused: tests/robustness/test_nothing_compared.py).
ANCHOR = ("anchor_kernel", 1_000.0, "(1, 1, 1)", "step")


def _table(launches: list[tuple[Any, ...]], source: str, region: str = "step") -> Measurement:
    """One launch per (kernel, duration in ns, grid[, region]), in order, in ``region`` unless it names its own."""
    rows: list[dict[str, Any]] = []
    ordinals: dict[str, int] = {}
    for number, (kernel, duration, grid, *own_region) in enumerate(launches):
        ordinal = ordinals.get(kernel, 0)
        ordinals[kernel] = ordinal + 1
        for metric, value in ((TIME, duration), (INST, 1_000_000.0)):
            rows.append({"kind": "kernel", "kernel": kernel, "demangled": f"{kernel}()", "region": own_region[0] if own_region else region,
                         "ordinal": ordinal, "launch": number, "device": "NVIDIA H100", "cc": "9.0", "grid": grid,
                         "block": "(128, 1, 1)", "metric": metric, "unit": "", "value": value})
    return Measurement(make_table(rows), source=source)


def _launch(comparison: Comparison, kernel: str) -> dict[str, Any]:
    rows = comparison.launches[comparison.launches["kernel"] == kernel]
    assert len(rows) == 1, comparison.launches.to_frame()
    return rows.row(0)


@pytest.mark.parametrize(("name", "normalized"), [
    ("triton_red_fused_sum_3", "triton_red_fused_sum"),
    ("triton_poi_fused_add_mul_0", "triton_poi_fused_add_mul"),
    ("triton_tem_fused_mm_12", "triton_tem_fused_mm"),
    ("loop_add_fusion_2", "loop_add_fusion"),
    ("input_reduce_fusion.1", "input_reduce_fusion"),
    ("ampere_sgemm_128x64_tn", "ampere_sgemm_tn"),
    ("cutlass_80_tensorop_s1688gemm_128x128_16x4_tn_align4", "cutlass_80_tensorop_s1688gemm_tn"),
    ("nvjet_hsh_128x256_64x4_2x1_v_bz_coopA_NNT", "nvjet_hsh_v_bz_coopA_NNT"),
    ("sm80_xmma_gemm_f32f32_f32f32_f32_tn_n_tilesize128x128x8_stage3_warpsize2x2x1_ffma_aligna4_alignc4_execute_kernel"
     "__5x_cublas", "sm80_xmma_gemm_f32f32_f32f32_f32_tn_n_ffma_execute_kernel__5x_cublas"),
    # Hand-written kernels keep their names: a counter or a shape there is the author's.
    ("gemm_kernel_2", "gemm_kernel_2"),
    ("conv3x3", "conv3x3"),
    ("matrix_addition1D_stripped", "matrix_addition1D_stripped"),
])
def test_generated_names_lose_their_counters_and_tile_shapes(name: str, normalized: str) -> None:
    assert normalized_name(name) == normalized


def test_a_regenerated_triton_kernel_that_got_slower_fails() -> None:
    # The case: the graph was regenerated, the counter moved, the kernel got 30% slower. Another
    # kernel launched before it moves its position, so only the name rule can pair it.
    base = _table([("triton_poi_fused_add_0", 50_000, "(64, 1, 1)"),
                   ("triton_red_fused_sum_0", 100_000, "(8, 1, 1)")], "base")
    cur = _table([("triton_poi_fused_add_0", 50_000, "(64, 1, 1)"), ("triton_poi_fused_mul_1", 20_000, "(64, 1, 1)"),
                  ("triton_red_fused_sum_3", 130_000, "(16, 1, 1)")], "cur")
    comparison = compare_tables(base, cur)
    renamed = _launch(comparison, "triton_red_fused_sum_3")
    assert renamed["status"] == Status.REGRESSION.value
    assert renamed["baseline_kernel"] == "triton_red_fused_sum_0" and renamed["matched_by"] == "normalized"
    assert renamed["launch_change"] == "grid (8, 1, 1) → (16, 1, 1)"
    assert comparison.verdict == "fail"
    assert _launch(comparison, "triton_poi_fused_mul_1")["status"] == Status.NEW.value
    assert "triton_red_fused_sum_0" not in set(comparison.launches["kernel"])
    assert any("triton_red_fused_sum_0 → triton_red_fused_sum_3" in note for note in comparison.notes)
    unchanged = _launch(comparison, "triton_poi_fused_add_0")
    assert unchanged["baseline_kernel"] == "triton_poi_fused_add_0" and unchanged["matched_by"] == "name"
    assert _launch(comparison, "triton_poi_fused_mul_1")["baseline_kernel"] == ""


def test_a_kernel_renamed_in_place_is_paired_by_position_and_launch_configuration() -> None:
    base = _table([("prologue", 10_000, "(1, 1, 1)"), ("my_kernel_v1", 100_000, "(8, 1, 1)"),
                   ("epilogue", 10_000, "(1, 1, 1)")], "base")
    cur = _table([("prologue", 10_000, "(1, 1, 1)"), ("my_kernel_v2", 101_000, "(8, 1, 1)"),
                  ("epilogue", 10_000, "(1, 1, 1)")], "cur")
    comparison = compare_tables(base, cur)
    renamed = _launch(comparison, "my_kernel_v2")
    assert (renamed["status"], renamed["baseline_kernel"], renamed["matched_by"]) == (
        Status.UNCHANGED.value, "my_kernel_v1", "position")
    assert comparison.counts()[Status.MISSING.value] == comparison.counts()[Status.NEW.value] == 0


def test_one_rename_in_every_layer_is_one_note_naming_the_regions() -> None:
    """cuBLAS picking another GEMM for each of 4 layers' ranges: one note, not one a layer."""
    layers = [f"layer{i}" for i in range(4)]
    base = _table([("gemm_v1", 100_000, "(8, 1, 1)", layer) for layer in layers], "base")
    cur = _table([("gemm_v2", 101_000, "(8, 1, 1)", layer) for layer in layers], "cur")
    notes = [n for n in compare_tables(base, cur).notes if "compared under its new name" in n]
    assert notes == ["renamed kernel, compared under its new name: gemm_v1 → gemm_v2 in regions 'layer0', 'layer1', "
                     "'layer2', 'layer3' (the same region, position and launch configuration)"]
    one = compare_tables(_table([("gemm_v1", 100_000, "(8, 1, 1)")], "base"),
                         _table([("gemm_v2", 100_000, "(8, 1, 1)")], "cur"))
    assert [n for n in one.notes if "new name" in n][0].endswith("gemm_v2 in region 'step' (the same region, position "
                                                                  "and launch configuration)")


def test_the_position_rule_needs_the_same_launch_configuration_and_region() -> None:
    base = _table([ANCHOR, ("my_kernel_v1", 100_000, "(8, 1, 1)")], "base")
    other_grid = _table([ANCHOR, ("my_kernel_v2", 100_000, "(16, 1, 1)")], "cur")
    other_region = _table([ANCHOR, ("my_kernel_v2", 100_000, "(8, 1, 1)")], "cur", region="other")
    unknown_grid = _table([ANCHOR, ("my_kernel_v2", 100_000, "")], "cur")
    for cur in (other_grid, other_region, unknown_grid):
        comparison = compare_tables(base, cur)
        assert _launch(comparison, "my_kernel_v1")["status"] == Status.MISSING.value
        assert _launch(comparison, "my_kernel_v2")["status"] == Status.NEW.value


def test_ambiguous_renames_are_listed_not_guessed() -> None:
    # Two reductions renumbered, autotuned to other grids: neither counters nor positions say which is which.
    base = _table([ANCHOR, ("triton_red_fused_sum_0", 100_000, "(8, 1, 1)"), ("triton_red_fused_sum_1", 200_000, "(16, 1, 1)")],
                  "base")
    cur = _table([ANCHOR, ("triton_poi_fused_add_0", 5_000, "(2, 1, 1)"), ("triton_red_fused_sum_4", 100_000, "(32, 1, 1)"),
                  ("triton_red_fused_sum_3", 200_000, "(64, 1, 1)")], "cur")
    comparison = compare_tables(base, cur)
    statuses = dict(zip(comparison.launches["kernel"], comparison.launches["status"], strict=True))
    assert statuses.pop("anchor_kernel") == "unchanged"
    assert statuses == {"triton_red_fused_sum_0": "missing", "triton_red_fused_sum_1": "missing",
                        "triton_red_fused_sum_3": "new", "triton_red_fused_sum_4": "new",
                        "triton_poi_fused_add_0": "new"}
    note = next(n for n in comparison.notes if n.startswith("renamed kernels not paired"))
    assert "triton_red_fused_sum_0, triton_red_fused_sum_1 (baseline)" in note
    assert "triton_red_fused_sum_3, triton_red_fused_sum_4 (current)" in note and "kernel_aliases" in note


def test_an_ambiguous_rename_note_names_four_kernels_a_side_and_counts_the_rest() -> None:
    # An AMP switch re-instantiates every elementwise kernel: a note naming all of them would be a page long.
    base = _table([ANCHOR, *[(f"triton_red_fused_sum_{i}", 100_000 * (i + 1), f"({i + 1}, 1, 1)") for i in range(6)]],
                  "base")
    cur = _table([ANCHOR, *[(f"triton_red_fused_sum_{i}", 100_000 * (i + 1), f"({i + 40}, 1, 1)")
                            for i in range(10, 17)]], "cur")
    note = next(n for n in compare_tables(base, cur).notes if n.startswith("renamed kernels not paired"))
    assert "triton_red_fused_sum_0, triton_red_fused_sum_1, triton_red_fused_sum_2, triton_red_fused_sum_3 and 2 more " \
        "(baseline)" in note
    assert "triton_red_fused_sum_10, triton_red_fused_sum_11, triton_red_fused_sum_12, triton_red_fused_sum_13 and 3 " \
        "more (current)" in note
    assert "triton_red_fused_sum_4" not in note and "triton_red_fused_sum_16" not in note


def test_renumbered_kernels_are_told_apart_by_position_and_launch_configuration() -> None:
    base = _table([("triton_red_fused_sum_0", 100_000, "(8, 1, 1)"), ("triton_red_fused_sum_1", 200_000, "(8, 1, 1)"),
                   ("triton_red_fused_sum_2", 50_000, "(4, 1, 1)")], "base")
    # sum_2 -> sum_5 was autotuned to another grid: once the other two are told apart by position, it is
    # the only pair left under that name.
    cur = _table([("triton_red_fused_sum_3", 100_000, "(8, 1, 1)"), ("triton_red_fused_sum_4", 300_000, "(8, 1, 1)"),
                  ("triton_red_fused_sum_5", 50_000, "(2, 1, 1)")], "cur")
    comparison = compare_tables(base, cur)
    assert _launch(comparison, "triton_red_fused_sum_3")["baseline_kernel"] == "triton_red_fused_sum_0"
    slower = _launch(comparison, "triton_red_fused_sum_4")
    assert slower["baseline_kernel"] == "triton_red_fused_sum_1" and slower["status"] == Status.REGRESSION.value
    assert _launch(comparison, "triton_red_fused_sum_5")["baseline_kernel"] == "triton_red_fused_sum_2"
    assert not any(n.startswith("renamed kernels not paired") for n in comparison.notes)


def test_kernel_aliases_pair_what_no_built_in_rule_can() -> None:
    base = _table([ANCHOR, ("gemm_old", 100_000, "(8, 1, 1)")], "base")
    cur = _table([ANCHOR, ("gemm_new", 140_000, "(32, 1, 1)"), ("gemm_new_helper", 1_000, "(1, 1, 1)")], "cur")
    assert _launch(compare_tables(base, cur), "gemm_new")["status"] == Status.NEW.value
    # The first pattern a name matches, in the order written, names it.
    for aliases in ({"gemm_new": "gemm_old"}, {"gemm_new_helper": "helper", "gemm_*": "the gemm"}):
        comparison = compare_tables(base, cur, CompareOptions(kernel_aliases=aliases))
        renamed = _launch(comparison, "gemm_new")
        assert (renamed["status"], renamed["baseline_kernel"], renamed["matched_by"]) == (
            Status.REGRESSION.value, "gemm_old", "alias"), aliases
        assert _launch(comparison, "gemm_new_helper")["status"] == Status.NEW.value


def test_an_alias_matching_several_kernels_on_one_side_is_ambiguous() -> None:
    base = _table([ANCHOR, ("gemm_old", 100_000, "(8, 1, 1)")], "base")
    cur = _table([ANCHOR, ("gemm_a", 100_000, "(32, 1, 1)"), ("gemm_b", 100_000, "(64, 1, 1)")], "cur")
    comparison = compare_tables(base, cur, CompareOptions(kernel_aliases={"gemm_*": "gemm"}))
    assert _launch(comparison, "gemm_old")["status"] == Status.MISSING.value
    assert any("gemm_a, gemm_b (current) all come to gemm (a [tool.perfgate] kernel_aliases rule)" in n
               for n in comparison.notes)


def test_a_cublas_heuristic_change_on_the_real_h100_mlp_is_compared() -> None:
    # The rerun of the real MLP report, as if cuBLAS had picked a 256x128 tile for layer1's GEMM (another
    # kernel name, another grid) and that kernel had got 30% slower.
    base = read_table(H100 / "mlp.ncu-rep.xz")
    rerun = read_table(H100 / "mlp.rerun.ncu-rep.xz")
    cur = rerun.table
    old = "sm80_xmma_gemm_f32f32_f32f32_f32_tn_n_tilesize128x128x8_stage3_warpsize2x2x1_ffma_aligna4_alignc4_" \
          "execute_kernel__5x_cublas"
    new = old.replace("tilesize128x128x8", "tilesize256x128x8").replace("warpsize2x2x1", "warpsize4x2x1")
    layer = (cur["kernel"] == old) & (cur["region"] == "layer1")
    assert len(set(cur[layer]["launch"].tolist())) == 1
    kernel, grid, value = cur["kernel"].copy(), cur["grid"].copy(), cur["value"].copy()
    demangled = cur["demangled"].copy()
    kernel[layer] = demangled[layer] = new
    grid[layer] = "(16, 16, 1)"
    value[layer & (cur["metric"] == TIME)] *= 1.3
    rerun = rerun.with_table(cur.assign(kernel=kernel, demangled=demangled, grid=grid, value=value))
    comparison = compare_tables(base, rerun)
    renamed = comparison.launches[(comparison.launches["kernel"] == new)]
    assert len(renamed) == 1
    assert renamed.row(0)["status"] == Status.REGRESSION.value
    assert (renamed.row(0)["baseline_kernel"], renamed.row(0)["matched_by"]) == (old, "normalized")
    assert comparison.counts()[Status.REGRESSION.value] == 1
    assert comparison.counts()[Status.MISSING.value] == comparison.counts()[Status.NEW.value] == 0


def test_kernel_aliases_are_read_from_pyproject() -> None:
    settings = settings_from_table({"kernel_aliases": {"gemm_*": "gemm"}})
    assert dict(settings.kernel_aliases) == {"gemm_*": "gemm"}
    with pytest.raises(ConfigError, match="kernel_aliases must be a table"):
        settings_from_table({"kernel_aliases": ["gemm_*"]})
    with pytest.raises(ConfigError, match="kernel_aliases must be a table"):
        settings_from_table({"kernel_aliases": {"gemm_*": 3}})


def test_perfgate_compare_pairs_by_the_pyprojects_kernel_aliases(capsys: pytest.CaptureFixture[str],
                                                                 tmp_path: Path) -> None:
    # The real T4 pair v7 (4 per thread) -> v8 renames the kernel and changes its grid: only a rule pairs it.
    v7, v8 = (corpus_file(f"mlp-t4/{name}.ncu-rep") for name in ("report_v7_1d_4_per_thread_blocked",
                                                                  "report_v8_1d_1_per_thread_stripped"))
    config = tmp_path / "pyproject.toml"
    config.write_text('[tool.perfgate.kernel_aliases]\n"matrix_addition1D*" = "matrix_addition1D"\n')
    status = main(["compare", str(v7), str(v8), "--format", "json", "--config", str(config)])
    report = json.loads(capsys.readouterr().out)
    assert [(l["kernel"], l["status"]) for l in launch_rows(report)] == [("matrix_addition1D_stripped", "improvement")]
    assert status == 0
    assert any("matrix_addition1D → matrix_addition1D_stripped" in note and "kernel_aliases" in note
               for note in report["notes"])


def test_the_plugin_passes_kernel_aliases_to_the_comparison() -> None:
    options = PluginOptions(update=False, strict=False, baselines=Path("b"), report=Path("r.json"), ncu="ncu",
                            clock_control="base", cache_control="all", timeout=60.0,
                            kernel_aliases={"gemm_*": "gemm"})
    assert dict(compare_options_for(options).kernel_aliases) == {"gemm_*": "gemm"}


def test_an_unpaired_rename_beside_matched_kernels_is_pointed_out() -> None:
    # The renamed kernel changed its grid too, so no rule pairs it; the other kernel still compares.
    base = _table([("gemm", 1000.0, "(4, 1, 1)"), ("triton_poi_fused_0", 500.0, "(8, 1, 1)")], "base")
    cur = _table([("gemm", 1000.0, "(4, 1, 1)"), ("triton_poi_fused_mul_1", 500.0, "(16, 1, 1)")], "cur")
    comparison = compare_tables(base, cur)
    assert _launch(comparison, "gemm")["status"] == Status.UNCHANGED.value
    assert any("1 missing and 1 new: a renamed kernel that no rule paired" in n and "kernel_aliases" in n
               for n in comparison.notes)
