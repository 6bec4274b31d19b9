"""Blind set 5: every case with its expected verdict, written to cases.json before any perfgate run.

    python tests/blind5/cases.py            # write cases.json
    python tests/blind5/cases.py --check    # exit 1 when this no longer makes the committed cases.json
"""
from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from b5_expect import bench_expect, pool_expect, session_expect  # noqa: E402
from b5_families import all_cases  # noqa: E402
from b5_pools import pools  # noqa: E402

SEED = 5


def _blame(case: dict[str, Any], things: dict[str, str]) -> list[str]:
    """What a failing run may name: the planted kernels, any thing the rule left open or failed, region totals."""
    out = set(case.get("planted", []))
    for key, word in things.items():
        if word in ("fail", "any"):
            thing = key.split("@")[0].split("#")[0]
            out.add("R:*" if thing.startswith("R:") else thing)
    out.add("R:*")
    return sorted(x for x in out if x != "K:") + (["K:"] if "K:" in out else [])


def with_expectations(case: dict[str, Any]) -> dict[str, Any]:
    if case["kind"] in ("sess", "pool", "bench"):
        if case["kind"] == "sess":
            word, things, why = session_expect(case)
        elif case["kind"] == "pool":
            word, things, why = pool_expect(case)
        else:
            word, things, why = bench_expect(case, pools()["bench"])
        case["expect"] = word
        case["things"] = {k: v for k, v in things.items() if v != "pass"}
        if case["kind"] == "bench":
            case["blame"] = ["B:test_mlp_step"]
        elif word == "fail":
            case["blame"] = _blame(case, things)
        case["ambiguous"] = why
    if any(k.get("outlier") for k in case.get("kernels", [])):
        case["interference"] = "one launch slowed once: docs/matching.md makes it at most inconclusive"
        if word == "fail":
            case["ambiguous"] = ("interference, not a code change, yet it moves the region total (judged as one "
                                 "value) past its limit")
    return case


def cases_text() -> str:
    doc = {"seed": SEED, "cases": [with_expectations(c) for c in all_cases()]}
    return json.dumps(doc, indent=1) + "\n"


def main(argv: list[str]) -> int:
    text = cases_text()
    path = HERE / "cases.json"
    if "--check" in argv:
        if not path.exists() or path.read_text() != text:
            print("cases.py no longer makes the committed cases.json")
            return 1
        return 0
    path.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
