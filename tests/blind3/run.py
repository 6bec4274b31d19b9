"""Blind set 3's runner: generate every rerun of every case, run perfgate on it as a user would, count.

    python tests/blind3/run.py [--only PREFIX] [--jobs N] [--out results.tsv]

Uses the perfgate of the repository this file is in (PYTHONPATH set to its root). Refuses to run when cases.py
no longer makes the committed cases.json. How perfgate is run (`_perfgate`: one process, no GitHub or history
variables; `_record_history`: each base-branch run compared with itself, then `history record` at its own
commit) and how outcomes are read and counted (`b2_score`) are blind set 2's, imported. See README.md.
"""
from __future__ import annotations

import shutil
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))


from blind_compare_harness import run as harness  # noqa: E402

blind2_run = harness.load_module("blind2_run", HERE.parent / "blind2" / "run.py")
sys.path.insert(0, str(HERE))
b3_cases = harness.load_module("blind3_cases", HERE / "cases.py")

from b2_score import classify, figures, read_outcome, wrong_lines  # noqa: E402
from b3_generate import write_rerun  # noqa: E402


def run_one(case: dict[str, Any], seed: int, rerun: int, scratch: Path) -> dict[str, Any]:
    folder = scratch / f"{case['id']}-{rerun}"
    files = write_rerun(case, seed, rerun, folder)
    args = ["compare"]
    if files["base"] is not None:
        args.append(files["base"].name)
    args.append(files["cur"].name)
    if files["history"]:
        db = f"sqlite:///{folder / 'history.sqlite'}"
        problem = blind2_run._record_history(files["history"], db, folder)
        if problem:
            return {"rc": -1, "verdict": "error", "notes": 0, "blamed": [], "error": problem}
        args += ["--history", db]
    p = blind2_run._perfgate(args + ["--format", "json", "-o", "report.json"], folder)
    out: dict[str, Any] = read_outcome(p.returncode, folder / "report.json", p.stderr)
    shutil.rmtree(folder, ignore_errors=True)
    return out


def main(argv: list[str]) -> int:
    return harness.main(harness.BlindSet("blind3", HERE, b3_cases.cases_text, run_one, classify, figures, wrong_lines),
                        argv, __doc__)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
