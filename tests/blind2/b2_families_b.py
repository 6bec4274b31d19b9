"""Blind set 2, families B: replaced kernels, pytest-benchmark, counters, history, real-world changes, limits."""
from __future__ import annotations

from typing import Any

from b2_families_a import LOOP, case, layers
from b2_model import XMMA

SK_ON = XMMA.replace("segment_k_off", "segment_k_on")
TILE2 = XMMA.replace("tilesize128x128x64", "tilesize256x128x64")
F32 = XMMA.replace("f16f16_f16f32_f32", "f32f32_f32f32_f32")


PROJ = ["ln", "gemm", "add"]


def _swap(ops: list[str], old: str, new: list[str]) -> list[str]:
    i = ops.index(old)
    return ops[:i] + new + ops[i + 1:]


def _repl(cid: str, cur_ops: list[str], kdefs: dict[str, Any], expect: str, blame: tuple[str, ...] = (),
          why: str = "", region: str = "proj", ops: list[str] = PROJ, extra: dict[str, Any] | None = None,
          amb: str | None = None) -> dict[str, Any]:
    spec = {"kdefs": kdefs, "base": [{"r": region, "ops": ops}], "cur": [{"r": region, "ops": cur_ops}]}
    return case(cid, "replaced", {**spec, **(extra or {})}, expect, blame, why, amb)


def replaced() -> list[dict[str, Any]]:
    return _replaced_cublas() + _replaced_other()


def _replaced_cublas() -> list[dict[str, Any]]:
    c, swap, proj = _repl, _swap, PROJ
    sk = {"gemm_sk": {"from": "gemm", "name": SK_ON, "t": 166000, "grid": [16, 32, 2]}}
    return [
        c("repl_nvjet_same", swap(proj, "gemm", ["nvjet"]), {}, "pass", why="cuBLAS picks nvjet, same time"),
        c("repl_nvjet_faster", swap(proj, "gemm", ["nvjet"]), {"nvjet": {"t": 162000}}, "pass",
          why="nvjet 10% faster"),
        c("repl_nvjet_25pct", swap(proj, "gemm", ["nvjet"]), {"nvjet": {"t": 225000}}, "fail",
          ("K:nvjet", "R:*"), "nvjet 25% slower: the region total +20%"),
        c("repl_splitk_same", swap(proj, "gemm", ["gemm_sk", "splitk"]), sk, "pass",
          why="split-K GEMM + splitKreduce at the same total"),
        c("repl_splitk_12pct", swap(proj, "gemm", ["gemm_sk", "splitk"]),
          {"gemm_sk": {**sk["gemm_sk"], "t": 190000}, "splitk": {"t": 14000}}, "fail", ("K:", "R:*"),
          "split-K + reduce: the region total +10.8%"),
        c("repl_tile_same", swap(proj, "gemm", ["gemm_t2"]),
          {"gemm_t2": {"from": "gemm", "name": TILE2, "grid": [8, 32, 1]}}, "pass",
          why="cuBLAS heuristic: 128x128 tile -> 256x128 tile, same time"),
        c("repl_tile_10pct", swap(proj, "gemm", ["gemm_t2"]),
          {"gemm_t2": {"from": "gemm", "name": TILE2, "grid": [8, 32, 1], "t": 198000}}, "fail",
          ("K:xmma", "R:*"), "the 256x128 tile 10% slower"),
        c("repl_triton_config_same", ["ln", "tri_mm2", "add"],
          {"tri_mm2": {"from": "tri_mm", "grid": [128, 8, 1], "block": [256, 1, 1], "smem": 131072}}, "pass",
          why="Triton autotune picks another config (grid, warps, shared memory), same time",
          ops=["ln", "tri_mm", "add"]),
        c("repl_triton_config_15pct", ["ln", "tri_mm2", "add"],
          {"tri_mm2": {"from": "tri_mm", "grid": [128, 8, 1], "block": [256, 1, 1], "smem": 131072,
                       "t": 172500}}, "fail", ("K:triton_tem", "R:*"), "the other Triton config 15% slower",
          ops=["ln", "tri_mm", "add"]),
        c("repl_no_nvtx_same", swap(proj, "gemm", ["nvjet"]), {}, "pass", why="xmma -> nvjet, no NVTX ranges",
          region=""),
        c("repl_no_nvtx_30pct", swap(proj, "gemm", ["nvjet"]), {"nvjet": {"t": 234000}}, "fail",
          ("K:nvjet", "R:*"), "xmma -> nvjet 30% slower, no NVTX ranges", region=""),
    ]


