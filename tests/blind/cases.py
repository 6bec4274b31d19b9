"""The blind set's cases: what each run's two sides launch (before noise), and what the gate should say.

The expected verdicts (`expect`, `blame`, `names`) were fixed before perfgate ran on any case and are
dumped to cases.json (`python tests/blind/cases.py` writes it; run.py refuses to run when they differ).
Expectations use the default thresholds as docs/configuration.md states them: duration 5%+2 µs (both
parts must be exceeded), DRAM read 2%+4 KB, DRAM write 10%+256 KB, instructions 1%, benchmark min
time 20% (+ significance with raw rounds). `fail` means a regression of at least 1.5x the threshold.
"""

from __future__ import annotations

import json
import random
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from gen import Bench, Launch, Side, kernel, scaled  # noqa: E402

XMMA = ("sm90_xmma_gemm_f32f32_f32f32_f32_tn_n_tilesize128x128x8_stage3_warpsize2x2x1_ffma_aligna4_alignc4"
        "_execute_kernel__5x_cublas")
XMMA_SPLITK = ("sm90_xmma_gemm_f32f32_f32f32_f32_tn_n_tilesize128x128x8_stage3_warpsize2x2x1_ffma_aligna4_alignc4"
               "_splitK_execute_kernel__5x_cublas")
SPLITK_REDUCE = ("void cublasLt::splitKreduce_kernel<32, 16, int, float, float, float, float, false, false, false>"
                 "(cublasLt::cublasSplitKParams<float>, const float *, const float *, float *, const float *, "
                 "const float *, const float *, const float *, float *, void *, long, float *, int *)")
NVJET = "nvjet_tst_128x256_64x4_2x1_v_bz_coopA_NTN"
GELU = ("void at::vectorized_elementwise_kernel<4, at::GeluCUDAKernelImpl(at::TensorIteratorBase &, at::GeluType)"
        "::[lambda() (instance 2)]::operator ()() const::[lambda() (instance 2)]::operator ()() const::"
        "[lambda(float) (instance 1)], std::array<char *, 2>>(int, T2, T3)")
ADD = "void at::vectorized_elementwise_kernel<4, at::CUDAFunctor_add<float>, std::array<char *, 3>>(int, T2, T3)"
MUL = "void at::vectorized_elementwise_kernel<4, at::MulFunctor<float>, std::array<char *, 3>>(int, T2, T3)"
SOFTMAX = ("void at::native::(anonymous namespace)::cunn_SoftMaxForward<4, float, float, float, "
           "at::native::(anonymous namespace)::SoftMaxForwardEpilogue>(T4 *, const T2 *, int)")
LAYERNORM = ("void at::native::(anonymous namespace)::vectorized_layer_norm_kernel<float, float>"
             "(int, T2, const T1 *, const T1 *, const T1 *, T2 *, T2 *, T1 *)")
REDUCE = ("void at::reduce_kernel<512, 1, at::ReduceOp<float, at::func_wrapper_t<float, at::sum_functor<float, "
          "float, float>::operator ()(at::TensorIterator &)::[lambda(float, float) (instance 1)]>, unsigned int, "
          "float, 4, 4>>(T3)")
CUTLASS = "void cutlass::Kernel2<cutlass_80_simt_sgemm_128x256_8x4_nt_align1>(cutlass_80_simt_sgemm_128x256_8x4_nt_align1::Params)"
COPY = ("void at::native::unrolled_elementwise_kernel<at::native::direct_copy_kernel_cuda(at::TensorIteratorBase &)"
        "::[lambda() (instance 3)]::operator ()() const::[lambda(float) (instance 1)], std::array<char *, 2>, 4, "
        "TrivialOffsetCalculator<1, unsigned int>, TrivialOffsetCalculator<1, unsigned int>, "
        "at::native::memory::LoadWithoutCast, at::native::memory::StoreWithoutCast>(int, T1, T2, T3, T4, T5, T6)")

