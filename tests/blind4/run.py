"""Blind set 4's runner: generate every rerun of every case, run perfgate on it as a user would, count.

    python tests/blind4/run.py [--only PREFIX] [--jobs N] [--out results.tsv]

Uses the perfgate of the repository this file is in (PYTHONPATH set to its root). Refuses to run when cases.py
no longer makes the committed cases.json. How perfgate is run (`_perfgate`: one process, no GitHub or history
variables) is blind set 2's, imported; outcomes are read and counted by b4_score (blind set 2's, plus the metrics
blamed and nonsense). See README.md.
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
b4_cases = harness.load_module("blind4_cases", HERE / "cases.py")

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
            blamed = harness.blamed_text(r)
            f.write(f"{r['id']}\t{r['rerun']}\t{r['family']}\t{r['expect']}\t{int(r['ambiguous'])}\t{r['class']}\t"
                    f"{r['verdict']}\t{r['rc']}\t{r['notes']}\t{r['unmeasured']}\t{blamed}\t{','.join(r['metrics'])}\t"
                    f"{' ; '.join(r['nonsense'])[:200]}\n")


def main(argv: list[str]) -> int:
    return harness.main(harness.BlindSet("blind4", HERE, b4_cases.cases_text, run_one, classify, figures, wrong_lines,
                                         case_fields=("blame_metrics",), tsv=_write_tsv), argv, __doc__)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
