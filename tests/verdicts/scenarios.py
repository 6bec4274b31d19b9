"""Verdict scenarios: the shapes real GPU code produces, as generated ncu details pages with a stated noise model.

Each scenario builds two runs of a program (the baseline and the current run) as lists of launches, and says what
a correct gate concludes: ``unchanged`` (nothing moved past its limit: any alarm is false), ``regression`` (a
change at least 1.5x its threshold: the named launches must fail, and only they), ``borderline`` (a change at the
limit: neither counted), ``unpaired`` (kernels renamed past every rule over a regression: anything but a pass) or
``flagged`` (a real change the measurement cannot establish past its limit: a launch slower once, with no other
iteration of its call site to tell it from another process's interference, or a tiny kernel's shift inside the
spread of its launches: a fail, an inconclusive verdict, or a pass whose notes say what hid it; a silent pass is a
miss).

Noise model (calibrated on perfgate's own H100/H200 reruns, tests/data/h100 and tests/data/h200: same-code runs
moved <= 0.9% for kernels of 80 us and more, up to 4.7% (0.96 us) for 20 us kernels, DRAM reads <= 0.6%, writes up
to 6.6% on small writes, instructions not at all):

* duration = true time x run factor x launch factor + jitter, with a run factor N(1, 0.3%) that all launches of a
  run share (clock and thermal state), a per-launch log-normal factor of sigma 0.4%, and an additive jitter
  N(0, 0.25 us) per launch (launch overhead, timer resolution);
* bimodal kernels: each launch lands in a slow mode (+6%) with probability 0.3 (two L2 or clock states);
* DRAM read: true x N(1, 0.2%) + |N(0, 2 KB)|; DRAM write: true x N(1, 2%) + N(0, 20 KB), never below 0;
* instructions: exact.
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import NamedTuple

DEVICE = "NVIDIA H100 80GB HBM3"
PUSH_POP = "thread Domain:Push/Pop_Range:PL_Type:PL_Value:CLR_Type:Color:Msg_Type:Msg"
HEADER = ("ID", "Process ID", "Process Name", "Host Name", PUSH_POP, "Kernel Name", "Context", "Stream",
          "Block Size", "Grid Size", "Device", "CC", "Section Name", "Metric Name", "Metric Unit", "Metric Value")
TIME, READ, WRITE, INST = ("gpu__time_duration.sum", "dram__bytes_read.sum", "dram__bytes_write.sum",
                           "smsp__inst_executed.sum")


class Kernel(NamedTuple):
    """A kernel as ncu names it, its launch configuration and its true cost."""

    demangled: str
    grid: str
    block: str
    time_ns: float
    read: float
    write: float
    inst: float
    bimodal: bool = False
    spread: float = 0.004  # the per-launch log-normal factor's sigma


class Launch(NamedTuple):
    """One launch of a run: its kernel, NVTX region, and the true change of its metrics (1.0: none)."""

    kernel: Kernel
    region: str = ""
    time: float = 1.0
    read: float = 1.0
    inst: float = 1.0


class Scenario(NamedTuple):
    family: str
    name: str
    expect: str  # unchanged, regression, borderline or unpaired
    baseline: list[Launch]
    current: list[Launch]
    # The launches that must fail, each (demangled name, region, occurrence among launches of that name and region
    # in the current run); empty for a regression judged as one group of all its launches.
    slow: frozenset[tuple[str, str, int]] = frozenset()


def kernel(name: str, time_us: float, grid: str = "(1024, 1, 1)", block: str = "(256, 1, 1)",
           bimodal: bool = False) -> Kernel:
    """A kernel whose traffic and instructions follow its time (a memory-bound kernel at ~2 TB/s)."""
    read = time_us * 1.2e6
    return Kernel(name, grid, block, time_us * 1000.0, read, read / 2, time_us * 2e4, bimodal)


# ---------------------------------------------------------------- the noise model


def _gauss(rng: random.Random, sigma: float) -> float:
    return rng.gauss(0.0, sigma)


def measured(launch: Launch, rng: random.Random, run_factor: float) -> dict[str, float]:
    """One launch's metric values, measured once (see the module's docstring)."""
    k = launch.kernel
    factor = run_factor * (1.0 + _gauss(rng, k.spread))
    if k.bimodal and rng.random() < 0.3:
        factor *= 1.06
    time = k.time_ns * launch.time * factor + _gauss(rng, 250.0)
    read = k.read * launch.read * (1.0 + _gauss(rng, 0.002)) + abs(_gauss(rng, 2048.0))
    write = max(0.0, k.write * (1.0 + _gauss(rng, 0.02)) + _gauss(rng, 20_480.0))
    return {TIME: max(time, 1.0), READ: round(read), WRITE: round(write), INST: round(k.inst * launch.inst)}


def _cell(region: str) -> str:
    """ncu's push/pop cell: the thread id, then each open range (one level here)."""
    return f'1  "<default domain>:{region}:none:none:none:none:none:none"' if region else "1"


