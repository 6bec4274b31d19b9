"""The second blind set's model of GPU-kernel histories: a series, its noise (multiplicative factors around 1 per
commit) and its levels. Written from what CI measurements of GPU kernels look like, not from perfgate's code."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Sequence

import numpy as np

TIME, INSTRUCTIONS, BYTES = "gpu__time_duration.sum", "smsp__inst_executed.sum", "dram__bytes_read.sum"


@dataclass
class Series:
    name: str
    family: str
    metric: str
    exact: bool
    offset: int  # the commit (run index) of the series' first value: tests added later start later
    commits: list[int]  # the commit of each value (a series may miss commits)
    values: np.ndarray
    changes: list[dict[str, object]] = field(default_factory=list)  # position, commit, kind, size

    def digest(self) -> str:
        return hashlib.sha256(np.asarray(self.values, dtype="<f8").tobytes()).hexdigest()


def log_uniform(rng: np.random.Generator, low: float, high: float) -> float:
    return float(np.exp(rng.uniform(np.log(low), np.log(high))))


def signed(rng: np.random.Generator, size: float, regression_share: float = 0.6) -> float:
    return size if rng.random() < regression_share else -size / (1 + size)  # an improvement undoes a regression


def positions(rng: np.random.Generator, length: int, count: int, gap: int, head: int = 8, tail: int = 6) -> list[int]:
    """``count`` change positions with at least ``gap`` values between them and from the ends' margins."""
    while True:
        picks = sorted(int(p) for p in rng.choice(np.arange(head, length - tail + 1), size=count, replace=False))
        if all(b - a >= gap for a, b in zip(picks, picks[1:])):
            return picks


# --- noise: multiplicative factors around 1 for each commit -------------------------------------------------

def gauss(rng: np.random.Generator, n: int, sigma: float) -> np.ndarray:
    return 1 + rng.normal(0, sigma, n)


def heavy(rng: np.random.Generator, n: int, sigma: float) -> np.ndarray:
    """Student's t (3 degrees of freedom, scaled to ``sigma``) and one-sided interference spikes (another job on
    the GPU, a clock dip): a few points 5-50% slower."""
    factor = 1 + sigma * rng.standard_t(3, n) / np.sqrt(3)
    spikes = rng.random(n) < rng.uniform(0.02, 0.08)
    return np.where(spikes, factor * (1 + rng.uniform(0.05, 0.5, n)), factor)


def bimodal(rng: np.random.Generator, n: int, sigma: float, gap: float) -> np.ndarray:
    """Two clock states (boost held or not): each commit's run lands in the slow one with probability 10-40%."""
    slow = rng.random(n) < rng.uniform(0.1, 0.4)
    return (1 + rng.normal(0, sigma, n)) * np.where(slow, 1 + gap, 1.0)


def drift(rng: np.random.Generator, n: int, sigma: float, amplitude: float) -> np.ndarray:
    """Thermal drift: a slow wave (period 20-80 commits) and a ramp of up to 1% over the series, with noise."""
    t = np.arange(n)
    wave = amplitude * np.sin(2 * np.pi * t / rng.uniform(20, 80) + rng.uniform(0, 2 * np.pi))
    ramp = rng.uniform(-0.01, 0.01) * t / max(n - 1, 1)
    return (1 + wave + ramp) * (1 + rng.normal(0, sigma, n))


def flicker(rng: np.random.Generator, level: np.ndarray, share: float) -> np.ndarray:
    """An exact counter that another code path (an autotuner's pick, a different split) sometimes takes: single
    commits at one of one or two other values, the same relative offset from whatever the level is."""
    offsets = [signed(rng, rng.uniform(0.005, 0.08), 0.5) for _ in range(int(rng.integers(1, 3)))]
    hit = rng.random(len(level)) < share
    which = rng.integers(0, len(offsets), len(level))
    out = level.copy()
    out[hit] = level[hit] * (1 + np.asarray(offsets)[which[hit]])
    return np.round(out)


# --- levels -------------------------------------------------------------------------------------------------

def stepped(n: int, base: float, at: Sequence[int], sizes: Sequence[float]) -> np.ndarray:
    level = np.full(n, base)
    for position, size in zip(at, sizes):
        level[position:] *= 1 + size
    return level


def timing_base(rng: np.random.Generator) -> float:
    return log_uniform(rng, 5_000, 5_000_000)  # 5 us to 5 ms, in ns


def counter_base(rng: np.random.Generator) -> float:
    return float(round(log_uniform(rng, 1e5, 1e9)))


def step_sizes(rng: np.random.Generator, count: int, low: float = 0.015) -> list[float]:
    return [signed(rng, log_uniform(rng, low, 0.30)) for _ in range(count)]


def noise_for(rng: np.random.Generator, sizes: Sequence[float], low_ratio: float = 3, high_ratio: float = 12) -> float:
    """Noise 0.3-5%: the smallest step is 3-12 standard deviations (most real regressions a gate must catch)."""
    smallest = min(abs(s) for s in sizes)
    return float(np.clip(smallest / rng.uniform(low_ratio, high_ratio), 0.003, 0.05))
