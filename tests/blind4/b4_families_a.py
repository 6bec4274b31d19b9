"""Blind set 4, families same, flop, time, dram, zero: each case's program and, where the rule (b4_expect) cannot
say it, its expectation by hand with why. A case's `story` says what changed in the code, as an engineer tells it."""
from __future__ import annotations

from typing import Any

from b4_generate import CATALOG
from b4_model import FLOP_PER_INST

PASS_RERUNS, OTHER_RERUNS = 3, 2


def case(cid: str, family: str, story: str, base: list[dict[str, Any]], *, mods: tuple[dict[str, Any], ...] = (),
         cur: list[dict[str, Any]] | None = None, hand: dict[str, Any] | None = None, ambiguous: str = "",
         reruns: int | None = None, **spec: Any) -> dict[str, Any]:
    s: dict[str, Any] = {"base": base, "mods": list(mods), **spec}
    if cur is not None:
        s["cur"] = cur
    return {"id": cid, "family": family, "story": story, "spec": s, "hand": hand, "ambiguous": ambiguous,
            "reruns": reruns}


def one(k: str, r: str = "", n: int = 1) -> dict[str, Any]:
    return {"k": k, "r": r, "n": n}


def flop(k: str) -> float:
    return sum(FLOP_PER_INST[op] * n for op, n in CATALOG[k].ops.items())


SAME = ["sgemm_tiled", "sgemm_naive", "sgemm_62", "sgemm_90", "sgemm_55", "vector_add", "saxpy", "layernorm_fwd",
        "softmax_fwd", "stencil_7pt", "reduce_sum", "copy_kernel", "tiny_scale", "fma_loop", "empty_kernel", "dgemm",
        "hgemm_simt", "sgemm_tiled@a100", "vector_add@a100"]


def same() -> list[dict[str, Any]]:
    out = [case(f"same_{k.replace('@', '_')}", "same", f"{k} unchanged, measured twice", [one(k)]) for k in SAME]
    out += [
        case("same_model", "same", "a model of 3 regions, 7 kernels, unchanged",
             [one("sgemm_tiled", "attn"), one("softmax_fwd", "attn"), one("sgemm_62", "mlp"),
              one("layernorm_fwd", "mlp"), one("vector_add", "mlp"), one("copy_kernel", "io"),
              one("reduce_sum", "io")]),
        case("same_tiny_group", "same", "a 3 us kernel launched 40 times in a loop, unchanged",
             [one("tiny_scale", "loop", 40)]),
        case("same_sgemm_group", "same", "the tiled SGEMM launched 8 times, unchanged", [one("sgemm_tiled", "loop", 8)]),
        case("same_tensor", "same", "a tensor-core GEMM with the cc90 tensor aggregates (+tensor-cc90), unchanged",
             [one("hgemm_wmma")], cols={"base": "tensor", "cur": "tensor"}, metrics="+roofline,+tensor-cc90"),
        case("same_clock_unit_old", "same", "clocks printed in cycle/second (an older ncu) on both sides",
             [one("sgemm_tiled"), one("vector_add")], clock_unit="cycle/second"),
        case("same_clock_unit_mixed", "same", "baseline from an older ncu (cycle/second), current from a newer (hz)",
             [one("sgemm_tiled"), one("vector_add")], clock_unit={"base": "cycle/second", "cur": "hz"}),
        case("same_not_asked", "same", "roofline counters in both files, compared without +roofline",
             [one("sgemm_tiled"), one("vector_add")], metrics=None),
    ]
    return out


def _fma_split() -> dict[str, float]:
    """FFMA split into FMUL + FADD: the same FLOP, twice the FP instructions."""
    ops = dict(CATALOG["sgemm_tiled"].ops)
    n = ops.pop("ffma")
    return {**ops, "fmul": ops["fmul"] + n, "fadd": ops["fadd"] + n}


