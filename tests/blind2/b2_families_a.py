"""Blind set 2, families A: noise, shifts, tiny kernels, interference, drift, layers, streams, graphs.

Each case: id, family, input ("ncu" or "bench"), spec (b2_program / b2_generate), expect (pass, fail,
not_silent, any), blame (patterns a regression may name: "K:text" a kernel whose name holds text, "R:text" a
region total whose name holds it, "R:*" any region total, "B:text" a benchmark), ambiguous (why the docs leave
the verdict open, or None), why.
"""
from __future__ import annotations

from typing import Any

from b2_expect import duration_expect


def case(cid: str, family: str, spec: dict[str, Any], expect: str, blame: tuple[str, ...] = (),
         why: str = "", ambiguous: str | None = None, input_kind: str = "ncu") -> dict[str, Any]:
    return {"id": cid, "family": family, "input": input_kind, "spec": spec, "expect": expect,
            "blame": list(blame), "ambiguous": ambiguous, "why": why}


LAYER = ["ln", "gemm", "gelu", "gemm"]
LOOP = ["gemm", "ln", "gelu", "ln"]


def layers(n: int, names: list[str] | None = None) -> list[dict[str, Any]]:
    return [{"r": name, "ops": LAYER} for name in (names or [f"layer{i}" for i in range(n)])]


def noise() -> list[dict[str, Any]]:
    f = "noise"
    block8 = ["ln", "gemm", "flash", "gemm", "ln", "gemm", "gelu", "gemm", "add"]
    return [
        case("noise_mlp_layers", f, {"base": layers(4) + [{"r": "backward", "ops": ["gemm", "gemm", "gelu"]}]},
             "pass", why="4 per-layer NVTX ranges and a backward range, same code"),
        case("noise_step_no_nvtx", f, {"base": [{"ops": ["ln", "gemm", "gelu", "gemm", "add", "softmax"], "n": 3}]},
             "pass", why="3 training steps without NVTX ranges"),
        case("noise_loop400", f, {"base": [{"r": "bench", "ops": ["add"], "n": 400}]}, "pass",
             why="one 31 us kernel launched 400 times"),
        case("noise_bimodal40", f, {"base": [{"r": "step", "ops": ["tri_red"], "n": 40}]}, "pass",
             why="a Triton reduction with a +7% timing mode (35% of launches)"),
        case("noise_bimodal12", f, {"base": [{"r": "comm", "ops": ["nccl_like"], "n": 12}]}, "pass",
             why="a bimodal gather kernel, 12 launches"),
        case("noise_72_kernels", f, {"base": [{"r": f"block{i}", "ops": block8} for i in range(8)]}, "pass",
             why="72 launches in 8 regions: many comparisons at once"),
        case("noise_atomic_counts", f, {"base": [{"r": "hist", "ops": ["hist"], "n": 30}]}, "pass",
             why="an atomics kernel whose instruction count varies 0.03% between runs"),
        case("noise_tiny_mix", f, {"base": [{"r": "post", "ops": ["fill", "cast", "argmax", "rope"], "n": 50}]},
             "pass", why="four tiny kernels (2.5-6 us) x 50"),
        case("noise_nested", f, {"base": [{"r": "forward > attn", "ops": ["ln", "flash"]},
                                          {"r": "forward > mlp", "ops": ["gemm", "gelu", "gemm"]},
                                          {"r": "backward", "ops": ["gemm", "gemm", "gemm"]}]}, "pass",
             why="nested NVTX ranges"),
        case("noise_convnet", f, {"base": [{"ops": ["conv", "bn"], "n": 12}]}, "pass",
             why="a cuDNN conv + batch norm stack, 12 layers, no NVTX"),
    ]


