"""Blind set 4, families missing, floor, precision, declared, region, group (see b4_families_a.case)."""
from __future__ import annotations

from typing import Any

from b4_families_a import case, flop, one
from b4_generate import CATALOG

PCT = "derived.roofline_pct"
NOT_SILENT = {"expect": "not_silent", "why": "a gated value on one side only (docs/cli.md: not measured, never a pass)"}


def toml(thresholds: dict[str, str] | None = None, kernel: list[tuple[str, dict[str, str]]] | None = None) -> str:
    lines = ["[tool.perfgate]"]
    if thresholds:
        lines.append("thresholds = { " + ", ".join(f'"{m}" = "{s}"' for m, s in thresholds.items()) + " }")
    if kernel:
        tables = [f'"{p}" = {{ ' + ", ".join(f'"{m}" = "{s}"' for m, s in t.items()) + " }" for p, t in kernel]
        lines.append("kernel_thresholds = { " + ", ".join(tables) + " }")
    return "\n".join(lines) + "\n"


def floor_case(cid: str, story: str, base: list[dict[str, Any]], th: dict[str, str] | None = None,
               kernel: list[tuple[str, dict[str, str]]] | None = None, **kw: Any) -> dict[str, Any]:
    return case(cid, "floor", story, base, thresholds=th or {}, kernel_thresholds=kernel or [],
                pyproject=toml(th, kernel), **kw)


def missing() -> list[dict[str, Any]]:
    t, both = "sgemm_tiled", [one("sgemm_tiled"), one("vector_add")]
    return [
        case("miss_base_default", "missing", "the baseline from a run without +roofline, the current with it", both,
             cols={"base": "default"}, hand=NOT_SILENT),
        case("miss_cur_default", "missing", "the current run's metric set lost the roofline counters", both,
             cols={"cur": "default"}, hand=NOT_SILENT),
        case("miss_both_default", "missing", "+roofline asked, neither file holds its counters", both,
             cols={"base": "default", "cur": "default"},
             hand={"expect": "not_silent", "why": "a gated metric in neither input is a note (docs/matching.md)"}),
        case("miss_cur_no_peaks", "missing", "the current run has the FLOP counters but no peaks or clocks", both,
             cols={"cur": "no_peaks"}, hand=NOT_SILENT),
        case("miss_cur_na_ffma", "missing", "ncu printed n/a for the GEMM's FFMA counter in the current run", both,
             na={"cur": [{"k": t, "m": ["smsp__sass_thread_inst_executed_op_ffma_pred_on.sum"]}]}, hand=NOT_SILENT),
        case("miss_cur_na_clock", "missing", "ncu printed n/a for the SM clock of the add in the current run", both,
             na={"cur": [{"k": "vector_add", "m": ["sm__cycles_elapsed.avg.per_second"]}]}, hand=NOT_SILENT),
        case("miss_base_default_slower", "missing", "baseline without the counters, the GEMM 10% slower", both,
             cols={"base": "default"}, mods=({"k": t, "t": 1.1},),
             hand={"expect": "fail", "blame": ["K:sgemm_tiled"], "blame_metrics": ["gpu__time_duration.sum"],
                   "why": "duration +10% fails whatever else is not measured (docs/cli.md)"}),
        case("miss_fp32_only_both", "missing", "a hand-picked set: FP32 counters and peaks only, on both sides; an "
             "FP32 kernel unchanged", both, cols={"base": "fp32_only", "cur": "fp32_only"}, ambiguous=(
                 "docs do not say whether the FP64/FP16 counters are inputs the FLOP rate needs"),
             hand={"expect": "pass", "why": "nothing changed; a note is welcome, a failure is not"}),
        case("miss_fp32_only_base", "missing", "baseline with FP32 counters only, current with all; FP32 kernels",
             both, cols={"base": "fp32_only"}, ambiguous="the same question, on one side",
             hand={"expect": "any", "why": "a computed share on both sides, or none on one: both fair"}),
        case("miss_default_not_asked", "missing", "neither file has the counters and +roofline is not asked", both,
             cols={"base": "default", "cur": "default"}, metrics=None),
    ]


