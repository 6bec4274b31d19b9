"""The twelfth blind set's noise: every residual is drawn from a pool measured on real GPUs (``residuals.json``,
written by ``extract.py``; README.md: "The noise model"). What is imposed here: the levels, the commits a series
spans and skips, and (in ``families.py``) the planted changes.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

SEED = 20261212
COMMITS = 260  # commits of main, a run each
EDGE = 15  # every planted change keeps at least this many values on each side
SKIP = 0.03  # the chance that a series has no value at a commit inside its span (a runner that did not run it)
BLOCK = 16  # values per block of the block bootstrap (the launch and host sequences' autocorrelation)
FLOOR = float(np.log(1.01))  # the smallest change counted, in |log ratio|: the tightest gate threshold seen
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
    levels: tuple[float, float]  # the imposed level range (log-uniform), in the metric's unit
    grid: float  # the measured quantization step the values are rounded to


NOISES = {n.name: n for n in (
    Noise("ncu", "ncu_run", "gpu__time_duration.sum", "kernel", (4e3, 3e6), 32.0),
    Noise("cupti", "cupti_run", "timeline.kernel_duration", "kernel", (4e3, 3e6), 1.0),
    Noise("launch", "launch_seq", "timeline.kernel_duration", "kernel", (4e3, 3e6), 1.0),
    Noise("dram", "dram_read_run", "dram__bytes_read.sum", "kernel", (1e6, 3e8), 32.0),
    Noise("inst", "inst_run", "smsp__inst_executed.sum", "kernel", (1e5, 5e8), 1.0),
    Noise("idle", "gpu_idle_run", "timeline.gpu_idle", "region", (2e4, 2e6), 1.0),
    Noise("host", "host_seq", "timeline.wall_time", "region", (1e5, 5e7), 1.0),
    Noise("flicker", "flicker_bytes", "dram__bytes_write.sum", "kernel", (0.5, 4.0), 256.0),
)}


def pools() -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads(POOLS.read_text(encoding="utf-8"))
    return loaded


def scale(noise: Noise, measured: dict[str, Any]) -> float:
    """The pool's noise scale in log units (``extract.noise_scale``)."""
    section = "sequences" if noise.pool in measured["sequences"] else "iid"
    return float(measured[section][noise.pool]["scale"])


def block_bootstrap(runs: list[list[float]], count: int, rng: np.random.Generator) -> np.ndarray:
    """``count`` residuals as consecutive blocks of ``BLOCK`` taken from one measured sequence at a time (a
    sequence chosen in proportion to its length, a start anywhere, wrapping round its end)."""
    weights = np.array([len(r) for r in runs], dtype=float)
    out: list[float] = []
    while len(out) < count:
        run = runs[int(rng.choice(len(runs), p=weights / weights.sum()))]
        start = int(rng.integers(len(run)))
        out += [run[(start + i) % len(run)] for i in range(min(BLOCK, len(run)))]
    return np.array(out[:count])


def residual_factors(noise: Noise, measured: dict[str, Any], count: int, rng: np.random.Generator) -> np.ndarray:
    """Multiplicative noise factors, one per value: 1 + a measured relative residual, or for the flickering
    counter a measured byte count over the pool's median."""
    if noise.pool in measured["sequences"]:
        return 1.0 + block_bootstrap(list(measured["sequences"][noise.pool]["runs"].values()), count, rng)
    values = np.asarray(measured["iid"][noise.pool]["values"], dtype=float)
    drawn = rng.choice(values, size=count, replace=True)
    return drawn / float(np.median(values)) if noise.name == "flicker" else 1.0 + drawn


def quantized(values: np.ndarray, grid: float) -> np.ndarray:
    return np.round(values / grid) * grid
