"""The blind history set for issue 35: seeded series of a kernel metric over commits and their planted changes.

A stand-in for the issue's own held-out set (not available here), written without reading perfgate's
change-point code or its planted families. Each series comes from its own generator, seeded with
``(SEED, family number, index)``, so the set is the same on every run; ``truth.json`` is the planted truth,
committed before any detector ran on the set::

    PYTHONPATH=. python tests/blind_history/generate.py --write-truth tests/blind_history/truth.json
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np

SEED = 35
LENGTHS = (60, 80, 100, 150, 200, 250, 300)
MARGIN = 12  # no planted change in a series' first or last 12 commits
Built = tuple[np.ndarray, list[int], "tuple[int, int] | None", dict[str, Any]]


@dataclass
class Series:
    name: str
    family: str
    exact: bool  # an exact counter (instructions): integer values
    values: np.ndarray
    changes: list[int]  # planted changes: the index of the first commit at the new level
    ramp: tuple[int, int] | None = None  # a slow drift from the first index to the second
    params: dict[str, Any] = field(default_factory=dict)

    def truth(self) -> dict[str, Any]:
        return {"name": self.name, "family": self.family, "length": len(self.values), "exact": self.exact,
                "changes": self.changes, "ramp": list(self.ramp) if self.ramp else None, "params": self.params}


def _log_uniform(rng: np.random.Generator, low: float, high: float) -> float:
    return float(np.exp(rng.uniform(np.log(low), np.log(max(low, high)))))


def _noise(rng: np.random.Generator, n: int, sigma: float, params: dict[str, Any]) -> np.ndarray:
    """Relative noise of standard deviation ``sigma``: gaussian, or Student's t with 3 degrees of freedom (heavy
    tails) for half the series."""
    heavy = bool(rng.random() < 0.5)
    params.update(sigma=round(sigma, 5), noise="t3" if heavy else "gauss")
    if heavy:
        return sigma * rng.standard_t(3, n) / np.sqrt(3.0)
    return rng.normal(0.0, sigma, n)


def _timing(rng: np.random.Generator, n: int, levels: np.ndarray, sigma: float, params: dict[str, Any]) -> np.ndarray:
    base = float(rng.uniform(1e3, 1e6))
    return base * levels * (1.0 + _noise(rng, n, sigma, params))


def _sign(rng: np.random.Generator) -> int:
    return 1 if rng.random() < 0.5 else -1


def _position(rng: np.random.Generator, n: int, room: int = 0) -> int:
    return int(rng.integers(MARGIN, n - MARGIN - room + 1))


def flat(rng: np.random.Generator, n: int, heavy: bool) -> Built:
    sigma = _log_uniform(rng, 0.005, 0.03)
    noise = sigma * rng.standard_t(3, n) / np.sqrt(3.0) if heavy else rng.normal(0.0, sigma, n)
    values = float(rng.uniform(1e3, 1e6)) * (1.0 + noise)
    return values, [], None, {"sigma": round(sigma, 5), "noise": "t3" if heavy else "gauss"}


def step(rng: np.random.Generator, n: int) -> Built:
    size, where = float(rng.uniform(0.02, 0.20)) * _sign(rng), _position(rng, n)
    sigma = _log_uniform(rng, 0.005, min(0.03, abs(size) / 2))  # at least two noise sigmas
    levels = np.ones(n)
    levels[where:] = 1 + size
    params: dict[str, Any] = {"sizes": [round(size, 4)]}
    return _timing(rng, n, levels, sigma, params), [where], None, params


def two_steps(rng: np.random.Generator, n: int) -> Built:
    sizes = [float(rng.uniform(0.03, 0.20)) * _sign(rng) for _ in range(2)]
    first = _position(rng, n, room=20)
    second = int(rng.integers(first + 20, n - MARGIN + 1))
    sigma = _log_uniform(rng, 0.005, min(0.03, min(map(abs, sizes)) / 2))
    levels = np.ones(n)
    levels[first:] *= 1 + sizes[0]
    levels[second:] *= 1 + sizes[1]
    params: dict[str, Any] = {"sizes": [round(s, 4) for s in sizes]}
    return _timing(rng, n, levels, sigma, params), [first, second], None, params


def reverted(rng: np.random.Generator, n: int) -> Built:
    """A regression that a later commit reverts, after 2 to 5 commits."""
    size, held = float(rng.uniform(0.05, 0.20)), int(rng.integers(2, 6))
    where = _position(rng, n, room=held)
    sigma = _log_uniform(rng, 0.005, min(0.03, size / 4))
    levels = np.ones(n)
    levels[where:where + held] = 1 + size
    params: dict[str, Any] = {"sizes": [round(size, 4)], "held": held}
    return _timing(rng, n, levels, sigma, params), [where, where + held], None, params


def drift(rng: np.random.Generator, n: int) -> Built:
    """A slow creep: a linear ramp of 5 to 20% in all over 20 to 80 commits; no single change point."""
    size, length = float(rng.uniform(0.05, 0.20)) * _sign(rng), int(rng.integers(20, min(80, n - 2 * MARGIN) + 1))
    start = _position(rng, n, room=length)
    levels = 1 + size * np.clip((np.arange(n) - start) / length, 0.0, 1.0)
    sigma = _log_uniform(rng, 0.005, 0.02)
    params: dict[str, Any] = {"sizes": [round(size, 4)]}
    return _timing(rng, n, levels, sigma, params), [], (start, start + length), params


def _count(rng: np.random.Generator) -> float:
    return float(rng.integers(100_000, 1_000_000_000))


def counter_constant(rng: np.random.Generator, n: int) -> Built:
    return np.full(n, _count(rng)), [], None, {}


def counter_step(rng: np.random.Generator, n: int) -> Built:
    size, where = _log_uniform(rng, 0.001, 0.10) * _sign(rng), _position(rng, n)
    levels = np.ones(n)
    levels[where:] = 1 + size
    return np.round(_count(rng) * levels), [where], None, {"sizes": [round(size, 5)]}


def _flicker(rng: np.random.Generator, n: int, params: dict[str, Any]) -> np.ndarray:
    """Multipliers of an exact counter that some runs read a little off (e.g. 10% of runs +0.4%)."""
    share, size = float(rng.choice([0.05, 0.10, 0.15, 0.20])), float(rng.uniform(0.001, 0.01)) * _sign(rng)
    params.update(flicker_share=share, flicker_size=round(size, 5))
    return 1 + size * (rng.random(n) < share)


def flicker(rng: np.random.Generator, n: int) -> Built:
    params: dict[str, Any] = {}
    return np.round(_count(rng) * _flicker(rng, n, params)), [], None, params


def flicker_step(rng: np.random.Generator, n: int) -> Built:
    params: dict[str, Any] = {}
    size, where = float(rng.uniform(0.02, 0.10)) * _sign(rng), _position(rng, n)
    levels = _flicker(rng, n, params)
    levels[where:] *= 1 + size
    params["sizes"] = [round(size, 5)]
    return np.round(_count(rng) * levels), [where], None, params


def _bimodal(rng: np.random.Generator, n: int, with_step: bool) -> Built:
    """Two modes (a clock or placement that some runs land on): 20 to 50% of runs 2 to 5% off."""
    share, gap = float(rng.uniform(0.2, 0.5)), float(rng.uniform(0.02, 0.05)) * _sign(rng)
    levels = 1 + gap * (rng.random(n) < share)
    params: dict[str, Any] = {"mode_share": round(share, 3), "mode_gap": round(gap, 4)}
    changes: list[int] = []
    if with_step:
        size, where = float(rng.uniform(max(0.05, 2 * abs(gap)), 0.20)) * _sign(rng), _position(rng, n)
        levels[where:] *= 1 + size
        params["sizes"], changes = [round(size, 4)], [where]
    sigma = float(rng.uniform(0.005, 0.01))
    return _timing(rng, n, levels, sigma, params), changes, None, params


def _outliers(rng: np.random.Generator, n: int, with_step: bool) -> Built:
    """One-sided spikes (a preempted or throttled run): 2 to 5% of runs 1.2 to 2 times the value."""
    levels, params, changes = np.ones(n), {}, []
    size = float(rng.uniform(0.03, 0.20)) * _sign(rng)
    if with_step:
        where = _position(rng, n)
        levels[where:] = 1 + size
        params["sizes"], changes = [round(size, 4)], [where]
    sigma = _log_uniform(rng, 0.005, min(0.02, abs(size) / 2) if with_step else 0.02)
    values = _timing(rng, n, levels, sigma, params)
    spikes = rng.random(n) < float(rng.uniform(0.02, 0.05))
    values[spikes] *= rng.uniform(1.2, 2.0, int(spikes.sum()))
    params["spikes"] = [int(i) for i in np.flatnonzero(spikes)]
    return values, changes, None, params


FAMILIES: tuple[tuple[str, int, bool, Callable[[np.random.Generator, int], Built]], ...] = (
    ("flat_gauss", 60, False, lambda rng, n: flat(rng, n, heavy=False)),
    ("flat_t3", 60, False, lambda rng, n: flat(rng, n, heavy=True)),
    ("step", 100, False, step),
    ("two_steps", 50, False, two_steps),
    ("reverted", 40, False, reverted),
    ("drift", 30, False, drift),
    ("counter_constant", 30, True, counter_constant),
    ("counter_step", 30, True, counter_step),
    ("counter_flicker", 40, True, flicker),
    ("counter_flicker_step", 20, True, flicker_step),
    ("bimodal_flat", 15, False, lambda rng, n: _bimodal(rng, n, with_step=False)),
    ("bimodal_step", 15, False, lambda rng, n: _bimodal(rng, n, with_step=True)),
    ("outliers_flat", 15, False, lambda rng, n: _outliers(rng, n, with_step=False)),
    ("outliers_step", 15, False, lambda rng, n: _outliers(rng, n, with_step=True)),
)


def generate() -> list[Series]:
    made = []
    for number, (family, count, exact, build) in enumerate(FAMILIES):
        for index in range(count):
            rng = np.random.default_rng([SEED, number, index])
            length = int(rng.choice(LENGTHS))
            values, changes, ramp, params = build(rng, length)
            made.append(Series(f"{family}_{index:03d}", family, exact, values, changes, ramp, params))
    return made


def values_digest(series: Sequence[Series]) -> str:
    """sha256 of every value (repr, 17 significant digits): the same digest is the same set."""
    text = "\n".join(f"{s.name} " + " ".join(repr(float(v)) for v in s.values) for s in series)
    return hashlib.sha256(text.encode()).hexdigest()


def truth_document(series: Sequence[Series]) -> dict[str, Any]:
    return {"seed": SEED, "values_sha256": values_digest(series), "series": [s.truth() for s in series]}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--write-truth", type=Path, help="write the planted truth to this file")
    args = parser.parse_args(argv)
    made = generate()
    planted = sum(len(s.changes) for s in made)
    print(f"{len(made)} series, {planted} planted changes, values sha256 {values_digest(made)}")
    if args.write_truth:
        document = truth_document(made)
        lines = ",\n  ".join(json.dumps(s) for s in document["series"])
        args.write_truth.write_text(f'{{"seed": {SEED}, "values_sha256": "{document["values_sha256"]}",\n'
                                    f' "series": [\n  {lines}\n]}}\n', encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