def _q(fields: tuple[str, ...] | list[str]) -> str:
    return ",".join('"' + f.replace('"', '""') + '"' for f in fields) + "\n"


def write_run(path: Path, launches: list[Launch], rng: random.Random) -> None:
    """One run as ``ncu --csv --page details --nvtx`` writes it."""
    run_factor = 1.0 + _gauss(rng, 0.003)
    lines = [_q(HEADER)]
    for number, launch in enumerate(launches):
        k = launch.kernel
        prefix = [str(number), "4242", "python3", "127.0.0.1", _cell(launch.region), k.demangled, "1", "7",
                  k.block, k.grid, "0", "9.0", "Command line profiler metrics"]
        values = measured(launch, rng, run_factor)
        rows = [("device__attribute_display_name", "", DEVICE), (INST, "inst", f"{values[INST]:,.0f}"),
                (READ, "byte", f"{values[READ]:,.0f}"), (WRITE, "byte", f"{values[WRITE]:,.0f}"),
                (TIME, "ns", f"{values[TIME]:,.0f}")]
        lines += [_q([*prefix, name, unit, value]) for name, unit, value in sorted(rows)]
    path.write_text("".join(lines), encoding="utf-8")


# ---------------------------------------------------------------- the families


def occurrence_keys(launches: list[Launch], picked: list[int]) -> frozenset[tuple[str, str, int]]:
    """(demangled, region, occurrence among launches of that name and region) of the launches at ``picked``."""
    seen: dict[tuple[str, str], int] = {}
    keys = []
    for index, launch in enumerate(launches):
        key = (launch.kernel.demangled, launch.region)
        if index in picked:
            keys.append((*key, seen.get(key, 0)))
        seen[key] = seen.get(key, 0) + 1
    return frozenset(keys)


GEMM = kernel("void gemm_kernel<float, 128, 8>(const float *, const float *, float *, int, int, int)", 100.0,
              "(64, 32, 1)")


def noise(n: int) -> Scenario:
    runs = [Launch(GEMM, "step")] * n
    return Scenario("noise", f"{n} launches", "unchanged", runs, list(runs))


def bimodal(n: int) -> Scenario:
    k = GEMM._replace(bimodal=True)
    return Scenario("bimodal", f"{n} launches", "unchanged", [Launch(k, "step")] * n, [Launch(k, "step")] * n)


def shift(percent: int, n: int) -> Scenario:
    expect = {3: "unchanged", 5: "borderline", 8: "regression"}[percent]
    cur = [Launch(GEMM, "step", time=1 + percent / 100)] * n
    return Scenario("shift", f"+{percent}% x{n}", expect, [Launch(GEMM, "step")] * n, cur,
                    occurrence_keys(cur, list(range(n))) if expect == "regression" else frozenset())


LAYER = kernel("void at::native::layer_norm_kernel<float>(int, float, const float *, float *)", 45.0)