Pair = tuple[Side, Side]
Build = Callable[[random.Random], Pair]


@dataclass
class Case:
    id: str
    family: str
    expect: str  # pass | fail | not-silent | any (not counted)
    why: str
    build: Build | None = None  # ncu cases
    bench: tuple[list[Bench], list[Bench], int, bool] | None = None  # base, current, rounds, raw data
    history: bool = False  # `compare --history` against six recorded runs of main
    blame: list[str] = field(default_factory=list)  # k:<kernel substring> or r:<region total>
    names: list[str] = field(default_factory=list)  # not-silent: what a note must name
    reruns: int = 3
    # True where the change is >= 1.5x the threshold only summed over a kernel's launches, not per launch
    # (docs/matching.md: "at least 2 µs for one launch"): the table is also printed without these cases
    ambiguous: bool = False


def gemm(t_us: float, grid: tuple[int, int, int] = (32, 16, 1), name: str = XMMA, **kw: object) -> Launch:
    kw.setdefault("regs", 255)
    kw.setdefault("smem_dyn", 33_792)
    kw.setdefault("occ", 12.3)
    kw.setdefault("dram_r", t_us * 100_000.0)
    kw.setdefault("dram_w", t_us * 24_000.0)
    kw.setdefault("inst", int(t_us * 720_000))
    return kernel(name, grid, (128, 1, 1), t_us, **kw)  # type: ignore[arg-type]


def ew(name: str, t_us: float, **kw: object) -> Launch:
    """An elementwise kernel: its grid follows the tensor, hence its time."""
    return kernel(name, (max(1, int(t_us * 400)), 1, 1), (128, 1, 1), t_us, regs=28, occ=78.0,
                  **kw)  # type: ignore[arg-type]


def at(launch: Launch, *region: str, stream: int = 7) -> Launch:
    return Launch(**{**launch.__dict__, "region": tuple(region), "stream": stream})


# ---------------------------------------------------------------- tiny kernels (issue 35)
def _tiny_build(d_us: float, n: int, shift: float) -> Build:
    def build(rng: random.Random) -> Pair:
        tiny = ew(ADD, d_us)
        norm = kernel(LAYERNORM, (512, 1, 1), (256, 1, 1), 25.0, regs=40, occ=70.0)
        base = [at(x, "decode") for _ in range(n) for x in (norm, tiny)]
        cur = [at(x, "decode") for _ in range(n) for x in (norm, scaled(tiny, time=1 + shift))]
        return Side(base), Side(cur)
    return build


def _tiny_expect(d_us: float, n: int, shift: float) -> tuple[str, str]:
    summed = d_us * n * shift  # µs the kernel costs the step more
    if shift == 0:
        return "pass", "unchanged"
    if shift >= 0.075 and summed >= 3.0:
        return "fail", f"+{shift:.0%}, {summed:.1f} µs summed over its {n} launches: >= 1.5x of 5%+2 µs"
    if summed <= 1.5:
        return "pass", f"{summed:.2f} µs in all: below the 2 µs absolute part"
    return "any", f"{summed:.2f} µs: between 0.75x and 1.5x of the threshold"


def tiny_cases() -> list[Case]:
    out = []
    for d in (2.0, 5.0, 10.0):
        for n in (1, 20, 200):
            for s in (0.0, 0.08, 0.15, 0.30):
                expect, why = _tiny_expect(d, n, s)
                out.append(Case(f"tiny-{d:g}us-x{n}-{s:+.0%}", "tiny", expect,
                                f"add kernel {d:g} µs x{n} beside a 25 µs layer norm: {why}",
                                build=_tiny_build(d, n, s), blame=["k:CUDAFunctor_add", "r:decode"],
                                ambiguous=expect == "fail" and d * s < 3.0))
    return out


