"""Blind timeline set 2's runner: edit the corpus traces for every rerun of every case, run perfgate on them as a
user would, count.

    PERFGATE_CORPUS=/path/to/shared/corpus python tests/blind_timeline2/run.py [--only PREFIX] [--jobs N] [--out x.tsv]

Uses the perfgate of the repository this file is in (PYTHONPATH set to its root). Refuses to run when cases.py no
longer makes the committed cases.json, or without the corpus. Each run is one `python -m perfgate compare BASE CUR
--format json -o report.json` process in a fresh folder with no pyproject.toml above it and no GitHub or perfgate
variables; the edited traces are written there and removed after. See README.md.
"""
from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))


from blind_compare_harness import run as harness  # noqa: E402

t2_cases = harness.load_module("blind_timeline2_cases", HERE / "cases.py")

from t2_generate import corpus_dir, write_rerun  # noqa: E402
from t2_score import classify, figures, read_outcome, wrong_lines  # noqa: E402


def run_one(case: dict[str, Any], seed: int, rerun: int, scratch: Path) -> dict[str, Any]:
    folder = scratch / f"{case['id']}-{rerun}"
    files = write_rerun(case, seed, rerun, folder)
    args = [sys.executable, "-m", "perfgate", "compare", str(files["base"]), str(files["cur"]),
            "--format", "json", "-o", "report.json"]
    p = subprocess.run(args, cwd=folder, env=harness.perfgate_env(ROOT), capture_output=True, text=True, timeout=600)
    out: dict[str, Any] = read_outcome(p.returncode, folder / "report.json", p.stdout, p.stderr)
    shutil.rmtree(folder, ignore_errors=True)
    return out


def main(argv: list[str]) -> int:
    if not corpus_dir().is_dir():
        print(f"no corpus at {corpus_dir()} (set PERFGATE_CORPUS to the shared corpus folder)")
        return 2
    blind = harness.BlindSet("blind-timeline2", HERE, t2_cases.cases_text, run_one, classify, figures, wrong_lines)
    return harness.main(blind, argv, __doc__)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
