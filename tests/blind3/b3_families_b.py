"""Blind set 3: the structural families (launch counts, autotune, replaced kernels, layers), history, benchmarks."""
from __future__ import annotations

from typing import Any

from b3_families import MLP, XF, Case, case, layers, ncu

ADDED_WORK = ("launches added: the region's total counts their work, and the documented rules gate a total's "
              "counters (only a total holding a replacement has them as info); a team would call the work intended")


def launches() -> list[Case]:
    f = "launches"
    return [
        case("launch_iter_40_to_41", f, ncu([{"r": "step", "ops": ["fill", "add"], "n": 40}],
                                            [{"r": "step", "ops": ["fill", "add"], "n": 41}]),
             override={"ambiguous": ADDED_WORK}),
        case("launch_iter_10_to_20", f, ncu([{"r": "step", "ops": ["gemm_out", "gelu"], "n": 10}],
                                            [{"r": "step", "ops": ["gemm_out", "gelu"], "n": 20}])),
        case("launch_extra_op_tiny", f, ncu(layers(3, MLP), layers(1, MLP) + [{"r": "layer1", "ops": [
            "gemm_qkv", "gelu", "fill", "gemm_out", "add"]}] + layers(1, MLP, start=2))),
        case("launch_extra_op_mid", f, ncu([{"r": "s", "ops": ["gemm_out", "add"]}],
                                           [{"r": "s", "ops": ["gemm_out", "gelu", "add"]}])),
        case("launch_removed_op", f, ncu(layers(3, MLP), layers(3, ["gemm_qkv", "gemm_out", "add"]))),
        case("launch_fewer_bigger", f, ncu([{"r": "s", "ops": ["add"], "n": 8}], [{"r": "s", "ops": ["add_big"]}],
                                           kdefs={"add_big": {"from": "add", "t": 20_000, "grid": [8192, 1, 1],
                                                              "rd": 1.68e7, "wr": 8.4e6, "inst": 7.84e5}}),
             override={"ambiguous": "8 launches of a kernel become 1 launch of it at a larger grid: the documented "
                                    "config rule pairs one kernel with one, not 8 launches with 1"}),
        case("launch_200_to_100", f, ncu([{"r": "step", "ops": ["fill"], "n": 200}],
                                         [{"r": "step", "ops": ["fill"], "n": 100}])),
    ]


def autotune() -> list[Case]:
    f = "autotune"
    mm = {"from": "tri_mm", "grid": [128, 1, 1], "block": [256, 1, 1]}
    tile = {"from": "tile", "name": "void gemm_tiled<64, 64, 8>(const float *, const float *, float *, int, int, int)",
            "grid": [64, 64, 1]}
    qkv = {"from": "gemm_qkv", "name": "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x256x64_warpgroupsize"
                                       "2x1x1_execute_segment_k_off_kernel__5x_cublas", "grid": [48, 1, 1]}

    def swap(old: str, new: str, over: dict[str, Any], n: int = 1, t: float = 1.0) -> dict[str, Any]:
        from b3_model import CATALOG
        kd = {new: {**over, "t": CATALOG[over["from"]].t * t}}
        return ncu([{"r": "mm", "ops": [old, "add"], "n": n}], [{"r": "mm", "ops": [new, "add"], "n": n}],
                   kdefs=kd, pair={new: old})
    return [
        case("at_triton_config_same", f, swap("tri_mm", "mm_b", mm)),
        case("at_triton_config_15pct", f, swap("tri_mm", "mm_b", mm, t=1.15)),
        case("at_triton_config_faster", f, swap("tri_mm", "mm_b", mm, t=0.9)),
        case("at_triton_config_x8_12pct", f, swap("tri_mm", "mm_b", mm, n=8, t=1.12)),
        case("at_template_same", f, swap("tile", "tile_b", tile)),
        case("at_template_20pct", f, swap("tile", "tile_b", tile, t=1.2)),
        case("at_cublas_tile_same", f, swap("gemm_qkv", "qkv_b", qkv)),
        case("at_cublas_tile_12pct", f, swap("gemm_qkv", "qkv_b", qkv, t=1.12)),
        case("at_config_smem_same", f, swap("tri_mm", "mm_s", {"from": "tri_mm", "smem": 65_536})),
        case("at_config_smem_x8_10pct", f, swap("tri_mm", "mm_s", {"from": "tri_mm", "smem": 65_536}, n=8, t=1.10)),
    ]