def _replaced_other() -> list[dict[str, Any]]:
    c, swap = _repl, _swap
    big = ["ln", "flash", "ln", "gemm", "gelu", "add"]
    return [
        c("repl_in_big_region_15pct", swap(big, "gemm", ["nvjet"]), {"nvjet": {"t": 207000}}, "not_silent",
          ("K:nvjet", "R:*"), "nvjet 15% slower in a region 4.9x the GEMM: the region total +4.7%",
          region="block", ops=big),
        c("repl_fused_faster", ["gemm", "tri_poi"], {}, "pass", why="GELU + add fused into one Triton kernel",
          region="mlp", ops=["gemm", "gelu", "add"]),
        c("repl_fused_slower", ["gemm", "tri_poi"], {"tri_poi": {"t": 70000}}, "fail", ("K:triton_poi", "R:*"),
          "the fused kernel slower than the two it replaced: region +6.4%", region="mlp",
          ops=["gemm", "gelu", "add"]),
        c("repl_triton_renumbered", ["gemm", "tri_poi3"], {"tri_poi3": {"from": "tri_poi",
                                                                          "name": "triton_poi_fused_add_gelu_3"}},
          "pass", why="Inductor renumbered its kernel, same code", region="mlp", ops=["gemm", "tri_poi"]),
        c("repl_hand_rename", ["ln", "mine2", "add"], {"mine": {"from": "softmax", "name": "my_softmax_v1(const "
                                                                "__half *, __half *, int)"},
                                                       "mine2": {"from": "softmax", "name": "my_softmax_v2(const "
                                                                 "__half *, __half *, int)"}},
          "pass", why="a hand-written kernel renamed, same grid and time", ops=["ln", "mine", "add"]),
        c("repl_no_nvtx_new_region", ["ln", "nvjet", "add"], {"nvjet": {"t": 225000}}, "not_silent", ("K:", "R:*"),
          "xmma -> nvjet 25% slower outside every region, and the current run adds a region: documented as not "
          "measured (exit 2)", region="", extra={"cur": [{"ops": ["ln", "nvjet", "add"]},
                                                         {"r": "warmup", "ops": ["fill"]}]}),
    ]


def bench() -> list[dict[str, Any]]:
    f = "bench"
    out = []

    def spec(rounds: int, factor: float, save: bool = True, t: float = 0.002, it: int = 1) -> dict[str, Any]:
        return {"benches": [{"name": "test_tokenize", "t": t, "rounds": rounds, "factor": factor,
                             "iterations": it}], "save_data": save}
    for rounds in (3, 5, 7, 20):
        for factor in (1.0, 1.1, 1.5, 4.0) if rounds < 7 else (1.0, 1.1, 1.5):
            out.append(case(f"bench_r{rounds}_x{factor:g}", f, spec(rounds, factor),
                            "pass" if factor < 1.2 else "fail", ("B:test_tokenize",),
                            f"{rounds} rounds a side, x{factor}", input_kind="bench"))
    for rounds in (5, 20):
        for factor in (1.0, 1.5):
            out.append(case(f"bench_nodata_r{rounds}_x{factor:g}", f, spec(rounds, factor, False),
                            "pass" if factor < 1.2 else "fail", ("B:test_tokenize",),
                            f"{rounds} rounds, saved without raw data, x{factor}", input_kind="bench"))
    many = [{"name": n, "t": t, "rounds": 20, "factor": 1.4 if n == "test_parse" else 1.0, "iterations": 1}
            for n, t in (("test_tokenize", 0.002), ("test_parse", 0.011), ("test_render", 0.0007),
                         ("test_encode", 0.05), ("test_decode", 0.004), ("test_pack", 0.0003))]
    out += [
        case("bench_six_one_slower", f, {"benches": many, "save_data": True}, "fail", ("B:test_parse",),
             "6 benchmarks x20 rounds, test_parse x1.4", input_kind="bench"),
        case("bench_micro_x1.1", f, spec(20, 1.1, t=1.2e-6, it=1000), "pass", why="a 1.2 us microbenchmark x1.1",
             input_kind="bench"),
        case("bench_micro_x1.35", f, spec(20, 1.35, t=1.2e-6, it=1000), "fail", ("B:test_tokenize",),
             "a 1.2 us microbenchmark x1.35", input_kind="bench"),
    ]
    return out