# ---------------------------------------------------------------- interference and call sites (issue 35)
def _loop(rng: random.Random, iters: int = 40, region: tuple[str, ...] = ("train_loop",),
          change: Callable[[int, int, Launch], Launch] | None = None, gelu_sites: int = 1) -> list[Launch]:
    step = [gemm(120.0), kernel(SOFTMAX, (4096, 1, 1), (128, 1, 1), 18.0, regs=32, occ=85.0)]
    step += [ew(GELU, 20.0)] * gelu_sites + [ew(ADD, 6.0)]
    out = []
    for i in range(iters):
        for j, launch in enumerate(step):
            launch = change(i, j, launch) if change else launch
            out.append(at(launch, *region))
    return out


def _outliers(hits: list[tuple[int, int]], factor: float = 1.3, region: tuple[str, ...] = ("train_loop",)) -> Build:
    def build(rng: random.Random) -> Pair:
        where = {(rng.randrange(40), j) for _, j in hits}
        def hit(i: int, j: int, launch: Launch) -> Launch:
            return scaled(launch, slow=factor) if (i, j) in where else launch
        return Side(_loop(rng, region=region), quiet=True), Side(_loop(rng, region=region, change=hit), quiet=True)
    return build


def _call_site(kernel_index: int, factor: float, outlier: int | None = None, gelu_sites: int = 1,
               site: int | None = None) -> Build:
    def build(rng: random.Random) -> Pair:
        bad = rng.randrange(40)
        def change(i: int, j: int, launch: Launch) -> Launch:
            if j == kernel_index:
                launch = scaled(launch, time=factor)
            if outlier is not None and j == outlier and i == bad:
                launch = scaled(launch, slow=1.3)
            return launch
        base = _loop(rng, gelu_sites=gelu_sites)
        return Side(base, quiet=True), Side(_loop(rng, change=change, gelu_sites=gelu_sites), quiet=True)
    return build


def _burst(rng: random.Random) -> Pair:
    hit_at = rng.randrange(40)
    def hit(i: int, j: int, launch: Launch) -> Launch:
        return scaled(launch, slow=1.3) if i == hit_at and j < 3 else launch
    return Side(_loop(rng), quiet=True), Side(_loop(rng, change=hit), quiet=True)


def interference_cases() -> list[Case]:
    fam = "interference"
    return [
        Case("outlier-softmax", fam, "pass", "one softmax launch of 40 +30% (another process): unchanged code",
             build=_outliers([(0, 1)])),
        Case("outlier-gemm", fam, "pass", "one 120 µs GEMM launch of 40 +30%: unchanged code",
             build=_outliers([(0, 0)])),
        Case("outlier-add", fam, "pass", "one 6 µs add launch of 40 +30%: unchanged code", build=_outliers([(0, 3)])),
        Case("outlier-two", fam, "pass", "a +30% outlier on softmax and one on GELU, other iterations",
             build=_outliers([(0, 1), (0, 2)])),
        Case("outlier-no-nvtx", fam, "pass", "one softmax launch of 40 +30%, no NVTX region",
             build=_outliers([(0, 1)], region=())),
        Case("outlier-burst", fam, "pass", "GEMM, softmax and GELU of one iteration all +30% (a burst of load)",
             build=_burst),
        Case("callsite-softmax", fam, "fail", "softmax +20% (3.6 µs) in all 40 iterations",
             build=_call_site(1, 1.20),
             blame=["k:cunn_SoftMaxForward", "r:train_loop"]),
        Case("callsite-softmax-outlier", fam, "fail", "softmax +20% every iteration and one GEMM +30% outlier",
             build=_call_site(1, 1.20, outlier=0), blame=["k:cunn_SoftMaxForward", "r:train_loop"]),
        Case("callsite-gemm", fam, "fail", "the 120 µs GEMM +10% in all 40 iterations", build=_call_site(0, 1.10),
             blame=["k:xmma_gemm", "r:train_loop"]),
        Case("callsite-gelu-one-of-two", fam, "fail",
             "GELU launched at two call sites per iteration (one identity); the second site +20% every "
             "iteration: the kernel's time +10% over its 80 launches (80 µs summed)",
             build=_call_site(3, 1.20, gelu_sites=2), blame=["k:GeluCUDAKernelImpl", "r:train_loop"]),
        Case("callsite-gelu-two-unchanged", fam, "pass", "GELU at two call sites, unchanged (control)",
             build=_call_site(3, 1.0, gelu_sites=2)),
    ]


