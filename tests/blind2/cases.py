"""Blind set 2: every case and its expected verdict, written before perfgate ran on any of them.

`python tests/blind2/cases.py --write` writes cases.json; `--check` exits 1 when cases.json is not what this
file makes (run.py refuses to run then). See README.md for the protocol.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

from b2_families_a import drift, interference, layers_family, noise, shifts, streams_graphs, tiny  # noqa: E402
from b2_families_b import bench, counters, history, limits, realworld, replaced  # noqa: E402

SEED = 20261208
RERUNS = {"tiny": 3}
DEFAULT_RERUNS = 2
EXPECTS = ("pass", "fail", "not_silent", "any")


def all_cases() -> list[dict[str, Any]]:
    cases = []
    for family in (noise, shifts, tiny, interference, drift, layers_family, streams_graphs, replaced, bench,
                   counters, history, realworld, limits):
        cases += family()
    ids = set()
    for c in cases:
        assert c["id"] not in ids, c["id"]
        assert c["expect"] in EXPECTS, c
        assert c["expect"] != "fail" or c["blame"], c["id"]
        ids.add(c["id"])
        c["reruns"] = RERUNS.get(c["family"], DEFAULT_RERUNS)
    return cases


def cases_text() -> str:
    return json.dumps({"seed": SEED, "cases": all_cases()}, indent=1, sort_keys=True) + "\n"


def main(argv: list[str]) -> int:
    path = HERE / "cases.json"
    if argv[1:] == ["--write"]:
        path.write_text(cases_text())
        return 0
    if argv[1:] == ["--check"]:
        same = path.exists() and path.read_text() == cases_text()
        print("cases.json matches cases.py" if same else "cases.json is not what cases.py makes")
        return 0 if same else 1
    print("usage: cases.py --write | --check")
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