def flops() -> list[dict[str, Any]]:
    t = "sgemm_tiled"
    fma_inst = 1 + CATALOG[t].ops["ffma"] / 32.0 / CATALOG[t].inst
    return [
        case("flop_tiled_half", "flop", "half the lanes predicated off: same warp instructions and time, half the "
             "FLOP (compute-bound 70% -> 35%)", [one(t)], mods=({"k": t, "flop": 0.5},)),
        case("flop_tiled_090", "flop", "10% of lanes masked: 70% -> 63%", [one(t)], mods=({"k": t, "flop": 0.9},)),
        case("flop_tiled_095", "flop", "5% of lanes masked: 70% -> 66.5%, under 5 points", [one(t)],
             mods=({"k": t, "flop": 0.95},)),
        case("flop_tiled_093", "flop", "7% masked: 70% -> 65.1%, at the 5-point limit", [one(t)],
             mods=({"k": t, "flop": 0.93},)),
        case("flop_naive_half", "flop", "the naive SGEMM's FLOP halved at the same time: intensity 20 -> 10 crosses "
             "the ridge (15.8), the roof falls with it: 18% -> 14.2%, under 5 points",
             [one("sgemm_naive")], mods=({"k": "sgemm_naive", "flop": 0.5},)),
        case("flop_naive_080", "flop", "naive SGEMM FLOP -20%: 18% -> 14.4%, a large share but 3.6 points",
             [one("sgemm_naive")], mods=({"k": "sgemm_naive", "flop": 0.8},)),
        case("flop_naive_double_back", "flop", "the reverse of flop_naive_half: 14.2% -> 18%", [one("sgemm_naive")],
             mods=({"k": "sgemm_naive", "flop": 0.5, "side": "base"},)),
        case("flop_tiled_double", "flop", "twice the FLOP in the same time (a roofline share of 140%)", [one(t)],
             mods=({"k": t, "flop": 2.0},)),
        case("flop_vadd_half", "flop", "memory-bound: FLOP halved at the same bytes and time, the roof falls with "
             "the intensity, the share holds", [one("vector_add")], mods=({"k": "vector_add", "flop": 0.5},)),
        case("flop_layernorm_double", "flop", "memory-bound, FLOP doubled (intensity 0.6 -> 1.2), still memory-bound",
             [one("layernorm_fwd")], mods=({"k": "layernorm_fwd", "flop": 2.0},)),
        case("flop_stencil_half", "flop", "just below the ridge (14 vs 15.8), FLOP halved: memory-bound, share holds",
             [one("stencil_7pt")], mods=({"k": "stencil_7pt", "flop": 0.5},)),
        case("flop_stencil_double", "flop", "FLOP doubled: crosses the ridge to compute-bound, share rises",
             [one("stencil_7pt")], mods=({"k": "stencil_7pt", "flop": 2.0},)),
        case("flop_stencil_110", "flop", "FLOP +10%: intensity 15.4, still under the ridge", [one("stencil_7pt")],
             mods=({"k": "stencil_7pt", "flop": 1.1},)),
        case("flop_tiled_half_problem", "flop", "half the problem: half FLOP, bytes, instructions and time",
             [one(t)], mods=({"k": t, "flop": 0.5, "t": 0.5, "rd": 0.5, "wr": 0.5, "inst": 0.5},)),
        case("flop_fma_split", "flop", "fast-math off: FFMA split into FMUL+FADD, same FLOP, FP issue doubles, "
             "time x1.8", [one(t)], mods=({"k": t, "set_ops": _fma_split(), "inst": fma_inst, "t": 1.8},)),
        case("flop_sgemm90_half", "flop", "the docs' construction on a GEMM at intensity 80: FLOP halved, still "
             "compute-bound (40): 90% -> 45%", [one("sgemm_90")], mods=({"k": "sgemm_90", "flop": 0.5},)),
        case("flop_dgemm_half", "flop", "FP64 GEMM with half its lanes masked: 40% -> 20%", [one("dgemm")],
             mods=({"k": "dgemm", "flop": 0.5},)),
        case("flop_hgemm_half", "flop", "FP16 half2 GEMM (190% of the FP32 roof) with half its FLOP: 190% -> 95%",
             [one("hgemm_simt")], mods=({"k": "hgemm_simt", "flop": 0.5},)),
        case("flop_tiny_half", "flop", "3 us memory-bound kernel, FLOP halved: share holds", [one("tiny_scale")],
             mods=({"k": "tiny_scale", "flop": 0.5},)),
        case("flop_fma_loop_half", "flop", "no DRAM traffic (infinite intensity), FLOP halved: 80% -> 40%",
             [one("fma_loop")], mods=({"k": "fma_loop", "flop": 0.5},)),
        case("flop_region_sgemm_half", "flop", "region 'layer' of a GEMM and an add; the GEMM's FLOP halved",
             [one(t, "layer"), one("vector_add", "layer")], mods=({"k": t, "flop": 0.5},)),
        case("flop_region_vadd_half", "flop", "the same region; the add's FLOP halved (memory-bound: nothing)",
             [one(t, "layer"), one("vector_add", "layer")], mods=({"k": "vector_add", "flop": 0.5},)),
        case("flop_not_asked", "flop", "GEMM FLOP halved, but compared without +roofline (not asked: not gated)",
             [one(t)], mods=({"k": t, "flop": 0.5},), metrics=None),
        case("flop_a100_half", "flop", "A100: the tiled SGEMM's FLOP halved: 70% -> 35%", [one("sgemm_tiled@a100")],
             mods=({"k": "sgemm_tiled@a100", "flop": 0.5},)),
    ]