# ---------------------------------------------------------------- layers added (issue 35)
def _layer(i: int, outer: tuple[str, ...], width: float = 1.0, region: str | None = None) -> list[Launch]:
    name = region or f"layer{i}"
    grid = (int(32 * width), 16, 1)
    return [at(gemm(300.0 * width, grid=grid), *outer, name), at(ew(GELU, 20.0 * width), *outer, name)]


def _layers(n_base: int, n_cur: int, outer: tuple[str, ...] = (), one_region: str | None = None,
            slow_layer: int | None = None) -> Build:
    def build(rng: random.Random) -> Pair:
        base = [x for i in range(n_base) for x in _layer(i, outer, region=one_region)]
        cur = [x for i in range(n_cur) for x in _layer(i, outer, region=one_region)]
        if slow_layer is not None:
            cur = [scaled(x, time=1.15) if x.region[-1] == f"layer{slow_layer}" and "xmma" in x.kernel else x
                   for x in cur]
        return Side(base), Side(cur)
    return build


def _widths(base_w: list[float], cur_w: list[float]) -> Build:
    def build(rng: random.Random) -> Pair:
        base = [x for i, w in enumerate(base_w) for x in _layer(i, (), width=w)]
        cur = [x for i, w in enumerate(cur_w) for x in _layer(i, (), width=w)]
        return Side(base), Side(cur)
    return build


def layer_cases() -> list[Case]:
    fam = "layers"
    return [
        Case("layer-appended", fam, "pass", "4 -> 5 identical layers, a region per layer: layer0-3 unchanged",
             build=_layers(4, 5)),
        Case("layer-widths-appended", fam, "pass", "layers of widths 1,2,2,1 -> 1,2,2,1,0.5 (appended)",
             build=_widths([1, 2, 2, 1], [1, 2, 2, 1, 0.5])),
        Case("layer-appended-layer2-slow", fam, "fail", "layer appended, and layer2's GEMM +15% (45 µs)",
             build=_layers(4, 5, slow_layer=2), blame=["k:xmma_gemm", "r:layer2"]),
        Case("layer-appended-nested", fam, "not-silent", "layers nested in 'forward': forward's total +25% "
             "(a real change of the region)", build=_layers(4, 5, outer=("forward",)),
             names=["forward", "layer4"]),
        Case("layer-appended-one-region", fam, "not-silent", "all layers in one region 'model': +25% work",
             build=_layers(4, 5, one_region="model"), names=["model"]),
        Case("layer-inserted-middle-widths", fam, "not-silent", "widths 1,2,2,1 -> 1,2,4,2,1: regions named by "
             "index now hold other layers (layer2 4x wider)", build=_widths([1, 2, 2, 1], [1, 2, 4, 2, 1]),
             names=["layer2", "layer3", "layer4"]),
    ]


# ---------------------------------------------------------------- kernel replacements (issue 35)
def _nvjet(t_us: float) -> Launch:
    return kernel(NVJET, (132, 1, 1), (384, 1, 1), t_us, dram_r=300.0 * 100_000.0 * 1.004,
                  dram_w=300.0 * 24_000.0, inst=int(300.0 * 720_000 * 0.55), regs=168, smem_dyn=197_632, occ=9.4)


def _splitk(t_us: float) -> list[Launch]:
    part = gemm(t_us * 0.95, grid=(32, 16, 4), name=XMMA_SPLITK, inst=int(300.0 * 720_000 * 0.97),
                dram_r=300.0 * 100_000.0 * 0.998, dram_w=300.0 * 24_000.0 * 0.1)
    red = kernel(SPLITK_REDUCE, (256, 1, 1), (512, 1, 1), t_us * 0.05, dram_r=300.0 * 2000.0,
                 dram_w=300.0 * 24_000.0 * 0.95, inst=int(300.0 * 720_000 * 0.02), regs=30, occ=88.0)
    return [part, red]


