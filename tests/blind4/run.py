"""Blind set 4's runner: generate every rerun of every case, run perfgate on it as a user would, count.

    python tests/blind4/run.py [--only PREFIX] [--jobs N] [--out results.tsv]

Uses the perfgate of the repository this file is in (PYTHONPATH set to its root). Refuses to run when cases.py
no longer makes the committed cases.json. How perfgate is run (`_perfgate`: one process, no GitHub or history
variables) is blind set 2's, imported; outcomes are read and counted by b4_score (blind set 2's, plus the metrics
blamed and nonsense). See README.md.
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import os
import resource
import shutil
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from types import ModuleType
from typing import Any

HERE = Path(__file__).resolve().parent


def _load(name: str, path: Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


blind2_run = _load("blind2_run", HERE.parent / "blind2" / "run.py")
sys.path.insert(0, str(HERE))
b4_cases = _load("blind4_cases", HERE / "cases.py")

from b4_generate import write_rerun  # noqa: E402
from b4_score import classify, figures, read_outcome, wrong_lines  # noqa: E402


def compare_args(case: dict[str, Any]) -> list[str]:
    spec = case["spec"]
    args = ["compare", "baseline.raw.csv", "current.raw.csv"]
    metrics = spec.get("metrics", "+roofline")
    if metrics is not None:
        args.append(f"--metrics={metrics}")
    return args + list(spec.get("args", [])) + ["--format", "json", "-o", "report.json"]


def run_one(case: dict[str, Any], seed: int, rerun: int, scratch: Path) -> dict[str, Any]:
    folder = scratch / f"{case['id']}-{rerun}"
    write_rerun(case, seed, rerun, folder)
    p = blind2_run._perfgate(compare_args(case), folder)
    out: dict[str, Any] = read_outcome(p.returncode, folder / "report.json", p.stderr)
    shutil.rmtree(folder, ignore_errors=True)
    return out


def _write_tsv(path: str, results: list[dict[str, Any]]) -> None:
    with open(path, "w") as f:
        f.write("id\trerun\tfamily\texpect\tambiguous\tclass\tverdict\trc\tnotes\tunmeasured\tblamed\tmetrics\t"
                "nonsense\n")
        for r in results:
            blamed = " ; ".join(b.split("|")[0] + "@" + b.split("|")[2] for b in r["blamed"])
            f.write(f"{r['id']}\t{r['rerun']}\t{r['family']}\t{r['expect']}\t{int(r['ambiguous'])}\t{r['class']}\t"
                    f"{r['verdict']}\t{r['rc']}\t{r['notes']}\t{r['unmeasured']}\t{blamed}\t{','.join(r['metrics'])}\t"
                    f"{' ; '.join(r['nonsense'])[:200]}\n")


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--only", default="", help="run only cases whose id starts with this")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--out", default="", help="write every run's outcome here (TSV)")
    a = ap.parse_args(argv)
    committed = (HERE / "cases.json").read_text()
    if committed != b4_cases.cases_text():
        print("refusing to run: cases.py no longer makes the committed cases.json (the expectations changed)")
        return 2
    doc = json.loads(committed)
    todo = [(c, r) for c in doc["cases"] if c["id"].startswith(a.only) for r in range(c["reruns"])]
    scratch = Path(tempfile.mkdtemp(prefix="perfgate-blind4-"))
    if not blind2_run._no_pyproject_above(scratch):
        print(f"refusing to run: a pyproject.toml lies above {scratch}; set TMPDIR to a folder without one")
        return 2
    start, cpu0 = time.monotonic(), resource.getrusage(resource.RUSAGE_CHILDREN)
    with ThreadPoolExecutor(max_workers=a.jobs) as pool:
        outs = list(pool.map(lambda cr: run_one(cr[0], doc["seed"], cr[1], scratch), todo))
    shutil.rmtree(scratch, ignore_errors=True)
    results = [{**o, "id": c["id"], "rerun": r, "family": c["family"], "expect": c["expect"],
                "blame_metrics": c["blame_metrics"], "ambiguous": bool(c["ambiguous"]), "class": classify(c, o)}
               for (c, r), o in zip(todo, outs)]
    cpu = resource.getrusage(resource.RUSAGE_CHILDREN)
    print(figures(results))
    print()
    print(wrong_lines(results) or "(no run counted wrong)")
    print(f"\n{len(results)} runs of {len({c['id'] for c, _ in todo})} cases in {time.monotonic() - start:.0f} s "
          f"wall; perfgate processes {cpu.ru_utime + cpu.ru_stime - cpu0.ru_utime - cpu0.ru_stime:.0f} s CPU; "
          f"load {os.getloadavg()[0]:.2f}")
    if a.out:
        _write_tsv(a.out, results)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
