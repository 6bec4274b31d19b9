"""Run the blind comparison set through `perfgate compare` as a user would, and count what it got wrong.

    PYTHONPATH=. python tests/blind/run.py [--json] [--only SUBSTRING] [--reruns N]

Each case's two sides are generated into a temporary folder with fixed seeds (gen.py, cases.py) and compared
with `python -m perfgate compare BASE CUR --format json -o OUT` in a folder without a pyproject.toml (the
default thresholds). The expectations are read from cases.json, committed before the first run.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import zlib
from collections import defaultdict
from pathlib import Path
from random import Random

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(HERE))

from cases import EXPECTATIONS, Case, all_cases, expectations  # noqa: E402
from gen import benchmark_json, ncu_raw_page  # noqa: E402


def _seed(*parts: object) -> int:
    return zlib.crc32("/".join(str(p) for p in parts).encode())


def perfgate(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("PERFGATE_HISTORY", None)
    return subprocess.run([sys.executable, "-m", "perfgate", *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=300, check=False)


def _write_sides(case: Case, rerun: int, tmp: Path) -> tuple[Path, Path]:
    if case.bench is not None:
        base, cur, rounds, raw = case.bench
        paths = tmp / "base.json", tmp / "cur.json"
        paths[0].write_text(benchmark_json(base, rounds, raw, _seed(case.id, rerun, "base")))
        paths[1].write_text(benchmark_json(cur, rounds, raw, _seed(case.id, rerun, "cur")))
        return paths
    assert case.build is not None
    base_side, cur_side = case.build(Random(_seed(case.id, rerun, "build")))
    paths = tmp / "base.csv", tmp / "cur.csv"
    paths[0].write_text(ncu_raw_page(base_side, _seed(case.id, rerun, "base")))
    paths[1].write_text(ncu_raw_page(cur_side, _seed(case.id, rerun, "cur")))
    return paths


def _record_history(case: Case, rerun: int, tmp: Path) -> str:
    """Six runs of main, each recorded from a `compare` report whose current side is that run."""
    assert case.build is not None
    db = f"sqlite:///{tmp / 'history.sqlite'}"
    base_side, _ = case.build(Random(_seed(case.id, rerun, "build")))
    first = tmp / "main0.csv"
    first.write_text(ncu_raw_page(base_side, _seed(case.id, rerun, "main", 0)))
    for i in range(1, 7):
        run = tmp / f"main{i}.csv"
        run.write_text(ncu_raw_page(base_side, _seed(case.id, rerun, "main", i)))
        report = tmp / f"main{i}.json"
        done = perfgate("compare", str(first), str(run), "--format", "json", "-o", str(report), cwd=tmp)
        if done.returncode not in (0, 1):
            raise RuntimeError(f"{case.id}: recording main{i}: {done.stderr.strip()}")
        done = perfgate("history", "record", str(report), "--db", db, "--commit", f"c{i}", "--branch", "main",
                        "--when", f"2026-12-0{i}T10:00:00", cwd=tmp)
        if done.returncode != 0:
            raise RuntimeError(f"{case.id}: history record: {done.stderr.strip()}")
    return db


def _blamed(entry: str, kind: str | None, kernel: str, region: str | None, demangled: str | None) -> bool:
    tag, name = entry.split(":", 1)
    if tag == "k":  # the report's `kernel` is the function name; template arguments are in `demangled`
        return kind != "region" and (name in kernel or name in (demangled or ""))
    return kind == "region" and (kernel == name or name in (region or "").split(" > "))


def run_case(case: Case, rerun: int) -> dict[str, object]:
    with tempfile.TemporaryDirectory(prefix="perfgate-blind-") as name:
        tmp = Path(name)
        out = tmp / "report.json"
        if case.history:
            db = _record_history(case, rerun, tmp)
            _, cur = _write_sides(case, rerun, tmp)
            done = perfgate("compare", str(cur), "--history", db, "--format", "json", "-o", str(out), cwd=tmp)
        else:
            base, cur = _write_sides(case, rerun, tmp)
            done = perfgate("compare", str(base), str(cur), "--format", "json", "-o", str(out), cwd=tmp)
        report = json.loads(out.read_text()) if out.exists() else {}
    launches = report.get("launches", {})
    kinds = launches.get("kind", [])
    rows = list(zip(kinds, launches.get("kernel", []), launches.get("region", []), launches.get("status", []),
                    launches.get("demangled", [None] * len(kinds))))
    regressed = [(k, n, r, d) for k, n, r, s, d in rows if s == "regression"]
    notes = report.get("notes", [])
    result: dict[str, object] = {
        "case": case.id, "family": case.family, "expect": case.expect, "ambiguous": case.ambiguous,
        "rerun": rerun, "rc": done.returncode,
        "verdict": report.get("verdict"), "summary": report.get("summary"), "notes": notes,
        "stderr": done.stderr.strip()[-2000:],
        "regressed": [f"{k}:{n[:80]} [{r}]" for k, n, r, _ in regressed],
        "inconclusive": sum(1 for row in rows if row[3] == "inconclusive"),
        "wrong_blame": [f"{k}:{n[:80]} [{r}]" for k, n, r, d in regressed
                        if not any(_blamed(b, k, n, r, d) for b in case.blame)],
    }
    result["outcome"] = _outcome(case, result)
    return result


def _outcome(case: Case, res: dict[str, object]) -> str:
    rc = res["rc"]
    if case.expect == "pass":
        return "false alarm" if rc == 1 else ("exit 2" if rc == 2 else "ok")
    if case.expect == "fail":
        if rc != 1:
            return "miss"
        return "wrong blame" if len(res["wrong_blame"]) == len(res["regressed"]) else "ok"  # type: ignore[arg-type]
    if case.expect == "not-silent":
        named = any(n in note for note in res["notes"] for n in case.names)  # type: ignore[attr-defined]
        silent = rc == 0 and res["verdict"] == "pass" and not named
        return "miss" if silent else "ok"
    return "uncounted"


def table(results: list[dict[str, object]]) -> str:
    cols = ["runs", "pass runs", "false alarms", "fail runs", "misses", "not-silent runs", "silent",
            "wrong blame", "inconclusive", "exit 2"]
    fams: dict[str, dict[str, int]] = defaultdict(lambda: dict.fromkeys(cols, 0))
    for res in results:
        for fam in (str(res["family"]), "TOTAL"):
            row = fams[fam]
            row["runs"] += 1
            expect, outcome = res["expect"], res["outcome"]
            row["pass runs"] += expect == "pass"
            row["false alarms"] += outcome == "false alarm"
            row["fail runs"] += expect == "fail"
            row["misses"] += expect == "fail" and outcome == "miss"
            row["not-silent runs"] += expect == "not-silent"
            row["silent"] += expect == "not-silent" and outcome == "miss"
            row["wrong blame"] += bool(res["wrong_blame"]) and res["rc"] == 1 and expect == "fail"
            row["inconclusive"] += res["verdict"] == "inconclusive"
            row["exit 2"] += res["rc"] == 2
    lines = ["| family | " + " | ".join(cols) + " |", "|---" * (len(cols) + 1) + "|"]
    for fam in sorted(fams, key=lambda f: (f == "TOTAL", f)):
        lines.append(f"| {fam} | " + " | ".join(str(fams[fam][c]) for c in cols) + " |")
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true", help="print every run's raw result as JSON")
    parser.add_argument("--only", default="", help="run the cases whose id contains this")
    parser.add_argument("--reruns", type=int, default=0, help="reruns per case (default: each case's own)")
    args = parser.parse_args()
    if json.loads(EXPECTATIONS.read_text()) != expectations():
        print(f"{EXPECTATIONS} differs from cases.py: the expectations are fixed, do not regenerate them",
              file=sys.stderr)
        return 2
    results = []
    for case in all_cases():
        if args.only not in case.id:
            continue
        for rerun in range(args.reruns or case.reruns):
            results.append(run_case(case, rerun))
            res = results[-1]
            if res["outcome"] not in ("ok", "uncounted") and not args.json:
                print(f"{res['outcome']}: {case.id} #{rerun}: rc {res['rc']} {res['verdict']} "
                      f"regressed {res['regressed'][:3]} {res['stderr'][-300:] if res['rc'] == 2 else ''}",
                      flush=True)
    if args.json:
        print(json.dumps(results, indent=1, ensure_ascii=False))
    else:
        print(table(results))
        print("\nwithout the cases whose change clears 1.5x the threshold only summed over launches:")
        print(table([r for r in results if not r["ambiguous"]]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
