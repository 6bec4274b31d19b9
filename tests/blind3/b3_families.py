"""Blind set 3: the ncu families (a real team's pull requests, and the hard corners of the documented rules).

Each case is (id, family, spec, reruns[, override]); its expectation comes from b3_expect unless `override`
gives it (with why): planted call-site changes the rule cannot size, and the documented outcomes of structure.
"""
from __future__ import annotations

from typing import Any

from b3_expect import blame_token
from b3_model import CATALOG

Case = dict[str, Any]


def ncu(base: list[dict[str, Any]], cur: list[dict[str, Any]] | None = None, **more: Any) -> dict[str, Any]:
    spec: dict[str, Any] = {"kind": "ncu", "base": base}
    if cur is not None:
        spec["cur"] = cur
    spec.update(more)
    return spec


def layers(n: int, ops: list[str], prefix: str = "layer", start: int = 0) -> list[dict[str, Any]]:
    return [{"r": f"{prefix}{i}", "ops": ops} for i in range(start, start + n)]


def case(cid: str, family: str, spec: dict[str, Any], reruns: int = 2, override: dict[str, Any] | None = None) -> Case:
    return {"id": cid, "family": family, "spec": spec, "reruns": reruns, "override": override or {}}


XF = ["layernorm", "gemm_qkv", "flash", "gemm_out", "add", "layernorm", "gemm_big", "gelu", "gemm_out", "add"]
MLP = ["gemm_qkv", "gelu", "gemm_out", "add"]


def same() -> list[Case]:
    """Unchanged code measured twice: must pass."""
    f = "same"
    return [
        case("same_mlp4", f, ncu(layers(4, MLP)), 3),
        case("same_xformer12", f, ncu([{"r": "embed", "ops": ["embed"]}] + layers(12, XF)), 3),
        case("same_tiny_loop200", f, ncu([{"r": "step", "ops": ["fill"], "n": 200}]), 3),
        case("same_tiny_single", f, ncu([{"r": "k", "ops": ["fill"]}]), 3),
        case("same_tiny_mix50", f, ncu([{"r": "step", "ops": ["fill", "add", "cat", "scan"], "n": 50}]), 3),
        case("same_big_single_noregion", f, ncu([{"ops": ["gemm_big"]}]), 3),
        case("same_bimodal_x40", f, ncu([{"r": "hist", "ops": ["hist"], "n": 40}]), 3),
        case("same_bimodal_x8", f, ncu([{"r": "hist", "ops": ["hist"], "n": 8}]), 3),
        case("same_triton_x10", f, ncu([{"r": "inductor", "ops": ["tri_add", "tri_ln", "tri_mm"], "n": 10}]), 3),
        case("same_noregion_x4", f, ncu([{"ops": ["embed", "layernorm", "gemm_qkv", "softmax", "gemm_out"],
                                          "n": 4}]), 3),
        case("same_cutlass_x24", f, ncu([{"r": "gemm", "ops": ["cutlass"], "n": 24}]), 3),
        case("same_reduce_scan_x6", f, ncu([{"r": "post", "ops": ["reduce", "scan"], "n": 6}]), 3),
        case("same_resnet8", f, ncu(layers(8, ["cutlass", "layernorm", "add"], prefix="block")), 3),
        case("same_softmax_single", f, ncu([{"r": "softmax", "ops": ["softmax"]}]), 3),
        case("same_gelu4_layers", f, ncu(layers(4, ["gelu"])), 3),
        case("same_decode_x32", f, ncu([{"r": "decode", "ops": ["embed", "gemm_out", "softmax", "reduce", "fill"],
                                         "n": 32}]), 3),
        case("same_two_streams", f, ncu([{"r": "overlap", "ops": ["gemm_qkv", "cat", "gemm_out", "cat"], "n": 6}],
                                        kdefs={"cat": {"from": "cat", "stream": 13}})),
        case("same_tiny_x3", f, ncu([{"r": "k", "ops": ["add"], "n": 3}]), 3),
    ]


