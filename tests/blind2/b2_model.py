"""Blind set 2: the kernels, the programs that launch them, and the noise model of one measured run.

Written without reading perfgate's engine or its verdict families. The noise constants below are this set's
own (see README.md, "Noise model"); cases.py sizes its expectations from the same constants.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

# ---- noise constants (one measured run under ncu --clock-control base --cache-control all) ----
RUN_CLOCK_SD = 0.004          # a run's clock factor N(1, 0.4%): every launch of the run shares it
BIG_KERNEL_SD = 0.005         # per-launch log-normal sigma for kernels of 20 us and more
TINY_EXTRA_SD = 0.010         # added to the sigma linearly as a kernel shrinks from 20 us to 10 us and below
ADD_SD_NS = 60.0              # additive per-launch timer/launch jitter, normal part
ADD_EXP_NS = 40.0             # additive per-launch jitter, one-sided (exponential) part
TIME_QUANTUM_NS = 32          # gpu__time_duration ticks (real H100 raw pages: multiples of 32 ns)
BIMODAL_FACTOR = 1.07         # a bimodal kernel's slow mode
BIMODAL_P = 0.35
READ_REL_SD = 0.0015          # DRAM read: x N(1, 0.15%) + |N(0, 1 KB)|
READ_ADD_SD = 1024.0
WRITE_REL_SD = 0.008          # DRAM write: x N(1, 0.8%) + N(0, 24 KB) (L2 write-back timing)
WRITE_ADD_SD = 24576.0
ATOMIC_INST_SD = 0.0003       # data-dependent instruction counts (atomics, early exits): x N(1, 0.03%)
BYTE_QUANTUM = 32             # DRAM traffic is counted in 32-byte sectors
BACKGROUND_P = 0.001          # unplanned interference: a launch slowed x U(1.1, 1.5) with this probability


def launch_sd(t_ns: float) -> float:
    """Relative standard deviation of one launch's duration (without the run factor)."""
    rel = BIG_KERNEL_SD + TINY_EXTRA_SD * min(max((20000.0 - t_ns) / 10000.0, 0.0), 1.0)
    add = math.hypot(ADD_SD_NS, ADD_EXP_NS) / t_ns
    return math.hypot(rel, add)


@dataclass(frozen=True)
class Kernel:
    name: str                      # ncu's "Kernel Name" (demangled, with parameters where C++ has them)
    t: float                       # true duration, ns
    rd: float                      # DRAM bytes read
    wr: float                      # DRAM bytes written
    inst: float                    # warp instructions executed
    grid: tuple[int, int, int] = (128, 1, 1)
    block: tuple[int, int, int] = (256, 1, 1)
    regs: int = 64
    smem: int = 0
    stream: int = 7
    mode: str = "normal"           # normal | bimodal | atomic


XMMA = ("sm90_xmma_gemm_f16f16_f16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_execute_segment_k_off_"
        "kernel__5x_cublas")
NVJET = "nvjet_hsh_128x256_64x4_2x1_v_bz_coopA_TNN"
SPLITK = ("void cublasLt::splitKreduce_kernel<32, 16, int, float, __half, float, __half, false, false, false>"
          "(cublasLt::cublasSplitKParams<float>, const float *, const __half *, __half *, const float *, "
          "const float *, const __half *, const float *, __half *, void *, long, float *, int *)")
ELEM = "void at::native::vectorized_elementwise_kernel<4, {}, std::array<char *, {}>>(int, T2, T3)"
LN = ("void at::native::(anonymous namespace)::vectorized_layer_norm_kernel<c10::Half, float>(int, float, "
      "const T1 *, const T1 *, const T1 *, T2 *, T2 *, T1 *)")
SOFTMAX = ("void at::native::(anonymous namespace)::cunn_SoftMaxForward<4, c10::Half, float, c10::Half, "
           "at::native::(anonymous namespace)::SoftMaxForwardEpilogue>(T4 *, const T2 *, int)")
