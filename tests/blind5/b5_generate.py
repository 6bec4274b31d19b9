"""Blind set 5: write one rerun of a case into a folder, from real measurements (b5_pools) and what it plants.

ncu cases are `ncu --csv --page raw --print-units base --nvtx` pages (blind set 2's writer, imported);
benchmark cases pytest-benchmark JSON with raw rounds; trace cases perfgate's own H200 traces, copied, or a
torch.profiler trace with time inserted into it (`insert_time`).
"""
from __future__ import annotations

import gzip
import json
import sys
import zlib
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(HERE.parent / "blind2"))
sys.path.insert(0, str(HERE))

from b2_write import bench_json, ncu_raw_csv  # noqa: E402
from b5_pools import INST, RD, T, WR, grid_of, launch_pool, pools, session  # noqa: E402

TIMELINE = ROOT / "tests/data/h200/timeline"
COUNTERS = ("dram__bytes_read.sum", "dram__bytes_write.sum", "smsp__inst_executed.sum")


def _rng(seed: int, case_id: str, rerun: int) -> np.random.Generator:
    return np.random.default_rng([seed, zlib.crc32(case_id.encode()), rerun])


def _row(name: str, region: str, grid: tuple[int, ...], block: tuple[int, ...], v: list[float]) -> dict[str, Any]:
    return {"name": name, "region": region, "grid": tuple(grid), "block": tuple(block), "regs": 32, "smem": 0,
            "occ": 50.0, "stream": 7, "t": int(round(v[T])), "rd": int(round(v[RD])), "wr": int(round(v[WR])),
            "inst": int(round(v[INST]))}


def session_rows(case: dict[str, Any], rerun: int) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Two real sessions of the same code (pairs[rerun]), with the case's factors applied to the current one."""
    ds = case["ds"]
    i, j = case["pairs"][rerun % len(case["pairs"])]
    plant = {p["launch"]: p for p in case.get("plant", [])}
    base, cur = [], []
    for k, la in enumerate(session(ds)["launches"]):
        if case.get("tests") and la["test"] not in case["tests"]:
            continue
        b, c = list(la["values"][i]), list(la["values"][j])
        if case.get("regressed") == k:
            c = list(session(ds)["regressed_vector_add"])
        c[T] *= case.get("all_t", 1.0)
        for m, key in ((T, "t"), (RD, "rd"), (WR, "wr"), (INST, "inst")):
            c[m] *= plant.get(k, {}).get(key, 1.0)
        grid = grid_of(ds, k)
        base.append(_row(la["demangled"], la["region"], grid, (256, 1, 1), b))
        cur.append(_row(la["demangled"], la["region"], grid, (256, 1, 1), c))
    return base, cur


def pool_rows(case: dict[str, Any], seed: int, rerun: int) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Launches drawn from real traced launches (with replacement), counters from a real session launch."""
    rng = _rng(seed, case["id"], rerun)
    pair = tuple(case["pool_pairs"][rerun % len(case["pool_pairs"])])
    sides: list[list[list[dict[str, Any]]]] = [[], []]
    for k in case["kernels"]:
        tmpl = session(k["ctr"][0])["launches"][k["ctr"][1]]
        runs = len(tmpl["values"])
        for side in (0, 1):
            durations = rng.choice(launch_pool(k["pool"], side, pair), size=k["n"])
            rows = []
            for x, t in enumerate(durations):
                v = list(tmpl["values"][int(rng.integers(runs))])
                v[T] = float(t)
                if side == 1:
                    v[T] *= k.get("f", 1.0) * (k["outlier"][1] if k.get("outlier") and k["outlier"][0] == x else 1.0)
                    v[RD] *= k.get("rd", 1.0)
                    v[INST] *= k.get("inst", 1.0)
                rows.append(_row(k["name"], case.get("region", "step"), tuple(k["grid"]), tuple(k["block"]), v))
            sides[side].append(rows)
    out: list[list[dict[str, Any]]] = [[], []]
    for side in (0, 1):
        longest = max(len(r) for r in sides[side])
        for x in range(longest):
            out[side] += [r[x] for r in sides[side] if x < len(r)]
    return out[0], out[1]


def clock_rows(case: dict[str, Any]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The H200 reduction's three launches under ncu's --clock-control none and base (durations only)."""
    def rows(mode: str) -> list[dict[str, Any]]:
        return [_row(k["name"], "reduce", (k["grid"], 1, 1), (k["block"], 1, 1), [k["t"], 0, 0, 0])
                for k in pools()["clock"][mode]]
    return rows(case["clock"][0]), rows(case["clock"][1])


