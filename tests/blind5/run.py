"""Blind set 5's runner: generate every rerun of every case, run perfgate on it as a user would, count.

    python tests/blind5/run.py [--only PREFIX] [--jobs N] [--out results.tsv]

Uses the perfgate of the repository this file is in (PYTHONPATH set to its root). Refuses to run when cases.py
no longer makes the committed cases.json. Each run is one `python -m perfgate compare BASE CUR --format json -o
report.json` process in a fresh folder with no pyproject.toml above it and no GitHub or perfgate variables;
outcomes are read and counted by blind set 2's b2_score (imported). See README.md.
"""
from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
ROOT = HERE.parents[1]
sys.path.insert(0, str(HERE.parent / "blind2"))
sys.path.insert(0, str(HERE))


from blind_compare_harness import run as harness  # noqa: E402

b5_cases = harness.load_module("blind5_cases", HERE / "cases.py")

from b2_score import classify, figures, read_outcome, wrong_lines  # noqa: E402
from b5_generate import write_rerun  # noqa: E402


def run_one(case: dict[str, Any], seed: int, rerun: int, scratch: Path) -> dict[str, Any]:
    folder = scratch / f"{case['id']}-{rerun}"
    files = write_rerun(case, seed, rerun, folder)
    args = [sys.executable, "-m", "perfgate", "compare", files["base"].name, files["cur"].name,
            "--format", "json", "-o", "report.json"]
    p = subprocess.run(args, cwd=folder, env=harness.perfgate_env(ROOT), capture_output=True, text=True, timeout=600)
    out: dict[str, Any] = read_outcome(p.returncode, folder / "report.json", p.stderr)
    shutil.rmtree(folder, ignore_errors=True)
    return out


def main(argv: list[str]) -> int:
    return harness.main(harness.BlindSet("blind5", HERE, b5_cases.cases_text, run_one, classify, figures, wrong_lines),
                        argv, __doc__)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
