"""Blind set 4: the devices, the kernels' true work, and this set's own noise model.

Physics, not perfgate: a kernel's FLOP count is what its SASS thread instructions do (FP32 `fadd + fmul + 2 ffma`,
FP64 `dadd + dmul + 2 dfma`, FP16 `2 hadd + 2 hmul + 4 hfma`, docs/roofline.md and ncu's roofline sections), its
roof at intensity AI is min(FP32 peak, AI x DRAM peak), peaks are peak-per-cycle x the measured clock. Kernels are
defined by what an engineer knows of them (duration, where they sit on the roof, intensity, instruction mix) and
their counters are derived from that.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

# Per-cycle peaks as ncu reports them (`….peak_sustained`) and the clocks under --clock-control base.
DEVICES: dict[str, dict[str, Any]] = {
    # H100 SXM5: 132 SMs x 128 FP32 lanes; HBM3 5120-bit at 2.619 GHz (1280 B/cycle, 3.35 TB/s).
    "h100": {"name": "NVIDIA H100 80GB HBM3", "cc": "9.0", "ffma_peak": 16896.0, "sm_clk": 1.5675e9,
             "dram_peak": 1280.0, "dram_clk": 2.619e9},
    # A100 SXM4 80GB: 108 SMs x 64 FP32 lanes; HBM2e at 1.593 GHz (1280 B/cycle, 2.04 TB/s).
    "a100": {"name": "NVIDIA A100-SXM4-80GB", "cc": "8.0", "ffma_peak": 6912.0, "sm_clk": 1.275e9,
             "dram_peak": 1280.0, "dram_clk": 1.593e9},
}
FLOP_PER_INST = {"fadd": 1, "fmul": 1, "ffma": 2, "dadd": 1, "dmul": 1, "dfma": 2, "hadd": 2, "hmul": 2, "hfma": 4}
OPS = tuple(FLOP_PER_INST)


def peak_flop(dev: str) -> float:
    d = DEVICES[dev]
    return 2.0 * d["ffma_peak"] * d["sm_clk"]


def peak_bytes(dev: str) -> float:
    d = DEVICES[dev]
    return d["dram_peak"] * d["dram_clk"]


@dataclass(frozen=True)
class Kernel:
    """A kernel's true values at one launch: time (ns), SASS FP thread-instruction counts, DRAM bytes, warp insts."""
    name: str
    t: float
    ops: dict[str, float]
    rd: float
    wr: float
    inst: float
    grid: tuple[int, int, int] = (1024, 1, 1)
    block: tuple[int, int, int] = (256, 1, 1)
    regs: int = 32
    smem: int = 0
    occ: float = 60.0
    tensor: float = 0.0          # dense tensor-core operations (sm__ops_path_tensor_src_fp16.sum), 0: none
    dev: str = "h100"
    extra: dict[str, float] = field(default_factory=dict)


def make(name: str, dev: str, t_us: float, *, flop: float = 0.0, pct: float | None = None, ai: float | None = None,
         mix: dict[str, float] | None = None, bytes_: float | None = None, bw: float | None = None,
         wr_frac: float = 0.25, other_inst: float = 0.0, **kw: Any) -> Kernel:
    """A kernel from what an engineer knows: its time, FLOP (or % of the FP32 roof), intensity (or bytes or
    fraction of DRAM bandwidth), the FLOP's instruction mix; warp instructions = FP thread insts / 32 + the rest."""
    t = t_us * 1e3
    if pct is not None:
        flop = pct / 100.0 * peak_flop(dev) * t * 1e-9
    if bw is not None:
        bytes_ = bw / 100.0 * peak_bytes(dev) * t * 1e-9
    if bytes_ is None:
        bytes_ = flop / ai if ai else 0.0
    if ai is not None and flop == 0.0 and pct is None:
        flop = ai * bytes_
    mix = mix or {"ffma": 1.0}
    ops = {op: float(round(flop * share / FLOP_PER_INST[op])) for op, share in mix.items()}
    fp_inst = sum(ops.values()) / 32.0
    rd = float(round(bytes_ * (1.0 - wr_frac) / 32.0) * 32)
    wr = float(round(bytes_ * wr_frac / 32.0) * 32)
    inst = float(round(fp_inst + other_inst if other_inst else max(fp_inst * 1.4, 1000.0)))
    return Kernel(name=name, t=t, ops=ops, rd=rd, wr=wr, inst=inst, dev=dev, **kw)


