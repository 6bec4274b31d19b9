"""Blind set 2's runner: generate every rerun of every case, run perfgate on it as a user would, count.

    python tests/blind2/run.py [--only PREFIX] [--jobs N] [--out results.tsv]

Uses the perfgate of the repository this file is in (PYTHONPATH set to its root). Refuses to run when cases.py
no longer makes the committed cases.json. See README.md.
"""
from __future__ import annotations

import argparse
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
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
sys.path.insert(0, str(HERE))

from b2_generate import write_rerun  # noqa: E402
from b2_score import classify, figures, read_outcome, wrong_lines  # noqa: E402
from cases import cases_text  # noqa: E402


def _perfgate(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    for var in ("PERFGATE_HISTORY", "GITHUB_ACTIONS", "GITHUB_STEP_SUMMARY", "GITHUB_EVENT_PATH"):
        env.pop(var, None)
    return subprocess.run([sys.executable, "-m", "perfgate", *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=300)


def _record_history(paths: list[Path], db: str, cwd: Path) -> str:
    """Record each main run as CI does: its compare report, then `history record` at its own commit."""
    for i, path in enumerate(paths):
        report = cwd / f"main{i}.report.json"
        p = _perfgate(["compare", path.name, path.name, "--format", "json", "-o", report.name], cwd)
        if p.returncode not in (0, 1):
            return f"recording main{i}: compare exit {p.returncode}: {p.stderr.strip()[-200:]}"
        p = _perfgate(["history", "record", report.name, "--db", db, "--commit", f"c{i:03d}", "--branch", "main",
                       "--when", f"2026-12-{i + 1:02d}T10:00:00"], cwd)
        if p.returncode != 0:
            return f"recording main{i}: history record exit {p.returncode}: {p.stderr.strip()[-200:]}"
    return ""


def run_one(case: dict[str, Any], seed: int, rerun: int, scratch: Path) -> dict[str, Any]:
    folder = scratch / f"{case['id']}-{rerun}"
    files = write_rerun(case, seed, rerun, folder)
    args = ["compare"]
    if files["base"] is not None:
        args.append(files["base"].name)
    args.append(files["cur"].name)
    if files["history"]:
        db = f"sqlite:///{folder / 'history.sqlite'}"
        problem = _record_history(files["history"], db, folder)
        if problem:
            return {"rc": -1, "verdict": "error", "notes": 0, "blamed": [], "error": problem}
        args += ["--history", db]
    p = _perfgate(args + ["--format", "json", "-o", "report.json"], folder)
    out = read_outcome(p.returncode, folder / "report.json", p.stderr)
    shutil.rmtree(folder, ignore_errors=True)
    return out


def _no_pyproject_above(path: Path) -> bool:
    return not any((p / "pyproject.toml").exists() for p in [path, *path.parents])


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--only", default="", help="run only cases whose id starts with this")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--out", default="", help="write every run's outcome here (TSV)")
    a = ap.parse_args(argv)
    committed = (HERE / "cases.json").read_text()
    if committed != cases_text():
        print("refusing to run: cases.py no longer makes the committed cases.json (the expectations changed)")
        return 2
    doc = json.loads(committed)
    todo = [(c, r) for c in doc["cases"] if c["id"].startswith(a.only) for r in range(c["reruns"])]
    scratch = Path(tempfile.mkdtemp(prefix="perfgate-blind2-"))
    if not _no_pyproject_above(scratch):
        print(f"refusing to run: a pyproject.toml lies above {scratch}; set TMPDIR to a folder without one")
        return 2
    start = time.monotonic()
    with ThreadPoolExecutor(max_workers=a.jobs) as pool:
        outs = list(pool.map(lambda cr: run_one(cr[0], doc["seed"], cr[1], scratch), todo))
    shutil.rmtree(scratch, ignore_errors=True)
    results = []
    for (c, r), o in zip(todo, outs):
        results.append({**o, "id": c["id"], "rerun": r, "family": c["family"], "expect": c["expect"],
                        "ambiguous": bool(c["ambiguous"]), "class": classify(c, o)})
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    print(figures(results))
    print()
    print(wrong_lines(results) or "(no run counted wrong)")
    print(f"\n{len(results)} runs of {len({c['id'] for c, _ in todo})} cases in {time.monotonic() - start:.0f} s "
          f"wall; perfgate processes {usage.ru_utime + usage.ru_stime:.0f} s CPU; load {os.getloadavg()[0]:.2f}")
    if a.out:
        with open(a.out, "w") as f:
            f.write("id\trerun\tfamily\texpect\tambiguous\tclass\tverdict\trc\tnotes\tblamed\n")
            for r in results:
                f.write(f"{r['id']}\t{r['rerun']}\t{r['family']}\t{r['expect']}\t{int(r['ambiguous'])}\t"
                        f"{r['class']}\t{r['verdict']}\t{r['rc']}\t{r['notes']}\t"
                        f"{' ; '.join(b.split('|')[0] + '@' + b.split('|')[2] for b in r['blamed'])}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
