"""Blind timeline set 2: every case with its expected verdict, written to cases.json before any perfgate run.

    python tests/blind_timeline2/cases.py            # write cases.json
    python tests/blind_timeline2/cases.py --check    # exit 1 when this no longer makes the committed cases.json

The cases name corpus files and edits; they need no corpus to be written (the generator reads it at run time).
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from t2_families import all_cases  # noqa: E402

SEED = 2


def cases_text() -> str:
    cases = all_cases()
    ids = [c["id"] for c in cases]
    assert len(ids) == len(set(ids)), "case ids must be unique"
    return json.dumps({"seed": SEED, "cases": cases}, indent=1) + "\n"


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