def flop_of(ops: dict[str, float]) -> float:
    return sum(FLOP_PER_INST[op] * n for op, n in ops.items())


def changed(k: Kernel, mod: dict[str, Any]) -> Kernel:
    """A code change: `t`, `rd`, `wr`, `inst`, `tensor` scale those; `flop` scales every FP counter, an op name
    scales that counter; `set_ops` replaces the counters; `add_rd`/`add_wr` add bytes; `clk` is the SM clock the run had (x the base)."""
    ops = dict(mod["set_ops"]) if "set_ops" in mod else dict(k.ops)
    for op in OPS:
        if op in mod:
            ops[op] = ops.get(op, 0.0) * mod[op]
    if "flop" in mod:
        ops = {op: n * mod["flop"] for op, n in ops.items()}
    ops = {op: float(round(n)) for op, n in ops.items()}
    extra = dict(k.extra)
    if "clk" in mod:
        extra["clk"] = extra.get("clk", 1.0) * mod["clk"]
    rd = round((k.rd * mod.get("rd", 1.0) + mod.get("add_rd", 0.0)) / 32) * 32
    wr = round((k.wr * mod.get("wr", 1.0) + mod.get("add_wr", 0.0)) / 32) * 32
    return replace(k, ops=ops, t=k.t * mod.get("t", 1.0), rd=float(rd), wr=float(wr),
                   inst=float(round(k.inst * mod.get("inst", 1.0))), tensor=k.tensor * mod.get("tensor", 1.0),
                   extra=extra)


# The noise model (README.md): per side a run factor on every duration; per launch a relative and an absolute
# jitter; DRAM reads steady, writes depend on L2 evictions; clocks locked (tiny jitter); every count exact.
SIGMA = {"run": 0.0025, "launch": 0.0025, "launch_ns": 40.0, "rd": 0.001, "rd_b": 512.0, "wr": 0.015,
         "sm_clk": 0.0003, "dram_clk": 0.0001}


def measure(k: Kernel, rng: np.random.Generator, run: np.ndarray, size: int) -> dict[str, np.ndarray]:
    """`size` draws of one launch's measured values (the side's run factor `run` is shared by its launches)."""
    d = DEVICES[k.dev]
    n = rng.standard_normal((7, size))
    t = k.t * run * (1.0 + SIGMA["launch"] * n[0]) + SIGMA["launch_ns"] * n[1]
    out = {"t": np.maximum(np.round(t), 1.0),
           "rd": np.maximum(np.round((k.rd * (1 + SIGMA["rd"] * n[2]) + SIGMA["rd_b"] * n[6] * (k.rd > 0)) / 32) * 32, 0),
           "wr": np.maximum(np.round(k.wr * (1 + SIGMA["wr"] * n[3]) / 32) * 32, 0),
           "sm_clk": d["sm_clk"] * k.extra.get("clk", 1.0) * (1 + SIGMA["sm_clk"] * n[4]),
           "dram_clk": d["dram_clk"] * (1 + SIGMA["dram_clk"] * n[5]),
           "inst": np.full(size, k.inst), "tensor": np.full(size, k.tensor)}
    for op in OPS:
        out[op] = np.full(size, k.ops.get(op, 0.0))
    return out


def run_factor(rng: np.random.Generator, size: int) -> np.ndarray:
    return np.asarray(1.0 + SIGMA["run"] * rng.standard_normal(size))


def roofline(m: dict[str, np.ndarray], dev: str) -> dict[str, np.ndarray]:
    """docs/roofline.md's derived metrics of measured values (nan where a formula has no value)."""
    d = DEVICES[dev]
    flop = sum(FLOP_PER_INST[op] * m[op] for op in OPS)
    secs = m["t"] * 1e-9
    nbytes = m["rd"] + m["wr"]
    pf = 2.0 * d["ffma_peak"] * m["sm_clk"]
    pb = d["dram_peak"] * m["dram_clk"]
    with np.errstate(divide="ignore", invalid="ignore"):
        ai = np.where(nbytes > 0, flop / np.where(nbytes > 0, nbytes, 1), np.inf)
        roof = np.minimum(pf, ai * pb)
        pct = np.where(roof > 0, flop / secs / np.where(roof > 0, roof, 1) * 100.0, np.nan)
    return {"flop": flop, "secs": secs, "roof": roof, "pct": pct, "ai": ai, "ridge": pf / pb}


