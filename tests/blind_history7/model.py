"""The seventh blind set's noise model: its runner pools, metrics and constants (README.md: "The noise model")."""

from __future__ import annotations

from dataclasses import dataclass

SEED = 7_240_35
COMMITS = 240  # commits of main, a CI run each
MATCH_TOLERANCE = 2

# The rule of change (README.md: "What counts as a change")
MIN_VALUES_PER_LEVEL = 4
MIN_UNITS = 4.0  # when both levels a change separates hold SHORT_LEVEL values or more
MIN_UNITS_SHORT = 6.0  # when either holds fewer
SHORT_LEVEL = 8
MIN_FLICKER_SPREADS = 2.0
MAX_LOG_FACTOR = 0.7  # a planted step is at most about 2x (ln 2), unless the rule needs more on a noisy series


@dataclass(frozen=True)
class Pool:
    name: str
    gpu: str
    runners: int
    skip: float  # the share of commits it ran that have no run (outages, cancelled runs, batched merges)
    first: int = 0  # the first commit it ran
    end: int = COMMITS  # the commit it was retired at
    every: int = 1  # runs every Nth commit (a nightly pool)
    spell_rate: float = 0.0  # co-tenant spells started per run
    swap: int | None = None  # the commit one runner was replaced by another of the same model (no change)
    skus: tuple[float, ...] = ()  # host CPU SKUs' shares, where the pool's runners differ in CPU (bimodal)


POOLS = (
    Pool("h100-ncu", "NVIDIA H100 80GB HBM3", 3, 0.03, swap=140),
    Pool("a100-events", "NVIDIA A100-PCIE-40GB", 4, 0.05, spell_rate=0.03),
    Pool("l4-spot", "NVIDIA L4", 2, 0.15, end=160, spell_rate=0.02),
    Pool("l40s", "NVIDIA L40S", 2, 0.06, first=160, spell_rate=0.02),
    Pool("hosted-t4", "Tesla T4", 2, 0.02, spell_rate=0.03, skus=(0.6, 0.4)),
    Pool("self-hosted", "NVIDIA GeForce RTX 4090", 2, 0.04, spell_rate=0.02),
    Pool("h200-nightly", "NVIDIA H200", 1, 0.05, every=4),
)
POOL = {p.name: p for p in POOLS}

# Environment events that move the level of the series they touch (planted in family step_env)
DRIVER_UPDATE = ("a100-events", 132)  # driver 550 -> 560, CUDA 12.4 -> 12.6
HOST_SWAP = ("self-hosted", 96)  # the host's CPU upgraded: host timings faster
DRIVER_NUDGE = (0.3, 0.6)  # the update's move on the pool's other series: spread, bound (noise units): no change

# Pools' shared state
THERMAL_PHI = 0.85  # step correlation of the pool's thermal drift
THERMAL_UNITS = 0.5  # its stationary spread, in noise units
SPELL_RUNS = (1, 3)  # a co-tenant spell's length in runs
SPELL_UNITS = (3.0, 8.0)  # how much slower it makes a run, in noise units

# metric class -> (metric, unit, kind)
METRICS = {
    "ncu": ("gpu__time_duration.sum", "ns", "kernel"),
    "event": ("cuda_event.elapsed", "ms", "kernel"),
    "bench": ("time.min", "s", "benchmark"),
    "idle": ("gpu_idle_share", "%", "region"),
    "exact": ("smsp__inst_executed.sum", "inst", "kernel"),
    "flicker": ("dram__bytes_read.sum", "byte", "kernel"),
    "flicker_atom": ("lts__t_sectors_op_atom.sum", "sector", "kernel"),
    "dram": ("dram__bytes_write.sum", "byte", "kernel"),
}
UNITS = {metric: unit for metric, unit, _ in METRICS.values()}

# metric class -> the pools that measure it
POOLS_OF = {
    "ncu": ("h100-ncu", "h100-ncu", "l4-spot", "l40s", "h200-nightly"),
    "event": ("a100-events", "a100-events", "l4-spot", "l40s", "self-hosted"),
    "bench": ("hosted-t4",),  # the self-hosted pool's benchmarks all moved with its host swap: step_env
    "idle": ("a100-events",),
    "exact": ("h100-ncu", "h100-ncu", "h200-nightly", "l40s"),
    "flicker": ("h100-ncu", "h100-ncu", "l4-spot", "h200-nightly"),
    "flicker_atom": ("h100-ncu", "l40s"),
    "dram": ("h100-ncu", "l4-spot", "l40s"),
}

# metric class -> the noise's relative scale range (the model's, before runner offsets, drift and spells)
NOISE = {"ncu": (0.002, 0.008), "event": (0.01, 0.03), "bench": (0.02, 0.06), "idle": (0.02, 0.05),
         "dram": (0.0005, 0.002)}
RUNNER_UNITS = {"ncu": 0.3, "event": 0.7, "bench": 0.5, "idle": 0.5, "dram": 0.3}
SKU_UNITS = 0.9  # a hosted CPU SKU's offset from the middle, in noise units
NCU_OUTLIER = (0.01, 3.0, 8.0)  # share of runs, units slow (low, high)
LATE_START = 0.15  # share of series whose test was added during the history
EARLY_END = 0.05  # share whose test was removed

KERNELS = ("gemm_bf16_128x256", "gemm_fp8_rowwise", "flash_attn_fwd", "flash_attn_bwd_dq", "layernorm_fwd",
           "rmsnorm_bwd", "softmax_online", "rope_apply", "topk_router", "moe_permute", "moe_grouped_gemm",
           "allreduce_ring", "embedding_bag", "conv2d_nhwc_3x3", "depthwise_conv", "reduce_sum_rows",
           "transpose_tiled", "scatter_add", "paged_kv_copy", "quant_int4_pack", "dequant_nf4", "adamw_step",
           "cross_entropy_fwd", "gelu_tanh", "silu_mul", "sort_radix", "histogram_atomic", "spmm_csr",
           "fft_r2c_1d", "nccl_bcast_proxy")
AREAS = ("attention", "gemm", "norms", "moe", "optim", "conv", "sparse", "quant", "comm", "misc")