def floors() -> list[dict[str, Any]]:
    fl, alone = {PCT: "5+>=60"}, {PCT: ">=60"}
    return [
        floor_case("floor_tiled_ok", "floor 60, the GEMM at 70% unchanged", [one("sgemm_tiled")], fl),
        floor_case("floor_naive_below", "floor 60, the naive GEMM at 18% unchanged: below, whatever its change",
                   [one("sgemm_naive")], fl),
        floor_case("floor_62_to_57", "floor 60, 62% -> 57% (FLOP -8%): 5 points, below the floor",
                   [one("sgemm_62")], fl, mods=({"k": "sgemm_62", "flop": 0.92},)),
        floor_case("floor_alone_90_to_70", "floor alone (>=60): 90% -> 70%, 20 points but above it",
                   [one("sgemm_90")], alone, mods=({"k": "sgemm_90", "flop": 0.78},)),
        floor_case("floor_alone_70_to_55", "floor alone: 70% -> 55%", [one("sgemm_tiled")], alone,
                   mods=({"k": "sgemm_tiled", "flop": 0.786},)),
        case("floor_cli_naive", "floor", "--threshold derived.roofline_pct=>=60 on the command line, naive at 18%",
             [one("sgemm_naive")], thresholds=alone, args=["--threshold", f"{PCT}=>=60"]),
        floor_case("floor_glob_below", "sgemm* >= 60; naive at 18%, the add at 85%, layernorm at 60%",
                   [one("sgemm_naive"), one("vector_add"), one("layernorm_fwd")], kernel=[("sgemm*", alone)]),
        floor_case("floor_glob_ok", "sgemm* >= 60; GEMM at 70%, layernorm and softmax under 60% keep 5 points",
                   [one("sgemm_tiled"), one("layernorm_fwd"), one("softmax_fwd")], kernel=[("sgemm*", alone)]),
        floor_case("floor_first_match", "sgemm_55* = 5 points, then sgemm* >= 60: 55% passes, 18% fails",
                   [one("sgemm_55"), one("sgemm_naive")], kernel=[("sgemm_55*", {PCT: "5"}), ("sgemm*", alone)]),
        floor_case("floor_case_sensitive", "SGEMM* >= 60 does not match sgemm_naive (case-sensitive)",
                   [one("sgemm_naive")], kernel=[("SGEMM*", alone)]),
        floor_case("floor_off", "the roofline off, sgemm* >= 60: a kernel floor never gates a metric that is off",
                   [one("sgemm_naive")], {PCT: "off"}, kernel=[("sgemm*", alone)]),
        floor_case("floor_memcpy_ok", "*copy* >= 80 (docs' example) on a copy at 90% of DRAM bandwidth",
                   [one("copy_kernel")], kernel=[("*copy*", {PCT: ">=80"})],
                   hand={"expect": "pass", "why": "docs give a copy a floor; at 90% of bandwidth it is met; no FLOP "
                         "means no share by the formula, which must not fail it either"}),
        floor_case("floor_memcpy_slow", "*copy* >= 80 on a copy at 50% of DRAM bandwidth on both sides",
                   [one("copy_kernel")], kernel=[("*copy*", {PCT: ">=80"})],
                   mods=({"k": "copy_kernel", "t": 1.8, "side": "base"}, {"k": "copy_kernel", "t": 1.8}),
                   hand={"expect": "not_silent", "why": "the floor the docs show for copies is not met, or cannot "
                         "be judged (0 FLOP: no share); passing in silence would hide it"}),
        floor_case("floor_vadd_ok", "*vector* >= 80, the add at 85% of bandwidth", [one("vector_add")],
                   kernel=[("*vector*", {PCT: ">=80"})]),
        floor_case("floor_vadd_slower", "*vector* >= 80, the add 21% slower: 70%", [one("vector_add")],
                   kernel=[("*vector*", {PCT: ">=80"})], mods=({"k": "vector_add", "t": 1.214},)),
        floor_case("floor_vadd_both_70", "*vector* >= 80, the add at 70% on both sides", [one("vector_add")],
                   kernel=[("*vector*", {PCT: ">=80"})],
                   mods=({"k": "vector_add", "t": 1.214, "side": "base"}, {"k": "vector_add", "t": 1.214})),
        floor_case("floor_at_edge", "floor 62 on a GEMM at 62%", [one("sgemm_62")], {PCT: ">=62"}),
        floor_case("floor_region_total", "gemm_layer >= 60 on the region's total; the naive GEMM in it at 18%",
                   [one("sgemm_naive", "gemm_layer")], kernel=[("gemm_layer", alone)]),
        floor_case("floor_over_100", "floor 60 on the FP16 GEMM at 190% of the FP32 roof", [one("hgemm_simt")], alone),
        floor_case("floor_cur_default", "floor 60, the current run without the counters", [one("sgemm_tiled")], fl,
                   cols={"cur": "default"}, hand=NOT_SILENT),
    ]