def counters() -> list[dict[str, Any]]:
    f = "counters"
    one = {"base": [{"r": "mm", "ops": ["gemm"]}]}
    sm = {"base": [{"r": "softmax", "ops": ["softmax"]}]}
    sm30 = {"base": [{"r": "softmax", "ops": ["softmax"], "n": 30}]}
    cast = {"base": [{"r": "post", "ops": ["cast"]}]}

    def c(cid: str, base: dict[str, Any], mod: dict[str, Any], expect: str, blame: tuple[str, ...] = (),
          why: str = "", kdefs: dict[str, Any] | None = None) -> dict[str, Any]:
        return case(cid, f, {**base, "kdefs": kdefs or {}, "mods": [mod]}, expect, blame, why)
    spill = {"gemm_spill": {"from": "gemm", "regs": 255}}
    return [
        c("cnt_inst_3pct", one, {"inst": 1.03}, "fail", ("K:xmma",), "GEMM instructions +3%, same time"),
        c("cnt_inst_half_pct", one, {"inst": 1.005}, "pass", why="instructions +0.5%"),
        c("cnt_read_10pct", one, {"rd": 1.10}, "fail", ("K:xmma",), "DRAM read +10% (5 MB), same time"),
        c("cnt_read_1pct", one, {"rd": 1.012}, "pass", why="DRAM read +1.2%"),
        c("cnt_write_5pct", one, {"wr": 1.05}, "pass", why="DRAM write +5% (limit 10%)"),
        c("cnt_write_30pct", one, {"wr": 1.30}, "fail", ("K:xmma",), "DRAM write +30%"),
        c("cnt_tradeoff", sm, {"t": 0.8, "inst": 1.25}, "pass", why="20% faster with 25% more instructions"),
        c("cnt_fewer_inst_slower", sm, {"t": 1.08, "inst": 0.9}, "fail", ("K:SoftMax",),
          "instructions -10%, time +8% (3.2 us)"),
        c("cnt_group_inst_2pct", sm30, {"inst": 1.02}, "fail", ("K:SoftMax",), "softmax x30, instructions +2%"),
        c("cnt_small_kernel_read_25pct", cast, {"rd": 1.25}, "fail", ("K:direct_copy",),
          "a 4.5 us kernel's DRAM read 128 KB -> 160 KB"),
        case("cnt_registers_only", f, {"base": one["base"], "cur": [{"r": "mm", "ops": ["gemm_spill"]}],
                                       "kdefs": spill}, "pass", why="registers 168 -> 255, nothing else moved"),
        case("cnt_spill_slower", f, {"base": one["base"], "cur": [{"r": "mm", "ops": ["gemm_spill"]}],
                                     "kdefs": spill, "mods": [{"t": 1.12, "rd": 1.06}]}, "fail", ("K:xmma", "R:*"),
             "register spill: registers 255, time +12%, DRAM read +6%"),
        c("cnt_uncoalesced", sm, {"t": 1.6, "rd": 1.4}, "fail", ("K:SoftMax", "R:*"),
          "uncoalesced loads: DRAM read +40%, time +60%"),
        case("cnt_smem_config_15pct", f, {"base": one["base"], "cur": [{"r": "mm", "ops": ["gemm_s"]}],
                                          "kdefs": {"gemm_s": {"from": "gemm", "smem": 196608}},
                                          "mods": [{"t": 1.15}]}, "fail", ("K:xmma", "R:*"),
             "shared memory per block changed (launch config), time +15%"),
        c("cnt_faster_more_reads", one, {"t": 0.9, "rd": 1.025}, "pass", why="10% faster, DRAM read +2.5%"),
    ]


