"""Makes the thirteenth blind set's tests and series from ``SEED`` and the measured pools, and its truth document
(README.md: "Protocol")."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from tests.blind_history13.families import (FAMILIES, RULES, SHARED_TESTS, Family, change_size, layer_position,
                                            positions, smallest)
from tests.blind_history13.model import (COMMITS, EDGE, NOISES, SEED, SKIP, Noise, pools, quantized,
                                         residual_factors, run_offsets, runner_spells, scale)

TRUTH = Path(__file__).with_name("truth.json")
GPUS = ("nvidia-h100-80gb-hbm3-sm90", "nvidia-h200-sm90")


@dataclass
class Test:
    """A test run on one GPU's runner: its series share its commits and skips, and that GPU's run effects."""

    number: int
    source: str
    gpu: str
    commits: list[int]
    layer: tuple[int, float] | None = None  # a layer test's change: position and direction

    @property
    def name(self) -> str:
        return f"tests/blind13/test_{self.source}_{self.number:02d}.py::test_case"


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
    spells: list[int] = field(default_factory=list)  # the commits a runner spell slowed this series at


@dataclass(frozen=True)
class GpuEffects:
    offsets: np.ndarray  # per commit, the log offset of the run
    spells: list[dict[str, Any]]


def span(rng: np.random.Generator) -> list[int]:
    """The commits a test has a run at: a span of main's history, less the runs its runner missed."""
    first, last = int(rng.integers(0, 41)), int(rng.integers(COMMITS - 40, COMMITS))
    inside = [c for c in range(first + 1, last) if rng.random() >= SKIP]
    return [first, *inside, last]


