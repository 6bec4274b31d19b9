"""Blind set 3: write one rerun of one case as a user's tools would have written its files.

ncu cases: `ncu --csv --page raw --print-units base --nvtx` pages, written by blind set 2's writer
(tests/blind2/b2_write.py, imported: `ncu_raw_csv`), with this set's own values (b3_model). pytest-benchmark
cases: `--benchmark-json` files by the same writer (`bench_json`), rounds from this set's host timing model below.
"""
from __future__ import annotations

import math
import sys
import zlib
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "blind2"))

from b2_write import bench_json, ncu_raw_csv  # noqa: E402

from b3_model import measure, run_factor  # noqa: E402
from b3_program import side_launches  # noqa: E402


def rng_for(seed: int, case_id: str, rerun: int) -> np.random.Generator:
    return np.random.default_rng([seed, zlib.crc32(case_id.encode()), rerun])


def ncu_side(spec: dict[str, Any], side: str, rng: np.random.Generator) -> str:
    factor = run_factor(rng)
    rows = []
    for la in side_launches(spec, side):
        row = measure(la.kernel, la.change, factor, rng, la.interference)
        row["region"] = la.region
        rows.append(row)
    return ncu_raw_csv(rows)


def host_rounds(t: float, rounds: int, rng: np.random.Generator, load: float, spread: float) -> list[float]:
    """A benchmark's rounds in seconds: this run's CPU speed (frequency scaling), a right-skewed per-round cost
    (cache misses, interrupts: only ever adds), and rounds hit by other jobs on the runner with probability `load`."""
    speed = math.exp(rng.normal(0.0, 0.01))
    out = []
    for _ in range(rounds):
        v = t * speed * (1.0 + rng.gamma(2.0, spread / 2.0))
        if rng.random() < load:
            v *= 1.0 + rng.exponential(0.35)
        out.append(float(v))
    return out


def bench_side(spec: dict[str, Any], side: str, rng: np.random.Generator) -> str:
    benches = []
    for b in spec["benches"]:
        t = b["t"] * (b.get("shift", 1.0) if side == "cur" else 1.0)
        rounds = b.get(f"rounds_{side}", b.get("rounds", 20))
        data = host_rounds(t, rounds, rng, b.get(f"load_{side}", b.get("load", 0.05)), b.get("spread", 0.02))
        benches.append((b["name"], data, b.get("iterations", 1)))
    return bench_json(benches, spec.get("save_data", True))


def write_rerun(case: dict[str, Any], seed: int, rerun: int, folder: Path) -> dict[str, Any]:
    """Both sides (and the base branch's runs of a history case) in `folder`; returns their paths."""
    folder.mkdir(parents=True, exist_ok=True)
    spec = case["spec"]
    rng = rng_for(seed, case["id"], rerun)
    files: dict[str, Any] = {"base": None, "cur": None, "history": []}
    if spec["kind"] == "bench":
        for side in ("base", "cur"):
            files[side] = folder / f"{side}.json"
            files[side].write_text(bench_side(spec, side, rng))
        return files
    hist = spec.get("history")
    for i in range(hist["runs"] if hist else 0):
        path = folder / f"main{i}.raw.csv"
        path.write_text(ncu_side(spec, "base", rng))
        files["history"].append(path)
    if not hist or hist.get("base_file"):
        files["base"] = folder / "baseline.raw.csv"
        files["base"].write_text(ncu_side(spec, "base", rng))
    files["cur"] = folder / "current.raw.csv"
    files["cur"].write_text(ncu_side(spec, "cur", rng))
    return files
