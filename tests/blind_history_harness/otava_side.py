"""Otava's side of the blind sets, run by Otava's own Python (``run.py --otava-python``): reads
``{"p_values": [...], "series": {name: [values]}}`` on stdin and writes ``{p: {name: [index, ...]}}``, each index
Otava's ``ChangePoint.index`` (the first value at the new level)."""

from __future__ import annotations

import json
import sys

from otava.analysis import compute_change_points  # type: ignore[import-not-found]


def main() -> int:
    request = json.load(sys.stdin)
    found = {str(p): {name: sorted(int(point.index) for point in compute_change_points(
        values, window_len=50, max_pvalue=float(p), min_magnitude=0.0)[0])
        for name, values in request["series"].items()} for p in request["p_values"]}
    json.dump(found, sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main())
