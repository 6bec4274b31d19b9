"""Generates the ninth blind set's series from ``model.SEED`` and writes or checks ``truth.json``::

    PYTHONPATH=. python tests/blind_history9/generate.py --write   # once, before any run (README.md: "Protocol")
"""

from __future__ import annotations

import hashlib
import json
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from tests.blind_history9.families import FAMILIES, STEMS, Family
from tests.blind_history9.model import COMMITS, INFRA_COMMIT, POOL_INDEX, POOLS, PoolContext, pool_context, \
    rounded, timing_noise, SEED

TRUTH = Path(__file__).with_name("truth.json")
MIN_SEGMENT = 12  # positions every level keeps (README.md: "What counts as a change")
MIN_STEP = 3.0  # noise units


@dataclass
class Change:
    position: int
    commit: int
    factor: float  # the new level over the old


@dataclass
class Series:
    name: str
    family: str
    pool: str
    gpu: str
    test: str
    kind: str
    metric: str
    how: str
    sigma: float
    commits: list[int]
    values: np.ndarray
    changes: list[Change] = field(default_factory=list)
    creep: tuple[int, int] | None = None  # positions where a creep starts and ends


def lifetime(rng: np.random.Generator, family: Family) -> tuple[int, int]:
    if family.plan == "driver" or family.pool == "h200-nightly":
        return 0, COMMITS - 1
    first = int(rng.integers(15, 70)) if rng.random() < 0.2 else 0
    last = int(rng.integers(185, 231)) if rng.random() < 0.1 else COMMITS - 1
    return first, last


def step_size(rng: np.random.Generator, sigma: float) -> float:
    """A step in noise units times ``sigma``, 3 to 9 units, small ones commoner; a regression two times in three."""
    sign = 1.0 if rng.random() < 0.65 else -1.0
    return sign * sigma * (MIN_STEP + 6.0 * rng.random() ** 1.5)


def plan_positions(rng: np.random.Generator, family: Family, commits: list[int]) -> tuple[list[int], int | None]:
    """Where the level changes; for a revert, the second position undoes the first. Returns the positions and,
    for ``creep``, its length."""
    n, m = len(commits), MIN_SEGMENT
    if family.plan == "step":
        return [int(rng.integers(m, n - m + 1))], None
    if family.plan == "two":
        first = int(rng.integers(m, n - 2 * m + 1))
        return [first, int(rng.integers(first + m, n - m + 1))], None
    if family.plan in ("reverted_short", "reverted_long"):
        held = int(rng.integers(m, 21)) if family.plan == "reverted_short" else int(rng.integers(40, 91))
        first = int(rng.integers(m, n - m - held + 1))
        return [first, first + held], None
    if family.plan == "driver":
        return [next(i for i, c in enumerate(commits) if c >= INFRA_COMMIT)], None
    if family.plan == "creep":
        span = int(rng.integers(30, 81))
        return [int(rng.integers(30, n - span - 20))], span
    return [], None


def base_level(rng: np.random.Generator, how: str) -> float:
    if how == "bench":
        return float(10 ** rng.uniform(-5, -1))
    if how == "idle":
        return float(rng.uniform(5, 40))
    if how in ("counter", "flicker", "dram"):  # counts; bytes in whole 32-byte sectors
        return float(np.round(10 ** rng.uniform(5.5, 9) / (1 if how == "counter" else 32)) * (1 if how == "counter" else 32))
    return float(10 ** rng.uniform(3.5, 6.5))


def levels(rng: np.random.Generator, s: Series, base: float, positions: list[int], span: int | None) -> np.ndarray:
    """The level at each position (log scale for timings and DRAM bytes), filling ``s.changes`` and ``s.creep``."""
    n = len(s.commits)
    additive = s.how in ("idle", "counter", "flicker")
    level = np.full(n, base if additive else np.log(base))
    if span is not None:
        start = positions[0]
        total = s.sigma * rng.uniform(3.0, 6.0)  # a slow regression: 3 to 6 noise units over 30 to 80 runs
        level += total * np.clip((np.arange(n) - start) / span, 0, 1)
        s.creep = (start, start + span)
        return level
    step = 0.0
    for k, p in enumerate(positions):
        old = level[p - 1]
        if k == 1 and s.family.startswith("reverted"):
            step = -step
        elif s.how == "counter":
            step = max(1.0, round(base * 10 ** rng.uniform(-3, -1.3))) * (1 if rng.random() < 0.65 else -1)
        elif s.how == "flicker":
            step = round(s.sigma * base) * int(rng.integers(3, 8)) * (1 if rng.random() < 0.65 else -1)
        else:
            step = step_size(rng, s.sigma)
        level[p:] += step
        new = level[p]
        factor = new / old if additive else float(np.exp(new - old))
        s.changes.append(Change(p, s.commits[p], float(f"{factor:.9g}")))
    return level