def shifts() -> list[dict[str, Any]]:
    f = "shift"
    one = {"base": [{"r": "mm", "ops": ["gemm"]}]}
    three = {"base": [{"r": "mm", "ops": ["gemm"], "n": 3}]}
    sm50 = {"base": [{"r": "softmax", "ops": ["softmax"], "n": 50}]}
    out = []
    for name, spec, t, n in (("gemm_x1", one, 180000, 1), ("gemm_x3", three, 180000, 3),
                             ("softmax_x50", sm50, 40000, 50)):
        for factor in (1.02, 1.10):
            exp = duration_expect(t, n, factor)
            out.append(case(f"shift_{name}_{round((factor - 1) * 100)}pct", f,
                            {**spec, "mods": [{"k": spec["base"][0]["ops"][0], "t": factor}]}, exp,
                            ("K:", "R:*"), f"{t / 1000:g} us x{n}, duration x{factor}"))
    step = {"base": [{"r": "step", "ops": ["gemm", "ln", "gelu", "add", "softmax", "gemm"], "n": 10}]}
    out += [
        case("shift_gemm_big_8pct", f, {"base": [{"r": "mm", "ops": ["gemm_big"]}], "mods": [{"t": 1.08}]},
             duration_expect(1200000, 1, 1.08), ("K:xmma", "R:*"), "1.2 ms GEMM once, +8%"),
        case("shift_gemm_faster", f, {**one, "mods": [{"t": 0.8}]}, "pass", why="GEMM 20% faster"),
        case("shift_ln_in_step_12pct", f, {**step, "mods": [{"k": "ln", "t": 1.12}]},
             duration_expect(12000, 10, 1.12), ("K:layer_norm", "R:*"), "layer norm x10 +12% among 6 kernels"),
    ]
    return out


def tiny() -> list[dict[str, Any]]:
    f = "tiny"
    out = []
    for key, t in (("fill", 2000), ("cast", 4500), ("rmsnorm", 9000)):
        for n in (1, 20, 200):
            for factor in (1.0, 1.10, 1.20):
                spec = {"kdefs": {key: {"t": t}}, "base": [{"r": "step", "ops": [key], "n": n}],
                        "mods": [{"k": key, "t": factor}] if factor != 1.0 else []}
                out.append(case(f"tiny_{t // 100 / 10:g}us_x{n}_{round((factor - 1) * 100)}pct", f, spec,
                                duration_expect(t, n, factor), ("K:", "R:*"), f"{t / 1000:g} us x{n} x{factor}"))
    out.append(case("tiny_beside_gemm_x20_15pct", f,
                    {"base": [{"r": "step", "ops": ["gemm", "cast"], "n": 20}], "mods": [{"k": "cast", "t": 1.15}]},
                    duration_expect(4000, 20, 1.15), ("K:direct_copy",),
                    "a 4 us cast x20 +15% beside a 180 us GEMM in the same region"))
    return out