def _replace(to: str, factor: float, regions: bool = True, neighbours: bool = False) -> Build:
    def build(rng: random.Random) -> Pair:
        def step(new: bool) -> list[Launch]:
            out = []
            for reg in ("qkv", "proj"):
                if reg == "qkv" and new:
                    g = [_nvjet(300.0 * factor)] if to == "nvjet" else _splitk(300.0 * factor)
                else:
                    g = [gemm(300.0)]
                if neighbours:
                    g = [kernel(LAYERNORM, (512, 1, 1), (256, 1, 1), 10.0, regs=40, occ=70.0), *g, ew(ADD, 6.0)]
                out += [at(x, reg) if regions else x for x in g]
            return out
        return Side(step(False)), Side(step(True))
    return build


def replace_cases() -> list[Case]:
    fam = "replace"
    blame = ["k:nvjet", "k:splitK", "k:splitKreduce", "k:xmma_gemm", "r:qkv"]
    return [
        Case("xmma-to-nvjet", fam, "pass", "cuBLAS picks nvjet for qkv, same time and bytes",
             build=_replace("nvjet", 1.0)),
        Case("xmma-to-nvjet-faster", fam, "pass", "nvjet, 10% faster", build=_replace("nvjet", 0.9)),
        Case("xmma-to-nvjet-slower", fam, "fail", "nvjet, qkv region +20% (60 µs)",
             build=_replace("nvjet", 1.2), blame=blame),
        Case("xmma-to-splitk", fam, "pass", "split-K gemm + reduce, same total time and bytes",
             build=_replace("splitk", 1.0)),
        Case("xmma-to-splitk-slower", fam, "fail", "split-K, qkv region +20%", build=_replace("splitk", 1.2),
             blame=blame),
        Case("xmma-to-nvjet-neighbours", fam, "pass", "nvjet between layer norm and add in qkv, same time",
             build=_replace("nvjet", 1.0, neighbours=True)),
        Case("xmma-to-nvjet-neighbours-slower", fam, "fail", "nvjet between layer norm and add, GEMM +20%",
             build=_replace("nvjet", 1.2, neighbours=True), blame=blame),
        Case("xmma-to-nvjet-no-nvtx", fam, "pass", "nvjet replaces one of two GEMMs, no NVTX, same time "
             "(a refusal, exit 2, is counted apart)", build=_replace("nvjet", 1.0, regions=False)),
        Case("xmma-to-nvjet-no-nvtx-slower", fam, "not-silent", "nvjet, no NVTX, +25%",
             build=_replace("nvjet", 1.25, regions=False), names=["nvjet", "xmma"]),
    ]


# ---------------------------------------------------------------- Triton autotune
def _triton(name: str, cfg: int, t_us: float, time: float = 1.0, inst: float = 1.0, dram_r: float = 1.0) -> Launch:
    """Counters follow the problem (t_us), the time follows the config too (time)."""
    if cfg == 0:  # BLOCK_M=128, BLOCK_N=128, num_warps=4, num_stages=3
        grid, block, regs, smem = (512, 1, 1), (128, 1, 1), 168, 98_304
    else:  # BLOCK_M=128, BLOCK_N=256, num_warps=8, num_stages=4
        grid, block, regs, smem = (256, 1, 1), (256, 1, 1), 184, 196_608
    return kernel(name, grid, block, t_us * time, dram_r=t_us * 90_000.0 * dram_r, dram_w=t_us * 20_000.0,
                  inst=int(t_us * 400_000 * inst), regs=regs, smem_dyn=smem, occ=11.5)