def measured(rng: np.random.Generator, s: Series, ctx: PoolContext, level: np.ndarray, base: float) -> np.ndarray:
    pool = POOLS[POOL_INDEX[s.pool]]
    at = np.array(s.commits)
    if s.how == "counter":
        return level
    if s.how == "flicker":  # one or two extra sectors' worth in some runs: L2 eviction order, atomics retries
        return level + s.sigma * base * rng.binomial(int(rng.integers(1, 3)), rng.uniform(0.15, 0.5), len(at))
    if s.how == "idle":
        return np.clip(level + timing_noise(rng, "events", pool, ctx, at, s.sigma), 0.0, 100.0)
    if s.how == "dram":
        return 32.0 * np.round(np.exp(level + s.sigma * rng.normal(0, 1, len(at))) / 32.0)
    return np.exp(level + timing_noise(rng, s.how, pool, ctx, at, s.sigma))


def make(index: int, family: Family, contexts: dict[str, PoolContext]) -> Series:
    rng = np.random.default_rng([SEED, 2, index])
    pool = POOLS[POOL_INDEX[family.pool]]
    ctx = contexts[family.pool]
    first, last = lifetime(rng, family)
    commits = [c for c in range(first, last + 1) if ctx.ran[c]]
    stem = STEMS[int(rng.integers(0, len(STEMS)))]
    low, high = family.sigma
    base = base_level(rng, family.how)
    sigma = 0.0 if family.how == "counter" else float(f"{rng.uniform(low, high):.6g}")
    if family.how == "flicker":
        sigma = float(f"{max(round(sigma * base / 32), 1) * 32 / base:.9g}")  # whole 32-byte sectors
    s = Series(f"{stem}_{index:03d}", family.name, pool.name, pool.gpu, f"tests/test_{stem.split('_')[0]}.py::"
               f"test_{stem}", "kernel" if family.kind == "kernel" else family.kind, family.metric, family.how,
               sigma, commits, np.zeros(0))
    positions, span = plan_positions(rng, family, commits)
    s.values = rounded(measured(rng, s, ctx, levels(rng, s, base, positions, span), base))
    return s


def generate() -> list[Series]:
    contexts = {pool.name: pool_context(pool) for pool in POOLS}
    made, index = [], 0
    for family in FAMILIES:
        for _ in range(family.count):
            made.append(make(index, family, contexts))
            index += 1
    return made


def row(s: Series) -> dict[str, Any]:
    inside = range(s.commits[0], s.commits[-1] + 1)
    return {"name": s.name, "family": s.family, "metric": s.metric, "kind": s.kind, "gpu": s.gpu, "test": s.test,
            "pool": s.pool, "length": len(s.commits), "first_commit": s.commits[0], "last_commit": s.commits[-1],
            "skipped": [c for c in inside if c not in set(s.commits)], "sigma": s.sigma,
            "changes": [{"position": c.position, "commit": c.commit, "factor": c.factor} for c in s.changes],
            "creep": list(s.creep) if s.creep else None,
            "sha256": hashlib.sha256(",".join(f"{v:.9g}" for v in s.values).encode()).hexdigest()}


def truth_document(made: list[Series]) -> dict[str, Any]:
    return {"set": 9, "seed": SEED, "commits": COMMITS, "match_tolerance": 2,
            "rules": {"flicker_families": ["flat_flicker", "step_flicker"],
                      "reverted_families": ["reverted_short", "reverted_long"], "unscored_families": ["creep"],
                      "min_segment": MIN_SEGMENT, "min_step_noise_units": MIN_STEP},
            "series": [row(s) for s in made]}


if __name__ == "__main__":
    document = truth_document(generate())
    if sys.argv[1:] == ["--write"]:
        TRUTH.write_text(json.dumps(document, indent=1) + "\n", encoding="utf-8")
    sys.exit(0 if document == json.loads(TRUTH.read_text(encoding="utf-8")) else 1)