def slow_among_12(slow: int, regions: str, factor: float) -> Scenario:
    """``slow`` of 12 launches (a loop over layers) ``factor`` x slower; regions: one per layer, one, none."""
    def region(i: int) -> str:
        return {"per-layer": f"layer{i}", "one region": "forward", "no NVTX": ""}[regions]

    picked = [3, 7, 10][:slow]
    base = [Launch(LAYER, region(i)) for i in range(12)]
    cur = [Launch(LAYER, region(i), time=factor if i in picked else 1.0) for i in range(12)]
    # In one region or none, the slow launches are launches of one group, each seen once: nothing tells them from
    # launches another process slowed (issue 35), so the gate must flag them, not pass them; a region per layer
    # makes each launch a kernel of its own, judged on its own limit.
    expect = "regression" if regions == "per-layer" else "flagged"
    return Scenario("slow among 12", f"{slow} x{factor:g} {regions}", expect if slow else "unchanged",
                    base, cur, occurrence_keys(cur, picked))


def trade_off() -> Scenario:
    """Faster (-20%) but reads 30% more: a trade-off, not a regression."""
    return Scenario("trade-off", "faster, more bytes", "unchanged", [Launch(GEMM, "step")] * 4,
                    [Launch(GEMM, "step", time=0.8, read=1.3, inst=1.2)] * 4)


ZOO = [kernel(f"void k{i}_kernel(float *, int)", 20.0 + 15.0 * i, f"({64 * (i + 1)}, 1, 1)") for i in range(8)]


def shuffled(rng: random.Random, slower: int | None) -> Scenario:
    """Eight kernels, launched in another order in the current run; ``slower``: one of them +12%."""
    order = list(range(8))
    rng.shuffle(order)
    cur = [Launch(ZOO[i], "step", time=1.12 if i == slower else 1.0) for i in order]
    return Scenario("shuffled", "one +12%" if slower is not None else "unchanged",
                    "unchanged" if slower is None else "regression", [Launch(k, "step") for k in ZOO], cur,
                    occurrence_keys(cur, [order.index(slower)]) if slower is not None else frozenset())


def _gemm_tiled(args: str, time_us: float) -> Kernel:
    return kernel(f"void gemm_tiled<{args}>(const float *, const float *, float *, int)", time_us, "(128, 1, 1)")


TILED = [_gemm_tiled("128, 64, 8", 80.0), _gemm_tiled("64, 64, 8", 45.0), _gemm_tiled("128, 128, 8", 150.0)]


def templates(rng: random.Random, slower: int | None) -> Scenario:
    """Three instantiations of one template, three launches each, reordered; ``slower``: one +12%."""
    base = [Launch(k, "step") for _ in range(3) for k in TILED]
    cur = [Launch(k, "step", time=1.12 if i == slower else 1.0) for _ in range(3) for i, k in enumerate(TILED)]
    rng.shuffle(cur)
    picked = [i for i, launch in enumerate(cur) if launch.time != 1.0]
    return Scenario("templates", "one +12%" if slower is not None else "unchanged",
                    "unchanged" if slower is None else "regression", base, cur, occurrence_keys(cur, picked))


def template_change(slower: bool) -> Scenario:
    """One instantiation's template arguments changed (a retuned tile), the others kept."""
    changed = _gemm_tiled("64, 32, 8", 45.0)
    base = [Launch(TILED[0], "step"), Launch(TILED[1], "step")]
    cur = [Launch(TILED[0], "step"), Launch(changed, "step", time=1.15 if slower else 1.0)]
    return Scenario("templates", "arguments changed" + (", +15%" if slower else ""),
                    "regression" if slower else "unchanged", base, cur,
                    occurrence_keys(cur, [1]) if slower else frozenset())


