"""Makes the twelfth blind set's series from ``SEED`` and the measured pools, and its truth document
(README.md: "Protocol")."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from tests.blind_history12.families import FAMILIES, RULES, Family, change_size, positions
from tests.blind_history12.model import (COMMITS, EDGE, FLOOR, NOISES, SEED, SKIP, Noise, pools, quantized,
                                         residual_factors, scale)

TRUTH = Path(__file__).with_name("truth.json")
GPUS = ("nvidia-h100-80gb-hbm3-sm90", "nvidia-h200-sm90")


@dataclass
class Series:
    name: str
    family: str
    noise: str
    kind: str
    metric: str
    gpu: str
    test: str
    commits: list[int]
    values: np.ndarray
    level: float
    scale: float
    changes: list[dict[str, Any]] = field(default_factory=list)
    creep: dict[str, Any] | None = None


def span(rng: np.random.Generator) -> list[int]:
    """The commits a series has a value at: a span of main's history, less the runs its runner missed."""
    first, last = int(rng.integers(0, 41)), int(rng.integers(COMMITS - 40, COMMITS))
    inside = [c for c in range(first + 1, last) if rng.random() >= SKIP]
    return [first, *inside, last]


def log_levels(family: Family, noise_scale: float, length: int, rng: np.random.Generator
               ) -> tuple[np.ndarray, list[tuple[int, float]], dict[str, Any] | None]:
    """The series' log level over its values, its planted changes (position, log ratio) and its creep."""
    path = np.zeros(length)
    planted: list[tuple[int, float]] = []
    for i, position in enumerate(positions(family.shape, length, rng)):
        size = -planted[0][1] if family.shape.startswith("reverted") and i == 1 else change_size(noise_scale, rng)
        planted.append((position, size))
        path[position:] += size
    creep = None
    if family.shape == "creep":
        start, duration = int(rng.integers(EDGE, length - EDGE - 90)), int(rng.integers(40, 91))
        total = max(4.0 * noise_scale, FLOOR) * float(rng.uniform(1.5, 3.0)) * (1 if rng.random() < 0.7 else -1)
        path += total * np.clip((np.arange(length) - start) / duration, 0.0, 1.0)
        creep = {"start": start, "end": start + duration, "ratio": float(f"{np.exp(total):.6g}")}
    return path, planted, creep


def make(index: int, family: Family, noise: Noise, measured: dict[str, Any]) -> Series:
    rng = np.random.default_rng([SEED, 2, index])
    commits = span(rng)
    noise_scale = scale(noise, measured)
    low, high = noise.levels
    level = float(np.exp(rng.uniform(np.log(low), np.log(high))))
    if noise.name == "flicker":
        level *= float(np.median(measured["iid"][noise.pool]["values"]))
    path, planted, creep = log_levels(family, noise_scale, len(commits), rng)
    if noise.name == "flicker":
        path -= path.min()  # a flickering counter's lowest level is the one measured: it never falls below it
    factors = residual_factors(noise, measured, len(commits), rng)
    values = np.maximum(quantized(level * np.exp(path) * factors, noise.grid), noise.grid)
    gpu = GPUS[int(rng.integers(len(GPUS)))]
    return Series(name=f"k12_{index:03d}_{noise.name}", family=family.name, noise=noise.name, kind=noise.kind,
                  metric=noise.metric, gpu=gpu, test=f"tests/blind12/test_{noise.name}.py::test_{index:03d}",
                  commits=commits, values=values, level=level * float(np.exp(path[0])), scale=noise_scale,
                  changes=[{"position": p, "commit": commits[p], "ratio": float(f"{np.exp(s):.6g}")}
                           for p, s in planted], creep=creep)


def generate() -> list[Series]:
    measured = pools()
    made = []
    for family in FAMILIES:
        for i in range(family.count):
            made.append(make(len(made), family, NOISES[family.noises[i % len(family.noises)]], measured))
    return made


def digest(values: np.ndarray) -> str:
    return hashlib.sha256(",".join(f"{v:.9g}" for v in values.tolist()).encode()).hexdigest()


def truth_document(made: list[Series]) -> dict[str, Any]:
    return {"set": 12, "seed": SEED, "commits": COMMITS, "edge": EDGE, "match_tolerance": 2, "rules": RULES,
            "series": [{"name": s.name, "family": s.family, "noise": s.noise, "metric": s.metric, "kind": s.kind,
                        "gpu": s.gpu, "test": s.test, "length": len(s.values), "first_commit": s.commits[0],
                        "last_commit": s.commits[-1],
                        "skipped": sorted(set(range(s.commits[0], s.commits[-1] + 1)) - set(s.commits)),
                        "scale": float(f"{s.scale:.6g}"), "level": float(f"{s.level:.6g}"),
                        "changes": s.changes, "creep": s.creep, "values_sha256": digest(s.values)}
                       for s in made]}
