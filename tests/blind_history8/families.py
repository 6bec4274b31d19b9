"""The families of the eighth blind change-point set (README.md: "Families"), and the rule of what is a change."""

from __future__ import annotations

import math
from dataclasses import dataclass

TIME = "gpu__time_duration.sum"
EVENT = "timeline.kernel_duration"
BENCH = "time.min"
INST = "smsp__inst_executed.sum"
REGS = "launch__registers_per_thread"
READ = "dram__bytes_read.sum"
WRITE = "dram__bytes_write.sum"
IDLE = "timeline.gpu_idle_pct"


@dataclass(frozen=True)
class Family:
    name: str
    count: int
    sources: tuple[tuple[str, str], ...]  # (pool, metric), taken in turn
    plan: str  # flat, step, multi, revert_short, revert_long, infra, creep
    counter: str = ""  # "" (a measured quantity), "exact" (one constant) or "flicker" (a few values)
    short: bool = False  # a test added late or removed early
    widen: bool = False  # the pool's image change widens this series' spread


FAMILIES = (
    Family("flat_ncu", 45, (("h100-ncu", TIME), ("a100-ncu", TIME)), "flat"),
    Family("flat_event", 35, (("l4-events", EVENT), ("h100-nsys", EVENT)), "flat"),
    Family("flat_bench", 40, (("cpu-bench", BENCH),), "flat"),
    Family("flat_counter", 25, (("h100-ncu", INST), ("a100-ncu", REGS), ("a100-ncu", INST)), "flat", "exact"),
    Family("flat_flicker", 30, (("h100-ncu", INST), ("a100-ncu", INST), ("h100-ncu", READ)), "flat", "flicker"),
    Family("flat_dram", 25, (("h100-ncu", READ), ("a100-ncu", WRITE), ("h100-ncu", WRITE)), "flat"),
    Family("flat_idle", 20, (("h100-nsys", IDLE),), "flat"),
    Family("flat_nightly", 20, (("h200-nightly", TIME), ("h200-nightly", READ)), "flat"),
    Family("flat_noise_change", 15, (("a10g-bench", BENCH),), "flat", widen=True),
    Family("flat_short", 15, (("h100-ncu", TIME), ("l4-events", EVENT), ("cpu-bench", BENCH)), "flat", short=True),
    Family("step_ncu", 40, (("h100-ncu", TIME), ("a100-ncu", TIME)), "step"),
    Family("step_event", 30, (("l4-events", EVENT), ("h100-nsys", EVENT)), "step"),
    Family("step_bench", 30, (("cpu-bench", BENCH),), "step"),
    Family("step_counter", 20, (("h100-ncu", INST), ("a100-ncu", REGS)), "step", "exact"),
    Family("step_flicker", 20, (("h100-ncu", INST), ("a100-ncu", INST), ("h100-ncu", READ)), "step", "flicker"),
    Family("step_dram", 15, (("h100-ncu", READ), ("a100-ncu", WRITE)), "step"),
    Family("step_idle", 10, (("h100-nsys", IDLE),), "step"),
    Family("multi_step", 20, (("h100-ncu", TIME), ("l4-events", EVENT), ("cpu-bench", BENCH)), "multi"),
    Family("reverted_short", 20, (("a100-ncu", TIME), ("h100-nsys", EVENT), ("cpu-bench", BENCH)), "revert_short"),
    Family("reverted_long", 15, (("h100-ncu", TIME), ("l4-events", EVENT), ("cpu-bench", BENCH)), "revert_long"),
    Family("infra_step", 20, (("h100-ncu", TIME), ("l4-events", EVENT), ("a10g-bench", BENCH)), "infra",
           widen=True),
    Family("nightly_step", 10, (("h200-nightly", TIME),), "step"),
    Family("creep", 15, (("a100-ncu", TIME), ("h100-nsys", EVENT), ("cpu-bench", BENCH)), "creep"),
)

RULES = {"flicker_families": ["flat_flicker", "step_flicker"],
         "reverted_families": ["reverted_short", "reverted_long"],
         "unscored_families": ["creep"]}
MATCH_TOLERANCE = 2

KERNELS = ("gemm_bf16_tn_128x256", "flash_attn_fwd_hdim128", "layernorm_fwd", "softmax_online_warp", "rmsnorm_bwd",
           "reduce_sum_f32", "transpose_tiled_32", "conv2d_implicit_gemm", "embedding_gather", "topk_radix_select",
           "rope_apply_inplace", "adam_step_fused", "scan_decoupled_lookback", "histogram_atomic_smem", "spmv_csr_vector",
           "fused_bias_gelu", "quantize_fp8_e4m3", "dequant_int4_gemv", "kv_cache_append", "moe_permute_tokens")
BENCHMARKS = ("test_tokenize_batch", "test_collate_padded", "test_launch_overhead", "test_graph_capture",
              "test_h2d_pinned_copy", "test_sampler_step", "test_checkpoint_shard_save", "test_allocator_churn",
              "test_dataloader_next", "test_compile_cache_hit")
REGIONS = ("train_step", "decode_step", "prefill", "optimizer_step", "eval_batch")


def min_k(left: int, right: int) -> float:
    """The rule of change for a measured series: a level step of at least this many noise units (the robust scale
    of the noise on both sides) between segments of ``left`` and ``right`` points. At least 2.5 units, and
    2.5 units need 16 points on the shorter side: the step's evidence grows with √points, so a short segment needs a
    bigger step (10 / √n units: 4.5 units over 5 points)."""
    return max(2.5, 10.0 / math.sqrt(min(left, right)))


MIN_SEGMENT = 5  # no level lasts fewer points: a shorter bump is one a person reads as noise
