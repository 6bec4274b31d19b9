"""Blind set 5's runner: generate every rerun of every case, run perfgate on it as a user would, count.

    python tests/blind5/run.py [--only PREFIX] [--jobs N] [--out results.tsv]

Uses the perfgate of the repository this file is in (PYTHONPATH set to its root). Refuses to run when cases.py
no longer makes the committed cases.json. Each run is one `python -m perfgate compare BASE CUR --format json -o
report.json` process in a fresh folder with no pyproject.toml above it and no GitHub or perfgate variables;
outcomes are read and counted by blind set 2's b2_score (imported). See README.md.
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from types import ModuleType
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(HERE.parent / "blind2"))
sys.path.insert(0, str(HERE))


def _load(name: str, path: Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


b5_cases = _load("blind5_cases", HERE / "cases.py")

from b2_score import classify, figures, read_outcome, wrong_lines  # noqa: E402
from b5_generate import write_rerun  # noqa: E402


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GITHUB_", "PERFGATE_"))}
    env["PYTHONPATH"] = str(ROOT)
    return env


def _no_pyproject_above(folder: Path) -> bool:
    return not any((p / "pyproject.toml").exists() for p in [folder, *folder.parents])


def run_one(case: dict[str, Any], seed: int, rerun: int, scratch: Path) -> dict[str, Any]:
    folder = scratch / f"{case['id']}-{rerun}"
    files = write_rerun(case, seed, rerun, folder)
    args = [sys.executable, "-m", "perfgate", "compare", files["base"].name, files["cur"].name,
            "--format", "json", "-o", "report.json"]
    p = subprocess.run(args, cwd=folder, env=_env(), capture_output=True, text=True, timeout=600)
    out: dict[str, Any] = read_outcome(p.returncode, folder / "report.json", p.stderr)
    shutil.rmtree(folder, ignore_errors=True)
    return out


def _write_tsv(path: str, results: list[dict[str, Any]]) -> None:
    with open(path, "w") as f:
        f.write("id\trerun\tfamily\texpect\tambiguous\tclass\tverdict\trc\tnotes\tblamed\n")
        for r in results:
            blamed = " ; ".join(b.split("|")[0] + "@" + b.split("|")[2] for b in r["blamed"])
            f.write(f"{r['id']}\t{r['rerun']}\t{r['family']}\t{r['expect']}\t{int(r['ambiguous'])}\t"
                    f"{r['class']}\t{r['verdict']}\t{r['rc']}\t{r['notes']}\t{blamed}\n")


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--only", default="", help="run only cases whose id starts with this")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--out", default="", help="write every run's outcome here (TSV)")
    a = ap.parse_args(argv)
    committed = (HERE / "cases.json").read_text()
    if committed != b5_cases.cases_text():
        print("refusing to run: cases.py no longer makes the committed cases.json (the expectations changed)")
        return 2
    doc = json.loads(committed)
    todo = [(c, r) for c in doc["cases"] if c["id"].startswith(a.only) for r in range(c["reruns"])]
    scratch = Path(tempfile.mkdtemp(prefix="perfgate-blind5-"))
    if not _no_pyproject_above(scratch):
        print(f"refusing to run: a pyproject.toml lies above {scratch}; set TMPDIR to a folder without one")
        return 2
    start, cpu0 = time.monotonic(), resource.getrusage(resource.RUSAGE_CHILDREN)
    with ThreadPoolExecutor(max_workers=a.jobs) as pool:
        outs = list(pool.map(lambda cr: run_one(cr[0], doc["seed"], cr[1], scratch), todo))
    shutil.rmtree(scratch, ignore_errors=True)
    results = [{**o, "id": c["id"], "rerun": r, "family": c["family"], "expect": c["expect"],
                "ambiguous": bool(c["ambiguous"]), "class": classify(c, o)} for (c, r), o in zip(todo, outs)]
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
