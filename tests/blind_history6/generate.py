"""Generates the sixth blind set's series and its truth (README.md: protocol)::

    PYTHONPATH=. python -m tests.blind_history6.generate   # rewrites truth.json: only before the first run
"""

from __future__ import annotations

import hashlib
import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from tests.blind_history6.families import FAMILIES, RULES, SHARED, Creep, Family
from tests.blind_history6.model import COMMITS, FLOOR, SEED, Pool, draw_noise, pool_context, values

TRUTH = Path(__file__).with_name("truth.json")
TESTS = ("gemm", "attention", "layernorm", "reduce", "softmax", "embedding", "io")
TEST_KIND = {"host": "benchmark", "idle": "region"}


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


def span(rng: np.random.Generator, how: str) -> tuple[int, int]:
    """The first and last commit of a series' test."""
    if how == "short":
        length = int(rng.integers(32, 84))
        first = int(rng.integers(0, COMMITS - length + 1))
        return first, first + length - 1
    pick = 0.0 if how == "whole" else rng.random()
    if pick < 0.6:
        return 0, COMMITS - 1
    if pick < 0.85:
        return int(rng.integers(10, 101)), COMMITS - 1
    return 0, int(rng.integers(170, 231))


def one_series(index: int, family: Family, pools: list[Pool]) -> Series:
    rng = np.random.default_rng([SEED, 2, index])
    kind = str(rng.choice(family.kinds))
    noise = draw_noise(kind, rng)
    pool = pools[int(rng.integers(0, 2 if family.span == "whole" else len(pools)))]
    first, last = span(rng, family.span)
    commits = np.array([c for c in range(first, last + 1) if pool.ran[c]])
    n = len(commits)
    shared = int(np.searchsorted(commits, SHARED[pools.index(pool)])) if family.span == "whole" else -1
    planted, creep = family.maker(rng, n, noise.sigma, shared)
    level = np.full(n, noise.level)
    for position, factor in planted:
        level[position:] *= factor
    if creep is not None:
        start, runs, factor = creep
        level *= np.exp(np.log(factor) * np.clip((np.arange(n) - start + 1) / runs, 0, 1))
    made = values(noise, level, commits, pool, rng)
    name = f"{TESTS[index % len(TESTS)]}_{kind}_k{index:04d}"
    return Series(name, family.name, pool.gpu, f"tests/gpu/test_{TESTS[index % len(TESTS)]}.py::test_{name}",
                  TEST_KIND.get(kind, "kernel"), noise.metric, noise.sigma, [int(c) for c in commits], made,
                  [{"position": p, "commit": int(commits[p]), "factor": f} for p, f in planted], creep_row(creep))


def creep_row(creep: Creep | None) -> dict[str, Any] | None:
    return None if creep is None else {"start": creep[0], "runs": creep[1], "factor": creep[2]}


def generate() -> list[Series]:
    pools = [pool_context(i) for i in range(3)]
    made: list[Series] = []
    for family in FAMILIES:
        made += [one_series(len(made) + i, family, pools) for i in range(family.count)]
    return made


def digest(made: np.ndarray) -> str:
    return hashlib.sha256(",".join(f"{v:.9g}" for v in made.tolist()).encode()).hexdigest()


def truth_document(made: list[Series]) -> dict[str, Any]:
    return {"set": "perfgate blind change-point set 6", "seed": SEED, "commits": COMMITS, "match_tolerance": 2,
            "sigma_floor": FLOOR, "rules": RULES,
            "series": [{"name": s.name, "family": s.family, "metric": s.metric, "kind": s.kind, "gpu": s.gpu,
                        "test": s.test, "length": len(s.commits), "first_commit": s.commits[0],
                        "last_commit": s.commits[-1],
                        "skipped": sorted(set(range(s.commits[0], s.commits[-1] + 1)) - set(s.commits)),
                        "sigma": s.sigma, "changes": s.changes, "creep": s.creep, "sha256": digest(s.values)}
                       for s in made]}


def main() -> int:
    document = truth_document(generate())
    rows = ",\n".join("  " + json.dumps(row) for row in document.pop("series"))
    head = [f" {json.dumps(k)}: {json.dumps(v)}" for k, v in document.items()]
    TRUTH.write_text("{\n" + ",\n".join(head) + ',\n "series": [\n' + rows + "\n ]\n}\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
