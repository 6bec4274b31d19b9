"""The thirteenth blind set's noise: every residual is drawn from a pool measured on real GPUs (``residuals.json``,
written by ``extract.py``), and the series of one GPU share each run's measured offset and the runner's spells
(README.md: "The noise model"). What is imposed here: the levels, the spells, the tests' spans and skips; the
planted changes are ``families.py``'s.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

SEED = 20261213
COMMITS = 260  # commits of main, a run each
EDGE = 15  # every planted change keeps at least this many values on each side
SKIP = 0.03  # the chance that a test has no run at a commit inside its span (its runner did not run it)
BLOCK = 16  # values per block of the block bootstrap (the launch and host sequences' autocorrelation)
FLOOR = float(np.log(1.01))  # the smallest change counted, in |log ratio|: the tightest gate threshold seen
REPEAT_GAP = 20  # the fewest draws between two draws of the same pool value (at most a third of the pool)
JITTER = 0.1  # a drawn residual moves by a normal of this many pool scales (a smoothed bootstrap)
SPELL_START = 1 / 40  # the chance that a runner spell starts at a commit, per GPU
SPELL_RUNS = (1, 5)  # a spell's consecutive runs (shorter than the shortest change that counts, 8)
SPELL_SHARE = (0.25, 0.6)  # the share of the GPU's kernel-time series a spell slows
SPELL_SIZE = (0.02, 0.08)  # how much slower, log-uniform
POOLS = Path(__file__).with_name("residuals.json")

UNITS = {"gpu__time_duration.sum": "ns", "timeline.kernel_duration": "ns", "dram__bytes_read.sum": "byte",
         "smsp__inst_executed.sum": "inst", "timeline.gpu_idle": "ns", "timeline.wall_time": "ns",
         "dram__bytes_write.sum": "byte"}


@dataclass(frozen=True)
class Noise:
    """A noise model: which measured pool its residuals come from and how a series of it is filed."""

    name: str
    pool: str  # a key of residuals.json's "iid" or "sequences"
    metric: str
    kind: str  # the history's kind: kernel or region
    source: str  # the test's source that measures it: ncu or timeline
    levels: tuple[float, float]  # the imposed level range (log-uniform), in the metric's unit
    grid: float  # the measured quantization step the values are rounded to
    run_effects: bool  # shares the GPU's per-run offset and runner spells (kernel times)
    jitter: bool  # a smoothed bootstrap (not for exact counters, whose ties are real)


NOISES = {n.name: n for n in (
    Noise("ncu", "ncu_run", "gpu__time_duration.sum", "kernel", "ncu", (4e3, 3e6), 32.0, True, True),
    Noise("cupti", "cupti_run", "timeline.kernel_duration", "kernel", "timeline", (4e3, 3e6), 1.0, True, True),
    Noise("launch", "launch_seq", "timeline.kernel_duration", "kernel", "timeline", (4e3, 3e6), 1.0, True, False),
    Noise("dram", "dram_read_run", "dram__bytes_read.sum", "kernel", "ncu", (1e6, 3e8), 32.0, False, True),
    Noise("inst", "inst_run", "smsp__inst_executed.sum", "kernel", "ncu", (1e5, 5e8), 1.0, False, False),
    Noise("idle", "gpu_idle_run", "timeline.gpu_idle", "region", "timeline", (2e4, 2e6), 1.0, False, True),
    Noise("host", "host_seq", "timeline.wall_time", "region", "timeline", (1e5, 5e7), 1.0, False, False),
    Noise("flicker", "flicker_bytes", "dram__bytes_write.sum", "kernel", "ncu", (0.5, 4.0), 256.0, False, True),
)}


def pools() -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads(POOLS.read_text(encoding="utf-8"))
    return loaded


def scale(noise: Noise, measured: dict[str, Any]) -> float:
    """The pool's noise scale in log units (set 12's ``extract.noise_scale`` of the whole residual)."""
    section = "sequences" if noise.pool in measured["sequences"] else "iid"
    return float(measured[section][noise.pool]["scale"])


def spaced_draws(size: int, count: int, rng: np.random.Generator) -> np.ndarray:
    """``count`` indices into a pool of ``size``: passes through the pool in random order, each index at most once
    a pass, and never twice within ``REPEAT_GAP`` draws (so a pool's outlier never comes back a few runs later)."""
    gap = min(REPEAT_GAP, size // 3)
    out: list[int] = []
    while len(out) < count:
        recent = set(out[-gap:]) if gap else set()
        order = rng.permutation(size).tolist()
        fresh = [i for i in order if i not in recent]
        later = fresh[gap:] + [i for i in order if i in recent]
        out += fresh[:gap] + [later[i] for i in rng.permutation(len(later))]
    return np.array(out[:count])


def block_bootstrap(runs: list[list[float]], count: int, rng: np.random.Generator) -> np.ndarray:
    """``count`` residuals as consecutive blocks of ``BLOCK`` from one measured sequence at a time (a sequence
    chosen in proportion to its length, a block that fits inside it: no wrap from its end to its start)."""
    weights = np.array([len(r) for r in runs], dtype=float)
    out: list[float] = []
    while len(out) < count:
        run = runs[int(rng.choice(len(runs), p=weights / weights.sum()))]
        width = min(BLOCK, len(run))
        start = int(rng.integers(len(run) - width + 1))
        out += run[start:start + width]
    return np.array(out[:count])


def residual_factors(noise: Noise, measured: dict[str, Any], count: int, rng: np.random.Generator) -> np.ndarray:
    """Each value's own multiplicative noise: 1 + a measured relative residual, or for the flickering counter a
    measured byte count over the pool's median; moved by the smoothed bootstrap's jitter where it has one."""
    if noise.pool in measured["sequences"]:
        return 1.0 + block_bootstrap(list(measured["sequences"][noise.pool]["runs"].values()), count, rng)
    values = np.asarray(measured["iid"][noise.pool]["values"], dtype=float)
    drawn = values[spaced_draws(len(values), count, rng)]
    factors: np.ndarray = drawn / float(np.median(values)) if noise.name == "flicker" else 1.0 + drawn
    if noise.jitter:
        factors = factors * np.exp(rng.normal(0.0, JITTER * scale(noise, measured), count))
    return factors


def run_offsets(measured: dict[str, Any], rng: np.random.Generator) -> np.ndarray:
    """Per commit, the log offset every kernel time of one GPU's run shares: a measured session offset, jittered."""
    pool = measured["offsets"]["kernel_run"]
    values = np.asarray(pool["values"], dtype=float)
    offsets: np.ndarray = values[spaced_draws(len(values), COMMITS, rng)]
    return offsets + rng.normal(0.0, JITTER * float(pool["sd"]), COMMITS)


def runner_spells(rng: np.random.Generator) -> list[dict[str, Any]]:
    """One GPU's runner spells: the first commit, how many runs, the share of series slowed, the log slowdown."""
    spells: list[dict[str, Any]] = []
    commit = 0
    while commit < COMMITS:
        if rng.random() < SPELL_START:
            runs = int(rng.integers(SPELL_RUNS[0], SPELL_RUNS[1] + 1))
            size = float(rng.uniform(np.log(SPELL_SIZE[0]), np.log(SPELL_SIZE[1])))
            spells.append({"commit": commit, "runs": runs, "share": float(f"{rng.uniform(*SPELL_SHARE):.3g}"),
                           "log_slowdown": float(f"{np.log1p(np.exp(size)):.6g}")})
            commit += runs + 1
        else:
            commit += 1
    return spells


def quantized(values: np.ndarray, grid: float) -> np.ndarray:
    return np.round(values / grid) * grid