def times() -> list[dict[str, Any]]:
    t = "sgemm_tiled"
    return [
        case("time_tiled_110", "time", "compute-bound GEMM 10% slower: 70% -> 63.6%", [one(t)], mods=({"k": t, "t": 1.1},)),
        case("time_naive_110", "time", "naive GEMM 10% slower: 18% -> 16.4%, duration fails alone", [one("sgemm_naive")],
             mods=({"k": "sgemm_naive", "t": 1.1},)),
        case("time_vadd_110", "time", "vector add 10% slower: 85% -> 77.3% of DRAM bandwidth", [one("vector_add")],
             mods=({"k": "vector_add", "t": 1.1},)),
        case("time_tiled_103", "time", "GEMM 3% slower: 70% -> 68%", [one(t)], mods=({"k": t, "t": 1.03},)),
        case("time_tiled_080", "time", "GEMM 20% faster", [one(t)], mods=({"k": t, "t": 0.8},)),
        case("time_tiny_150", "time", "3 us kernel 1.5 us slower: under the 2 us floor, 40% -> 26.7% of its roof",
             [one("tiny_scale")], mods=({"k": "tiny_scale", "t": 1.5},)),
        case("time_tiny_120", "time", "3 us kernel 0.6 us slower: 40% -> 33.3%", [one("tiny_scale")],
             mods=({"k": "tiny_scale", "t": 1.2},)),
        case("time_hgemm_1045", "time", "FP16 GEMM at 190% of the FP32 roof, 4.5% slower: -8.2 points",
             [one("hgemm_simt")], mods=({"k": "hgemm_simt", "t": 1.045},)),
        case("time_hgemm_103", "time", "FP16 GEMM 3% slower: 190% -> 184.5%", [one("hgemm_simt")],
             mods=({"k": "hgemm_simt", "t": 1.03},)),
        case("time_sgemm90_104", "time", "GEMM at 90%, 4% slower: 86.5%", [one("sgemm_90")],
             mods=({"k": "sgemm_90", "t": 1.04},)),
        case("time_clock_down", "time", "clocks not held: the SM ran 10% slower, the GEMM took 11% longer; its "
             "roof fell with the clock, the share holds", [one(t)], mods=({"k": t, "clk": 0.9, "t": 1 / 0.9},)),
        case("time_clock_down_membound", "time", "the SM 10% slower, a memory-bound add unaffected",
             [one("vector_add")], mods=({"k": "vector_add", "clk": 0.9},)),
        case("time_copy_130", "time", "a copy (no FLOP) 30% slower", [one("copy_kernel")],
             mods=({"k": "copy_kernel", "t": 1.3},)),
    ]


