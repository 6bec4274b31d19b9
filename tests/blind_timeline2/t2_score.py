"""Blind timeline set 2: one run's outcome read from perfgate's JSON report, counted against the case's expectation
(blind set 2's words, plus not_pass, not_fail, refused, a note the case requires, and operators as regions)."""
from __future__ import annotations

import fnmatch
import json
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

# Never a region (docs/timeline.md "What is measured"): operators, autograd nodes, emit_nvtx ranges, and the data
# loader's range, which launches nothing.
OPERATOR_TEXTS = ("aten::", "Backward", "evaluate_function", "seq =", "enumerate(DataLoader)", "autograd::")


def read_outcome(rc: int, report: Path, stdout: str, stderr: str) -> dict[str, Any]:
    """What perfgate said: its verdict line, exit status, notes, regressions, and any operator read as a region."""
    printed = (stdout.strip().splitlines() or [""])[-1][:400]
    if not report.exists():
        return {"rc": rc, "verdict": "error", "notes": 0, "note_texts": [], "blamed": [], "operator_regions": [],
                "region_rows": [], "printed": printed, "error": stderr.strip()[-300:]}
    doc = json.loads(report.read_text())
    la = doc["launches"]
    n = len(la["status"])
    blamed = sorted({f"{la['kind'][i]}:{la['kernel'][i]}|{la['demangled'][i] or ''}|{la['region'][i] or ''}"
                     for i in range(n) if la["status"][i] == "regression"})
    names = {la["kernel"][i] for i in range(n) if la["kind"][i] == "region"} | {la["region"][i] or "" for i in range(n)}
    operator_regions = sorted(x for x in names if any(t in x for t in OPERATOR_TEXTS))
    region_rows = sorted({la["kernel"][i] for i in range(n) if la["kind"][i] == "region"})
    return {"rc": rc, "verdict": doc["verdict"], "notes": len(doc.get("notes", [])), "note_texts": doc.get("notes", []),
            "blamed": blamed, "operator_regions": operator_regions[:3], "region_rows": region_rows[:50], "printed": printed, "error": stderr.strip()[-300:] if rc == 2 else ""}


def _blame_ok(row: str, patterns: list[str]) -> bool:
    """R:GLOB matches a region row whose path or last range matches the glob; K:TEXT a kernel holding the text."""
    kind, _, rest = row.partition(":")
    name, demangled, _region = rest.split("|", 2)
    leaf = name.split(" > ")[-1]
    for p in patterns:
        want, _, text = p.partition(":")
        if want == "K" and kind == "kernel" and (text in name or text in demangled):
            return True
        if want == "R" and kind == "region" and (fnmatch.fnmatchcase(leaf, text) or fnmatch.fnmatchcase(name, text)):
            return True
    return False


def _word(case: dict[str, Any], out: dict[str, Any]) -> str:
    v, expect = out["verdict"], case["expect"]
    if expect == "any":
        return "uncounted"
    if expect == "refused":
        return "ok" if out["rc"] == 2 and v == "error" else "not_refused"
    if v == "error" or v == "not measured":
        return "stopped"
    if expect == "pass":
        return {"fail": "false_alarm", "inconclusive": "inconclusive", "pass": "ok"}[v]
    if expect == "not_fail":
        return "false_alarm" if v == "fail" else "ok"
    if v == "pass":
        return "miss"
    if v == "fail":
        return "ok" if all(_blame_ok(b, case["blame"]) for b in out["blamed"]) else "wrong_blame"
    return "ok" if expect == "not_pass" else "inconclusive"


def classify(case: dict[str, Any], out: dict[str, Any]) -> str:
    """One word: ok, false_alarm, miss, inconclusive, stopped, wrong_blame, not_refused, no_note, no_row,
    region_from_operator, uncounted."""
    word = _word(case, out)
    if out["operator_regions"]:
        return "region_from_operator"
    if word == "ok" and case["note_must"] and not any(case["note_must"] in t for t in out["note_texts"]):
        return "no_note"
    if word == "ok" and case["row_must"] and case["row_must"] not in out["region_rows"]:
        return "no_row"
    return word


COLUMNS = [("false alarms", "pass", "false_alarm"), ("pass runs inconclusive", "pass", "inconclusive"),
           ("pass runs stopped", "pass", "stopped"), ("no note", "pass", "no_note"),
           ("no whole-trace row", "pass", "no_row"),
           ("misses", "fail", "miss"), ("fail runs inconclusive", "fail", "inconclusive"),
           ("fail runs stopped", "fail", "stopped"), ("wrong blame", "fail", "wrong_blame"),
           ("not_pass: misses", "not_pass", "miss"), ("not_pass: wrong blame", "not_pass", "wrong_blame"),
           ("not_fail: false alarms", "not_fail", "false_alarm"), ("stopped (other)", "*", "stopped"), ("not refused", "refused", "not_refused"),
           ("operator as region", "*", "region_from_operator")]


def figures(results: list[dict[str, Any]]) -> str:
    rows: dict[str, Counter[str]] = defaultdict(Counter)
    for r in results:
        key = "ambiguous" if r["ambiguous"] else r["family"]
        for k in (key, "ALL ambiguous" if r["ambiguous"] else "ALL"):
            rows[k][f"{r['expect']}:{r['class']}"] += 1
            rows[k][f"*:{r['class']}"] += 1
            rows[k][r["expect"]] += 1
            rows[k]["*"] += 1
    head = "| family | " + " | ".join(c[0] for c in COLUMNS) + " |"
    lines = [head, "|---|" + "---:|" * len(COLUMNS)]
    order = sorted(k for k in rows if not k.startswith("ALL") and k != "ambiguous") + ["ALL", "ambiguous",
                                                                                        "ALL ambiguous"]
    for k in order:
        if k in rows:
            c = rows[k]
            lines.append(f"| {k} | " + " | ".join(f"{c[f'{e}:{w}']}/{c[e]}" for _, e, w in COLUMNS) + " |")
    return "\n".join(lines)


def wrong_lines(results: list[dict[str, Any]]) -> str:
    out = []
    for r in results:
        if r["class"] in ("ok", "uncounted"):
            continue
        said = r["verdict"] + (f" (exit {r['rc']})" if r["rc"] not in (0, 1) else "")
        if r["blamed"]:
            said += "; regressions: " + ", ".join(b.split("|")[0] + (" in " + b.split("|")[2] if b.split("|")[2]
                                                                     else "") for b in r["blamed"][:4])
            if len(r["blamed"]) > 4:
                said += f" (+{len(r['blamed']) - 4} more)"
        if r["operator_regions"]:
            said += "; operator regions: " + ", ".join(r["operator_regions"])
        if r["error"]:
            said += "; " + r["error"].splitlines()[-1][:200]
        amb = " [ambiguous]" if r["ambiguous"] else ""
        out.append(f"- {r['class']}{amb}: {r['id']} #{r['rerun']} (expect {r['expect']}): {said}")
        if r["printed"]:
            out.append(f"    perfgate: {r['printed']}")
    return "\n".join(out)