def interference() -> list[dict[str, Any]]:
    f = "interference"
    loop = {"base": [{"r": "train", "ops": LOOP, "n": 40}]}

    def c(cid: str, mods: list[dict[str, Any]], expect: str, blame: tuple[str, ...] = (), why: str = "",
          amb: str | None = None, spec: dict[str, Any] | None = None) -> dict[str, Any]:
        return case(cid, f, {**(spec or loop), "mods": mods}, expect, blame, why, amb)
    return [
        c("intf_one_gemm_30pct", [{"k": "gemm", "it": [17], "t": 1.3}], "pass",
          why="one GEMM launch of 40 +30%: another process on the GPU"),
        c("intf_one_ln_60pct", [{"k": "ln", "it": [5], "occ": 1, "t": 1.6}], "pass",
          why="one layer-norm launch of 80 +60%"),
        c("intf_three_scattered", [{"k": "gemm", "it": [3], "t": 1.25}, {"k": "gelu", "it": [20], "t": 1.25},
                                   {"k": "ln", "it": [33], "occ": 0, "t": 1.25}], "pass",
          why="three launches of three kernels +25%"),
        c("intf_burst_one_iteration", [{"it": [25], "t": 1.2}], "pass",
          why="every launch of iteration 25 +20%: a burst of interference"),
        c("intf_two_same_callsite", [{"k": "gelu", "it": [10, 30], "t": 1.4}], "pass",
          why="two launches of one call site of 40 +40%"),
        c("intf_base_side_outlier", [{"k": "gemm", "it": [12], "t": 1.35, "side": "base"}], "pass",
          why="the baseline run held the disturbed launch"),
        c("intf_real_callsite_30pct", [{"k": "ln", "occ": 1, "t": 1.3}], "fail", ("K:layer_norm", "R:*"),
          "the second layer norm of every iteration +30%"),
        c("intf_real_gemm_8pct", [{"k": "gemm", "t": 1.08}], duration_expect(180000, 40, 1.08),
          ("K:xmma", "R:*"), "every GEMM launch +8%"),
        c("intf_real_plus_outlier", [{"k": "gelu", "t": 1.15}, {"k": "gemm", "it": [7], "t": 1.4}], "fail",
          ("K:Gelu", "R:*"), "GELU +15% everywhere, and one GEMM launch +40% (must not be blamed)"),
        c("intf_real_callsite_10iters", [{"k": "ln", "occ": 0, "t": 1.3}], "fail", ("K:layer_norm", "R:*"),
          "the first layer norm of each of 10 iterations +30%",
          spec={"base": [{"r": "train", "ops": LOOP, "n": 10}]}),
        c("intf_single_launch_kernel", [{"k": "softmax", "t": 1.4}], "pass", (),
          "the only softmax launch of its region +40% by interference",
          "docs: a single launch is judged against its threshold; one run cannot tell interference from a "
          "regression, so the documented verdict is fail while the truth is unchanged code",
          {"base": [{"r": "train", "ops": LOOP, "n": 10}, {"r": "head", "ops": ["softmax"]}]}),
    ]


def drift() -> list[dict[str, Any]]:
    f = "drift"
    base = {"base": [{"r": "loop", "ops": ["add", "gelu", "softmax"], "n": 100}]}

    def c(cid: str, extra: dict[str, Any], expect: str, blame: tuple[str, ...] = (), why: str = "",
          amb: str | None = None) -> dict[str, Any]:
        return case(cid, f, {**base, **extra}, expect, blame, why, amb)
    return [
        c("drift_cur_to_4pct", {"env_cur": {"drift": [1.0, 1.04]}}, "pass",
          why="the current run's clock drifts from +0% to +4% over 300 launches"),
        c("drift_both_3pct", {"env_base": {"drift": [1.0, 1.03]}, "env_cur": {"drift": [1.0, 1.03]}}, "pass",
          why="both runs drift to +3%"),
        c("drift_clock_3pct", {"env_cur": {"clock": 1.03}}, "pass", why="the current run's clock 3% slower"),
        c("drift_base_warm", {"env_base": {"drift": [1.03, 1.0]}}, "pass",
          why="the baseline run started 3% slow"),
        c("drift_clock_faster", {"env_cur": {"clock": 0.97}}, "pass", why="the current run's clock 3% faster"),
        c("drift_plus_softmax_15pct", {"env_cur": {"drift": [1.0, 1.04]}, "mods": [{"k": "softmax", "t": 1.15}]},
          "fail", ("K:SoftMax", "R:*"), "a drift to +4% and softmax +15%"),
        c("drift_cur_to_8pct", {"env_cur": {"drift": [1.0, 1.08]}}, "pass",
          why="the current run drifts to +8% (mean +4%)",
          amb="docs do not say how a trend within one run is judged; its late launches pass the 5% limit"),
    ]