def _elementwise(functor: str, time_us: float) -> Kernel:
    return kernel(f"void at::native::vectorized_elementwise_kernel<4, at::native::{functor}, std::array<char *, 2UL>>"
                  f"(int, at::native::{functor}, std::array<char *, 2UL>)", time_us, "(2048, 1, 1)", "(128, 1, 1)")


STEP = [GEMM, _elementwise("AddFunctor<float>", 12.0), _elementwise("GeluFunctor<float>", 15.0),
        _elementwise("MulFunctor<float>", 12.0)]
INSERTED = _elementwise("FillFunctor<float>", 6.0)


def inserted_op(slower: bool) -> Scenario:
    """A PyTorch step (GEMM and three elementwise ops through one generic kernel) over 3 iterations; the current run
    inserts a fill op each iteration; ``slower``: the GELU +15% in every iteration."""
    base = [Launch(k, "") for _ in range(3) for k in STEP]
    cur = []
    for _ in range(3):
        for k in STEP[:2] + [INSERTED] + STEP[2:]:
            cur.append(Launch(k, "", time=1.15 if slower and k is STEP[2] else 1.0))
    picked = [i for i, launch in enumerate(cur) if launch.time != 1.0]
    return Scenario("pytorch elementwise", "inserted op" + (", GELU +15%" if slower else ""),
                    "regression" if slower else "unchanged", base, cur, occurrence_keys(cur, picked))


def triton_renames(ambiguous: bool) -> Scenario:
    """TorchInductor renumbered its kernels; the reduction 30% slower. Ambiguous: two reductions renumbered and
    reordered with one launch configuration, which no rule can tell apart."""
    def triton(name: str, time_us: float) -> Kernel:
        return kernel(name, time_us, "(512, 1, 1)", "(128, 1, 1)")

    if not ambiguous:
        base = [Launch(triton("triton_poi_fused_add_0", 20.0)), Launch(triton("triton_red_fused_sum_1", 60.0))]
        cur = [Launch(triton("triton_poi_fused_add_2", 20.0)), Launch(triton("triton_red_fused_sum_5", 60.0), time=1.3)]
        return Scenario("triton renames", "renumbered, +30%", "regression", base, cur, occurrence_keys(cur, [1]))
    first, second = triton("triton_red_fused_sum_0", 60.0), triton("triton_red_fused_sum_1", 61.0)
    anchor = triton("triton_per_fused_softmax_2", 30.0)  # kept its name
    base = [Launch(anchor), Launch(first), Launch(second), Launch(first), Launch(second)]
    first = first._replace(demangled="triton_red_fused_sum_3")
    second = second._replace(demangled="triton_red_fused_sum_4")
    cur = [Launch(anchor), Launch(second), Launch(second), Launch(first, time=1.3), Launch(first, time=1.3)]
    return Scenario("triton renames", "ambiguous, reordered, +30%", "unpaired", base, cur)


SHORT = kernel("void at::native::reduce_kernel<512, 1>(float *, int)", 17.0)
RNG = Kernel("void at::native::distribution_elementwise_grid_stride_kernel<float, 4>(int, float *)", "(1320, 1, 1)",
             "(256, 1, 1)", 120_000.0, 19_500.0, 241e6, 4e6)


def floors(shifted: bool) -> Scenario:
    """A 17 us kernel launched 52 times, +8% (real A10 data: a tight +8.0% [+7.8%, +8.2%] the 2 us floor hid)."""
    base = [Launch(SHORT, "step")] * 52
    cur = [Launch(SHORT, "step", time=1.08 if shifted else 1.0)] * 52
    return Scenario("floors", "17 us x52" + (" +8%" if shifted else ""), "regression" if shifted else "unchanged",
                    base, cur, occurrence_keys(cur, list(range(52))) if shifted else frozenset())


def rng_kernel_reads() -> Scenario:
    """torch's RNG kernel writes 241 MB; its DRAM read moved 19.5 KB -> 36.1 KB on two runs of the same code."""
    return Scenario("floors", "RNG kernel read 19.5 KB -> 36.1 KB", "unchanged", [Launch(RNG, "init")],
                    [Launch(RNG, "init", read=36.1 / 19.5)])


