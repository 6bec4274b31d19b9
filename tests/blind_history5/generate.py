"""Makes the fifth blind set's series and writes truth.json (README.md: the protocol)::

    PYTHONPATH=. python tests/blind_history5/generate.py

Every series comes from its own stream (the seed, 2 and its index); each pool's context from its own (the seed,
1 and the pool's index). The values are kept at 9 significant digits, the form truth.json's sha256 is over.
"""

from __future__ import annotations

import hashlib
import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from tests.blind_history5.families import FAMILIES, HEAD, RULES, TAIL
from tests.blind_history5.model import COMMITS, FLOOR, KINDS, POOL_INDEX, POOLS, SEED, Context, pool_context, values

TRUTH = Path(__file__).with_name("truth.json")
KERNELS = ("gemm_bf16_tn", "flash_attn_fwd", "layernorm_fwd", "softmax_online", "rmsnorm_bwd", "topk_select",
           "spmv_csr", "conv2d_nhwc", "reduce_sum", "rope_apply", "quantize_fp8", "moe_gather", "scan_inclusive",
           "histogram_atomic", "transpose_tiled", "embedding_bag", "cross_entropy_fwd", "paged_attn_decode")


@dataclass
class Series:
    name: str
    family: str
    gpu: str
    test: str
    kind: str
    metric: str
    sigma: float
    commits: list[int]
    values: np.ndarray
    changes: list[dict[str, Any]]
    creep: dict[str, Any] | None


def membership(rng: np.random.Generator, context: Context) -> np.ndarray:
    """The commits a series has a value at: its pool ran, its test existed, and the job did not fail."""
    first = 0 if rng.random() < 0.75 else int(rng.integers(1, 41))
    last = COMMITS - 1 if rng.random() < 0.85 else int(rng.integers(190, COMMITS))
    ran = context.ran.copy()
    ran[:first] = False
    ran[last + 1:] = False
    ran &= rng.random(COMMITS) >= rng.uniform(0.0, 0.04)
    return np.flatnonzero(ran)


def nine_digits(made: np.ndarray) -> np.ndarray:
    return np.array([float(f"{v:.9g}") for v in made.tolist()])


def one_series(index: int, family: str, maker: Any, contexts: list[Context]) -> Series:
    rng = np.random.default_rng([SEED, 2, index])
    spec = maker(rng)
    pool = POOLS[POOL_INDEX[spec.pool]]
    context = contexts[POOL_INDEX[spec.pool]]
    commits = membership(rng, context)
    n = len(commits)
    unit = spec.noise.scale(pool, spec.base)
    planted = [(int(np.searchsorted(commits, context.refresh)) if p == -1 else p, f)
               for p, f in spec.plant(rng, n, unit)]
    level = np.ones(n)
    for position, f in planted:
        level[position:] *= f
    creep = None
    if spec.creep[0]:
        length = max(int(spec.creep[1] * n), 20)
        start = int(rng.integers(HEAD, n - length - TAIL))
        level *= np.exp(spec.creep[0] * np.clip((np.arange(n) - start) / length, 0, 1))
        creep = {"start": start, "end": start + length, "factor": round(float(np.exp(spec.creep[0])), 6)}
    made = nine_digits(values(rng, spec.noise, pool, context, commits, spec.base, level))
    kernel = KERNELS[index % len(KERNELS)]
    return Series(f"{kernel}_{index:03d}", family, pool.gpu, f"tests/{pool.name}/test_{kernel}.py::test_{kernel}",
                  KINDS.get(spec.metric, "kernel"), spec.metric, unit, commits.tolist(), made,
                  [{"position": p, "commit": int(commits[p]), "factor": round(f, 6)} for p, f in planted], creep)


def generate() -> list[Series]:
    contexts = [pool_context(pool) for pool in POOLS]
    made: list[Series] = []
    for family, count, maker in FAMILIES:
        for _ in range(count):
            made.append(one_series(len(made), family, maker, contexts))
    return made


def digest(made: np.ndarray) -> str:
    return hashlib.sha256(" ".join(f"{v:.9g}" for v in made.tolist()).encode()).hexdigest()


def truth_document(made: list[Series]) -> dict[str, Any]:
    rows = []
    for s in made:
        inside = set(range(s.commits[0], s.commits[-1] + 1))
        rows.append({"name": s.name, "family": s.family, "metric": s.metric, "kind": s.kind, "gpu": s.gpu,
                     "test": s.test, "length": len(s.values), "first_commit": s.commits[0],
                     "last_commit": s.commits[-1], "skipped_commits": sorted(inside - set(s.commits)),
                     "sigma": round(s.sigma, 6), "changes": s.changes, "creep": s.creep, "sha256": digest(s.values)})
    return {"seed": SEED, "commits": COMMITS, "match_tolerance": 2, "sigma_floor": FLOOR,
            "change_rule": "|ln factor| >= 4 * max(sigma, sigma_floor); the new level holds >= 3 values; no "
                           f"change before position {HEAD} or among the last {TAIL} values",
            "rules": RULES, "series": rows}


def main() -> int:
    document = truth_document(generate())
    head = [f" {json.dumps(key)}: {json.dumps(value)}" for key, value in document.items() if key != "series"]
    rows = ",\n".join(f"  {json.dumps(row)}" for row in document["series"])  # a series a line
    TRUTH.write_text("{\n" + ",\n".join(head) + ',\n "series": [\n' + rows + "\n ]\n}\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
