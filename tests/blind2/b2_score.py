"""Blind set 2: one run's outcome read from perfgate's report, and the figures over all runs."""
from __future__ import annotations

import json
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any


def read_outcome(rc: int, report: Path, stderr: str) -> dict[str, Any]:
    """What perfgate said: its verdict, exit status, notes, and what its regressions name."""
    if not report.exists():
        return {"rc": rc, "verdict": "error", "notes": 0, "blamed": [], "error": stderr.strip()[-300:]}
    doc = json.loads(report.read_text())
    la = doc["launches"]
    blamed = sorted({f"{la['kind'][i]}:{la['kernel'][i]}|{la['demangled'][i] or ''}|{la['region'][i] or ''}"
                     for i, s in enumerate(la["status"]) if s == "regression"})
    return {"rc": rc, "verdict": doc["verdict"], "notes": len(doc.get("notes", [])), "blamed": blamed,
            "error": stderr.strip()[-300:] if rc == 2 else ""}


def _blame_ok(row: str, patterns: list[str]) -> bool:
    kind, _, rest = row.partition(":")
    name, demangled, region = rest.split("|", 2)
    for p in patterns:
        want, _, text = p.partition(":")
        if want == "K" and kind == "kernel" and (text in name or text in demangled):
            return True
        if want == "R" and kind == "region" and (text == "*" or text in name or text in region):
            return True
        if want == "B" and kind == "benchmark" and text in name:
            return True
    return False


def classify(case: dict[str, Any], out: dict[str, Any]) -> str:
    """One word for one run: ok, false_alarm, miss, silent, inconclusive, stopped, wrong_blame, uncounted."""
    v, expect = out["verdict"], case["expect"]
    if expect == "any":
        return "uncounted"
    if expect == "pass":
        return {"fail": "false_alarm", "inconclusive": "inconclusive", "pass": "ok"}.get(v, "stopped")
    if expect == "not_silent":
        return "silent" if v == "pass" and out["notes"] == 0 else "ok"
    if v == "pass":
        return "miss"
    if v == "fail":
        return "ok" if all(_blame_ok(b, case["blame"]) for b in out["blamed"]) else "wrong_blame"
    return "inconclusive" if v == "inconclusive" else "stopped"


def figures(results: list[dict[str, Any]]) -> str:
    """The table of figures, per family and overall; ambiguous cases on lines of their own."""
    rows: dict[str, Counter[str]] = defaultdict(Counter)
    for r in results:
        key = "ambiguous" if r["ambiguous"] else r["family"]
        for k in (key, "ALL" if not r["ambiguous"] else "ALL ambiguous"):
            rows[k][f"{r['expect']}:{r['class']}"] += 1
            rows[k][f"{r['expect']}"] += 1
    lines = ["| family | false alarms | pass runs inconclusive | pass runs stopped (exit 2) | misses | fail runs "
             "inconclusive | fail runs stopped | wrong blame | silent (not_silent runs) |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    order = sorted(k for k in rows if not k.startswith("ALL") and k != "ambiguous") + ["ALL", "ambiguous"]
    for k in order:
        if k not in rows:
            continue
        c = rows[k]
        lines.append(f"| {k} | {c['pass:false_alarm']}/{c['pass']} | {c['pass:inconclusive']} | "
                     f"{c['pass:stopped']} | {c['fail:miss']}/{c['fail']} | {c['fail:inconclusive']} | "
                     f"{c['fail:stopped']} | {c['fail:wrong_blame']} | {c['not_silent:silent']}/{c['not_silent']} |")
    return "\n".join(lines)


def wrong_lines(results: list[dict[str, Any]]) -> str:
    """One line per run counted wrong (or stopped, or wrongly blamed): what perfgate said."""
    out = []
    for r in results:
        if r["class"] in ("ok", "uncounted", "inconclusive"):
            continue
        said = r["verdict"] + (f" (exit {r['rc']})" if r["rc"] not in (0, 1) else "")
        if r["blamed"]:
            said += "; regressions: " + ", ".join(b.split("|")[0] + (" in " + b.split("|")[2] if b.split("|")[2]
                                                                     else "") for b in r["blamed"][:4])
        if r["error"]:
            said += "; " + r["error"].splitlines()[-1][:160]
        amb = " [ambiguous]" if r["ambiguous"] else ""
        out.append(f"- {r['class']}{amb}: {r['id']} #{r['rerun']} (expect {r['expect']}): {said}")
    return "\n".join(out)
