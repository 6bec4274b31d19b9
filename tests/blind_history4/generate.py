"""The fourth blind change-point set's series and their truth (README.md)::

    PYTHONPATH=. python tests/blind_history4/generate.py [--write]

Without ``--write`` it checks that the series still match truth.json (exit 1 when not). Each pool's context comes
from its own stream (the seed, 1, the pool's index) and each series from its own (the seed, 2, its index).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from tests.blind_history4.families import (FAMILIES, FLAT_PREFIX, FLICKER_FAMILIES, REVERTED_FAMILIES,
                                           UNSCORED_FAMILIES, Family)
from tests.blind_history4.model import (BASES, COMMITS, POOLS, TIMINGS, Flicker, Pool, counter, make_pool, noise_sd,
                                        timing)

SEED = 4_035  # set 4 of issue 35
TRUTH = Path(__file__).with_name("truth.json")
MATCH_TOLERANCE = 2


@dataclass(frozen=True)
class Series:
    name: str
    family: str
    metric: str
    gpu: str
    test: str
    commits: list[int]  # the commits the series has a value at, in order
    values: np.ndarray
    changes: list[tuple[int, float]]  # planted: (position, factor on the level)


def make_pools() -> dict[str, Pool]:
    return {name: make_pool(name, np.random.default_rng([SEED, 1, i])) for i, name in enumerate(POOLS)}


def present(family: Family, pool: Pool, rng: np.random.Generator) -> np.ndarray:
    """The commits a series has a value at: from the test's addition to its removal, where its pool's job ran,
    the test was not skipped (flaky, a path filter)."""
    first = int(rng.integers(*family.first))
    last = int(rng.integers(100, COMMITS - 10)) if rng.random() < family.removed else COMMITS
    ran = pool.up.copy()
    ran[:first] = False
    ran[last:] = False
    ran &= rng.random(COMMITS) >= rng.uniform(0, 0.02)
    if family.presence < 1:
        ran &= rng.random(COMMITS) < family.presence
    return np.flatnonzero(ran)


def draw_flicker(rng: np.random.Generator) -> Flicker:
    extra = int(rng.integers(1, 3))
    offsets = [float(rng.choice([-1.0, 1.0]) * np.exp(rng.uniform(np.log(1e-4), np.log(0.02)))) for _ in range(extra)]
    return Flicker((0.0, *offsets), float(rng.uniform(0.05, 0.5)), float(rng.uniform(0.0, 0.8)))


def creep(rng: np.random.Generator, n: int) -> np.ndarray:
    """A slow creep: 0.1-0.3% a run for 60-100 runs, then it holds."""
    start = int(rng.integers(20, max(21, n - 100)))
    length, rate = int(rng.integers(60, 101)), float(rng.uniform(0.001, 0.003))
    return np.asarray((1 + rate) ** np.clip(np.arange(n) - start, 0, length), dtype=float)


def build(family: Family, number: int, index: int, pools: dict[str, Pool]) -> Series:
    rng = np.random.default_rng([SEED, 2, index])
    metric, pool_name = family.runs_on[int(rng.integers(len(family.runs_on)))]
    pool = pools[pool_name]
    commits = present(family, pool, rng)
    low, high = family.bases or BASES[metric]
    base = float(np.exp(rng.uniform(np.log(low), np.log(high))))
    sd = noise_sd(metric, base, rng)
    flicker = draw_flicker(rng) if family.flicker else None
    changes = family.plan(rng, commits, sd, max(map(abs, flicker.offsets)) if flicker else 0.0)
    level = np.full(len(commits), base)
    for position, factor in changes:
        level[position:] *= factor
    if family.creep:
        level *= creep(rng, len(commits))
    if metric in TIMINGS:
        values = timing(metric, level, commits, pool, sd, rng)
    else:
        values = counter(metric, level, sd, flicker, rng)
    return Series(f"{family.name}.{number:03d}", family.name, metric, pool.spec.gpu,
                  f"tests/test_{pool_name.replace('-', '_')}.py::test_{family.name}", commits.tolist(), values,
                  changes)


def generate() -> list[Series]:
    pools = make_pools()
    made = []
    for family in FAMILIES:
        for number in range(family.count):
            made.append(build(family, number, len(made), pools))
    return made


def digest(values: np.ndarray) -> str:
    return hashlib.sha256(" ".join(f"{v:.9g}" for v in values.tolist()).encode()).hexdigest()


def truth_document(made: list[Series]) -> dict[str, Any]:
    rows = []
    for s in made:
        present_at = set(s.commits)
        rows.append({
            "name": s.name, "family": s.family, "metric": s.metric, "gpu": s.gpu, "test": s.test,
            "length": len(s.commits), "first_commit": s.commits[0], "last_commit": s.commits[-1],
            "skipped": [c for c in range(s.commits[0], s.commits[-1] + 1) if c not in present_at],
            "changes": [{"position": p, "commit": s.commits[p], "factor": round(f, 6)} for p, f in s.changes],
            "sha256": digest(s.values)})
    return {"seed": SEED, "commits": COMMITS, "match_tolerance": MATCH_TOLERANCE,
            "rules": {"flat_prefix": FLAT_PREFIX, "flicker_families": list(FLICKER_FAMILIES),
                      "reverted_families": list(REVERTED_FAMILIES), "unscored_families": list(UNSCORED_FAMILIES)},
            "series": rows}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--write", action="store_true", help="write truth.json (only before the first run)")
    args = parser.parse_args(argv)
    document = truth_document(generate())
    if args.write:
        TRUTH.write_text(json.dumps(document, indent=1) + "\n", encoding="utf-8")
        return 0
    same = document == json.loads(TRUTH.read_text(encoding="utf-8"))
    print("truth.json reproduced" if same else f"the series no longer match {TRUTH}", file=sys.stderr)
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
