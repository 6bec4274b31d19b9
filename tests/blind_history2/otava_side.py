"""Otava's side of the blind set, run by Otava's own Python (``--otava-python``): reads
``{"p_values": [...], "series": {name: [values]}}`` on stdin, writes ``{p: {name: [index, ...]}}`` on stdout, each
index Otava's ``ChangePoint.index`` (the first value at the new level)."""

from __future__ import annotations

import json
import sys

from otava.analysis import compute_change_points


def main() -> int:
    request = json.load(sys.stdin)
    found: dict[str, dict[str, list[int]]] = {}
    for p in request["p_values"]:
        found[str(p)] = {name: sorted(int(cp.index) for cp in compute_change_points(
            values, window_len=50, max_pvalue=float(p))[0]) for name, values in request["series"].items()}
    json.dump(found, sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main())