def precisions() -> list[dict[str, Any]]:
    t, w = "sgemm_tiled", CATALOG["hgemm_wmma"]
    f = flop(t)
    to64 = {"dfma": CATALOG[t].ops["ffma"], "dadd": CATALOG[t].ops["fadd"], "dmul": CATALOG[t].ops["fmul"]}
    to16 = {"hfma": f * 0.98 / 4, "hadd": f * 0.02 / 2}
    simt_ffma = w.tensor / 2.0
    return [
        case("prec_fp32_to_fp64", "precision", "the GEMM promoted to FP64: same FLOP at half the rate, 2x the time",
             [one(t)], mods=({"k": t, "set_ops": to64, "t": 2.0},)),
        case("prec_fp32_to_fp16", "precision", "the GEMM in half2: same FLOP, half the instructions, 0.55x the time",
             [one(t)], mods=({"k": t, "set_ops": to16, "t": 0.55, "inst": 0.5},)),
        case("prec_fp16_to_fp32", "precision", "the reverse: half2 back to FP32 (127% -> 70%, 1.8x the time)",
             [one(t)], mods=({"k": t, "set_ops": to16, "t": 0.55, "inst": 0.5, "side": "base"},)),
        case("prec_tensor_ops_half", "precision", "the tensor GEMM does half its MMA work in the same time (tensor "
             "rates are shown, not gated)", [one("hgemm_wmma")], mods=({"k": "hgemm_wmma", "tensor": 0.5},),
             cols={"base": "tensor", "cur": "tensor"}, metrics="+roofline,+tensor-cc90"),
        case("prec_simt_to_tensor", "precision", "the SGEMM moved onto tensor cores under its name: 4x faster, its "
             "FP32 pipe FLOP only the epilogue's (2%)", [one(t)],
             mods=({"k": t, "flop": 0.02, "t": 0.25, "inst": 0.2},),
             ambiguous="docs: tensor work is not in derived.flop_per_s, so the share falls 70% -> 5.6% on a kernel "
             "4x faster; by the gate's letter a fail, by an engineer's reading a false alarm",
             hand={"expect": "fail", "blame": ["K:sgemm_tiled"], "blame_metrics": [PCT],
                   "why": "docs/roofline.md: the share falls 64 points; the gate is 5 points"}),
        case("prec_tensor_to_simt", "precision", "the tensor GEMM falls back to FFMA: 10x the time, FP32 FLOP "
             "from 1.5% to 88% of the roof", [one("hgemm_wmma")],
             mods=({"k": "hgemm_wmma", "set_ops": {"ffma": simt_ffma}, "t": 10.0, "inst": 6.0, "tensor": 0.0},),
             cols={"base": "tensor", "cur": "tensor"}, metrics="+roofline,+tensor-cc90"),
        case("prec_fp16_region", "precision", "region of the FP16 GEMM and an add; the GEMM 4.5% slower (-8 points)",
             [one("hgemm_simt", "blk"), one("vector_add", "blk")], mods=({"k": "hgemm_simt", "t": 1.045},)),
    ]


