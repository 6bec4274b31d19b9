"""Run the blind timeline set once on perfgate as it is: `python tests/blind_timeline/run.py --jobs N [--tsv FILE]`.

Each case and rerun writes both traces (seeded by the set's seed, the case id, the rerun and the side) into a
fresh temporary folder with no pyproject.toml above it and runs
`python -m perfgate compare BASE CUR --format json -o report.json` there, every threshold the default.
Scoring is blind set 2's (`tests/blind2/b2_score.py`: read_outcome, classify, figures, wrong_lines), plus this
set's own check that no operator, autograd node or DataLoader range became a region row (`forbid`).
"""
from __future__ import annotations

import argparse
import hashlib
import json
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "blind2"))

import cases as cases_module  # noqa: E402
from b2_score import classify, figures, read_outcome, wrong_lines  # noqa: E402
from tl_model import simulate  # noqa: E402
from tl_write import chrome, sqlite  # noqa: E402


def write_side(prog: dict[str, Any], fmt: str, seed: int, folder: Path, side: str) -> Path:
    tl = simulate(prog, np.random.default_rng(seed))
    if fmt.startswith("nsys"):
        path = folder / f"{side}.sqlite"
        sqlite(tl, path, capture="immediate" if fmt == "nsys-start" else "delayed")
    else:
        path = folder / f"{side}.pt.trace.json"
        chrome(tl, path, schema="old" if fmt == "kineto-old" else "recent", whole_us=fmt == "kineto-us")
    return path


def _seed(set_seed: int, cid: str, rerun: int, side: str) -> int:
    return int.from_bytes(hashlib.sha256(f"{set_seed}:{cid}:{rerun}:{side}".encode()).digest()[:8], "little")


def forbidden_regions(report: Path, forbid: list[str]) -> list[str]:
    if not report.exists():
        return []
    la = json.loads(report.read_text())["launches"]
    names = {la["kernel"][i] or "" for i, k in enumerate(la["kind"]) if k == "region"}
    names |= {la["region"][i] or "" for i in range(len(la["kind"]))}
    return sorted(n for n in names if any(f in n for f in forbid))


def run_one(set_seed: int, case: dict[str, Any], rerun: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="perfgate-blindt-") as tmp:
        folder = Path(tmp)
        base = write_side(case["base"], case["format"], _seed(set_seed, case["id"], rerun, "base"), folder, "base")
        cur = write_side(case["cur"], case["format"], _seed(set_seed, case["id"], rerun, "cur"), folder, "cur")
        report = folder / "report.json"
        env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT), "HOME": tmp}
        proc = subprocess.run([sys.executable, "-m", "perfgate", "compare", base.name, cur.name, "--format", "json",
                               "-o", str(report)], cwd=folder, env=env, capture_output=True, text=True, timeout=300)
        out = read_outcome(proc.returncode, report, proc.stderr)
        out["forbidden"] = forbidden_regions(report, case["forbid"])
    cls = classify(case, out)
    if out["forbidden"] and cls == "ok":
        cls = "region_from_operator"
    return {"id": case["id"], "family": case["family"], "format": case["format"], "rerun": rerun,
            "expect": case["expect"], "ambiguous": bool(case["ambiguous"]), "class": cls, **out}


def tsv(results: list[dict[str, Any]]) -> str:
    head = "id\trerun\tformat\texpect\tverdict\trc\tclass\tblamed\tforbidden\terror"
    rows = [f"{r['id']}\t{r['rerun']}\t{r['format']}\t{r['expect']}\t{r['verdict']}\t{r['rc']}\t{r['class']}\t"
            f"{';'.join(b.split('|')[0] + '@' + b.split('|')[2] for b in r['blamed'])}\t"
            f"{';'.join(r['forbidden'])}\t{r['error'].splitlines()[-1][:200] if r['error'] else ''}"
            for r in results]
    return "\n".join([head] + rows) + "\n"


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--tsv", type=Path)
    ap.add_argument("--only", help="run the cases whose id holds this text")
    args = ap.parse_args()
    if cases_module.main(["cases.py", "--check"]) != 0:
        return 2
    doc = json.loads((HERE / "cases.json").read_text())
    todo = [(c, r) for c in doc["cases"] for r in range(c["reruns"]) if not args.only or args.only in c["id"]]
    with ThreadPoolExecutor(max_workers=args.jobs) as pool:
        results = list(pool.map(lambda cr: run_one(doc["seed"], *cr), todo))
    print(figures(results))
    print(wrong_lines(results))
    for r in results:
        if r["class"] == "region_from_operator":
            print(f"- region_from_operator: {r['id']} #{r['rerun']}: {', '.join(r['forbidden'])}")
        if r["class"] == "inconclusive":
            print(f"- inconclusive: {r['id']} #{r['rerun']} (expect {r['expect']})")
    if args.tsv:
        args.tsv.write_text(tsv(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