# ---------------------------------------------------------------- issue 35: tiny kernels, interference, short benchmarks
#
# Each case's expected verdict is written here, from the noise model above, before the first run. ``flagged``: a
# real change that the measurement cannot establish past its limit: the gate must not pass it silently (a fail, an
# inconclusive verdict, or a pass with a note that says a floor or a lone launch was behind it).
#
# Tiny kernels: a launch's duration has sigma sqrt(250^2 + (0.4% t)^2) ns: 12.5% of 2 us, 8.3% of 3 us, 2.5% of
# 10 us. The estimated shift of n launches a side has sigma s = that x sqrt(2/n); a shift is a sure ``regression``
# where it clears the 5% limit by 3.96 s (its interval's 1.96 s, and 2 s more: caught in >= 97.7% of runs), else
# ``flagged``. A single launch is judged on its own limit 5% + 2 us, which no shift below 2 us passes: ``flagged``.
TINY_EXPECT = {
    # (us, launches): (+8%, +15%)       s (n=20)  s (n=200)
    (2, 1): ("flagged", "flagged"),
    (3, 1): ("flagged", "flagged"),
    (10, 1): ("flagged", "flagged"),
    (2, 20): ("flagged", "flagged"),  # 3.95%
    (3, 20): ("flagged", "flagged"),  # 2.64%: +15% clears 5% by 3.8 s, short of 3.96 s
    (10, 20): ("flagged", "regression"),  # 0.80%
    (2, 200): ("flagged", "regression"),  # 1.25%
    (3, 200): ("flagged", "regression"),  # 0.83%
    (10, 200): ("regression", "regression"),  # 0.25%
}


def tiny(time_us: int, launches: int, percent: int) -> Scenario:
    """A ``time_us`` kernel launched ``launches`` times in one region, ``percent`` slower (TINY_EXPECT)."""
    k = kernel(f"void tiny_{time_us}us_kernel(float *, int)", float(time_us), "(32, 1, 1)", "(128, 1, 1)")
    expect = "unchanged" if not percent else TINY_EXPECT[(time_us, launches)][percent == 15]
    cur = [Launch(k, "step", time=1 + percent / 100)] * launches
    return Scenario("tiny kernels", f"{time_us} us x{launches} +{percent}%", expect, [Launch(k, "step")] * launches,
                    cur, occurrence_keys(cur, list(range(launches))) if expect == "regression" else frozenset())


NOISY = kernel("void at::native::softmax_warp_forward<float, 10>(float *, const float *, int)", 60.0,
               "(4096, 1, 1)", "(128, 1, 1)")._replace(spread=0.02)


def interference(shape: str, rng: random.Random) -> Scenario:
    """A 40-iteration loop of unchanged code, where the measurement is disturbed once: ``outlier`` (one launch +30%:
    another process on the GPU), ``outlier, two kernels`` (the loop runs a GEMM beside it; one GEMM launch +30%),
    ``3 sigma`` (a kernel whose launches spread 2%: draws past 3 sigma happen), ``drift`` (the current run's
    launches slow down steadily to +5% by the last one: a clock warming up, nothing past its limit)."""
    if shape == "3 sigma":
        runs = [Launch(NOISY, "loop")] * 40
        return Scenario("interference", shape, "unchanged", runs, list(runs))
    if shape == "drift":
        return Scenario("interference", shape, "unchanged", [Launch(LAYER, "loop")] * 40,
                        [Launch(LAYER, "loop", time=1 + 0.05 * i / 39) for i in range(40)])
    body = [LAYER, GEMM] if shape == "outlier, two kernels" else [LAYER]
    base = [Launch(k, "loop") for _ in range(40) for k in body]
    hit = rng.randrange(len(base))
    cur = [launch._replace(time=1.3) if i == hit else launch for i, launch in enumerate(base)]
    return Scenario("interference", shape, "unchanged", base, cur)


