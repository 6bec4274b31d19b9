"""Blind set 5: extract the real measurements its noise is resampled from into pools.json (run once, by hand).

    python tests/blind5/extract_pools.py [--shared ../shared]

Reads perfgate's own H100/H200 captures (tests/data) and two third-party traces of the corpus
(../shared/corpus/timeline); writes only numbers (durations, counters, step times) with where each came from,
so that generating the cases never needs ../shared. See README.md, "Noise sources".
"""
from __future__ import annotations

import argparse
import gzip
import json
import lzma
import re
import sqlite3
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
METRICS = ["gpu__time_duration.sum", "dram__bytes_read.sum", "dram__bytes_write.sum", "smsp__inst_executed.sum"]
SESSIONS = {
    "h100a": ("tests/data/h100/sessions", 5, None),
    "h100b": ("tests/data/h100/default-metrics/sessions", 5, "regression"),
    "h200": ("tests/data/h200/sessions", 3, "regression"),
}


def _rows(doc: dict[str, Any]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(launches, results) as lists of dicts, from a v1 (rows) or v2 (columns) session report."""
    if doc["version"] == 1:
        return doc["launches"], doc["results"]
    la, rs, mt = doc["launches"], doc["results"], doc["metrics"]
    launches = [{k: la[k][i] for k in la} for i in range(len(la["kind"]))]
    results = []
    for i in range(len(rs["launch"])):
        row = {k: rs[k][i] for k in rs}
        row.update({k: launches[row["launch"]][k] for k in ("kind", "kernel", "demangled", "region", "ordinal", "test")})
        row["metric"] = mt["metric"][row["metric"]]
        results.append(row)
    return launches, results


def _key(r: dict[str, Any]) -> str:
    return f"{r['test'].split('::')[-1]}|{r['region']}|{r['demangled'] or r['kernel']}|{r['ordinal']}"


def sessions(folder: str, gates: int, regression: str | None) -> dict[str, Any]:
    """Each kernel launch's values in the baseline (the update run) and in each gate run of unchanged code."""
    runs = [json.loads(lzma.open(ROOT / folder / f"gate{i}.json.xz").read()) for i in range(1, gates + 1)]
    out: dict[str, dict[str, Any]] = {}
    for g, doc in enumerate(runs):
        launches, results = _rows(doc)
        groups = {_key(x): x.get("group") for x in launches if x["kind"] == "kernel"}
        for r in results:
            if r["kind"] != "kernel" or r["metric"] not in METRICS:
                continue
            k = _key(r)
            e = out.setdefault(k, {"test": r["test"].split("::")[-1], "region": r["region"], "kernel": r["kernel"],
                                   "demangled": r["demangled"] or r["kernel"], "ordinal": r["ordinal"],
                                   "group": groups.get(k), "values": [[None] * 4 for _ in range(gates + 1)]})
            m = METRICS.index(r["metric"])
            e["values"][0][m] = r["baseline"]
            e["values"][g + 1][m] = r["current"]
    res: dict[str, Any] = {"folder": folder, "runs": ["update"] + [f"gate{i}" for i in range(1, gates + 1)],
                           "launches": [v for v in out.values() if all(x is not None for s in v["values"] for x in s)]}
    if regression:
        _, results = _rows(json.loads(lzma.open(ROOT / folder / f"{regression}.json.xz").read()))
        vals = [None] * 4
        for r in results:
            if r["kind"] == "kernel" and r["metric"] in METRICS:
                vals[METRICS.index(r["metric"])] = r["current"]
        res["regressed_vector_add"] = vals
    return res


def clock_logs() -> dict[str, Any]:
    """The H200 CuPy reduction's three kernels under ncu --clock-control base and none (durations in ns)."""
    out: dict[str, Any] = {}
    for mode in ("base", "none"):
        text = (ROOT / f"tests/data/h200/clock-{mode}.log").read_text()
        names = re.findall(r"^  (\S.*?) \((\d+), 1, 1\)x\((\d+), 1, 1\)", text, re.M)
        times = [round(float(t) * 1000) for t in re.findall(r"gpu__time_duration\.sum\s+us\s+([\d.]+)", text)]
        out[mode] = [{"name": n, "grid": int(g), "block": int(b), "t": t} for (n, g, b), t in zip(names, times)]
    return out


def cupti_positions() -> dict[str, Any]:
    """H200 CUPTI traces of the MLP, 3 unchanged runs: each kernel position of a step, its 10 steps' durations."""
    out: dict[str, Any] = {"files": [], "positions": []}
    for run in "abc":
        name = f"tests/data/h200/timeline/mlp.cupti.{run}.cupti.json.gz"
        recs = [r for r in json.loads(gzip.open(ROOT / name).read())["records"] if r.get("kind") == 10]
        recs.sort(key=lambda r: r["start"])
        per_step = len(recs) // 10
        out["files"].append(name)
        for p in range(per_step):
            steps = recs[p::per_step]
            if run == "a":
                out["positions"].append({"name": steps[0]["name"], "grid": [steps[0][f"grid_{c}"] for c in "xyz"],
                                         "block": [steps[0][f"block_{c}"] for c in "xyz"], "runs": []})
            out["positions"][p]["runs"].append([r["end"] - r["start"] for r in steps])
    return out


def llama3(shared: Path) -> dict[str, Any]:
    """RTX 4060 Ti Nsight Systems export: the two kernels launched 512 and 1024 times, durations in ns."""
    rel = "corpus/timeline/llama3-sim-rtx4060ti/real_inference_simulation.sqlite"
    con = sqlite3.connect(f"file:{shared / rel}?mode=ro", uri=True)
    rows = con.execute("select s.value, k.end - k.start from CUPTI_ACTIVITY_KIND_KERNEL k "
                       "join StringIds s on s.id = k.shortName order by k.start").fetchall()
    out: dict[str, list[int]] = {}
    for name, t in rows:
        out.setdefault(name, []).append(int(t))
    return {"file": f"../shared/{rel}", "kernels": out}


def bench_steps() -> dict[str, Any]:
    """H200 per-step wall seconds of the MLP workload (10 measured steps a run), per run."""
    out = {}
    for p in sorted((ROOT / "tests/data/h200/timeline").glob("mlp*.summary.json")):
        out[p.name.removesuffix(".summary.json")] = json.loads(p.read_text())["wall_s"]
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--shared", default=str(ROOT.parent / "shared"))
    a = ap.parse_args()
    doc = {"sessions": {k: sessions(*v) for k, v in SESSIONS.items()}, "clock": clock_logs(),
           "cupti": cupti_positions(), "llama3": llama3(Path(a.shared)), "bench": bench_steps()}
    (Path(__file__).parent / "pools.json").write_text(json.dumps(doc, separators=(",", ":")) + "\n")


if __name__ == "__main__":
    main()
