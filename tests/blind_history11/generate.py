"""Makes the eleventh blind set's series and its truth.json (README.md: "Protocol")::

    PYTHONPATH=. python tests/blind_history11/generate.py   # writes truth.json: done once, after README.md

The series are made again, from the seed, every time ``run.py`` or the truth test runs.
"""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path
from typing import Any

import numpy as np

from tests.blind_history11.families import FAMILIES, RULES, Family, near_spell, signed
from tests.blind_history11.model import (COMMITS, EDGE, MIN_HOLD, MIN_RATIO, MIN_UNITS, SEED, POOLS, Change, Pool,
                                         Schedule, Series, draw, pool, schedule, stream, unit)

TRUTH = Path(__file__).with_name("truth.json")
MATCH_TOLERANCE = 2
KERNELS = ("flash_fwd_splitkv_kernel", "sm90_xmma_gemm_bf16bf16_bf16f32", "softmax_warp_forward",
           "vectorized_elementwise_kernel", "layer_norm_fwd_kernel", "rms_norm_kernel", "reduce_kernel",
           "triton_poi_fused_add_mul_0", "triton_red_fused_sum_1", "cutlass_80_tensorop_s1688gemm_128x128",
           "rotary_embedding_kernel", "paged_attention_v2_kernel", "indexSelectLargeIndex", "cat_batched_copy",
           "fused_moe_kernel", "silu_and_mul_kernel", "ampere_sgemm_128x64_tn", "radix_sort_onesweep",
           "embedding_backward_feature_kernel", "topk_gather_kernel")
AREAS = ("attention", "gemm", "norms", "moe", "elementwise", "sampling", "embedding", "reductions")


def span(family: Family, pool_: Pool, rng: np.random.Generator) -> list[int]:
    """The commits a series has values at: its pool's runs, over the whole history or part of it."""
    ran = np.flatnonzero(pool_.ran).tolist()
    if family.span in ("short", "short30"):
        n = int(rng.integers(20 if family.span == "short" else 30, 41))
        start = int(rng.integers(0, len(ran) - n + 1))
        return ran[start:start + n]
    if family.shape is not near_spell and not family.creep and rng.random() < 0.25:  # a test added late or removed early
        keep = int(rng.integers(80, len(ran)))
        ran = ran[:keep] if rng.random() < 0.5 else ran[len(ran) - keep:]
    flaky = rng.random(len(ran)) < rng.uniform(0, 0.02)  # a run where the test failed and left no value
    return [c for c, lost in zip(ran, flaky) if not lost]


def spell_edges(pool_: Pool, commits: list[int]) -> list[int]:
    """Positions of the first value inside and the first value after the pool's one-runner spell."""
    return [i for i in range(1, len(commits)) for edge in pool_.spell if commits[i - 1] < edge <= commits[i]]


def levels(planted: list[tuple[int, float]], n: int) -> np.ndarray:
    level = np.ones(n)
    for position, ratio in planted:
        level[position:] *= ratio
    return level


def creep(level: np.ndarray, rng: np.random.Generator) -> tuple[int, int]:
    n = len(level)
    length = int(rng.integers(30, 61))
    start = int(rng.integers(EDGE, n - EDGE - length + 1))
    total = signed(rng, rng.uniform(0.03, 0.08))
    level[start:start + length] *= np.linspace(1, total, length + 1)[1:]
    level[start + length:] *= total
    return start, start + length


def build(index: int, family: Family, k: int, when: Schedule, pools: list[Pool]) -> Series:
    rng = stream(2, index)
    noise = family.noise(rng)
    pool_ = pools[family.pools[int(rng.integers(len(family.pools)))]]
    commits = span(family, pool_, rng)
    sigma = unit(noise, pool_, when, commits)
    planted = family.shape(rng, len(commits), sigma, spell_edges(pool_, commits))
    level = levels(planted, len(commits))
    drift = creep(level, rng) if family.creep else None
    values = draw(noise, pool_, when, commits, level, rng)
    if noise.flicker:  # the counter's level is whole sectors: its ratios are those of the rounded levels
        whole = np.round(noise.level * level / 32) * 32
        planted = [(p, float(whole[p] / whole[p - 1])) for p, _ in planted]
    kernel = KERNELS[(k if family.name in ("flat_sibling", "step_one_gpu") else index) % len(KERNELS)]
    test = f"tests/perf/test_{AREAS[index % len(AREAS)]}.py::test_{kernel}[{k}]"
    if family.name in ("flat_sibling", "step_one_gpu"):  # the same test and kernel on two GPU models
        test = f"tests/perf/test_one_gpu.py::test_{kernel}[{k}]"
    held = set(commits)
    return Series(name=f"{kernel}_{index:03d}", family=family.name, gpu=pool_.gpu, test=test, kind="kernel",
                  metric=family.metric, commits=commits, values=values, sigma=sigma,
                  changes=[Change(p, commits[p], r) for p, r in planted], creep=drift,
                  skipped=[c for c in range(commits[0], commits[-1] + 1) if c not in held])


def check(s: Series) -> None:
    """Every planted change is one by the README's rule, with its edges (no detector: the truth is the plan)."""
    smallest = max(MIN_RATIO, MIN_UNITS * s.sigma)
    positions = [c.position for c in s.changes] + [len(s.values)]
    for c, after in zip(s.changes, positions[1:]):
        assert abs(c.ratio - 1) >= smallest - 1e-9, (s.name, c.ratio, smallest)
        assert EDGE <= c.position <= len(s.values) - EDGE and after - c.position >= MIN_HOLD, s.name


def generate() -> list[Series]:
    when = schedule()
    pools = [pool(i, when) for i in range(len(POOLS))]
    made = []
    for family in FAMILIES:
        for k in range(family.count):
            made.append(build(len(made), family, k, when, pools))
            check(made[-1])
    return made


def digest(values: np.ndarray) -> str:
    return hashlib.sha256(",".join(f"{v:.9g}" for v in values.tolist()).encode()).hexdigest()


def nine(x: float) -> float:
    return float(f"{x:.9g}")


def truth_document(made: list[Series]) -> dict[str, Any]:
    return {"set": 11, "seed": SEED, "commits": COMMITS, "edge": EDGE, "match_tolerance": MATCH_TOLERANCE,
            "change_rule": {"min_ratio": MIN_RATIO, "min_noise_units": MIN_UNITS, "min_values_held": MIN_HOLD},
            "rules": RULES,
            "series": [{"name": s.name, "family": s.family, "metric": s.metric, "kind": s.kind, "gpu": s.gpu,
                        "test": s.test, "length": len(s.values), "first_commit": s.commits[0],
                        "last_commit": s.commits[-1], "skipped": s.skipped, "sigma": nine(s.sigma),
                        "changes": [{"position": c.position, "commit": c.commit, "ratio": nine(c.ratio)}
                                    for c in s.changes],
                        "creep": list(s.creep) if s.creep else None, "sha256": digest(s.values)} for s in made]}


def main() -> int:
    TRUTH.write_text(json.dumps(truth_document(generate()), indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
