"""Blind set 4: a case's sides made into measured launches, and one rerun written into a folder.

A case holds `base`, a list of launches `{"k": KERNEL, "r": REGION, "n": COUNT}` (REGION "" outside every NVTX
range; KERNEL a key of b4_model.catalog()), `cur` where the current run launches other kernels, and `mods`: code
changes `{"k": KERNEL, "side": "cur"|"base", field: factor, ...}` (b4_model.changed). `cols` names the counters each
side collected (b4_write.COLUMN_SETS), `na` prints some cells `n/a`, `clock_unit` how ncu spelt the clocks' unit,
`pyproject` a `[tool.perfgate]` table written beside the files, `args` the compare options.
"""
from __future__ import annotations

import zlib
from pathlib import Path
from typing import Any

import numpy as np

from b4_model import Kernel, catalog, changed, measure, run_factor
from b4_write import ncu_raw_csv

CATALOG = catalog()


def rng_for(seed: int, case_id: str, rerun: int) -> np.random.Generator:
    return np.random.default_rng([seed, zlib.crc32(case_id.encode()), rerun])


def true_launches(spec: dict[str, Any], side: str) -> list[tuple[str, str, Kernel]]:
    """(key, region, true kernel) of every launch of one side, code changes applied, in launch order."""
    launches = spec["cur"] if side == "cur" and "cur" in spec else spec["base"]
    out = []
    for la in launches:
        k = CATALOG[la["k"]]
        for m in spec.get("mods", []):
            if m.get("side", "cur") == side and m["k"] == la["k"] and m.get("r", la.get("r", "")) == la.get("r", ""):
                k = changed(k, {f: v for f, v in m.items() if f not in ("k", "side", "r")})
        out += [(la["k"], la.get("r", ""), k)] * la.get("n", 1)
    return out


def measured(spec: dict[str, Any], side: str, rng: np.random.Generator, size: int) -> list[dict[str, Any]]:
    """`size` draws of every launch of one side: a dict per launch, arrays of `size` values."""
    run = run_factor(rng, size)
    rows = []
    for key, region, k in true_launches(spec, side):
        rows.append({"key": key, "name": k.name, "region": region, "dev": k.dev, "grid": k.grid, "block": k.block,
                     "regs": k.regs, "smem": k.smem, "occ": k.occ, **measure(k, rng, run, size)})
    return rows


def side_csv(spec: dict[str, Any], side: str, rng: np.random.Generator) -> str:
    rows = []
    na = spec.get("na", {}).get(side, [])
    for r in measured(spec, side, rng, 1):
        flat = {f: (v[0] if isinstance(v, np.ndarray) else v) for f, v in r.items()}
        flat["na"] = [m for x in na if x["k"] == r["key"] for m in x["m"]]
        rows.append(flat)
    cols = spec.get("cols", {}).get(side, "roofline")
    unit = spec.get("clock_unit", "hz")
    return ncu_raw_csv(rows, cols, unit[side] if isinstance(unit, dict) else unit)


def write_rerun(case: dict[str, Any], seed: int, rerun: int, folder: Path) -> dict[str, Path]:
    """Write one rerun's files into `folder` (a fresh one): baseline.raw.csv, current.raw.csv, pyproject.toml."""
    folder.mkdir(parents=True, exist_ok=True)
    rng = rng_for(seed, case["id"], rerun)
    spec = case["spec"]
    base, cur = folder / "baseline.raw.csv", folder / "current.raw.csv"
    base.write_text(side_csv(spec, "base", rng))
    cur.write_text(side_csv(spec, "cur", rng))
    if spec.get("pyproject"):
        (folder / "pyproject.toml").write_text(spec["pyproject"])
    return {"base": base, "cur": cur}
