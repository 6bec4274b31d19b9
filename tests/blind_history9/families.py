"""The ninth blind set's families (README.md: "Families"): what each measures, on which pool, and what is planted."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Family:
    name: str
    count: int
    pool: str
    how: str  # ncu, events, bench, counter, flicker, dram, idle
    metric: str
    kind: str  # the history's series kind
    sigma: tuple[float, float]  # the noise unit's range (relative; absolute points for idle; flicker: step/level)
    plan: str  # flat, step, two, reverted_short, reverted_long, driver, creep


NCU, EVENTS, BENCH = "gpu__time_duration.sum", "timeline.kernel_duration", "time.min"
INST, DRAM_R, DRAM_W, IDLE = "smsp__inst_executed.sum", "dram__bytes_read.sum", "dram__bytes_write.sum", \
    "timeline.gpu_idle_pct"

FAMILIES = (
    Family("flat_ncu", 55, "h100-ncu", "ncu", NCU, "kernel", (0.003, 0.012), "flat"),
    Family("flat_events", 45, "a100-events", "events", EVENTS, "kernel", (0.012, 0.03), "flat"),
    Family("flat_bench", 40, "l4-bench", "bench", BENCH, "benchmark", (0.015, 0.05), "flat"),
    Family("flat_counter", 20, "h100-ncu", "counter", INST, "kernel", (0.0, 0.0), "flat"),
    Family("flat_flicker", 30, "h100-ncu", "flicker", DRAM_W, "kernel", (0.0005, 0.01), "flat"),
    Family("flat_dram", 20, "h100-ncu", "dram", DRAM_R, "kernel", (0.001, 0.004), "flat"),
    Family("flat_idle", 20, "a100-events", "idle", IDLE, "region", (0.4, 1.5), "flat"),
    Family("flat_mixshift", 25, "a10g-mixed", "events", EVENTS, "kernel", (0.01, 0.025), "flat"),
    Family("flat_nightly", 15, "h200-nightly", "ncu", NCU, "kernel", (0.004, 0.012), "flat"),
    Family("step_ncu", 40, "h100-ncu", "ncu", NCU, "kernel", (0.003, 0.012), "step"),
    Family("step_events", 30, "a100-events", "events", EVENTS, "kernel", (0.012, 0.03), "step"),
    Family("step_bench", 25, "l4-bench", "bench", BENCH, "benchmark", (0.015, 0.05), "step"),
    Family("step_counter", 15, "h100-ncu", "counter", INST, "kernel", (0.0, 0.0), "step"),
    Family("step_flicker", 20, "h100-ncu", "flicker", DRAM_W, "kernel", (0.0005, 0.01), "step"),
    Family("step_dram", 10, "h100-ncu", "dram", DRAM_R, "kernel", (0.001, 0.004), "step"),
    Family("step_idle", 10, "a100-events", "idle", IDLE, "region", (0.4, 1.5), "step"),
    Family("step_mixshift", 10, "a10g-mixed", "events", EVENTS, "kernel", (0.01, 0.025), "step"),
    Family("two_steps", 20, "h100-ncu", "ncu", NCU, "kernel", (0.003, 0.012), "two"),
    Family("reverted_short", 25, "a100-events", "events", EVENTS, "kernel", (0.012, 0.03), "reverted_short"),
    Family("reverted_long", 15, "h100-ncu", "ncu", NCU, "kernel", (0.003, 0.012), "reverted_long"),
    Family("step_driver", 20, "h100-infra", "ncu", NCU, "kernel", (0.003, 0.012), "driver"),
    Family("step_nightly", 12, "h200-nightly", "ncu", NCU, "kernel", (0.004, 0.012), "step"),
    Family("creep", 15, "h100-ncu", "ncu", NCU, "kernel", (0.003, 0.012), "creep"),
)

STEMS = ("gemm_bf16_128x256", "flash_fwd_hdim128", "flash_bwd_dq", "layernorm_fwd", "rmsnorm_bwd", "softmax_online",
         "rope_apply", "paged_attention_v2", "moe_align_block", "topk_gating", "fused_adam", "cross_entropy_fwd",
         "conv2d_nhwc_fprop", "reduce_sum_f32", "dequant_int4", "all_gather_ring", "scaled_mm_fp8", "silu_mul",
         "embedding_bwd", "sort_pairs_radix", "scan_inclusive", "transpose_tiled", "gelu_tanh", "kv_cache_copy")