def call_site(factor: float) -> Scenario:
    """A 10-iteration loop whose body launches the layer norm three times (and a GEMM): the second norm of every
    iteration ``factor`` x slower, a call site that really moved."""
    body = [LAYER, LAYER, GEMM, LAYER]
    base = [Launch(k, "loop") for _ in range(10) for k in body]
    cur = [Launch(k, "loop", time=factor if at == 1 else 1.0) for _ in range(10) for at, k in enumerate(body)]
    picked = [i for i, launch in enumerate(cur) if launch.time != 1.0]
    return Scenario("interference", f"call site x{factor:g} in 10 iterations", "regression", base, cur,
                    occurrence_keys(cur, picked))


class BenchScenario(NamedTuple):
    """A pytest-benchmark test measured ``rounds`` rounds a side, ``factor`` x slower in the current run."""

    family: str
    name: str
    expect: str
    rounds: int
    factor: float


# time.min's limit is 20%: 1x and 1.1x are unchanged (no round distribution below moves a minimum by 20%), 6x is a
# regression at every round count.
BENCH_EXPECT = {1.0: "unchanged", 1.1: "unchanged", 6.0: "regression"}


def short_benchmark(rounds: int, factor: float) -> BenchScenario:
    return BenchScenario("short benchmarks", f"{rounds} rounds x{factor:g}", BENCH_EXPECT[factor], rounds, factor)


def write_benchmark(path: Path, rounds: int, factor: float, rng: random.Random) -> None:
    """pytest-benchmark's JSON of one test of 2 ms x ``factor``: each round log-normal (sigma 3%), one in ten 30%
    slower (load only adds time)."""
    import json
    import statistics

    data = [0.002 * factor * (1.0 + _gauss(rng, 0.03)) * (1.3 if rng.random() < 0.1 else 1.0) for _ in range(rounds)]
    stats = {"min": min(data), "max": max(data), "mean": statistics.fmean(data), "median": statistics.median(data),
             "stddev": statistics.stdev(data), "rounds": rounds, "ops": 1.0 / statistics.fmean(data), "data": data}
    bench = {"name": "test_solve", "fullname": "tests/test_solver.py::test_solve", "group": None, "stats": stats}
    path.write_text(json.dumps({"machine_info": {"node": "ci", "cpu": {"brand_raw": "x86"}}, "benchmarks": [bench],
                                "version": "5.1.0"}), encoding="utf-8")


def generated(rng: random.Random) -> list[Scenario]:
    """One of each generated scenario (a rerun of the family: its noise comes from the seed of each run)."""
    found = [noise(n) for n in (1, 5, 40, 400)] + [bimodal(12), bimodal(40)]
    found += [shift(p, n) for p in (3, 5, 8) for n in (3, 5, 40)]
    found += [slow_among_12(s, r, f) for s in (1, 3) for r in ("per-layer", "one region", "no NVTX")
              for f in (1.075, 2.0)]
    found += [trade_off(), shuffled(rng, None), shuffled(rng, rng.randrange(8)), templates(rng, None),
              templates(rng, rng.randrange(3)), template_change(False), template_change(True), inserted_op(False),
              inserted_op(True), triton_renames(False), triton_renames(True), floors(False), floors(True),
              rng_kernel_reads()]
    found += [tiny(t, n, p) for t in (2, 3, 10) for n in (1, 20, 200) for p in (0, 8, 15)]
    found += [interference(shape, rng) for shape in ("outlier", "outlier, two kernels", "3 sigma", "drift")]
    found += [call_site(1.3), call_site(1.075)]
    return found


def benchmarks() -> list[BenchScenario]:
    """One of each short pytest-benchmark scenario (its rounds' noise comes from the seed of each run)."""
    return [short_benchmark(r, f) for r in (3, 5, 7) for f in (1.0, 1.1, 6.0)]