def history() -> list[dict[str, Any]]:
    f = "history"
    mlp = {"base": layers(4)}
    loop = {"base": [{"r": "train", "ops": LOOP, "n": 40}]}
    h6 = {"runs": 6}

    def c(cid: str, spec: dict[str, Any], expect: str, blame: tuple[str, ...] = (), why: str = "",
          hist: dict[str, Any] = h6, kind: str = "ncu") -> dict[str, Any]:
        out = case(cid, f, {**spec, "history": hist}, expect, blame, why, input_kind=kind)
        return out
    b20 = {"benches": [{"name": "test_tokenize", "t": 0.002, "rounds": 20, "factor": 1.0, "iterations": 1}],
           "save_data": True}
    return [
        c("hist_mlp_same", mlp, "pass", why="6 recorded runs of main, an unchanged run"),
        c("hist_gemm_10pct", {**mlp, "mods": [{"r": "layer2", "k": "gemm", "occ": 1, "t": 1.1}]}, "fail",
          ("K:xmma", "R:layer2", "R:total"), "layer2's second GEMM +10%"),
        c("hist_tiny_x20_20pct", {"base": [{"r": "step", "ops": ["cast"], "n": 20}], "mods": [{"t": 1.2}]},
          "fail", ("K:direct_copy", "R:*"), "a 4.5 us kernel x20 +20%"),
        c("hist_loop_outlier", {**loop, "mods": [{"k": "gemm", "it": [21], "t": 1.4}]}, "pass",
          why="one GEMM launch of 40 +40% (interference)"),
        c("hist_bench_same", b20, "pass", why="a 20-round benchmark, unchanged", kind="bench"),
        c("hist_bench_50pct", {**b20, "benches": [{**b20["benches"][0], "factor": 1.5}]}, "fail",
          ("B:test_tokenize",), "a 20-round benchmark x1.5", kind="bench"),
        c("hist_with_baseline_same", mlp, "pass", why="BASELINE given with --history, unchanged",
          hist={"runs": 6, "with_base": True}),
        c("hist_few_runs_baseline_10pct", {**mlp, "mods": [{"k": "gemm", "t": 1.1}]}, "fail", ("K:xmma", "R:*"),
          "only 3 recorded runs (insufficient): judged against BASELINE; every GEMM +10%",
          hist={"runs": 3, "with_base": True}),
        c("hist_layer_added", {**mlp, "cur": layers(5)}, "pass", why="a layer added against the history"),
        c("hist_noisy_writes", {"base": [{"r": "ew", "ops": ["gelu", "add", "fill", "cast"] * 2}]}, "pass",
          why="8 elementwise kernels with noisy DRAM writes, unchanged"),
        c("hist_bench_r5_50pct", {"benches": [{"name": "test_tokenize", "t": 0.002, "rounds": 5, "factor": 1.5,
                                               "iterations": 1}], "save_data": True}, "fail", ("B:test_tokenize",),
          "a 5-round benchmark x1.5 against the history's median", kind="bench"),
    ]