def catalog() -> dict[str, Kernel]:
    """The kernels the cases are made of (README.md's table)."""
    fp32 = {"ffma": 0.98, "fadd": 0.01, "fmul": 0.01}
    ks = [
        make("sgemm_tiled", "h100", 800, pct=70, ai=60, mix=fp32, wr_frac=0.1, grid=(32, 32, 1), block=(256, 1, 1),
             regs=128, smem=32768, occ=25.0),
        make("sgemm_naive", "h100", 2000, pct=18, ai=20, mix=fp32, wr_frac=0.1, grid=(128, 128, 1),
             block=(16, 16, 1), regs=40),
        make("sgemm_62", "h100", 500, pct=62, ai=40, mix=fp32, wr_frac=0.1, grid=(32, 16, 1), regs=96),
        make("sgemm_90", "h100", 400, pct=90, ai=80, mix=fp32, wr_frac=0.1, grid=(64, 16, 1), regs=168),
        make("sgemm_55", "h100", 600, pct=55, ai=50, mix=fp32, wr_frac=0.1, grid=(32, 24, 1), regs=110),
        make("vector_add", "h100", 80, bw=85, ai=1 / 12, mix={"fadd": 1.0}, wr_frac=1 / 3, grid=(65536, 1, 1)),
        make("saxpy", "h100", 120, bw=80, ai=2 / 12, mix={"ffma": 1.0}, wr_frac=1 / 3, grid=(98304, 1, 1)),
        make("layernorm_fwd", "h100", 60, bw=60, ai=0.6, mix={"fadd": 0.4, "fmul": 0.3, "ffma": 0.3}, wr_frac=0.5,
             grid=(8192, 1, 1), block=(128, 1, 1)),
        make("softmax_fwd", "h100", 45, bw=65, ai=1.5, mix={"fadd": 0.3, "fmul": 0.3, "ffma": 0.4}, wr_frac=0.5,
             grid=(4096, 1, 1), block=(128, 1, 1)),
        make("stencil_7pt", "h100", 250, bw=75, ai=14, mix={"ffma": 0.8, "fadd": 0.2}, wr_frac=0.3,
             grid=(512, 64, 1), block=(32, 8, 1)),
        make("reduce_sum", "h100", 70, bw=70, ai=0.25, mix={"fadd": 1.0}, wr_frac=0.001, grid=(1024, 1, 1)),
        make("copy_kernel", "h100", 100, bw=90, mix={}, wr_frac=0.5, grid=(65536, 1, 1), other_inst=9.0e6),
        make("tiny_scale", "h100", 3, bw=40, ai=0.5, mix={"fmul": 1.0}, wr_frac=0.5, grid=(256, 1, 1)),
        make("fma_loop", "h100", 200, pct=80, bytes_=0.0, mix={"ffma": 1.0}, grid=(1056, 1, 1)),
        make("empty_kernel", "h100", 2, flop=0.0, bytes_=0.0, mix={}, grid=(1, 1, 1), block=(32, 1, 1),
             other_inst=20.0),
        make("dgemm", "h100", 1000, pct=40, ai=30, mix={"dfma": 0.98, "dadd": 0.02}, wr_frac=0.1, grid=(32, 32, 1),
             regs=128),
        make("hgemm_simt", "h100", 300, pct=190, ai=100, mix={"hfma": 0.98, "hadd": 0.02}, wr_frac=0.1,
             grid=(32, 32, 1), regs=128),
        make("hgemm_wmma", "h100", 250, flop=0.015 * peak_flop("h100") * 250e-6, bytes_=2.0e8,
             mix={"fmul": 0.5, "fadd": 0.5}, wr_frac=0.2, grid=(66, 2, 1), block=(384, 1, 1), regs=168,
             tensor=0.6 * 7.83e14 * 250e-6, other_inst=4.0e7),
        make("sgemm_tiled", "a100", 1500, pct=70, ai=60, mix=fp32, wr_frac=0.1, grid=(32, 32, 1), regs=128,
             smem=32768, occ=25.0),
        make("vector_add", "a100", 130, bw=85, ai=1 / 12, mix={"fadd": 1.0}, wr_frac=1 / 3, grid=(65536, 1, 1)),
    ]
    return {(k.name if k.dev == "h100" else f"{k.name}@{k.dev}"): k for k in ks}