FLASH = ("void pytorch_flash::flash_fwd_kernel<Flash_fwd_kernel_traits<128, 128, 64, 4, false, false, "
         "cutlass::half_t, Flash_kernel_traits<128, 128, 64, 4, cutlass::half_t>>, false, false, false, false, "
         "true, true, false>(pytorch_flash::Flash_fwd_params)")

CATALOG: dict[str, Kernel] = {
    "gemm": Kernel(XMMA, 180000, 50331648, 16777216, 41943040, (16, 32, 1), (384, 1, 1), 168, 229376),
    "gemm_big": Kernel(XMMA.replace("128x128x64", "256x128x64"), 1200000, 301989888, 67108864, 268435456,
                       (32, 16, 1), (384, 1, 1), 168, 232448),
    "nvjet": Kernel(NVJET, 180000, 57880576, 16777216, 29360128, (8, 66, 1), (384, 1, 1), 168, 232448),
    "splitk": Kernel(SPLITK, 14000, 8388608, 4194304, 1310720, (512, 1, 1), (256, 1, 1), 32),
    "gelu": Kernel(ELEM.format("at::native::GeluCUDAKernelImpl(at::TensorIteratorBase &, at::native::GeluType)"
                               "::[lambda() (instance 2)]::operator ()() const::[lambda(c10::Half) (instance 1)]",
                               2), 24000, 16777216, 16777216, 3145728, (8192, 1, 1), (128, 1, 1), 30),
    "add": Kernel(ELEM.format("at::native::CUDAFunctor_add<c10::Half>", 3), 31000, 33554432, 16777216, 2621440,
                  (8192, 1, 1), (128, 1, 1), 26),
    "fill": Kernel(ELEM.format("at::native::FillFunctor<float>", 1), 3000, 0, 262144, 20480, (64, 1, 1),
                   (128, 1, 1), 16),
    "cast": Kernel(ELEM.format("at::native::direct_copy_kernel_cuda(at::TensorIteratorBase &)::[lambda() "
                               "(instance 3)]::operator ()() const::[lambda(float) (instance 1)]", 2),
                   4000, 131072, 65536, 24576, (64, 1, 1), (128, 1, 1), 20),
    "ln": Kernel(LN, 12000, 8388608, 8388608, 1572864, (4096, 1, 1), (256, 1, 1), 40),
    "softmax": Kernel(SOFTMAX, 40000, 33554432, 33554432, 5242880, (8192, 1, 1), (256, 1, 1), 38),
    "flash": Kernel(FLASH, 310000, 67108864, 16777216, 88080384, (16, 32, 1), (128, 1, 1), 255, 49152),
    "rmsnorm": Kernel("rmsnorm_kernel(const __half *, const __half *, __half *, int, float)", 9000,
                      4194304, 4194304, 786432, (2048, 1, 1), (256, 1, 1), 32),
    "rope": Kernel("void apply_rotary_kernel<__half, 128>(__half *, const float *, int, int)", 6000, 2097152,
                   2097152, 393216, (1024, 1, 1), (128, 1, 1), 40),
    "argmax": Kernel("void topk_argmax_kernel<float, 256>(const float *, int *, int)", 2500, 65536, 1024, 12288,
                     (32, 1, 1), (256, 1, 1), 48, 0, 7, "atomic"),
    "hist": Kernel("histogram_atomic_kernel(const int *, unsigned int *, int)", 45000, 16777216, 65536,
                   4194304, (1024, 1, 1), (256, 1, 1), 24, 4096, 7, "atomic"),
    "tri_mm": Kernel("triton_tem_fused_addmm_0", 150000, 46137344, 16777216, 37748736, (64, 16, 1), (128, 1, 1),
                     192, 98304),
    "tri_poi": Kernel("triton_poi_fused_add_gelu_1", 21000, 16777216, 16777216, 2883584, (4096, 1, 1),
                      (128, 1, 1), 28),
    "tri_red": Kernel("triton_red_fused_native_layer_norm_2", 15000, 8388608, 8388608, 1835008, (4096, 1, 1),
                      (256, 1, 1), 44, 0, 7, "bimodal"),
    "nccl_like": Kernel("void scatter_gather_kernel<256>(const float *, float *, const long *, int)", 55000,
                        25165824, 25165824, 6291456, (2048, 1, 1), (256, 1, 1), 36, 0, 7, "bimodal"),
    "conv": Kernel("sm80_xmma_fprop_implicit_gemm_indexed_f16f16_f16f32_f32_nhwckrsc_nhwc_tilesize128x128x32_stage4_"
                   "warpsize2x2x1_g1_tensor16x8x16_execute_kernel__5x_cudnn", 95000, 29360128, 12582912,
                   23068672, (392, 1, 1), (128, 1, 1), 128, 81920),
    "bn": Kernel("void cudnn::bn_fw_tr_1C11_kernel_NCHW<__half, float, 512, true, 1>(cudnnTensorStruct, const "
                 "__half *, cudnnTensorStruct, __half *, const float *, const float *, float, float, float *, "
                 "float *, float *, float *, float, float)", 28000, 25165824, 12582912, 3670016, (256, 1, 1),
                 (512, 1, 1), 40),
}


