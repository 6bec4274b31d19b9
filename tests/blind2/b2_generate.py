"""Blind set 2: one rerun of a case written to a folder: the baseline, the current run, and the runs a history
records before it. Seeded by (the set's seed, the case id, the rerun): the same files every time."""
from __future__ import annotations

import zlib
from pathlib import Path
from typing import Any

import numpy as np

from b2_model import measure
from b2_program import side_launches
from b2_write import bench_json, bench_rounds, ncu_raw_csv

BENCH_CLOCK_SD = 0.01   # a CI machine's speed from run to run (frequency, neighbours): N(1, 1%)
BENCH_LOAD_P = 0.15     # a round slowed x U(1.05, 1.6) by load


def _ncu_side(spec: dict[str, Any], side: str, rng: np.random.Generator) -> str:
    launches = side_launches(spec, side, rng)
    env = spec.get("env_cur" if side == "cur" else "env_base", {})
    rows = measure(launches, rng, env)
    drop = tuple(spec.get("drop_cur", [])) if side == "cur" else ()
    return ncu_raw_csv(rows, drop)


def _bench_side(spec: dict[str, Any], side: str, rng: np.random.Generator) -> str:
    clock = rng.normal(1.0, BENCH_CLOCK_SD)
    benches = []
    for b in spec["benches"]:
        t = b["t"] * (b["factor"] if side == "cur" else 1.0)
        benches.append((b["name"], bench_rounds(t, b["rounds"], rng, clock, BENCH_LOAD_P), b["iterations"]))
    return bench_json(benches, spec["save_data"])


def write_rerun(case: dict[str, Any], seed: int, rerun: int, folder: Path) -> dict[str, Any]:
    """Write one rerun's inputs; return their paths: base (None for a history case without one), cur, history."""
    streams = np.random.SeedSequence([seed, zlib.crc32(case["id"].encode()), rerun]).spawn(12)
    spec = case["spec"]
    make = _bench_side if case["input"] == "bench" else _ncu_side
    ext = ".json" if case["input"] == "bench" else ".raw.csv"
    folder.mkdir(parents=True, exist_ok=True)
    out: dict[str, Any] = {"base": None, "cur": folder / f"current{ext}", "history": []}
    out["cur"].write_text(make(spec, "cur", np.random.default_rng(streams[1])))
    hist = spec.get("history")
    if not hist or hist.get("with_base"):
        out["base"] = folder / f"baseline{ext}"
        out["base"].write_text(make(spec, "base", np.random.default_rng(streams[0])))
    for i in range(hist["runs"] if hist else 0):
        path = folder / f"main{i}{ext}"
        path.write_text(make(spec, "base", np.random.default_rng(streams[2 + i])))
        out["history"].append(path)
    return out