def realworld() -> list[dict[str, Any]]:
    f = "realworld"
    step = {"base": [{"r": "step", "ops": ["gemm", "gelu"], "n": 10}]}
    all_layers = {"base": layers(4)}
    return [
        case("rw_extra_cast_per_step", f, {**step, "cur": [{"r": "step", "ops": ["gemm", "gelu", "cast"], "n": 10}]},
             "pass", why="a 4.5 us cast added per step: region +2%"),
        case("rw_extra_add_per_step", f, {**step, "cur": [{"r": "step", "ops": ["gemm", "gelu", "add"], "n": 10}]},
             "fail", ("R:step", "R:total"), "a 31 us elementwise add added per step: region +15%"),
        case("rw_duplicate_fill", f, {"base": [{"r": "sm", "ops": ["softmax", "fill"], "n": 20}],
                                      "cur": [{"r": "sm", "ops": ["softmax", "fill", "fill"], "n": 20}]}, "fail",
             ("R:sm", "R:total"), "a redundant 3 us fill per step: region +7%"),
        case("rw_driver_3pct", f, {**all_layers, "mods": [{"t": 1.03}]}, "pass", why="every kernel +3%"),
        case("rw_everything_7pct", f, {**all_layers, "mods": [{"t": 1.07}]}, "fail", ("K:", "R:*"),
             "every kernel +7%"),
        case("rw_flash_faster", f, {"base": [{"r": "attn", "ops": ["ln", "flash"], "n": 4}],
                                    "mods": [{"k": "flash", "t": 0.7}]}, "pass", why="flash attention 30% faster"),
        case("rw_dtype_f32_gemm", f, {"base": [{"r": "mm", "ops": ["gemm"]}], "cur": [{"r": "mm", "ops": ["g32"]}],
                                      "kdefs": {"g32": {"from": "gemm", "name": F32, "t": 360000}}}, "fail",
             ("K:xmma", "R:*"), "an fp16 GEMM became fp32 (another kernel), 2x the time"),
        case("rw_dead_kernel_removed", f, {**step, "cur": [{"r": "step", "ops": ["gemm"], "n": 10}]}, "pass",
             why="the GELU removed"),
        case("rw_ops_reordered", f, {"base": [{"r": "s", "ops": ["ln", "gemm", "gelu", "add"], "n": 3}],
                                     "cur": [{"r": "s", "ops": ["gemm", "ln", "add", "gelu"], "n": 3}]}, "pass",
             why="ops reordered within each step"),
        case("rw_cudnn_algo", f, {"base": [{"ops": ["conv", "bn"], "n": 6}], "cur": [{"ops": ["conv2", "bn"], "n": 6}],
                                  "kdefs": {"conv2": {"from": "conv", "name": "sm90_xmma_fprop_implicit_gemm_f16f16_"
                                                      "f16f32_f32_nhwckrsc_nhwc_tilesize64x256x32_warpgroupsize1x1x1"
                                                      "_g1_execute_segment_k_off_kernel__5x_cudnn",
                                                      "grid": [196, 1, 1]}}}, "pass",
             why="cuDNN picks another conv algorithm, same time, no NVTX"),
        case("rw_metric_missing_cur", f, {**all_layers, "drop_cur": ["dram__bytes_write.sum"]}, "not_silent",
             why="the current run collected no DRAM write (documented: not measured, exit 2)"),
        case("rw_sub_range_added", f, {"base": [{"r": "forward", "ops": ["ln", "flash", "gemm", "gelu"]}],
                                       "cur": [{"r": "forward > attn", "ops": ["ln", "flash"]},
                                               {"r": "forward", "ops": ["gemm", "gelu"]}]}, "pass",
             why="a nested range added around existing kernels",
             ambiguous="docs: a replacement is held by its top-level region's total, but the kernels here moved "
                       "regions rather than being replaced"),
        case("rw_input_doubled", f, {"base": [{"r": "mm", "ops": ["gemm"]}], "cur": [{"r": "mm", "ops": ["g2"]}],
                                     "kdefs": {"g2": {"from": "gemm", "grid": [32, 32, 1], "t": 360000,
                                                      "rd": 100663296, "inst": 83886080}}}, "fail",
             ("K:xmma", "R:*"), "the test's input doubled: grid x2, time x2"),
    ]


def limits() -> list[dict[str, Any]]:
    f = "limit"
    return [
        case("limit_group_5pct", f, {"base": [{"r": "sm", "ops": ["softmax"], "n": 40}], "mods": [{"t": 1.05}]},
             "any", why="softmax x40 at exactly +5%"),
        case("limit_single_5pct", f, {"base": [{"r": "mm", "ops": ["gemm_big"]}], "mods": [{"t": 1.05}]}, "any",
             why="a 1.2 ms GEMM at exactly +5%"),
    ]
