"""The second blind change-point set (issue 35): seeded GPU-kernel histories with planted changes.

Designed without reading perfgate's change-point code, its planted families or the first blind set
(tests/blind_history/). ``python tests/blind_history2/generate.py --write`` rewrites truth.json (done once, and
committed before any detector ran on the set); run.py refuses to score when the generator no longer reproduces it.

Positions are indexes into a series' own values (the points it has, in commit order): a change at position p means
values[p] is the first value at the new level.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from pathlib import Path
from typing import Sequence

import numpy as np

from tests.blind_history2.families import FAMILIES
from tests.blind_history2.model import Series

SEED = 35_2026_12_07
HERE = Path(__file__).resolve().parent
TRUTH = HERE / "truth.json"
MATCH_TOLERANCE = 2  # a detection within this many positions of a planted change finds it (one-to-one)
MATCHING = ("per series, a detection within MATCH_TOLERANCE positions of a planted change finds it; one-to-one, "
            "the closest pairs first (ties: the earlier change, then the earlier detection); positions are indexes "
            "into the series' own values, a detection at position p says values[p] is the first at the new level")
SCORES = {"recall": "planted changes found / planted changes",
          "precision": "detections that found a change / all detections (every series)",
          "false points per 100 flat": "detections in the flat_* families x 100 / flat series",
          "flickering-counter false points": "detections that found no change, in flat_flicker and "
                                             "exact_flicker_step",
          "reverted edges": "planted changes found in reverted and exact_reverted (both edges of each)"}


def generate(seed: int = SEED) -> list[Series]:
    rng = np.random.default_rng(seed)
    made: list[Series] = []
    for family, count, make in FAMILIES:
        for i in range(count):
            made.append(make(rng, f"{family}_{i:03d}"))
    return made


def truth_document(series: list[Series]) -> dict[str, object]:
    everything = hashlib.sha256()
    rows = []
    for s in series:
        digest = s.digest()
        everything.update(digest.encode())
        rows.append({"name": s.name, "family": s.family, "metric": s.metric, "exact": s.exact, "offset": s.offset,
                     "length": len(s.values), "missing": sorted(set(range(s.offset, s.commits[-1] + 1))
                                                                - set(s.commits)),
                     "changes": s.changes, "values_sha256": digest})
    return {"seed": SEED, "match_tolerance": MATCH_TOLERANCE, "matching": MATCHING, "scores": SCORES,
            "series_count": len(series),
            "change_count": sum(len(s.changes) for s in series),
            "flat_count": sum(1 for s in series if not s.changes), "values_sha256": everything.hexdigest(),
            "series": rows}


def truth_text(document: dict[str, object]) -> str:
    """truth.json's text: the header indented, one series a line."""
    head = {key: value for key, value in document.items() if key != "series"}
    lines = json.dumps(head, indent=1)[:-2] + ',\n "series": [\n'
    rows = document["series"]
    assert isinstance(rows, list)
    return lines + ",\n".join("  " + json.dumps(row) for row in rows) + "\n ]\n}\n"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--write", action="store_true", help="rewrite truth.json")
    args = parser.parse_args(argv)
    document = truth_document(generate())
    text = truth_text(document)
    if args.write:
        TRUTH.write_text(text, encoding="utf-8")
    print(f"{document['series_count']} series, {document['change_count']} changes, {document['flat_count']} flat, "
          f"values {str(document['values_sha256'])[:16]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