SIZES = ["fill", "add", "layernorm", "gelu", "gemm_out", "gemm_qkv", "flash", "gemm_big"]
SHIFTS = [(1, 1.08), (1, 1.30), (8, 1.08), (32, 1.15), (3, 1.12)]


def shift() -> list[Case]:
    """One kernel slowed by a PR, beside an unchanged one, at every size and launch count."""
    out = []
    for key in SIZES:
        ctx = "gemm_out" if key != "gemm_out" else "layernorm"
        for n, f in SHIFTS:
            spec = ncu([{"r": "step", "ops": [key, ctx], "n": n}], mods=[{"k": key, "t": f}])
            out.append(case(f"shift_{key}_x{n}_{round((f - 1) * 100)}pct", "shift", spec))
    return out


def edge() -> list[Case]:
    """Just above and just below the documented limits."""
    f = "edge"
    k12 = {"k12": {"from": "layernorm", "name": "void rms_norm_kernel<c10::BFloat16, 1024>(c10::BFloat16 *, "
                   "const c10::BFloat16 *, const c10::BFloat16 *, float, int)", "t": 12_000}}
    k40 = {"k40": {"from": "gemm_out", "name": "fused_moe_kernel", "t": 40_000, "grid": [160, 1, 1]}}
    return [
        case("edge_qkv_x24_7pct", f, ncu([{"r": "s", "ops": ["gemm_qkv"], "n": 24}], mods=[{"t": 1.07}])),
        case("edge_qkv_x24_3pct", f, ncu([{"r": "s", "ops": ["gemm_qkv"], "n": 24}], mods=[{"t": 1.03}])),
        case("edge_big_single_7p5pct", f, ncu([{"r": "s", "ops": ["gemm_big"]}], mods=[{"t": 1.075}])),
        case("edge_big_single_3pct", f, ncu([{"r": "s", "ops": ["gemm_big"]}], mods=[{"t": 1.03}])),
        case("edge_flash_x12_5p5pct", f, ncu([{"r": "s", "ops": ["flash"], "n": 12}], mods=[{"t": 1.055}])),
        case("edge_floor_12us_single_12pct", f, ncu([{"r": "s", "ops": ["k12"]}], kdefs=k12, mods=[{"t": 1.12}])),
        case("edge_floor_tiny_single_25pct", f, ncu([{"r": "s", "ops": ["add"]}], mods=[{"t": 1.25}])),
        case("edge_floor_40us_single_6pct", f, ncu([{"r": "s", "ops": ["k40"]}], kdefs=k40, mods=[{"t": 1.06}])),
        case("edge_floor_40us_single_9pct", f, ncu([{"r": "s", "ops": ["k40"]}], kdefs=k40, mods=[{"t": 1.09}])),
        case("edge_inst_1p5pct", f, ncu([{"r": "s", "ops": ["gemm_out", "gelu"]}], mods=[{"k": "gelu", "inst": 1.015}])),
        case("edge_inst_0p6pct", f, ncu([{"r": "s", "ops": ["gemm_out", "gelu"]}], mods=[{"k": "gelu", "inst": 1.006}])),
        case("edge_rd_3pct", f, ncu([{"r": "s", "ops": ["gemm_qkv"]}], mods=[{"rd": 1.03}])),
        case("edge_rd_1p5pct", f, ncu([{"r": "s", "ops": ["gemm_qkv"]}], mods=[{"rd": 1.015}])),
        case("edge_rd_traffic_2p6pct", f, ncu([{"r": "s", "ops": ["softmax"]}], mods=[{"rd": 1.026}])),
        case("edge_wr_18pct", f, ncu([{"r": "s", "ops": ["gelu"]}], mods=[{"wr": 1.18}])),
        case("edge_wr_small_40pct", f, ncu([{"r": "s", "ops": ["fill", "gemm_out"]}], mods=[{"k": "fill", "wr": 1.4}])),
        case("edge_region_all_3pct", f, ncu(layers(3, XF), mods=[{"t": 1.03}])),
        case("edge_region_all_7pct", f, ncu(layers(3, XF), mods=[{"t": 1.07}])),
    ]