def _autotune(name: str, n: int, time: float, inst: float, dram_r: float, new_cfg: int = 1,
              regions: tuple[str, ...] = ("matmul",), t_us: float = 200.0) -> Build:
    def build(rng: random.Random) -> Pair:
        base = [at(_triton(name, 0, t_us), r) for r in regions for _ in range(n)]
        cur = [at(_triton(name, new_cfg, t_us, time, inst, dram_r), r) for r in regions for _ in range(n)]
        return Side(base), Side(cur)
    return build


def triton_cases() -> list[Case]:
    fam = "triton"
    return [
        Case("autotune-same-speed", fam, "pass", "matmul_kernel 128x128/4 warps -> 128x256/8 warps, same time, "
             "8% fewer instructions, same DRAM read", build=_autotune("matmul_kernel", 1, 1.0, 0.92, 1.0)),
        Case("autotune-slower", fam, "fail", "new config +20% time (40 µs)",
             build=_autotune("matmul_kernel", 1, 1.2, 1.0, 1.0), blame=["k:matmul_kernel", "r:matmul"]),
        Case("autotune-faster-more-work", fam, "pass", "new config 15% faster, +10% instructions, +5% DRAM read",
             build=_autotune("matmul_kernel", 1, 0.85, 1.10, 1.05)),
        Case("autotune-unchanged-x10", fam, "pass", "same config, 10 launches (control)",
             build=_autotune("matmul_kernel", 10, 1.0, 1.0, 1.0, new_cfg=0)),
        Case("autotune-same-speed-x10-two-regions", fam, "pass", "config change, 10 launches in each of two "
             "regions, same time", build=_autotune("matmul_kernel", 10, 1.0, 0.92, 1.0, regions=("fwd", "bwd"))),
        Case("autotune-attn-slower-x24", fam, "fail", "_attn_fwd config change, 24 launches, +10% each",
             build=_autotune("_attn_fwd", 24, 1.10, 1.0, 1.0, regions=("attention",), t_us=80.0),
             blame=["k:_attn_fwd", "r:attention"]),
    ]


# ---------------------------------------------------------------- CUDA graphs and streams
def _two_streams(slow: int | None = None, same_identity: bool = False, slow_big: bool = False) -> Build:
    def side(rng: random.Random, change: bool) -> Side:
        a = [ew(ADD, 8.0), kernel(SOFTMAX, (2048, 1, 1), (128, 1, 1), 14.0), ew(GELU, 12.0)]
        b = [ew(MUL, 9.0), kernel(REDUCE, (1, 528, 1), (512, 1, 1), 19.0, regs=38), ew(COPY, 30.0)]
        if same_identity:  # one cuBLAS kernel, same grid, K=1024 on one stream and K=4096 on the other
            a = [gemm(100.0), *a]
            b = [gemm(400.0), *b]
        if change and slow is not None:
            b[slow] = scaled(b[slow], time=1.20)
        if change and slow_big:
            b[0] = scaled(b[0], time=1.15)
        qa = [at(x, "step", stream=13) for x in a]
        qb = [at(x, "step", stream=14) for x in b]
        merged = []
        while qa or qb:  # two host threads: the order ncu sees depends on scheduling
            q = qa if (qa and (not qb or rng.random() < 0.5)) else qb
            merged.append(q.pop(0))
        return Side(merged)
    return lambda rng: (side(rng, False), side(rng, True))


def _graph(slow: bool) -> Build:
    def side(rng: random.Random, change: bool) -> Side:
        out = []
        for _ in range(10):
            branches = [[ew(ADD, 5.0), kernel(LAYERNORM, (512, 1, 1), (256, 1, 1), 12.0)],
                        [ew(MUL, 7.0), kernel(SOFTMAX, (2048, 1, 1), (128, 1, 1), 15.0)],
                        [kernel(REDUCE, (1, 528, 1), (512, 1, 1), 19.0), ew(COPY, 25.0)]]
            if change and slow:
                branches[1][1] = scaled(branches[1][1], time=1.25)
            while any(branches):  # graph nodes of independent branches in any topological order
                br = rng.choice([b for b in branches if b])
                out.append(at(br.pop(0), "graph"))
        return Side(out)
    return lambda rng: (side(rng, False), side(rng, True))


