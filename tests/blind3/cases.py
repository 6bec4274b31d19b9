"""Blind set 3: every case and its expected verdict, written to cases.json before any perfgate run.

    python tests/blind3/cases.py          # (re)write cases.json
    python tests/blind3/cases.py --check  # exit 1 when cases.json is not what this makes
"""
from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from b3_expect import entities, expect  # noqa: E402
from b3_families import counters, edge, interference, same, shift  # noqa: E402
from b3_families_b import autotune, benches, history, launches, layer_cases, replaced  # noqa: E402

SEED = 3


def _why(spec: dict[str, Any]) -> str:
    ents = entities(spec, measured=False)
    parts = [f"{name} {m} {v}" for name, ms in ents.items() for m, v in ms.items() if v != "pass"]
    return "; ".join(parts) if parts else "every judged kernel and total within its limit"


def finished(c: dict[str, Any]) -> dict[str, Any]:
    """The case with its expectation: the override's where it gives one, else the rule's (b3_expect)."""
    spec, over = c["spec"], c["override"]
    judged = spec
    if spec.get("history") and spec["history"]["runs"] < 5:
        judged = {k: v for k, v in spec.items() if k != "history"}
    if "expect" in over:
        e = {"expect": over["expect"], "blame": over.get("blame", []), "ambiguous": "", "why": over["why"]}
    else:
        e = {**expect(judged), "why": _why(judged)}
    if over.get("ambiguous"):
        e["ambiguous"] = over["ambiguous"]
    return {"id": c["id"], "family": c["family"], "expect": e["expect"], "blame": e["blame"],
            "ambiguous": e["ambiguous"], "reruns": c["reruns"], "why": e["why"], "spec": spec}


def all_cases() -> list[dict[str, Any]]:
    raw = same() + shift() + edge() + counters() + interference() + launches() + autotune() + replaced() + \
        layer_cases() + history() + benches()
    ids = [c["id"] for c in raw]
    assert len(ids) == len(set(ids)), "case ids must be unique"
    return [finished(c) for c in raw]


def cases_text() -> str:
    return json.dumps({"seed": SEED, "cases": all_cases()}, indent=1, sort_keys=True) + "\n"


def main(argv: list[str]) -> int:
    text = cases_text()
    target = HERE / "cases.json"
    if "--check" in argv:
        if not target.exists() or target.read_text() != text:
            print("cases.json is not what cases.py makes")
            return 1
        return 0
    target.write_text(text)
    doc = json.loads(text)
    counts: dict[str, int] = {}
    for c in doc["cases"]:
        counts[c["expect"]] = counts.get(c["expect"], 0) + c["reruns"]
    print(f"{len(doc['cases'])} cases, {sum(c['reruns'] for c in doc['cases'])} runs; runs by expectation: {counts}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
