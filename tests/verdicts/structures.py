"""Verdict families for what changes the structure of a run: layers added or removed with one NVTX range per layer,
kernels replaced by cuBLAS (xmma -> nvjet, split-K adding a reduce kernel) and a suite adding and removing kernels
between commits, in a region or outside every region (issue 35, items 3 and 4).

Each case states its expected verdict, written before the first run: ``pass`` (no shared region or kernel moved past
its limit; the structure change is said in a note), ``fail`` (a region, a kernel or the total holding a replacement
got slower by at least 1.5x its threshold) or ``not measured`` (kernels replaced outside every region of runs that
hold different regions: no total holds them, so nobody can judge the replacement). Runs are ncu details pages from
``scenarios.write_run`` (its noise model), compared as ``perfgate compare`` does: region totals added first
(``regions.with_region_totals``).

``python tests/verdicts/structures.py [--reruns N] [--seed S]`` prints each case's verdicts and the totals: false
alarms (an expected pass that failed), stops (an expected pass or fail that came out ``not measured``) and misses (an
expected fail that passed).
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
from collections import Counter
from pathlib import Path
from typing import NamedTuple

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent.parent))
sys.path.insert(0, str(HERE))

from perfgate.collect import read_table  # noqa: E402
from perfgate.compare import Comparison, compare_tables  # noqa: E402
from perfgate.regions import with_region_totals  # noqa: E402
from scenarios import Kernel, Launch, kernel, write_run  # noqa: E402


class Case(NamedTuple):
    family: str
    name: str
    expect: str  # pass, fail or not measured
    baseline: list[Launch]
    current: list[Launch]


# ---------------------------------------------------------------- the kernels

LAYER_GEMM = kernel("void gemm_kernel<float, 128, 8>(const float *, const float *, float *, int, int, int)", 60.0,
                    "(64, 32, 1)")
LAYER_ADD = kernel("void at::native::vectorized_elementwise_kernel<4, at::native::AddFunctor<float>, "
                   "at::detail::Array<char *, 3>>(int, at::native::AddFunctor<float>, at::detail::Array<char *, 3>)",
                   10.0)
XMMA = kernel("sm90_xmma_gemm_f16f16_f16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_execute_segment_k_off"
              "_kernel__5x_cublas", 100.0, "(64, 8, 1)", "(384, 1, 1)")
# cuBLAS' other choices for the same GEMM: another kernel family, another grid, other work counters.
NVJET = kernel("nvjet_hsh_256x128_64x4_2x1_v_bz_coopA_NNT", 100.0, "(132, 1, 1)", "(384, 1, 1)")._replace(
    inst=XMMA.inst * 0.7, read=XMMA.read * 1.15)
SPLIT_K = kernel("sm90_xmma_gemm_f16f16_f16f32_f32_tn_n_tilesize64x128x64_warpgroupsize1x1x1_execute_segment_k_on"
                 "_kernel__5x_cublas", 100.0, "(32, 8, 4)", "(256, 1, 1)")._replace(inst=XMMA.inst * 1.1)
REDUCE = kernel("void splitKreduce_kernel<32, 16, int, float, __half, float, __half, true, false, false>"
                "(cublasSplitKParams<float>, const float *, const __half *, __half *, const float *, const float *, "
                "const __half *, const float *, __half *, void *, long, float *, int *)", 10.0, "(128, 1, 1)")
BIAS = kernel("void bias_gelu_kernel<float>(const float *, const float *, float *, int)", 20.0)
SOFTMAX = kernel("void softmax_warp_forward<float, float, float, 10, false, false>(float *, const float *, int, "
                 "int, int, const bool *, int, bool)", 20.0)
SUITE = [kernel(f"void suite_op{i}_kernel(float *, int)", t, f"({64 * (i + 1)}, 1, 1)")
         for i, t in enumerate((50.0, 10.0, 30.0, 10.0, 25.0))]


def _scaled(k: Kernel, time: float) -> Kernel:
    """``k`` taking ``time`` x its time, its work unchanged (a different kernel's cost, not a change of one)."""
    return k._replace(time_ns=k.time_ns * time)


# ---------------------------------------------------------------- layers added or removed (item 3)

def _layers(count: int, added_at: tuple[int, ...] = (), slow: dict[int, float] | None = None) -> list[Launch]:
    """``count`` layers, one NVTX range each (``layer0``...), each a GEMM and an add; ``added_at``: where layers
    named ``added0``, ``added1``... are inserted; ``slow``: a layer's GEMM time factor."""
    names = [f"layer{i}" for i in range(count)]
    for number, at in enumerate(added_at):
        names.insert(at, f"added{number}")
    slow = slow or {}
    return [Launch(k, name, time=slow.get(int(name[5:]), 1.0) if k is LAYER_GEMM and name.startswith("layer")
                   else 1.0)
            for name in names for k in (LAYER_GEMM, LAYER_ADD)]


def layer_cases() -> list[Case]:
    return [
        Case("layers", "one added at the end", "pass", _layers(4), _layers(4, added_at=(4,))),
        Case("layers", "one added in the middle", "pass", _layers(4), _layers(4, added_at=(2,))),
        Case("layers", "two added, 8 layers", "pass", _layers(8), _layers(8, added_at=(3, 9))),
        Case("layers", "one removed", "pass", _layers(4, added_at=(1,)), _layers(4)),
        Case("layers", "one added, layer2's GEMM +15%", "fail", _layers(4),
             _layers(4, added_at=(4,), slow={2: 1.15})),
        Case("layers", "one added, every shared GEMM +10%", "fail", _layers(4),
             _layers(4, added_at=(1,), slow={i: 1.10 for i in range(4)})),
    ]


# ---------------------------------------------------------------- kernels replaced (item 4)

def _step(gemm: list[Launch], region: str) -> list[Launch]:
    return [*gemm, Launch(BIAS, region), Launch(SOFTMAX, region)]


def replacement_cases() -> list[Case]:
    forward = "forward"
    mlp = "forward > mlp"
    base = _step([Launch(XMMA, forward)], forward)
    split = _step([Launch(SPLIT_K, forward), Launch(REDUCE, forward)], forward)
    return [
        Case("replaced", "xmma -> nvjet, same time", "pass", base, _step([Launch(NVJET, forward)], forward)),
        Case("replaced", "xmma -> nvjet, 10% faster", "pass", base,
             _step([Launch(_scaled(NVJET, 0.9), forward)], forward)),
        Case("replaced", "xmma -> nvjet, 25% slower", "fail", base,
             _step([Launch(_scaled(NVJET, 1.25), forward)], forward)),
        Case("replaced", "xmma -> split-K + reduce, same total", "pass", base,
             [Launch(_scaled(SPLIT_K, 0.88), forward), *split[1:]]),
        Case("replaced", "xmma -> split-K + reduce, 15% slower", "fail", base,
             [Launch(_scaled(SPLIT_K, 1.05), forward), *split[1:]]),
        Case("replaced", "xmma -> nvjet x3 in a nested range, same time", "pass",
             [launch for _ in range(3) for launch in _step([Launch(XMMA, mlp)], mlp)],
             [launch for _ in range(3) for launch in _step([Launch(NVJET, mlp)], mlp)]),
        Case("replaced", "xmma -> nvjet x3 in a nested range, 25% slower", "fail",
             [launch for _ in range(3) for launch in _step([Launch(XMMA, mlp)], mlp)],
             [launch for _ in range(3) for launch in _step([Launch(_scaled(NVJET, 1.25), mlp)], mlp)]),
        Case("replaced", "xmma -> nvjet, a shared kernel +20%", "fail", base,
             [Launch(NVJET, forward), Launch(BIAS, forward, time=1.2), Launch(SOFTMAX, forward)]),
    ]


# ---------------------------------------------------------------- kernels replaced outside every region (item 4)

def unscoped_cases() -> list[Case]:
    """Reports without NVTX ranges (the whole report is the smallest total holding a replacement), and launches
    outside the ranges of reports that have some (the total of the launches outside every region, where both runs
    hold the same regions)."""
    base = _step([Launch(XMMA)], "")
    beside = [Launch(BIAS, "forward"), Launch(SOFTMAX, "forward")]
    return [
        Case("unscoped", "xmma -> nvjet, same time", "pass", base, _step([Launch(NVJET)], "")),
        Case("unscoped", "xmma -> nvjet, 10% faster", "pass", base, _step([Launch(_scaled(NVJET, 0.9))], "")),
        Case("unscoped", "xmma -> nvjet 20% slower (the report +14%)", "fail", base,
             _step([Launch(_scaled(NVJET, 1.2))], "")),
        Case("unscoped", "xmma -> split-K + reduce, same total", "pass", base,
             _step([Launch(_scaled(SPLIT_K, 0.88)), Launch(REDUCE)], "")),
        Case("unscoped", "xmma -> split-K + reduce, 15% slower", "fail", base,
             _step([Launch(_scaled(SPLIT_K, 1.05)), Launch(REDUCE)], "")),
        Case("unscoped", "xmma -> nvjet, a shared kernel +50%", "fail", base,
             [Launch(NVJET), Launch(BIAS, time=1.5), Launch(SOFTMAX)]),
        Case("unscoped", "a kernel added, the others unchanged", "pass", base, [*base, Launch(REDUCE)]),
        Case("unscoped", "a kernel removed, the others unchanged", "pass", base, base[1:]),
        Case("unscoped", "identical", "pass", base, base),
        Case("unscoped", "a suite swaps op1 for op3 (same time)", "pass", _suite([0, 1, 2], ""), _suite([0, 2, 3], "")),
        Case("unscoped", "a suite swaps op1 for op4 (+15 us of 90)", "fail", _suite([0, 1, 2], ""),
             _suite([0, 2, 4], "")),
        Case("unscoped", "xmma -> nvjet beside a region both hold, same time", "pass", [Launch(XMMA), *beside],
             [Launch(NVJET), *beside]),
        Case("unscoped", "xmma -> nvjet beside a region both hold, 25% slower", "fail", [Launch(XMMA), *beside],
             [Launch(_scaled(NVJET, 1.25)), *beside]),
        Case("unscoped", "xmma -> nvjet, the runs hold different regions", "not measured",
             [Launch(XMMA), Launch(SOFTMAX), Launch(BIAS, "forward")],
             [Launch(NVJET), Launch(SOFTMAX, "backward"), Launch(BIAS, "forward")]),
    ]


# ---------------------------------------------------------------- a suite adding and removing kernels (item 4)

def _suite(ops: list[int], region: str = "test_suite", slow: dict[int, float] | None = None) -> list[Launch]:
    slow = slow or {}
    return [Launch(SUITE[i], region, time=slow.get(i, 1.0)) for i in ops]


def suite_cases() -> list[Case]:
    return [
        Case("suite", "op1 removed, op3 added (same time)", "pass", _suite([0, 1, 2]), _suite([0, 2, 3])),
        Case("suite", "op1 removed, op4 added (+15 us of 90)", "fail", _suite([0, 1, 2]), _suite([0, 2, 4])),
        Case("suite", "op1 removed, op3 added, op0 +12%", "fail", _suite([0, 1, 2]),
             _suite([0, 2, 3], slow={0: 1.12})),
        Case("suite", "two tests, the second swaps op1 for op3", "pass",
             _suite([0, 2], "test_a") + _suite([0, 1, 2], "test_b"),
             _suite([0, 2], "test_a") + _suite([0, 2, 3], "test_b")),
    ]


def cases() -> list[Case]:
    return [*layer_cases(), *replacement_cases(), *suite_cases(), *unscoped_cases()]


# ---------------------------------------------------------------- running them

def compared(case: Case, folder: Path, rng: random.Random) -> Comparison:
    base, cur = folder / "base.csv", folder / "cur.csv"
    write_run(base, case.baseline, rng)
    write_run(cur, case.current, rng)
    return compare_tables(with_region_totals(read_table(base)), with_region_totals(read_table(cur)))


class Outcome(NamedTuple):
    case: Case
    verdict: str

    @property
    def false_alarm(self) -> bool:
        return self.case.expect == "pass" and self.verdict == "fail"

    @property
    def stopped(self) -> bool:
        return self.case.expect != "not measured" and self.verdict == "not measured"

    @property
    def miss(self) -> bool:
        return self.case.expect in ("fail", "not measured") and self.verdict == "pass"

    @property
    def right(self) -> bool:
        return self.verdict == self.case.expect


def run(reruns: int, seed: int) -> list[Outcome]:
    rng = random.Random(seed)
    outcomes = []
    with tempfile.TemporaryDirectory() as folder:
        for case in cases():
            for _ in range(reruns):
                outcomes.append(Outcome(case, compared(case, Path(folder), rng).verdict))
    return outcomes


def summary(outcomes: list[Outcome]) -> str:
    lines = []
    for case in {id(o.case): o.case for o in outcomes}.values():
        verdicts = Counter(o.verdict for o in outcomes if o.case is case)
        lines.append(f"{case.family:9} {case.name:50} expect {case.expect:12} got "
                     + ", ".join(f"{n} {v}" for v, n in sorted(verdicts.items())))
    expected_pass = [o for o in outcomes if o.case.expect == "pass"]
    expected_fail = [o for o in outcomes if o.case.expect == "fail"]
    lines.append(f"runs {len(outcomes)}: expected pass {len(expected_pass)}, false alarms "
                 f"{sum(o.false_alarm for o in expected_pass)}, stopped (not measured) "
                 f"{sum(o.stopped for o in expected_pass)}; expected fail {len(expected_fail)}, misses "
                 f"{sum(o.miss for o in expected_fail)}, stopped {sum(o.stopped for o in expected_fail)}; "
                 f"expected not measured {sum(o.case.expect == 'not measured' for o in outcomes)}, passed "
                 f"{sum(o.miss for o in outcomes if o.case.expect == 'not measured')}; wrong verdicts "
                 f"{sum(not o.right for o in outcomes)}")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reruns", type=int, default=10)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    print(summary(run(args.reruns, args.seed)))


if __name__ == "__main__":
    main()