def stream_cases() -> list[Case]:
    fam = "streams"
    return [
        Case("streams-reordered", fam, "pass", "two streams from two host threads, 6 kernels, order varies",
             build=_two_streams()),
        Case("streams-reordered-reduce-slow", fam, "fail", "reordered, and the 19 µs reduce on stream 14 +20%",
             build=_two_streams(slow=1), blame=["k:reduce_kernel", "r:step"]),
        Case("streams-same-identity-reordered", fam, "pass", "one cuBLAS kernel and grid at K=1024 and K=4096 "
             "on two streams (100 and 400 µs), order varies", build=_two_streams(same_identity=True)),
        Case("streams-same-identity-big-slow", fam, "fail", "as above, the K=4096 launch +15% (60 µs)",
             build=_two_streams(same_identity=True, slow_big=True), blame=["k:xmma_gemm", "r:step"]),
        Case("graph-replay-reordered", fam, "pass", "CUDA graph of 3 branches replayed 10x, node order varies",
             build=_graph(False)),
        Case("graph-replay-softmax-slow", fam, "fail", "graph replay, 15 µs softmax node +25% every replay",
             build=_graph(True), blame=["k:cunn_SoftMaxForward", "r:graph"]),
    ]


# ---------------------------------------------------------------- drift
def _mixed_step(layers: int = 4, per_layer_regions: bool = False, slow: str | None = None) -> list[Launch]:
    out = []
    for i in range(layers):
        region = (f"block{i}",) if per_layer_regions else ("step",)
        for launch in (kernel(LAYERNORM, (512, 1, 1), (256, 1, 1), 11.0, regs=40, occ=70.0), gemm(150.0),
                       kernel(SOFTMAX, (4096, 1, 1), (128, 1, 1), 18.0, regs=32, occ=85.0), gemm(60.0, grid=(16, 16, 1)),
                       ew(ADD, 6.0), gemm(240.0, grid=(64, 16, 1)), ew(GELU, 22.0)):
            if slow and slow in launch.kernel:
                launch = scaled(launch, time=1.20)
            out.append(at(launch, *region))
    return out


def _drift(cur_drift: float, base_drift: float = 0.0, regions: bool = False, slow: str | None = None,
           loop: bool = False) -> Build:
    def build(rng: random.Random) -> Pair:
        if loop:
            one = kernel(CUTLASS, (64, 2, 2), (256, 1, 1), 50.0, regs=254, smem_dyn=49_152, occ=12.5)
            return Side([at(one, "loop")] * 40, drift=base_drift), Side([at(one, "loop")] * 40, drift=cur_drift)
        return (Side(_mixed_step(per_layer_regions=regions), drift=base_drift),
                Side(_mixed_step(per_layer_regions=regions, slow=slow), drift=cur_drift))
    return build


def drift_cases() -> list[Case]:
    fam = "drift"
    return [
        Case("drift-5pct", fam, "pass", "current run's durations drift 0 -> +5% (mean +2.5%), 28 launches",
             build=_drift(0.05)),
        Case("drift-5pct-regions", fam, "any", "drift 0 -> +5%, a region per block: the last block's single "
             "launches are +4.3% to +5%, at the threshold (not counted)", build=_drift(0.05, regions=True)),
        Case("drift-3pct-regions", fam, "pass", "drift 0 -> +3%, a region per block: every launch < +3%",
             build=_drift(0.03, regions=True)),
        Case("drift-5pct-baseline", fam, "pass", "the baseline drifted, the current run did not",
             build=_drift(0.0, base_drift=0.05)),
        Case("drift-5pct-loop", fam, "pass", "one 50 µs kernel x40, drift 0 -> +5%", build=_drift(0.05, loop=True)),
        Case("drift-5pct-softmax-slow", fam, "fail", "drift 0 -> +5% and the 18 µs softmax +20%",
             build=_drift(0.05, slow="cunn_SoftMaxForward"), blame=["k:cunn_SoftMaxForward", "r:step"]),
    ]


