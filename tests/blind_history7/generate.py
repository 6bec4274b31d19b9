"""The seventh blind set's series, made from a fixed seed (README.md: "Protocol" and "The noise model")."""

from __future__ import annotations

import functools
import hashlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from tests.blind_history7 import model as m
from tests.blind_history7.families import FAMILIES, RULES, Family, creep_span, env_event, log_uniform, plan, room

TRUTH = Path(__file__).with_name("truth.json")


@dataclass(frozen=True)
class Context:
    """A runner pool's shared state at each commit of main (arrays of COMMITS; runner -1: no run)."""
    runner: np.ndarray
    sku: np.ndarray
    thermal: np.ndarray  # AR(1) drift, unit spread
    spell: np.ndarray  # a co-tenant spell's slowdown in noise units, 0 outside spells


@dataclass
class Series:
    name: str
    family: str
    metric_class: str
    pool: str
    test: str
    commits: list[int]
    values: np.ndarray
    sigma: float
    changes: list[dict[str, Any]] = field(default_factory=list)
    creep: dict[str, int] | None = None

    @property
    def metric(self) -> str:
        return m.METRICS[self.metric_class][0]

    @property
    def kind(self) -> str:
        return m.METRICS[self.metric_class][2]

    @property
    def gpu(self) -> str:
        return m.POOL[self.pool].gpu


@functools.lru_cache(maxsize=None)
def context(index: int) -> Context:
    pool = m.POOLS[index]
    rng = np.random.default_rng([m.SEED, 1, index])
    commits = np.arange(m.COMMITS)
    ran = (commits >= pool.first) & (commits < pool.end) & ((commits - pool.first) % pool.every == 0)
    ran &= rng.random(m.COMMITS) >= pool.skip
    runner = rng.integers(0, pool.runners, m.COMMITS)
    if pool.swap is not None:
        runner[(commits >= pool.swap) & (runner == 0)] = pool.runners  # runner 0 replaced by a like one
    runner[~ran] = -1
    sku = rng.choice(len(pool.skus), m.COMMITS, p=pool.skus) if pool.skus else np.zeros(m.COMMITS, int)
    thermal = np.zeros(m.COMMITS)
    innovation = rng.normal(0.0, np.sqrt(1 - m.THERMAL_PHI ** 2), m.COMMITS)
    thermal[0] = rng.normal()
    for c in range(1, m.COMMITS):
        thermal[c] = m.THERMAL_PHI * thermal[c - 1] + innovation[c]
    spell = np.zeros(m.COMMITS)
    for start in np.flatnonzero(ran & (rng.random(m.COMMITS) < pool.spell_rate)).tolist():
        length = int(rng.integers(m.SPELL_RUNS[0], m.SPELL_RUNS[1] + 1))
        runs = np.flatnonzero(ran[start:] & (runner[start:] == runner[start]))[:length]
        spell[start + runs] = rng.uniform(*m.SPELL_UNITS)
    return Context(runner, sku, thermal, spell)


def span(family: Family, pool: m.Pool, rng: np.random.Generator) -> tuple[int, int]:
    """The commits the series' test existed: [first, end)."""
    first, end = pool.first, pool.end
    if family.plan != "env" and pool.every == 1 and rng.random() < m.LATE_START:
        first = max(first, int(rng.integers(40, 151)))
    if family.plan != "env" and pool.every == 1 and rng.random() < m.EARLY_END:
        end = min(end, int(rng.integers(170, 231)))
    return first, end


