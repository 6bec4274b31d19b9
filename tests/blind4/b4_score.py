"""Blind set 4: one run's outcome (blind set 2's reading, imported) with the metrics its regressions name and any
nonsense (NaN / Infinity in the report, `nan` / `inf` in a note, a traceback), and the figures over all runs."""
from __future__ import annotations

import json
import re
import sys
from collections import Counter
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "blind2"))

from b2_score import classify as b2_classify  # noqa: E402
from b2_score import figures as b2_figures  # noqa: E402
from b2_score import read_outcome as b2_read_outcome  # noqa: E402
from b2_score import wrong_lines as b2_wrong_lines  # noqa: E402

NONFINITE = re.compile(r"\bNaN\b|-?\bInfinity\b")
NOTE_WORD = re.compile(r"\b(nan|inf)\b", re.IGNORECASE)


def read_outcome(rc: int, report: Path, stderr: str) -> dict[str, Any]:
    out = b2_read_outcome(rc, report, stderr)
    out["metrics"], out["nonsense"], out["unmeasured"] = [], [], 0
    if "Traceback (most recent call last)" in stderr:
        out["nonsense"].append("traceback on stderr")
    if not report.exists():
        return out
    text = report.read_text()
    doc = json.loads(text)
    if NONFINITE.search(text):
        out["nonsense"].append("NaN/Infinity in the JSON report")
    out["nonsense"] += [f"note: {n[:120]}" for n in doc.get("notes", []) if NOTE_WORD.search(n)]
    res, names = doc["results"], doc["metrics"]["metric"]
    out["metrics"] = sorted({names[m] for m, s in zip(res["metric"], res["status"]) if s == "regression"})
    out["unmeasured"] = len(doc.get("unmeasured", []))
    return out


def classify(case: dict[str, Any], out: dict[str, Any]) -> str:
    cls: str = b2_classify(case, out)
    if cls == "ok" and case["expect"] == "fail" and any(m not in case["blame_metrics"] for m in out["metrics"]):
        return "wrong_metric"
    return cls


def figures(results: list[dict[str, Any]]) -> str:
    # blind set 2's table counts a wrong metric nowhere: it is counted on a line of its own
    table = b2_figures([{**r, "class": "ok" if r["class"] == "wrong_metric" else r["class"]} for r in results])
    counted = [r for r in results if not r["ambiguous"]]
    extra = Counter()
    for r in counted:
        extra["wrong_metric"] += r["class"] == "wrong_metric"
        extra["nonsense"] += bool(r["nonsense"])
        extra["error"] += r["verdict"] == "error"
    return table + (f"\n\nwrong metric (fail runs whose regressions name a metric outside blame_metrics): "
                    f"{extra['wrong_metric']}; runs with nonsense (NaN/inf, traceback): {extra['nonsense']} "
                    f"(all runs: {sum(bool(r['nonsense']) for r in results)}); errors (no report): {extra['error']}")


def wrong_lines(results: list[dict[str, Any]]) -> str:
    lines = [b2_wrong_lines([r for r in results if r["class"] != "wrong_metric"])]
    for r in results:
        if r["class"] == "wrong_metric":
            amb = " [ambiguous]" if r["ambiguous"] else ""
            lines.append(f"- wrong_metric{amb}: {r['id']} #{r['rerun']} (expect fail on {r['blame_metrics']}): "
                         f"regressed {r['metrics']}")
        if r["nonsense"]:
            lines.append(f"- nonsense: {r['id']} #{r['rerun']}: {'; '.join(r['nonsense'])[:300]}")
    return "\n".join(x for x in lines if x)