# ---------------------------------------------------------------- work counters and a plain step
def _counter(kernel_part: str, inst: float = 1.0, dram_r: float = 1.0) -> Build:
    def build(rng: random.Random) -> Pair:
        base = _mixed_step()
        cur = [scaled(x, inst=inst, dram_r=dram_r) if kernel_part in x.kernel else x for x in base]
        return Side(base), Side(cur)
    return build


def mixed_cases() -> list[Case]:
    fam = "counters"
    return [
        Case("step-unchanged", fam, "pass", "4 blocks x 7 kernels, unchanged", build=_counter("none")),
        Case("layernorm-dram-read-6pct", fam, "fail", "layer norm reads 6% more DRAM (same time)",
             build=_counter("vectorized_layer_norm", dram_r=1.06), blame=["k:vectorized_layer_norm", "r:step"]),
        Case("softmax-inst-3pct", fam, "fail", "softmax executes 3% more instructions (same time)",
             build=_counter("cunn_SoftMaxForward", inst=1.03), blame=["k:cunn_SoftMaxForward", "r:step"]),
    ]


# ---------------------------------------------------------------- pytest-benchmark (issue 35)
def bench_cases() -> list[Case]:
    out = []
    for rounds in (3, 5, 7):
        for slow in (1.0, 1.1, 1.5, 6.0):
            for raw in (True, False):
                base = [Bench("test_tokenize", 0.9e-3), Bench("test_histogram", 2.4e-3), Bench("test_parse", 150e-6)]
                cur = [Bench(b.name, b.seconds, slow if b.name == "test_tokenize" else 1.0) for b in base]
                if slow <= 1.1:
                    expect, why = "pass", "min time within 20%" if slow > 1 else "unchanged"
                elif slow >= 6 or not raw or rounds >= 7:
                    expect, why = "fail", f"min time x{slow:g}"
                else:
                    expect, why = "not-silent", f"x{slow:g} with {rounds} noisy rounds: may not be established"
                out.append(Case(f"bench-r{rounds}-x{slow:g}-{'raw' if raw else 'stats'}", "benchmark", expect,
                                f"test_tokenize x{slow:g}, {rounds} rounds a side, "
                                f"{'raw rounds saved' if raw else 'stats only'}: {why}",
                                bench=(base, cur, rounds, raw), blame=["k:test_tokenize"],
                                names=["test_tokenize"], reruns=2))
    return out


def history_cases() -> list[Case]:
    def build(slow: str | None) -> Build:
        return lambda rng: (Side(_mixed_step()), Side(_mixed_step(slow=slow)))
    return [
        Case("history-unchanged", "history", "pass", "head vs median of 6 recorded runs of main, unchanged",
             build=build(None), history=True),
        Case("history-softmax-slow", "history", "fail", "head's 18 µs softmax +20% vs 6 recorded runs of main",
             build=build("cunn_SoftMaxForward"), history=True, blame=["k:cunn_SoftMaxForward", "r:step"]),
    ]


def all_cases() -> list[Case]:
    return (tiny_cases() + interference_cases() + layer_cases() + replace_cases() + triton_cases()
            + stream_cases() + drift_cases() + mixed_cases() + bench_cases() + history_cases())


def expectations() -> list[dict[str, object]]:
    return [{"id": c.id, "family": c.family, "expect": c.expect, "why": c.why, "blame": c.blame,
             "names": c.names, "reruns": c.reruns, "ambiguous": c.ambiguous} for c in all_cases()]


EXPECTATIONS = Path(__file__).resolve().parent / "cases.json"

if __name__ == "__main__":
    EXPECTATIONS.write_text(json.dumps(expectations(), indent=1, ensure_ascii=False) + "\n")
    print(f"wrote {EXPECTATIONS}: {len(all_cases())} cases")