def relative_noise(metric_class: str, ctx: Context, at: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """ln of each value's multiplier on the level: the metric's own noise, runner offsets, drift and spells."""
    scale = log_uniform(rng, *m.NOISE[metric_class])
    n = len(at)
    if metric_class == "event":
        own = rng.gamma(4.0, 0.5, n) - 2.0
    elif metric_class == "bench":
        own = 0.6 * rng.standard_t(3, n)
        own = np.where(own < 0, 0.3 * own, own)  # the minimum of rounds: mostly slowed, rarely sped up
    else:
        own = rng.normal(0.0, 1.0, n)
    offsets = rng.normal(0.0, m.RUNNER_UNITS[metric_class], int(ctx.runner.max()) + 2)
    units = own + offsets[ctx.runner[at]]
    if metric_class == "ncu":
        slow = rng.random(n) < m.NCU_OUTLIER[0]
        units += slow * rng.uniform(m.NCU_OUTLIER[1], m.NCU_OUTLIER[2], n)
    if metric_class in ("event", "idle", "bench"):
        units += rng.uniform(0.3, 1.0) * ctx.spell[at]
    if metric_class in ("event", "idle"):
        units += rng.uniform(0.5, 1.0) * m.THERMAL_UNITS * ctx.thermal[at]
    if metric_class == "bench":
        units += m.SKU_UNITS * rng.uniform(0.7, 1.2) * np.where(ctx.sku[at] == 0, -1.0, 1.0)
    noise: np.ndarray = np.log1p(np.clip(scale * units, -0.5, None))
    return noise


def unit_of(noise: np.ndarray) -> float:
    return float(1.4826 * np.median(np.abs(noise - np.median(noise))))


def counter_values(family: Family, metric_class: str, ctx: Context, at: np.ndarray,
                   rng: np.random.Generator) -> tuple[np.ndarray, float, list[tuple[int, float]]]:
    """An exact or flickering counter: its values, its noise unit (the flicker's spread, relative) and its
    planted changes as (position, factor)."""
    base = int(log_uniform(rng, 1e5, 5e8)) // 32 * 32
    counts = np.full(len(at), float(base))
    spread = 0.0
    if metric_class != "exact":
        quantum = max(32, int(base * log_uniform(rng, 2e-4, 2e-3)) // 32 * 32)
        levels = int(rng.integers(2, 4))
        odds = rng.uniform(0.05, 0.6, int(ctx.runner.max()) + 2)  # each runner's odds of a higher count
        high = rng.random((len(at), levels - 1)) < odds[ctx.runner[at]][:, None]
        counts += quantum * high.sum(axis=1)
        spread = float(quantum * (levels - 1))
    changes = []
    for position, size in plan(family, rng, len(at), 0):
        if metric_class == "exact":
            move = max(1, round(base * abs(size))) * (1 if size > 0 else -1)
        else:
            move = round(size * spread)
        changes.append((position, (base + move) / base))
        counts[position:] += move
    return counts, spread / base, changes


def relative_values(family: Family, metric_class: str, ctx: Context, at: np.ndarray, event: int, nudge: int,
                    rng: np.random.Generator) -> tuple[np.ndarray, float, list[tuple[int, float]], Any]:
    """A timing, share or byte count: its values, noise unit and planted changes as (position, factor), and a
    creep's span. ``nudge``: the position the driver update nudged it at (0: none)."""
    noise = relative_noise(metric_class, ctx, at, rng)
    sigma = unit_of(noise)
    level = np.zeros(len(at))
    if nudge:
        spread, bound = m.DRIVER_NUDGE
        level[nudge:] += float(np.clip(rng.normal(0.0, spread), -bound, bound)) * sigma
    changes = []
    for position, size in plan(family, rng, len(at), event):
        if family.plan == "env":
            size = -size if metric_class == "bench" else (size if rng.random() < 0.6 else -size)
        if abs(size) * sigma > m.MAX_LOG_FACTOR:
            size = float(np.sign(size)) * max(m.MAX_LOG_FACTOR / sigma, family.units[0])
        changes.append((position, float(np.exp(size * sigma))))
        level[position:] += size * sigma
    creep = None
    if family.plan == "creep":
        start, end, size = creep_span(rng, len(at))
        level += size * sigma * np.clip((np.arange(len(at)) - start) / (end - start), 0.0, 1.0)
        creep = {"start": start, "end": end}
    base = {"ncu": log_uniform(rng, 3e3, 5e6), "event": log_uniform(rng, 0.02, 40.0),
            "bench": log_uniform(rng, 1e-4, 2.0), "idle": rng.uniform(8.0, 35.0),
            "dram": log_uniform(rng, 1e6, 4e9)}[metric_class]
    values = base * np.exp(level + noise)
    if metric_class == "ncu":
        values = np.maximum(np.round(values), 1.0)
    elif metric_class == "dram":
        values = np.round(values / 32) * 32
    return values, sigma, changes, creep


def make_series(index: int, family: Family, name: str) -> Series:
    rng = np.random.default_rng([m.SEED, 2, index])
    metric_class = str(rng.choice(family.metrics))
    while True:
        if family.plan == "env":
            pool_name, event_commit = env_event(metric_class)
        else:
            pool_name, event_commit = str(rng.choice(m.POOLS_OF[metric_class])), 0
        pool_index = [p.name for p in m.POOLS].index(pool_name)
        ctx = context(pool_index)
        first, end = span(family, m.POOLS[pool_index], rng)
        at = np.flatnonzero(ctx.runner >= 0)
        at = at[(at >= first) & (at < end)]
        if room(family, len(at)):
            break
    event = int(np.searchsorted(at, event_commit))
    nudge = int(np.searchsorted(at, m.DRIVER_UPDATE[1]))
    nudge = nudge if pool_name == m.DRIVER_UPDATE[0] and family.plan != "env" and 0 < nudge < len(at) else 0
    if metric_class in ("exact", "flicker", "flicker_atom"):
        values, sigma, changes = counter_values(family, metric_class, ctx, at, rng)
        creep = None
    else:
        values, sigma, changes, creep = relative_values(family, metric_class, ctx, at, event, nudge, rng)
    planted = [{"position": p, "commit": int(rng.integers(at[p - 1] + 1, at[p] + 1)), "factor": float(f)}
               for p, f in changes]
    test = f"tests/perf/test_{m.AREAS[index % len(m.AREAS)]}.py::test_{name.rsplit('_', 1)[0]}"
    return Series(name, family.name, metric_class, pool_name, test, at.tolist(), values, sigma, planted, creep)


def names(count: int) -> list[str]:
    """Kernel names that say nothing of a series' family (a stream of their own)."""
    order = np.random.default_rng([m.SEED, 3]).permutation(count)
    return [f"{m.KERNELS[int(k) % len(m.KERNELS)]}_{int(k):03d}" for k in order]


def generate() -> list[Series]:
    jobs = [family for family in FAMILIES for _ in range(family.count)]
    return [make_series(i, family, name) for i, (family, name) in enumerate(zip(jobs, names(len(jobs))))]


def digits(value: float) -> str:
    return f"{value:.9g}"


def truth_row(s: Series) -> dict[str, Any]:
    span_commits = set(range(s.commits[0], s.commits[-1] + 1))
    row: dict[str, Any] = {
        "name": s.name, "family": s.family, "metric": s.metric, "kind": s.kind, "gpu": s.gpu, "pool": s.pool,
        "test": s.test, "length": len(s.commits), "first_commit": s.commits[0], "last_commit": s.commits[-1],
        "skipped": sorted(span_commits - set(s.commits)), "sigma": float(digits(s.sigma)),
        "changes": [{**c, "factor": float(digits(c["factor"]))} for c in s.changes],
        "sha256": hashlib.sha256(",".join(map(digits, s.values.tolist())).encode()).hexdigest()}
    if s.creep is not None:
        row["creep"] = s.creep
    return row


def truth_document(made: list[Series]) -> dict[str, Any]:
    return {"set": 7, "commits": m.COMMITS, "match_tolerance": m.MATCH_TOLERANCE,
            "rules": {**RULES, "min_values_per_level": m.MIN_VALUES_PER_LEVEL, "min_units": m.MIN_UNITS,
                      "min_units_short": m.MIN_UNITS_SHORT, "short_level": m.SHORT_LEVEL,
                      "min_flicker_spreads": m.MIN_FLICKER_SPREADS},
            "series": [truth_row(s) for s in made]}


if __name__ == "__main__":
    import json

    TRUTH.write_text(json.dumps(truth_document(generate()), indent=1) + "\n", encoding="utf-8")