def drams() -> list[dict[str, Any]]:
    t = "sgemm_tiled"
    return [
        case("dram_vadd_rd2", "dram", "the add reads twice the bytes in the same time", [one("vector_add")],
             mods=({"k": "vector_add", "rd": 2.0},)),
        case("dram_tiled_rd2", "dram", "the GEMM reads twice the bytes, still compute-bound, same time", [one(t)],
             mods=({"k": t, "rd": 2.0},)),
        case("dram_tiled_untiled", "dram", "tiling lost: 8x the reads, 2.5x the time, now memory-bound", [one(t)],
             mods=({"k": t, "rd": 8.0, "t": 2.5},)),
        case("dram_uncoalesced", "dram", "the add uncoalesced: +48% reads, +28.3% time (the T4 pair's shape)",
             [one("vector_add")], mods=({"k": "vector_add", "rd": 1.48, "t": 1.283},)),
        case("dram_wr_noise", "dram", "the add writes 3% more (L2 evictions): within 10%", [one("vector_add")],
             mods=({"k": "vector_add", "wr": 1.03},)),
        case("dram_naive_rd2", "dram", "the naive GEMM reads twice the bytes: intensity 20 -> 10.5, crosses the ridge",
             [one("sgemm_naive")], mods=({"k": "sgemm_naive", "rd": 2.0},)),
        case("dram_stencil_fused", "dram", "the stencil fused: 40% fewer bytes, 30% faster, crosses to compute-bound",
             [one("stencil_7pt")], mods=({"k": "stencil_7pt", "rd": 0.6, "wr": 0.6, "t": 0.7},)),
        case("dram_fma_loop_1kb", "dram", "no traffic -> 1 KB written: intensity infinite -> huge",
             [one("fma_loop")], mods=({"k": "fma_loop", "add_wr": 1024.0},)),
    ]


def zeros() -> list[dict[str, Any]]:
    c = CATALOG["copy_kernel"]
    n_el = (c.rd + c.wr) / 8.0
    return [
        case("zero_copy_gains_flop", "zero", "the copy now scales each element (one FMUL each): 0 FLOP -> some",
             [one("copy_kernel")], mods=({"k": "copy_kernel", "set_ops": {"fmul": n_el}},), ambiguous=(
                 "0 FLOP has no roof (0 x DRAM peak) and no share: the baseline has no value, the current one has"),
             hand={"expect": "any", "why": "a share on one side only: not measured or judged as new; either is fair"}),
        case("zero_copy_loses_flop", "zero", "the add becomes a pure copy (its FADD dropped), same bytes and time",
             [one("vector_add")], mods=({"k": "vector_add", "set_ops": {}},), ambiguous=(
                 "the current run has 0 FLOP: no roof and no share, the baseline has one"),
             hand={"expect": "any", "why": "a share on one side only"}),
        case("zero_empty_slower", "zero", "an empty kernel, 2 us -> 3 us: under the 2 us floor",
             [one("empty_kernel")], mods=({"k": "empty_kernel", "t": 1.5},)),
        case("zero_fma_loop_slower", "zero", "no DRAM traffic, 20% slower: 80% -> 66.7%", [one("fma_loop")],
             mods=({"k": "fma_loop", "t": 1.2},)),
        case("zero_region", "zero", "a region of a copy, a pure-ALU loop and an empty kernel, unchanged",
             [one("copy_kernel", "misc"), one("fma_loop", "misc"), one("empty_kernel", "misc")]),
    ]