def bench_files(case: dict[str, Any], rerun: int) -> tuple[str, str]:
    """Real per-step wall times of the H200 MLP step as a benchmark's rounds; the current ones scaled."""
    b, c = case["runs"][rerun % len(case["runs"])]
    base = list(pools()["bench"][b])
    cur = [v * case.get("f", 1.0) for v in pools()["bench"][c]]
    for x in case.get("burst", []):
        cur[x] *= case["burst_factor"]
    return bench_json([("test_mlp_step", base, 1)], True), bench_json([("test_mlp_step", cur, 1)], True)


def insert_time(events: list[dict[str, Any]], t: float, delta: float) -> None:
    """Everything from moment t on happens delta µs later; what was under way at t lasts delta µs longer."""
    for e in events:
        if "ts" not in e:
            continue
        ts = float(e["ts"])
        if ts >= t:
            e["ts"] = round(ts + delta, 3)
        elif "dur" in e and ts + float(e["dur"]) > t:
            e["dur"] = round(float(e["dur"]) + delta, 3)


def edit_torch_trace(doc: dict[str, Any], edit: dict[str, Any]) -> None:
    """Slow one kernel position of the step (every step), or stall the GPU before a position (some steps)."""
    events = doc["traceEvents"]
    kernels = sorted((e for e in events if e.get("cat") == "kernel"), key=lambda e: float(e["ts"]))
    per_step = len(kernels) // 10
    for s in edit["steps"]:
        k = kernels[s * per_step + edit["pos"]]
        if edit["op"] == "slow":
            insert_time(events, float(k["ts"]) + float(k["dur"]) - 0.001, (edit["factor"] - 1.0) * float(k["dur"]))
        else:
            prev = kernels[s * per_step + edit["pos"] - 1]
            gap_mid = (float(prev["ts"]) + float(prev["dur"]) + float(k["ts"])) / 2.0
            insert_time(events, gap_mid, edit["delta_us"])


def trace_files(case: dict[str, Any], rerun: int, folder: Path) -> tuple[Path, Path]:
    b, c = case["runs"][rerun % len(case["runs"])]
    ext = ".cupti.json.gz" if ".cupti." in b + "." else ".pt.trace.json.gz"
    base = folder / f"base{ext}"
    base.write_bytes((TIMELINE / f"{b}{ext}").read_bytes())
    cur_raw = (TIMELINE / f"{c}{ext}").read_bytes()
    if case.get("edit"):
        doc = json.loads(gzip.decompress(cur_raw))
        edit_torch_trace(doc, case["edit"])
        cur = folder / "cur.pt.trace.json"
        cur.write_text(json.dumps(doc))
    else:
        cur = folder / f"cur{ext}"
        cur.write_bytes(cur_raw)
    return base, cur


def write_rerun(case: dict[str, Any], seed: int, rerun: int, folder: Path) -> dict[str, Any]:
    """Write one rerun's files; returns {'base': Path, 'cur': Path}."""
    folder.mkdir(parents=True, exist_ok=True)
    kind = case["kind"]
    if kind == "bench":
        b, c = bench_files(case, rerun)
        (folder / "base.json").write_text(b)
        (folder / "cur.json").write_text(c)
        return {"base": folder / "base.json", "cur": folder / "cur.json"}
    if kind == "trace":
        base, cur = trace_files(case, rerun, folder)
        return {"base": base, "cur": cur}
    if kind == "sess":
        rows = session_rows(case, rerun)
    elif kind == "pool":
        rows = pool_rows(case, seed, rerun)
    else:
        rows = clock_rows(case)
    drop = COUNTERS if kind == "clock" else ()
    (folder / "base.raw.csv").write_text(ncu_raw_csv(rows[0], drop))
    (folder / "cur.raw.csv").write_text(ncu_raw_csv(rows[1], drop))
    return {"base": folder / "base.raw.csv", "cur": folder / "cur.raw.csv"}