def replaced() -> list[Case]:
    f = "replaced"
    tri3 = {"tri_add_3": {"from": "tri_add", "name": "triton_poi_fused_add_mul_3"}}
    tri3s = {"tri_add_3": {"from": "tri_add", "name": "triton_poi_fused_add_mul_3", "t": 4_500 * 1.2}}
    nv110 = {"nvjet": {"from": "nvjet", "t": 110_000}}
    hist = {"hist_a": {"from": "hist", "bimodal_p": 0.0},
            "hist_s": {"from": "hist", "bimodal_p": 0.0, "name": "histogram_smem_kernel(const unsigned int *, "
                                                               "unsigned int *, int)"}}
    hist_slow = {**hist, "hist_s": {**hist["hist_s"], "t": 31_000 * 1.25}}

    def r(ops_b: list[str], ops_c: list[str], region: str = "p", n: int = 1, **more: Any) -> dict[str, Any]:
        return ncu([{"r": region, "ops": ops_b, "n": n}], [{"r": region, "ops": ops_c, "n": n}], **more)
    return [
        case("rep_triton_rename_same", f, r(["tri_add", "tri_ln"], ["tri_add_3", "tri_ln"], n=16, kdefs=tri3,
                                            pair={"tri_add_3": "tri_add"})),
        case("rep_triton_rename_20pct", f, r(["tri_add", "tri_ln"], ["tri_add_3", "tri_ln"], n=16, kdefs=tri3s,
                                             pair={"tri_add_3": "tri_add"})),
        case("rep_xmma_nvjet_same", f, r(["layernorm", "gemm_qkv", "flash"], ["layernorm", "nvjet", "flash"])),
        case("rep_xmma_nvjet_slower", f, r(["layernorm", "gemm_qkv", "flash"], ["layernorm", "nvjet", "flash"],
                                           kdefs=nv110)),
        case("rep_splitk_same", f, r(["layernorm", "gemm_qkv"], ["layernorm", "gemm_splitk", "splitk_reduce"])),
        case("rep_splitk_slower", f, r(["layernorm", "gemm_qkv"], ["layernorm", "gemm_splitk", "splitk_reduce"],
                                       kdefs={"gemm_splitk": {"from": "gemm_splitk", "t": 92_000}})),
        case("rep_fused_faster", f, r(["layernorm", "gelu", "gemm_out"], ["tri_ln", "gemm_out"])),
        case("rep_fused_slower", f, r(["layernorm", "gelu", "gemm_out"], ["tri_ln", "gemm_out"],
                                      kdefs={"tri_ln": {"from": "tri_ln", "t": 40_000}})),
        case("rep_hand_rename_same", f, r(["hist_a", "reduce"], ["hist_s", "reduce"], kdefs=hist,
                                          pair={"hist_s": "hist_a"})),
        case("rep_hand_rename_25pct", f, r(["hist_a", "reduce"], ["hist_s", "reduce"], kdefs=hist_slow,
                                           pair={"hist_s": "hist_a"})),
        case("rep_noregion_same", f, r(["embed", "gemm_qkv", "gelu"], ["embed", "nvjet", "gelu"], region="")),
        case("rep_noregion_slower", f, r(["embed", "gemm_qkv", "gelu"], ["embed", "nvjet", "gelu"], region="",
                                         kdefs=nv110)),
        case("rep_outside_regions_differ", f, ncu([{"ops": ["gemm_qkv"]}, {"r": "a", "ops": ["gelu"]}],
                                                  [{"ops": ["nvjet"]}, {"r": "a", "ops": ["gelu"]},
                                                   {"r": "b", "ops": ["add"]}])),
        case("rep_loop_x12_same", f, r(["gemm_qkv"], ["nvjet"], region="loop", n=12)),
        case("rep_loop_x12_10pct", f, r(["gemm_qkv"], ["nvjet"], region="loop", n=12,
                                        kdefs={"nvjet": {"from": "nvjet", "t": 95_000}})),
    ]


def layer_cases() -> list[Case]:
    f = "layers"
    adapter = [{"r": "adapter", "ops": ["gemm_big"]}]
    return [
        case("lay_added_end", f, ncu(layers(4, MLP), layers(5, MLP))),
        case("lay_adapter_mid", f, ncu(layers(4, MLP), layers(2, MLP) + adapter + layers(2, MLP, start=2))),
        case("lay_removed", f, ncu(layers(6, MLP), layers(5, MLP))),
        case("lay_added_plus_slow", f, ncu(layers(4, MLP), layers(5, MLP),
                                           mods=[{"k": "gemm_qkv", "r": "layer2", "t": 1.15}])),
        case("lay_removed_plus_slow", f, ncu(layers(6, MLP), layers(5, MLP), mods=[{"k": "gemm_qkv", "t": 1.08}])),
        case("lay_xf_12_to_13", f, ncu(layers(12, XF), layers(13, XF))),
        case("lay_head_added", f, ncu(layers(4, MLP), layers(4, MLP) + [{"r": "head", "ops": ["gemm_out",
                                                                                          "softmax"]}])),
    ]


