"""Blind set 5: the real measurements (pools.json) and how launches are drawn from them.

Every value a case writes is a real measured value (a session's launch, a traced launch, a step's wall time),
or one scaled by the factor the case plants. See README.md, "Noise sources".
"""
from __future__ import annotations

import json
import zlib
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
T, RD, WR, INST = 0, 1, 2, 3


@lru_cache(maxsize=1)
def pools() -> dict[str, Any]:
    doc: dict[str, Any] = json.loads((HERE / "pools.json").read_text())
    return doc


def session(ds: str) -> dict[str, Any]:
    s: dict[str, Any] = pools()["sessions"][ds]
    return s


def launch_index(ds: str, region: str, kernel: str, ordinal: int = 0) -> int:
    """The session launch of this region, kernel name (or a prefix of it) and ordinal."""
    for i, la in enumerate(session(ds)["launches"]):
        if la["region"] == region and la["kernel"].startswith(kernel) and la["ordinal"] == ordinal:
            return i
    raise KeyError(f"{ds}: no launch {region}/{kernel}#{ordinal}")


def ordered_pairs(ds: str) -> list[tuple[int, int]]:
    n = len(session(ds)["runs"])
    return [(i, j) for i in range(n) for j in range(n) if i != j]


def grid_of(ds: str, i: int) -> tuple[int, int, int]:
    """A launch configuration per identity: launches perfgate grouped in the real session share one, others not.

    The session reports do not keep grid and block; this is the one thing imposed on the session launches.
    """
    la = session(ds)["launches"][i]
    key = f"{la['region']}|{la['demangled']}|" + (f"g{la['group']}" if la["group"] is not None else f"o{la['ordinal']}")
    return (64 + zlib.crc32(key.encode()) % 4000, 1, 1)


def cupti_position(name: str) -> int:
    """Kernel positions of the H200 MLP step in the CUPTI traces that the pool cases draw from."""
    return {"xmma_l0": 0, "vec_l0": 1, "reduce_bw": 8, "elementwise_bw": 10, "kernel2_bw": 12}[name]


def launch_pool(pool: str, side: int, pair: tuple[int, int]) -> np.ndarray:
    """Real durations (ns) one side of a comparison draws its launches from.

    `cupti:NAME`: that kernel position's 10 steps in one of the three H200 CUPTI runs (pair[side] picks the run),
    so run-to-run change is real; `llama3:NAME`: the RTX 4060 Ti export's launches of that kernel, the first half
    of the run for the baseline and the second half for the current run.
    """
    src, name = pool.split(":", 1)
    if src == "cupti":
        runs = pools()["cupti"]["positions"][cupti_position(name)]["runs"]
        return np.asarray(runs[pair[side]], dtype=float)
    values = np.asarray(pools()["llama3"]["kernels"][name], dtype=float)
    half = len(values) // 2
    return values[:half] if side == 0 else values[half:]


def pool_values(pool: str) -> np.ndarray:
    """Every real duration of a pool, both halves or all runs."""
    src, name = pool.split(":", 1)
    if src == "cupti":
        return np.concatenate([np.asarray(r, float) for r in
                               pools()["cupti"]["positions"][cupti_position(name)]["runs"]])
    return np.asarray(pools()["llama3"]["kernels"][name], dtype=float)


def pool_pairs(pool: str) -> list[tuple[int, int]]:
    return [(0, 1), (1, 2), (2, 0), (1, 0), (2, 1), (0, 2)] if pool.startswith("cupti:") else [(0, 1)] * 6


def bench_runs(group: str) -> list[str]:
    """Unchanged runs of the MLP step (per-step wall time), by how they were traced."""
    return {"none": ["mlp.none.a", "mlp.none.b"], "torch": ["mlp.torch.a", "mlp.torch.b"],
            "cupti": ["mlp.cupti.a", "mlp.cupti.b", "mlp.cupti.c"]}[group]