def layers_family() -> list[dict[str, Any]]:
    f = "layers"
    four = layers(4)
    return [
        case("layers_added_end", f, {"base": four, "cur": layers(5)}, "pass", why="4 -> 5 layers"),
        case("layers_added_middle", f, {"base": four, "cur": layers(5, ["layer0", "layer1", "layer1b", "layer2",
                                                                       "layer3"])}, "pass",
             why="a named layer inserted in the middle"),
        case("layers_removed", f, {"base": four, "cur": layers(3)}, "pass", why="4 -> 3 layers"),
        case("layers_two_added_of_8", f, {"base": layers(8), "cur": layers(10)}, "pass", why="8 -> 10 layers"),
        case("layers_added_gemm_15pct", f, {"base": four, "cur": layers(5),
                                            "mods": [{"r": "layer1", "k": "gemm", "occ": 0, "t": 1.15}]},
             "fail", ("K:xmma", "R:layer1", "R:total"), "a layer added, and layer1's first GEMM +15%"),
        case("layers_added_all_10pct", f, {"base": four, "cur": layers(5), "mods": [{"t": 1.10}]}, "fail",
             ("K:", "R:*"), "a layer added, every launch +10%"),
        case("layers_removed_gelu_30pct", f, {"base": four, "cur": layers(3),
                                              "mods": [{"r": "layer2", "k": "gelu", "t": 1.3}]}, "fail",
             ("K:Gelu", "R:layer2", "R:total"), "a layer removed, and layer2's GELU +30%"),
        case("layers_added_heavy", f, {"base": four, "cur": four + [{"r": "attn_extra", "ops": ["flash"] * 3}]},
             "pass", why="an attention layer with 3 flash launches added"),
        case("layers_renamed", f, {"base": four, "cur": layers(4, ["layer0", "layer1", "decoder0", "layer3"])},
             "pass", why="one layer's range renamed (same kernels)"),
    ]


def streams_graphs() -> list[dict[str, Any]]:
    f, g = "streams", "graphs"
    two = {"base": [{"r": "step", "streams": [["gemm", "gelu", "gemm"], ["ln", "softmax", "add"]], "n": 6}],
           "stream_of": {"ln": 13, "softmax": 13, "add": 13}}
    three = {"base": [{"r": "step", "streams": [["gemm"], ["add", "add"], ["fill", "fill", "fill"]], "n": 10}],
             "stream_of": {"add": 13, "fill": 14}}
    graph = {"base": [{"r": "graph_replay", "ops": ["ln", "gemm", "gelu", "gemm", "add"] * 4, "n": 5}]}
    tiny_graph = {"kdefs": {"fill": {"t": 2500}}, "base": [{"r": "decode", "ops": ["fill"] * 20, "n": 10}]}
    return [
        case("streams_two_interleaved", f, two, "pass", why="two streams launched from two threads, order varies"),
        case("streams_softmax_12pct", f, {**two, "mods": [{"k": "softmax", "t": 1.12}]},
             duration_expect(40000, 6, 1.12), ("K:SoftMax", "R:*"), "softmax x6 on stream 13 +12%"),
        case("streams_three", f, three, "pass", why="three streams, order varies"),
        case("streams_outlier", f, {**two, "mods": [{"k": "gemm", "it": [2], "occ": 1, "t": 1.35}]}, "pass",
             why="one GEMM launch of 12 +35% (interference)"),
        case("graphs_replay", g, graph, "pass", why="a 20-node CUDA graph replayed 5 times (node profiling)"),
        case("graphs_node_20pct", g, {**graph, "mods": [{"k": "gelu", "occ": 2, "t": 1.2}]}, "fail",
             ("K:Gelu", "R:*"), "the third GELU node of the graph +20% in every replay"),
        case("graphs_gemms_8pct", g, {**graph, "mods": [{"k": "gemm", "t": 1.08}]},
             duration_expect(180000, 40, 1.08), ("K:xmma", "R:*"), "every GEMM node +8%"),
        case("graphs_tiny_decode", g, tiny_graph, "pass", why="200 launches of a 2.5 us kernel in graph replays"),
        case("graphs_tiny_decode_12pct", g, {**tiny_graph, "mods": [{"t": 1.12}]},
             duration_expect(2500, 200, 1.12), ("K:Fill", "R:*"), "the 2.5 us kernel x200 +12%"),
    ]
