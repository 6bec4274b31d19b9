"""Blind set 3: this set's own GPU timing model (H100 under ncu, `--clock-control base --cache-control all`).

Written from public knowledge and ../shared/reference, and from the raw values of perfgate's own H100 export
(tests/data/h100/mlp.rerun.raw*.csv: durations in 32 ns steps; four identical 20 us GELU launches spread
20.0-21.5 us; an 850 us GEMM within 0.2%; DRAM reads within 0.2%, DRAM writes of 13 MB spread by 4%).

A launch's measured duration is

    t0 x change x run_factor x bimodal x interference + jitter, rounded to 32 ns

* run_factor: one per side (one per process under ncu): locked base clocks still leave the memory clock,
  temperature and the board's power state: exp(N(0, 0.3%)).
* jitter: per launch, Student-t (5 dof, heavy tails) scaled to sd(t0) = sqrt((0.15% t0)^2 + (1.2% t0 e^(-t0/60us))^2
  + 120 ns^2): launch overhead and cache refill dominate tiny kernels, tail effects mid-sized ones, clocks big ones.
* bimodal: some kernels (atomics, split-K, data-dependent scheduling) run in a slow mode with probability p.
* interference: only where a case plants it (another process on the GPU slowing one launch).
* counters: instructions exact (data-independent kernels), DRAM read sd 0.1% + 512 B, DRAM write sd `wr_sd` (L2
  write-back timing) + 2 KB, achieved occupancy +-0.8 points.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

RUN_SD = 0.003          # per-side run factor (log sd)
QUANTUM = 32            # ns, the GPU timer's step
TAIL_DOF = 5


@dataclass(frozen=True)
class Kernel:
    name: str                      # as ncu's "Kernel Name" prints it (demangled)
    t: float                       # true duration, ns
    rd: float                      # DRAM bytes read
    wr: float                      # DRAM bytes written
    inst: float                    # instructions executed
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    regs: int = 64
    smem: int = 0
    occ: float = 50.0
    wr_sd: float = 0.015           # relative sd of DRAM writes
    bimodal_p: float = 0.0         # probability of the slow mode
    bimodal_f: float = 1.0         # slow mode's factor
    stream: int = 7


def sd_ns(t: float) -> float:
    """Standard deviation of one launch's duration, ns."""
    return math.sqrt((0.0015 * t) ** 2 + (0.012 * t * math.exp(-t / 60_000.0)) ** 2 + 120.0 ** 2)


def sd_rel(t: float) -> float:
    return sd_ns(t) / t


def tail(rng: np.random.Generator) -> float:
    """A unit-variance Student-t draw."""
    return float(rng.standard_t(TAIL_DOF)) / math.sqrt(TAIL_DOF / (TAIL_DOF - 2))


def run_factor(rng: np.random.Generator) -> float:
    return math.exp(rng.normal(0.0, RUN_SD))