def kernel(key: str, over: dict[str, Any] | None = None) -> Kernel:
    """A catalog kernel, with a case's overrides (lists become tuples)."""
    k = CATALOG[key]
    if not over:
        return k
    fixed = {f: (tuple(v) if isinstance(v, list) else v) for f, v in over.items()}
    return replace(k, **fixed)


@dataclass(frozen=True)
class Launch:
    k: Kernel
    region: str        # NVTX push/pop stack, outermost first, joined by " > "; "" when none
    factor: float      # planted time factor (a regression, an improvement, an interference)
    rd: float = 1.0
    wr: float = 1.0
    inst: float = 1.0


def measure(launches: list[Launch], rng: np.random.Generator, env: dict[str, Any]) -> list[dict[str, Any]]:
    """One measured run of these launches: the values ncu would print."""
    clock = rng.normal(1.0, RUN_CLOCK_SD) * env.get("clock", 1.0)
    drift = env.get("drift", [1.0, 1.0])
    n = len(launches)
    out = []
    for i, la in enumerate(launches):
        k = la.k
        pos = i / max(n - 1, 1)
        t = k.t * la.factor * clock * (drift[0] + (drift[1] - drift[0]) * pos)
        rel = BIG_KERNEL_SD + TINY_EXTRA_SD * min(max((20000.0 - k.t) / 10000.0, 0.0), 1.0)
        t *= math.exp(rng.normal(0.0, rel))
        if k.mode == "bimodal" and rng.random() < BIMODAL_P:
            t *= BIMODAL_FACTOR
        if rng.random() < env.get("background", BACKGROUND_P):
            t *= rng.uniform(1.1, 1.5)
        t += rng.normal(0.0, ADD_SD_NS) + rng.exponential(ADD_EXP_NS)
        t = max(TIME_QUANTUM_NS, round(t / TIME_QUANTUM_NS) * TIME_QUANTUM_NS)
        rd = k.rd * la.rd * rng.normal(1.0, READ_REL_SD) + abs(rng.normal(0.0, READ_ADD_SD))
        wr = max(0.0, k.wr * la.wr * rng.normal(1.0, WRITE_REL_SD) + rng.normal(0.0, WRITE_ADD_SD))
        inst = k.inst * la.inst
        if k.mode == "atomic":
            inst *= rng.normal(1.0, ATOMIC_INST_SD)
        out.append({
            "name": k.name, "region": la.region, "grid": k.grid, "block": k.block, "regs": k.regs,
            "smem": k.smem, "stream": k.stream, "t": int(t),
            "rd": int(round(rd / BYTE_QUANTUM) * BYTE_QUANTUM), "wr": int(round(wr / BYTE_QUANTUM) * BYTE_QUANTUM),
            "inst": int(round(inst)), "occ": round(float(rng.normal(62.0, 0.4)), 2),
        })
    return out