def declared() -> list[dict[str, Any]]:
    f = flop("sgemm_tiled")
    note = {"expect": "not_silent", "why": "counted FLOP above 1.5x the declared is a note in every format "
            "(docs/roofline.md)"}
    return [
        case("decl_exact", "declared", "--flops = the GEMM's counted FLOP", [one("sgemm_tiled")],
             args=["--flops", f"{f:.6g}"]),
        case("decl_redundant", "declared", "--flops = counted / 2.5: the kernel computes 2.5x what it needs",
             [one("sgemm_tiled")], args=["--flops", f"{f / 2.5:.6g}"], hand=note),
        case("decl_doubled", "declared", "twice the FLOP at the same time (redundant work): the share rises, the "
             "declared work says 2x", [one("sgemm_tiled")], mods=({"k": "sgemm_tiled", "flop": 2.0},),
             args=["--flops", f"{f:.6g}"], hand=note),
        case("decl_cur_default", "declared", "--flops only (no +roofline), the current run without FLOP counters",
             [one("sgemm_tiled")], cols={"cur": "default"}, metrics=None, args=["--flops", f"{f:.6g}"],
             hand={"expect": "not_silent", "why": "docs: a current run without the FLOP counters gets a note that "
                   "it cannot tell"}),
        case("decl_only_flag", "declared", "--flops only (no +roofline), both files with the counters, unchanged",
             [one("sgemm_tiled")], metrics=None, args=["--flops", f"{f:.6g}"]),
    ]


def regions() -> list[dict[str, Any]]:
    g = {"expect": "fail", "blame": ["K:sgemm_tiled", "R:*"], "blame_metrics": [PCT],
         "why": "every launch 70% -> 35%: the group's change -35 points, exact counters (docs/matching.md groups)"}
    return [
        case("region_copy_gemm", "region", "region 'step' of a copy (no FLOP) and the GEMM, unchanged",
             [one("copy_kernel", "step"), one("sgemm_tiled", "step")]),
        case("region_layer1_half", "region", "two layers of a GEMM and a layernorm; layer1's GEMM FLOP halved",
             [one("sgemm_62", "layer0"), one("layernorm_fwd", "layer0"), one("sgemm_62", "layer1"),
              one("layernorm_fwd", "layer1")], mods=({"k": "sgemm_62", "r": "layer1", "flop": 0.5},)),
        case("group_sgemm_flop_half", "group", "the GEMM x8 in a loop, every launch's FLOP halved",
             [one("sgemm_tiled", "loop", 8)], mods=({"k": "sgemm_tiled", "flop": 0.5},), hand=g),
        case("group_tiny_t150", "group", "the 3 us kernel x40, every launch 50% slower", [one("tiny_scale", "loop", 40)],
             mods=({"k": "tiny_scale", "t": 1.5},),
             hand={"expect": "fail", "blame": ["K:tiny_scale", "R:*"], "blame_metrics": ["gpu__time_duration.sum",
                                                                                         PCT],
                   "why": "+50% on 40 launches: the group's floor is its jitter / sqrt(40); the share -13 points"}),
        case("group_vadd_flop_half", "group", "the add x12, FLOP halved (memory-bound)", [one("vector_add", "loop", 12)],
             mods=({"k": "vector_add", "flop": 0.5},)),
        case("group_tiny_flop_half", "group", "the 3 us kernel x40, FLOP halved (memory-bound)",
             [one("tiny_scale", "loop", 40)], mods=({"k": "tiny_scale", "flop": 0.5},)),
    ]