def history() -> list[Case]:
    f = "history"
    return [
        case("h_same_8", f, ncu(layers(4, MLP), history={"runs": 8})),
        case("h_qkv_8pct_6", f, ncu(layers(4, MLP), mods=[{"k": "gemm_qkv", "t": 1.08}], history={"runs": 6})),
        case("h_big_5pct_12", f, ncu([{"r": "s", "ops": ["gemm_big"]}], mods=[{"t": 1.05}],
                                       history={"runs": 12})),
        case("h_tiny_x40_same_8", f, ncu([{"r": "step", "ops": ["fill"], "n": 40}], history={"runs": 8})),
        case("h_tiny_x40_15pct_8", f, ncu([{"r": "step", "ops": ["fill"], "n": 40}], mods=[{"t": 1.15}],
                                          history={"runs": 8})),
        case("h_inst_0p8pct_8", f, ncu([{"r": "s", "ops": ["gemm_out", "gelu"]}], mods=[{"k": "gemm_out",
                                                                                           "inst": 1.008}],
                                       history={"runs": 8})),
        case("h_base_file_same_6", f, ncu(layers(3, MLP), history={"runs": 6, "base_file": True})),
        case("h_few_runs_3_big_10pct", f, ncu([{"r": "s", "ops": ["gemm_big"]}], mods=[{"t": 1.10}],
                                              history={"runs": 3, "base_file": True})),
    ]


def bench(cid: str, benches: list[dict[str, Any]], expect: str, why: str, save: bool = True,
          blame: list[str] | None = None) -> Case:
    spec = {"kind": "bench", "benches": benches, "save_data": save}
    return case(cid, "bench", spec, 3, {"expect": expect, "why": why, "blame": blame or [
        f"B:{b['name']}" for b in benches]})


def benches() -> list[Case]:
    def b(name: str = "test_parse", t: float = 1.2e-3, **more: Any) -> dict[str, Any]:
        return {"name": name, "t": t, **more}
    slow = "min time past 20% by far, significant"
    return [
        bench("b_same_50", [b(rounds=50)], "pass", "unchanged"),
        bench("b_same_5", [b(rounds=5)], "pass", "unchanged, 5 rounds"),
        bench("b_slow40_50", [b(rounds=50, shift=1.4)], "fail", slow),
        bench("b_slow40_5", [b(rounds=5, shift=1.4, load=0.0)], "fail",
              "5 rounds a side, every current round slower than every baseline round by more than 20%"),
        bench("b_slow40_5_noisy", [b(rounds=5, shift=1.4, load=0.3, spread=0.25)], "not_silent",
              "5 rounds a side that overlap: inconclusive by the docs (or a fail where they happen not to)"),
        bench("b_slow10_50", [b(rounds=50, shift=1.10)], "pass", "10% is under the 20% limit"),
        bench("b_slow35_3", [b(rounds=3, shift=1.35, load=0.0)], "fail",
              "3 rounds a side, every current round slower than every baseline round by more than 20%"),
        bench("b_nodata_slow40", [b(rounds=30, shift=1.4)], "fail", "no raw rounds: the threshold alone", save=False),
        bench("b_nodata_same", [b(rounds=30)], "pass", "unchanged, no raw rounds", save=False),
        bench("b_spiky_same_30", [b(rounds=30, load=0.25)], "pass", "a quarter of rounds hit by load on both sides"),
        bench("b_multi_one_slow", [b("test_tokenize", 2.1e-4, rounds=40), b("test_parse", rounds=40, shift=1.35),
                                   b("test_render", 4.4e-3, rounds=20), b("test_hash", 3.1e-5, rounds=80,
                                                                          iterations=10)],
              "fail", "one of four +35%", blame=["B:test_parse"]),
        bench("b_slow22_20", [b(rounds=20, shift=1.22, spread=0.05)], "any", "at the 20% limit"),
        bench("b_faster30", [b(rounds=30, shift=0.7)], "pass", "faster"),
        bench("b_few_vs_many", [b(rounds_base=50, rounds_cur=5, shift=1.4, load=0.0)], "fail",
              "5 current rounds against 50, every one slower than every baseline round by more than 20%"),
    ]
