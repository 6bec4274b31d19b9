"""Blind set 4: every case and its expected verdict, written to cases.json before any perfgate run.

    python tests/blind4/cases.py          # (re)write cases.json
    python tests/blind4/cases.py --check  # exit 1 when cases.json is not what this makes
"""
from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from b4_expect import expect  # noqa: E402
from b4_families_a import OTHER_RERUNS, PASS_RERUNS, drams, flops, same, times, zeros  # noqa: E402
from b4_families_b import declared, floors, missing, precisions, regions  # noqa: E402

SEED = 4


def finished(c: dict[str, Any]) -> dict[str, Any]:
    """The case with its expectation: the hand-written one where it gives one, else the rule's (b4_expect)."""
    rule, blame, metrics, why = expect(c["spec"], c["id"], SEED)
    hand = c.pop("hand") or {}
    out = {**c, "expect": hand.get("expect", rule), "blame": hand.get("blame", blame),
           "blame_metrics": hand.get("blame_metrics", metrics), "why": hand.get("why", why),
           "rule": rule, "by_hand": bool(hand)}
    if out["reruns"] is None:
        out["reruns"] = PASS_RERUNS if out["expect"] == "pass" else OTHER_RERUNS
    return out


def all_cases() -> list[dict[str, Any]]:
    raw = same() + flops() + times() + drams() + zeros() + missing() + floors() + precisions() + declared() \
        + regions()
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
    print(f"{len(doc['cases'])} cases, {sum(counts.values())} runs: {counts}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