def counters() -> list[Case]:
    """Work counters that moved while the time did not (or the time improved)."""
    f = "counters"
    s = [{"r": "s", "ops": ["layernorm", "gemm_out", "softmax", "add"]}]
    return [
        case("cnt_inst_up3", f, ncu(s, mods=[{"k": "gemm_out", "inst": 1.03}])),
        case("cnt_inst_down5", f, ncu(s, mods=[{"k": "gemm_out", "inst": 0.95}])),
        case("cnt_rd_up10", f, ncu(s, mods=[{"k": "layernorm", "rd": 1.10}])),
        case("cnt_wr_up30", f, ncu(s, mods=[{"k": "softmax", "wr": 1.30}])),
        case("cnt_regs_occ", f, ncu(s, mods=[{"k": "gemm_out", "regs": 40, "occ_f": 0.7}])),
        case("cnt_faster_more_inst", f, ncu([{"r": "attn", "ops": ["flash"]}], mods=[{"t": 0.8, "inst": 1.15}])),
        case("cnt_faster_more_rd", f, ncu([{"r": "p", "ops": ["gemm_qkv"]}], mods=[{"t": 0.85, "rd": 1.2}])),
        case("cnt_inst_up2_x32", f, ncu([{"r": "loop", "ops": ["add"], "n": 32}], mods=[{"inst": 1.02}])),
        case("cnt_occ_halved", f, ncu(s, mods=[{"k": "softmax", "occ_f": 0.5}])),
        case("cnt_rd_reduce_1pct", f, ncu([{"r": "s", "ops": ["reduce", "gemm_out"]}], mods=[{"k": "reduce", "rd": 1.01}])),
    ]


def interference() -> list[Case]:
    """Another process on the GPU slows single launches: not a code change."""
    f = "interf"
    return [
        case("interf_tiny_x40_once", f, ncu([{"r": "step", "ops": ["fill", "gemm_out"], "n": 40}],
                                           interfere=[{"k": "fill", "it": [17], "f": 2.0}]), 3),
        case("interf_gelu_x12_once", f, ncu([{"r": "mlp", "ops": ["gelu"], "n": 12}], interfere=[{"it": [5], "f": 1.3}]), 3),
        case("interf_big_x6_once", f, ncu([{"r": "g", "ops": ["gemm_big"], "n": 6}], interfere=[{"it": [2], "f": 1.25}]), 3),
        case("interf_single_qkv", f, ncu([{"r": "p", "ops": ["gemm_qkv", "gelu"]}],
                                        interfere=[{"k": "gemm_qkv", "f": 1.2}]), 3),
        case("interf_single_tiny", f, ncu([{"r": "p", "ops": ["add", "gemm_out"]}], interfere=[{"k": "add", "f": 1.4}]), 3),
        case("interf_base_side_x12", f, ncu([{"r": "mlp", "ops": ["gelu"], "n": 12}],
                                           interfere=[{"it": [3], "f": 1.5, "side": "base"}]), 3),
        case("interf_tiny_x40_twice", f, ncu([{"r": "step", "ops": ["fill", "add"], "n": 40}],
                                            interfere=[{"k": "fill", "it": [4, 29], "f": 1.8}]), 3),
        case("interf_plus_real_shift", f, ncu([{"r": "mlp", "ops": ["gelu"], "n": 12}], mods=[{"t": 1.15}],
                                             interfere=[{"it": [7], "f": 1.5}]), 3),
        case("interf_callsite_moved", f, ncu([{"r": "loop", "ops": ["layernorm", "gemm_out", "layernorm", "add",
                                                                      "layernorm"], "n": 10}],
                                            mods=[{"k": "layernorm", "occ": 1, "t": 1.3}]), 3,
             {"expect": "fail", "blame": [f"K:{blame_token(CATALOG['layernorm'].name)}", "R:*"],
              "why": "the second of three layer norms per iteration +30% in all 10 iterations: its call site moved "
                     "(docs/matching.md, one launch that moved alone)"}),
    ]
