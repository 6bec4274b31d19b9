"""Makes the eighth blind change-point set's series and its truth (README.md: protocol, noise model, families).

Each pool's context comes from its own stream (``SEED``, 1, the pool's index), each series from its own (``SEED``,
2, its index); a planted change's size is drawn in noise units of the series' own noise around it, never below the
rule of change (``families.min_k``).
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from tests.blind_history8.families import (BENCH, BENCHMARKS, EVENT, FAMILIES, IDLE, KERNELS, MATCH_TOLERANCE,
                                           READ, REGIONS, REGS, RULES, TIME, WRITE, Family, min_k)
from tests.blind_history8.model import (COMMITS, POOL_BY_NAME, POOLS, SEED, Context, Pool, bytes_noise, context,
                                        flicker_offsets, idle_noise, loguniform, robust_scale, time_noise)

TRUTH = Path(__file__).with_name("truth.json")


@dataclass
class Series:
    name: str
    family: str
    metric: str
    kind: str
    gpu: str
    test: str
    pool: str
    counter: str
    commits: list[int]
    values: np.ndarray
    sigma: float  # the noise unit (log scale; 0 for an exact counter)
    changes: list[tuple[int, float]]  # (position, factor on the level)
    creep: tuple[int, int] | None = None  # first and last commit of a creep's ramp


def sig(value: float, digits: int = 6) -> float:
    return float(f"{value:.{digits}g}")


def contexts() -> dict[str, Context]:
    return {pool.name: context(pool, np.random.default_rng([SEED, 1, i])) for i, pool in enumerate(POOLS)}


def series_commits(ctx: Context, family: Family, rng: np.random.Generator) -> np.ndarray:
    present = np.flatnonzero(ctx.runner >= 0)
    if not family.short:
        return present
    if rng.random() < 0.5:  # a test added late
        return present[present >= int(rng.integers(150, 200))]
    return present[present < int(rng.integers(50, 110))]  # a test removed (renamed, or its kernel retired)


def boundaries(positions: list[int], n: int) -> list[tuple[int, int, int]]:
    """(start of the segment before, the change, end of the segment after) for each change."""
    edges = [0, *positions, n]
    return [(edges[i], edges[i + 1], edges[i + 2]) for i in range(len(positions))]


def plan(family: Family, pool: Pool, commits: np.ndarray, rng: np.random.Generator) -> list[int]:
    n = len(commits)
    margin = min(12, max(6, n // 4))
    if family.plan == "step":
        return [int(rng.integers(margin, n - margin + 1))]
    if family.plan == "infra":
        assert pool.infra_at is not None
        return [int(np.searchsorted(commits, pool.infra_at))]
    if family.plan == "revert_short":
        first = int(rng.integers(15, n - 30))
        return [first, first + int(rng.integers(5, 13))]
    if family.plan == "revert_long":
        first = int(rng.integers(15, n - 45))
        return [first, first + int(rng.integers(25, min(80, n - first - 15) + 1))]
    if family.plan == "multi":
        count = int(rng.integers(2, 4))
        while True:
            positions = sorted(int(p) for p in rng.choice(np.arange(12, n - 11), count, replace=False))
            if min(np.diff(positions)) >= 20:
                return positions
    return []


def draw_size(rng: np.random.Generator, least: float) -> float:
    """A change's size (log of its factor) from the least the rule allows: about a third just above it, the rest
    spread up to 16 times it (40 noise units where the rule asks 2.5), never past a factor of 2.5 unless the rule
    asks more."""
    ratio = rng.uniform(1.0, 1.35) if rng.random() < 0.35 else loguniform(rng, 1.35, 16.0)
    return min(least * ratio, max(math.log(2.5), least))


def measured_noise(family: Family, pool: Pool, ctx: Context, metric: str, commits: np.ndarray,
                   rng: np.random.Generator) -> np.ndarray:
    if metric in (READ, WRITE):
        return bytes_noise(metric, commits, rng)
    if metric == IDLE:
        return idle_noise(ctx, commits, rng)
    return time_noise(pool, ctx, commits, rng, pool.infra_at if family.widen else None)


def base_value(metric: str, rng: np.random.Generator) -> float:
    if metric in (TIME, EVENT):
        return loguniform(rng, 4e3, 6e6)
    if metric == BENCH:
        return loguniform(rng, 2e-5, 0.2)
    if metric == IDLE:
        return float(rng.uniform(3.0, 30.0))
    return loguniform(rng, 2e5, 4e9)


def measured(family: Family, pool: Pool, ctx: Context, metric: str, commits: np.ndarray,
             rng: np.random.Generator) -> tuple[np.ndarray, float, list[tuple[int, float]], tuple[int, int] | None]:
    eps = measured_noise(family, pool, ctx, metric, commits, rng)
    n = len(commits)
    positions = plan(family, pool, commits, rng)
    level = np.zeros(n)
    changes: list[tuple[int, float]] = []
    reverted = family.plan.startswith("revert")
    least = [min_k(p - a, b - p) * robust_scale(eps[a:b]) for a, p, b in boundaries(positions, n)]
    step = 0.0
    for i, p in enumerate(positions):
        if not (reverted and i == 1):
            size = draw_size(rng, max(least) if reverted else least[i])
            step = math.log(sig(math.exp((1 if rng.random() < 0.65 or reverted else -1) * size)))
        else:
            step = math.log(sig(1 / math.exp(step)))
        level[p:] += step
        changes.append((p, sig(math.exp(step))))
    creep = None
    if family.plan == "creep":
        start, span = int(rng.integers(20, n - 110)), int(rng.integers(40, 101))
        total = (1 if rng.random() < 0.7 else -1) * max(0.03, 6 * robust_scale(eps)) * rng.uniform(1.0, 2.5)
        level += np.clip((np.arange(n) - start) / span, 0.0, 1.0) * total
        creep = (int(commits[start]), int(commits[start + span]))
    values = base_value(metric, rng) * np.exp(eps + level)
    if metric == IDLE:
        values = np.minimum(values, 99.0)
    return values, robust_scale(eps), changes, creep


def counter(family: Family, pool: Pool, metric: str, commits: np.ndarray,
            rng: np.random.Generator) -> tuple[np.ndarray, list[tuple[int, float]]]:
    """An exact counter (one value per level) or a flickering one (a few values per level, the same offsets)."""
    n = len(commits)
    base = float(rng.choice([32, 40, 48, 64, 72, 96, 128, 168])) if metric == REGS else float(
        int(loguniform(rng, 1e5, 2e9)))
    if metric == READ:
        base -= base % 32
    offsets, weights = flicker_offsets(rng, metric == READ) if family.counter == "flicker" else (np.zeros(1), np.ones(1))
    span = float(offsets[-1])
    levels = np.full(n, base)
    changes = []
    for p in plan(family, pool, commits, rng):
        if metric == REGS:
            new = float(np.clip(base + 8 * int(rng.choice([-3, -2, -1, 1, 1, 2, 3, 4])), 16, 255))
        else:
            sign = 1 if rng.random() < 0.65 else -1
            new = base + sign * max(3 * span + 32, float(int(base * loguniform(rng, 0.0008, 0.12)) // 32 * 32))
        levels[p:] = new
        changes.append((p, sig(new / base, 9)))
        base = new
    values = levels + rng.choice(offsets, n, p=weights)
    return values, changes


def make_series(index: int, family: Family, source: tuple[str, str], ctx: dict[str, Context], number: int) -> Series:
    rng = np.random.default_rng([SEED, 2, index])
    pool, metric = POOL_BY_NAME[source[0]], source[1]
    commits = series_commits(ctx[pool.name], family, rng)
    creep = None
    if family.counter:
        values, changes = counter(family, pool, metric, commits, rng)
        sigma = 0.0 if family.counter == "exact" else robust_scale(np.log(values))
    else:
        values, sigma, changes, creep = measured(family, pool, ctx[pool.name], metric, commits, rng)
    values = np.array([sig(v, 9) for v in values])
    if metric == BENCH:
        name = f"{BENCHMARKS[number % len(BENCHMARKS)]}_{index:03d}"
        kind, test = "benchmark", f"tests/perf/test_host.py::{name}"
    elif metric == IDLE:
        name = f"{REGIONS[number % len(REGIONS)]}_{index:03d}"
        kind, test = "region", f"tests/perf/test_steps.py::test_{name}"
    else:
        name = f"{KERNELS[number % len(KERNELS)]}_{index:03d}"
        kind, test = "kernel", f"tests/perf/test_kernels.py::test_{KERNELS[number % len(KERNELS)]}[{index}]"
    return Series(name, family.name, metric, kind, pool.gpu, test, pool.name, family.counter,
                  [int(c) for c in commits], values, sig(sigma), changes, creep)


def generate() -> list[Series]:
    ctx = contexts()
    made: list[Series] = []
    for family in FAMILIES:
        for number in range(family.count):
            made.append(make_series(len(made), family, family.sources[number % len(family.sources)], ctx, number))
    return made


def digest(values: np.ndarray) -> str:
    return hashlib.sha256("\n".join(f"{v:.9g}" for v in values.tolist()).encode()).hexdigest()


def truth_row(s: Series) -> dict[str, Any]:
    first, last = s.commits[0], s.commits[-1]
    return {"name": s.name, "family": s.family, "metric": s.metric, "kind": s.kind, "gpu": s.gpu, "test": s.test,
            "pool": s.pool, "counter": s.counter, "length": len(s.commits), "first_commit": first,
            "last_commit": last, "skipped": sorted(set(range(first, last + 1)) - set(s.commits)), "sigma": s.sigma,
            "changes": [{"position": p, "commit": s.commits[p], "factor": f} for p, f in s.changes],
            "creep": None if s.creep is None else {"first_commit": s.creep[0], "last_commit": s.creep[1]},
            "sha256": digest(s.values)}


def truth_document(made: list[Series]) -> dict[str, Any]:
    return {"set": 8, "seed": SEED, "commits": COMMITS, "match_tolerance": MATCH_TOLERANCE, "rules": RULES,
            "series": [truth_row(s) for s in made]}


if __name__ == "__main__":
    import json

    document = truth_document(generate())
    rows = ",\n".join(json.dumps(row) for row in document.pop("series"))
    TRUTH.write_text(json.dumps(document)[:-1] + ', "series": [\n' + rows + "\n]}\n", encoding="utf-8")