def layout() -> tuple[list[Test], list[int]]:
    """The tests (shared ones, then each layer family's) and, per series in family order, its test's index."""
    order = np.random.default_rng([SEED, 1])
    sources = [s for s, n in SHARED_TESTS.items() for _ in range(n)]
    layers = [(f, k) for f in FAMILIES if f.per_test for k in range(f.count // f.per_test)]
    sources += [NOISES[f.noises[0]].source for f, _ in layers]
    numbers = order.permutation(len(sources)) + 1
    tests = []
    for t, source in enumerate(sources):
        rng = np.random.default_rng([SEED, 4, t])
        commits = span(rng)
        gpu = GPUS[int(rng.integers(len(GPUS)))]
        tests.append(Test(int(numbers[t]), source, gpu, commits,
                          layer_position(len(commits), rng) if t >= len(sources) - len(layers) else None))
    shared = {s: [t for t, test in enumerate(tests) if test.source == s and test.layer is None] for s in SHARED_TESTS}
    first_layer = {f.name: len(sources) - len(layers) + [x.name for x, _ in layers].index(f.name)
                   for f in FAMILIES if f.per_test}
    chosen = []
    for family in FAMILIES:
        for i in range(family.count):
            source = NOISES[family.noises[i % len(family.noises)]].source
            chosen.append(first_layer[family.name] + i // family.per_test if family.per_test
                          else int(order.choice(shared[source])))
    return tests, chosen


def log_levels(family: Family, test: Test, noise_scale: float, rng: np.random.Generator
               ) -> tuple[np.ndarray, list[tuple[int, float]], dict[str, Any] | None]:
    """The series' log level over its values, its planted changes (position, log ratio) and its creep."""
    length = len(test.commits)
    path = np.zeros(length)
    planted: list[tuple[int, float]] = []
    if family.shape == "layer" and test.layer is not None:
        planted.append((test.layer[0], change_size(noise_scale, rng, test.layer[1])))
    for i, position in enumerate(positions(family.shape, length, rng)):
        size = -planted[0][1] if family.shape.startswith("reverted") and i == 1 else change_size(noise_scale, rng)
        planted.append((position, size))
    for position, size in planted:
        path[position:] += size
    creep = None
    if family.shape == "creep":
        start, duration = int(rng.integers(EDGE, length - EDGE - 90)), int(rng.integers(40, 91))
        total = smallest(noise_scale) * float(rng.uniform(1.5, 3.0)) * (1 if rng.random() < 0.7 else -1)
        path += total * np.clip((np.arange(length) - start) / duration, 0.0, 1.0)
        creep = {"start": start, "end": start + duration, "ratio": float(f"{np.exp(total):.6g}")}
    return path, planted, creep


def shared_log(test: Test, effects: GpuEffects, rng: np.random.Generator) -> tuple[np.ndarray, list[int]]:
    """The run effects of the series' GPU at its commits: the run's offset, and the spells that caught it."""
    commits = np.asarray(test.commits)
    shared = effects.offsets[commits].copy()
    slowed: list[int] = []
    for spell in effects.spells:
        if rng.random() < spell["share"]:
            inside = (commits >= spell["commit"]) & (commits < spell["commit"] + spell["runs"])
            shared[inside] += spell["log_slowdown"]
            slowed += commits[inside].tolist()
    return shared, slowed


def make(index: int, family: Family, noise: Noise, test: Test, effects: GpuEffects,
         measured: dict[str, Any]) -> Series:
    rng = np.random.default_rng([SEED, 2, index])
    noise_scale = scale(noise, measured)
    low, high = noise.levels
    level = float(np.exp(rng.uniform(np.log(low), np.log(high))))
    if noise.name == "flicker":
        level *= float(np.median(measured["iid"][noise.pool]["values"]))
    path, planted, creep = log_levels(family, test, noise_scale, rng)
    if noise.name == "flicker":
        path -= path.min()  # a flickering counter's lowest level is the one measured: it never falls below it
    factors = residual_factors(noise, measured, len(test.commits), rng)
    shared, slowed = shared_log(test, effects, rng) if noise.run_effects else (np.zeros(len(factors)), [])
    values = np.maximum(quantized(level * np.exp(path + shared) * factors, noise.grid), noise.grid)
    return Series(name=f"k13_{index:03d}_{noise.name}", family=family.name, noise=noise.name, kind=noise.kind,
                  metric=noise.metric, gpu=test.gpu, test=test.name, commits=test.commits, values=values,
                  level=level * float(np.exp(path[0])), scale=noise_scale,
                  changes=[{"position": p, "commit": test.commits[p], "ratio": float(f"{np.exp(s):.6g}")}
                           for p, s in planted], creep=creep, spells=slowed)


def gpu_effects(measured: dict[str, Any]) -> dict[str, GpuEffects]:
    effects = {}
    for g, gpu in enumerate(GPUS):
        rng = np.random.default_rng([SEED, 3, g])
        effects[gpu] = GpuEffects(run_offsets(measured, rng), runner_spells(rng))
    return effects


def generate() -> list[Series]:
    measured = pools()
    tests, chosen = layout()
    effects = gpu_effects(measured)
    made: list[Series] = []
    for family in FAMILIES:
        for i in range(family.count):
            test = tests[chosen[len(made)]]
            made.append(make(len(made), family, NOISES[family.noises[i % len(family.noises)]], test,
                             effects[test.gpu], measured))
    return made


def digest(values: np.ndarray) -> str:
    return hashlib.sha256(",".join(f"{v:.9g}" for v in values.tolist()).encode()).hexdigest()


def truth_document(made: list[Series]) -> dict[str, Any]:
    effects = gpu_effects(pools())
    return {"set": 13, "seed": SEED, "commits": COMMITS, "edge": EDGE, "match_tolerance": 2, "rules": RULES,
            "runner_spells": {gpu: e.spells for gpu, e in effects.items()},
            "series": [{"name": s.name, "family": s.family, "noise": s.noise, "metric": s.metric, "kind": s.kind,
                        "gpu": s.gpu, "test": s.test, "length": len(s.values), "first_commit": s.commits[0],
                        "last_commit": s.commits[-1],
                        "skipped": sorted(set(range(s.commits[0], s.commits[-1] + 1)) - set(s.commits)),
                        "scale": float(f"{s.scale:.6g}"), "level": float(f"{s.level:.6g}"),
                        "changes": s.changes, "creep": s.creep, "spell_commits": s.spells,
                        "values_sha256": digest(s.values)}
                       for s in made]}
