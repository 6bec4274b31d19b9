"""Apache Otava's change points on the blind set's series, run with the Python of a venv that has Otava installed
(never perfgate's)::

    /tmp/otava-venv/bin/python tests/blind_history/otava_side.py SERIES.json OUT.json --p-value 0.001 --window 50

SERIES.json: ``{name: [values]}``; OUT.json: ``{name: [index of the first value after each change point]}``.
"""

from __future__ import annotations

import argparse
import json
import sys
from importlib.metadata import version
from pathlib import Path
from typing import Sequence

from otava.analysis import compute_change_points


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("series", type=Path)
    parser.add_argument("out", type=Path)
    parser.add_argument("--p-value", type=float, default=0.001)
    parser.add_argument("--window", type=int, default=50)
    args = parser.parse_args(argv)
    series = json.loads(args.series.read_text(encoding="utf-8"))
    found = {}
    for name, values in series.items():
        points, _ = compute_change_points(values, window_len=args.window, max_pvalue=args.p_value)
        found[name] = [int(point.index) for point in points]
    document = {"otava": version("apache-otava"), "p_value": args.p_value, "window": args.window, "found": found}
    args.out.write_text(json.dumps(document), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