def measure(k: Kernel, change: dict[str, float], factor: float, rng: np.random.Generator,
            interference: float = 1.0) -> dict[str, Any]:
    """One launch as ncu measures it: `change` multiplies the true t, rd, wr, inst (a planted change)."""
    t0 = k.t * change.get("t", 1.0)
    mode = k.bimodal_f if k.bimodal_p and rng.random() < k.bimodal_p else 1.0
    t = t0 * factor * mode * interference + sd_ns(t0) * tail(rng)
    t = max(QUANTUM, round(t / QUANTUM) * QUANTUM)
    rd0, wr0 = k.rd * change.get("rd", 1.0), k.wr * change.get("wr", 1.0)
    rd = max(0, round(rd0 * (1 + rng.normal(0, 0.001)) + rng.normal(0, 512)))
    wr = max(0, round(wr0 * (1 + rng.normal(0, k.wr_sd)) + rng.normal(0, 2048))) if wr0 > 0 else 0
    occ = min(99.9, max(0.5, k.occ * change.get("occ", 1.0) + rng.normal(0, 0.8)))
    return {"t": int(t), "rd": int(rd // 32 * 32), "wr": int(wr // 32 * 32),
            "inst": int(round(k.inst * change.get("inst", 1.0))), "occ": occ,
            "regs": int(k.regs + change.get("regs", 0)), "smem": k.smem, "grid": k.grid, "block": k.block,
            "name": k.name, "stream": k.stream}


def kernel(key: str, **over: Any) -> Kernel:
    return replace(CATALOG[key], **over)


def _gemm(name: str, t: float, grid: tuple[int, int, int], rd: float, wr: float, inst: float) -> Kernel:
    return Kernel(name, t, rd, wr, inst, grid, (384, 1, 1), regs=168, smem=213_504, occ=9.4, wr_sd=0.004)


_EW = "void at::vectorized_elementwise_kernel<4, {f}, std::array<char *, {n}>>(int, T2, T3)"
CATALOG: dict[str, Kernel] = {
    "gemm_big": _gemm("sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x256x64_warpgroupsize2x1x1_execute_segment"
                      "_k_off_kernel__5x_cublas", 412_000, (132, 1, 1), 96e6, 32e6, 2.1e7),
    "gemm_qkv": _gemm("sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_execute_segment"
                      "_k_off_kernel__5x_cublas", 86_000, (96, 1, 1), 25e6, 12.5e6, 4.6e6),
    "gemm_out": _gemm("sm90_xmma_gemm_bf16bf16_bf16f32_f32_nn_n_tilesize64x128x64_warpgroupsize1x1x1_execute_segment"
                      "_k_off_kernel__5x_cublas", 31_000, (128, 1, 1), 8.4e6, 4.2e6, 1.5e6),
    "nvjet": _gemm("nvjet_hsh_128x256_64x4_2x1_v_bz_coopA_NTN", 86_000, (66, 1, 1), 28.7e6, 12.5e6, 3.3e6),
    "gemm_splitk": _gemm("sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_execute_"
                         "segment_k_on_kernel__5x_cublas", 78_000, (132, 1, 4), 25e6, 20e6, 4.7e6),
    "splitk_reduce": Kernel("void splitKreduce_kernel<32, 16, int, float, __nv_bfloat16, float, __nv_bfloat16, true,"
                            " false, false>(cublasSplitKParams<float>, const float *, const __nv_bfloat16 *, "
                            "__nv_bfloat16 *, const float *, const float *, const __nv_bfloat16 *, const "
                            "__nv_bfloat16 *, __nv_bfloat16 *, void *, long, float *, int *)",
                            8_000, 8e6, 3.1e6, 2.4e5, (48, 1, 1), (512, 1, 1), regs=40, occ=71.0),
    "flash": Kernel("void flash::flash_fwd_kernel<Flash_fwd_kernel_traits<128, 128, 64, 4, false, false, "
                    "cutlass::bfloat16_t, Flash_kernel_traits<128, 128, 64, 4, cutlass::bfloat16_t>>, false, true, "
                    "false, false, true, true, false, false>(flash::Flash_fwd_params)",
                    182_000, 50e6, 16.8e6, 9.8e6, (16, 32, 4), (128, 1, 1), regs=255, smem=49_152, occ=12.1,
                    wr_sd=0.006),
    "layernorm": Kernel("void at::native::(anonymous namespace)::vectorized_layer_norm_kernel<c10::BFloat16, float>"
                        "(int, float, const T1 *, const T1 *, const T1 *, T2 *, T2 *, T1 *)",
                        9_100, 8.5e6, 4.3e6, 3.9e5, (4096, 1, 1), (128, 1, 1), regs=38, occ=81.0),
    "gelu": Kernel(_EW.format(f="at::GeluCUDAKernelImpl(at::TensorIteratorBase &, at::GeluType)::[lambda() "
                              "(instance 2)]::operator ()() const::[lambda() (instance 2)]::operator ()() const::"
                              "[lambda(c10::BFloat16) (instance 1)]", n=2),
                   20_300, 33.6e6, 13.4e6, 7.4e6, (8192, 1, 1), (128, 1, 1), regs=31, occ=76.0),
    "add": Kernel(_EW.format(f="at::CUDAFunctor_add<c10::BFloat16>", n=3), 3_200, 2.1e6, 1.05e6, 9.8e4,
                  (1024, 1, 1), (128, 1, 1), regs=24, occ=62.0, wr_sd=0.03),
    "fill": Kernel(_EW.format(f="at::FillFunctor<float>", n=1), 1_700, 0.0, 2.6e5, 1.2e4, (256, 1, 1),
                   (128, 1, 1), regs=16, occ=30.0, wr_sd=0.05),
    "softmax": Kernel("void at::native::(anonymous namespace)::cunn_SoftMaxForward<4, float, float, float, "
                      "at::native::(anonymous namespace)::SoftMaxForwardEpilogue>(T4 *, const T2 *, int)",
                      22_400, 33.5e6, 33.5e6, 5.1e6, (8192, 1, 1), (1024, 1, 1), regs=32, occ=88.0, wr_sd=0.01),
    "reduce": Kernel("void at::reduce_kernel<512, 1, at::ReduceOp<float, at::func_wrapper_t<float, "
                     "at::sum_functor<float, float, float>::operator ()(at::TensorIterator &)::[lambda(float, float)"
                     " (instance 1)]>, unsigned int, float, 4, 4>>(T3)",
                     6_300, 4.2e6, 2e4, 6.2e5, (1, 528, 1), (512, 1, 1), regs=32, occ=43.0, wr_sd=0.05),
    "embed": Kernel("void at::native::(anonymous namespace)::indexSelectLargeIndex<c10::BFloat16, long, unsigned "
                    "int, 2, 2, -2, true>(at::cuda::detail::TensorInfo<T1, T3>, at::cuda::detail::TensorInfo<const "
                    "T1, T3>, at::cuda::detail::TensorInfo<const T2, T3>, int, int, T3, T3, long)",
                    7_400, 6.3e6, 4.2e6, 3.1e5, (2048, 1, 1), (128, 1, 1), regs=28, occ=69.0),
    "cat": Kernel("void at::native::(anonymous namespace)::CatArrayBatchedCopy_aligned16_contig<at::native::"
                  "(anonymous namespace)::OpaqueType<2>, unsigned int, 2, 128, 1>(T1 *, at::native::(anonymous "
                  "namespace)::CatArrInputTensorMetadata<T1, T2, T4, T5>, at::native::(anonymous namespace)::"
                  "TensorSizeStride<T2, 4>, int, T2)", 2_400, 1.1e6, 1.1e6, 4.1e4, (264, 2, 1), (128, 1, 1),
                  regs=30, occ=44.0, wr_sd=0.03),
    "tri_add": Kernel("triton_poi_fused_add_mul_0", 4_500, 4.2e6, 2.1e6, 1.6e5, (4096, 1, 1), (256, 1, 1),
                      regs=20, occ=78.0),
    "tri_ln": Kernel("triton_red_fused_native_layer_norm_1", 11_200, 8.5e6, 4.3e6, 6.6e5, (4096, 1, 1),
                     (512, 1, 1), regs=44, occ=70.0),
    "tri_mm": Kernel("matmul_kernel", 57_000, 18e6, 8.4e6, 3.3e6, (256, 1, 1), (128, 1, 1), regs=128,
                     smem=98_304, occ=18.0, wr_sd=0.006),
    "cutlass": Kernel("void cutlass::Kernel2<cutlass_80_tensorop_bf16_s16816gemm_relu_bf16_128x128_32x4_tn_align8>"
                      "(T1::Params)", 65_000, 19e6, 8.4e6, 3.9e6, (64, 4, 1), (128, 1, 1), regs=230, smem=81_920,
                      occ=12.4, wr_sd=0.006),
    "hist": Kernel("histogram_atomic_kernel(const unsigned int *, unsigned int *, int)", 31_000, 16.8e6, 4096.0,
                   2.2e6, (528, 1, 1), (256, 1, 1), regs=22, occ=91.0, wr_sd=0.05, bimodal_p=0.3,
                   bimodal_f=1.09),
    "tile": Kernel("void gemm_tiled<128, 64, 8>(const float *, const float *, float *, int, int, int)", 140_000,
                   34e6, 16.8e6, 2.6e7, (32, 64, 1), (256, 1, 1), regs=96, smem=32_768, occ=24.0, wr_sd=0.006),
    "scan": Kernel("void cub::CUB_200200_900_NS::DeviceScanKernel<cub::CUB_200200_900_NS::DeviceScanPolicy<int, "
                   "cub::Sum>::Policy900, const int *, int *, cub::ScanTileState<int, true>, cub::Sum, "
                   "cub::NullType, unsigned int, int, false>(T2, T3, T4, int, T5, T6, T7)",
                   5_100, 4.2e6, 4.2e6, 2.9e5, (1093, 1, 1), (128, 1, 1), regs=40, occ=58.0, wr_sd=0.02),
}
