"""Generates the tenth blind set from its seed, and the truth document that pins it (README.md: "Protocol")."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from tests.blind_history10.families import EDGE, FAMILIES, METRIC, RULES, SIGMA, Changes, Family, plant
from tests.blind_history10.model import COMMITS, NIGHTLY, POOLS, SEED, flicker, noise, rng

TRUTH = Path(__file__).with_name("truth.json")
MATCH_TOLERANCE = 2
LEVEL = {"ncu": (5e3, 5e6), "event": (5e3, 5e6), "host": (2e-4, 5e-2), "idle": (3.0, 30.0), "dram": (1e6, 2e9),
         "counter": (1e5, 1e9), "flicker": (1e5, 1e9)}


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
    changes: list[dict[str, Any]] = field(default_factory=list)
    creep: list[int] | None = None


def span(family: Family, pool: int, r: np.random.Generator) -> np.ndarray:
    """The commits the series has a value at: its pool ran, its test existed, and (nightly) the nightly ran."""
    ran = POOLS[pool].runs.copy()
    if family.nightly:
        ran &= np.isin(np.arange(COMMITS), NIGHTLY)
    elif family.plant != "driver":
        if r.random() < 0.15:
            ran[: int(r.integers(5, 50))] = False  # the test was added later
        if r.random() < 0.1:
            ran[int(r.integers(190, 236)):] = False  # the test was removed
    return np.flatnonzero(ran)


def level(r: np.random.Generator, kind: str, commits: np.ndarray, changes: Changes,
          creep: list[int] | None) -> np.ndarray:
    low, high = LEVEL[kind]
    out = np.full(len(commits), float(np.exp(r.uniform(np.log(low), np.log(high)))))
    for commit, ratio in changes:
        out[commits >= commit] *= ratio
    if creep is not None:
        start, end = creep
        out *= 1 + float(r.uniform(0.05, 0.15)) * np.clip((commits - start) / (end - start), 0.0, 1.0)
    return out


def make(family: Family, number: int, index: int) -> Series:
    r = rng(2, index)
    kind = family.kinds[int(r.integers(len(family.kinds)))]
    pool = family.pools[int(r.integers(len(family.pools)))]
    commits = span(family, pool, r)
    sigma = float(r.uniform(*SIGMA[kind]))
    if family.plant == "driver":
        sigma = min(sigma, abs(POOLS[pool].driver_factor) / 6)  # the update is a step a person sees
    changes = plant(family, kind, pool, r, commits, sigma)
    creep = None
    if family.creep:
        start = int(r.integers(30, 140))
        creep = [start, start + int(r.integers(40, 91))]
    values = level(r, kind, commits, changes, creep) * noise(kind, POOLS[pool], r, sigma, commits)
    if kind == "flicker":
        values *= flicker(r, len(commits))
    if kind in ("counter", "flicker"):
        values = np.round(values)
    elif kind == "dram":
        values = np.round(values / 32) * 32  # whole 32-byte sectors
    elif kind == "idle":
        values = np.minimum(values, 100.0)
    positions = [int(np.searchsorted(commits, c)) for c, _ in changes]
    assert all(EDGE <= p <= len(commits) - EDGE for p in positions), (family.name, positions)
    return Series(name=f"{family.name}_{number:03d}", family=family.name, gpu=POOLS[pool].gpu,
                  test=f"tests/test_{family.name}.py::test_{number:03d}", kind=kind, metric=METRIC[kind],
                  sigma=sigma, commits=commits.tolist(), values=values,
                  changes=[{"position": p, "commit": c, "factor": round(f, 6)} for p, (c, f) in zip(positions, changes)],
                  creep=creep)


def generate() -> list[Series]:
    made: list[Series] = []
    for family in FAMILIES:
        for number in range(family.count):
            made.append(make(family, number, len(made)))
    return made


def written(values: np.ndarray) -> str:
    return ",".join(f"{v:.9g}" for v in values.tolist())


def truth_document(made: list[Series]) -> dict[str, Any]:
    return {"set": 10, "seed": SEED, "commits": COMMITS, "match_tolerance": MATCH_TOLERANCE, "rules": RULES,
            "series": [{"name": s.name, "family": s.family, "metric": s.metric, "kind": s.kind, "gpu": s.gpu,
                        "test": s.test, "length": len(s.commits), "first_commit": s.commits[0],
                        "last_commit": s.commits[-1],
                        "skipped": sorted(set(range(s.commits[0], s.commits[-1] + 1)) - set(s.commits)),
                        "sigma": round(s.sigma, 6), "changes": s.changes, "creep": s.creep,
                        "sha256": hashlib.sha256(written(s.values).encode()).hexdigest()} for s in made]}
