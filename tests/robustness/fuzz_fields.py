"""A systematic sweep of every field of perfgate's JSON inputs, through the CLI in this process (not part of the
normal suite): each distinct field path of a target of ``fuzz_inputs`` (list positions folded: ``entries.*.ordinal``)
is set, at its first occurrence, to each value of ``VALUES`` (another type, null, 0, -1, ±1e308, 2**63, 10**30, a
lone surrogate, markup, a control sequence, a number as text), and the target's commands run on the file and are
checked as ``fuzz_inputs`` checks them. Where the seeded fuzz samples, this tries each field once with each value::

    PYTHONPATH=. python tests/robustness/fuzz_fields.py [--only baseline,bench] [--seconds 1800] [--keep DIR]
"""

from __future__ import annotations

import argparse
import copy
import json
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import fuzz_inputs as fuzz  # noqa: E402 - a script beside this one, not a package

VALUES: list[Any] = [None, True, -1, 0, 1e308, -1e308, 10**30, 2**63, 0.5, "", "x", fuzz.MARKUP,
                     "\x1b[2J\nPASS: forged", "\ud800", [], {}, [1, 2, 3], "9" * 40]


def field_paths(document: Any) -> dict[tuple[Any, ...], tuple[Any, ...]]:
    """Each distinct field path (positions folded to ``*``) and where it first occurs."""
    found: dict[tuple[Any, ...], tuple[Any, ...]] = {}
    for path in fuzz._nodes(document):
        if path:
            found.setdefault(tuple("*" if isinstance(key, int) else key for key in path), path)
    return found


def sweep(names: set[str], seconds: float, keep: Path | None) -> int:
    deadline = time.monotonic() + seconds
    runs = inputs = 0
    findings: list[fuzz.Finding] = []
    for target in fuzz.TARGETS:
        if target.kind != "json" or (names and target.name not in names):
            continue
        source = target.source()
        document = json.loads(source)
        paths = field_paths(document)
        print(f"{target.name}: {len(paths)} field paths", flush=True)
        for folded, path in paths.items():
            for value in VALUES:
                if time.monotonic() > deadline:
                    break
                edited = copy.deepcopy(document)
                fuzz._at(edited, path[:-1])[path[-1]] = value
                text = json.dumps(edited).encode("utf-8", "surrogatepass")
                done, found = fuzz.run_input(target, source, lambda file: file.write_bytes(text),
                                             f"{'.'.join(map(str, folded))}={value!r:.30}", keep)
                inputs += 1
                runs += done
                findings += found
    print(f"{inputs} inputs, {runs} command runs, {len(findings)} findings", flush=True)
    return 1 if findings else 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", default="", help="targets, comma-separated (default: every JSON target)")
    parser.add_argument("--seconds", type=float, default=float("inf"))
    parser.add_argument("--keep", type=Path, help="copy each finding's inputs into this folder, print its stderr")
    args = parser.parse_args()
    return sweep(set(filter(None, args.only.split(","))), args.seconds, args.keep)


if __name__ == "__main__":
    sys.exit(main())
