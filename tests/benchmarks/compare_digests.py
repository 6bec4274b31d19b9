"""A digest of every comparison a checkout makes on a fixed set of inputs, to show that a change to the compare's
speed changed none of its outputs.

``python tests/benchmarks/compare_digests.py OUT.json [--data DIR]``, run from a checkout (copy the file into an
older one), records what the perfgate of that checkout gives for each ``compare_tables`` call: a SHA-256 of the
whole ``Comparison`` (notes, every column of both tables, the row to launch and metric codes, what was not
measured) or of the error it raised, keyed by a digest of its inputs. The inputs:

* every compare the verdict suite's full runner (``tests/verdicts/runner.py``) makes with seeds 1, 2 and 3,
  3 reruns each, with its real report pairs (``ncu_report`` needed) and the recorded sessions;
* every pair of the CSV fixtures in ``tests/data/ncu-csv``;
* the generated raw-page pairs of ``scale.py`` at 1k and 50k launches (every launch changed), both ways.

``python tests/benchmarks/compare_digests.py --diff BEFORE.json AFTER.json`` lists the inputs whose digests
differ. Paths of the checkout and of temporary folders are replaced before hashing, so two checkouts compare.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import sys
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE.parent / "verdicts"))
sys.path.insert(0, str(HERE))


class _Digest:
    """SHA-256 of texts with the checkout's and temporary folders' paths replaced."""

    def __init__(self) -> None:
        self._hash = hashlib.sha256()

    def add(self, text: str) -> None:
        self._hash.update(re.sub(r"/tmp/tmp\w+", "TMP", text.replace(str(REPO), "REPO")).encode())

    def hex(self) -> str:
        return self._hash.hexdigest()


def comparison_digest(comparison: Any) -> str:
    digest = _Digest()
    digest.add(repr(comparison.notes))
    digest.add(repr(comparison.unmeasured))
    for frame in (comparison.results, comparison.launches):
        for name in frame.columns:
            digest.add(name)
            digest.add(repr(frame[name].tolist()))
    digest.add(repr(comparison.result_launch.tolist()))
    digest.add(repr(np.asarray(comparison.result_metric).tolist()))
    return digest.hex()


def inputs_digest(args: tuple[Any, ...]) -> str:
    digest = _Digest()
    for measurement in args[:2]:
        for name in measurement.table.columns:
            digest.add(name)
            digest.add(repr(measurement.table[name].tolist()))
    digest.add(repr(args[2:]))
    return digest.hex()[:16]


def record(out: Path, data: Path) -> int:
    import runner  # type: ignore[import-not-found]  # tests/verdicts/runner.py
    from scale import csv_pair

    import perfgate.compare.flow as flow
    from perfgate.collect import read_table
    from perfgate.compare.options import CompareOptions
    from perfgate.regions import with_region_totals

    found: dict[str, str] = {}
    compare = flow.compare_tables

    def recorded(*args: Any) -> Any:
        key = f"call{len(found)}:{inputs_digest(args)}"
        try:
            comparison = compare(*args)
        except Exception as exc:
            found[key] = _error(exc)
            raise
        found[key] = comparison_digest(comparison)
        return comparison

    def one(key: str, *args: Any) -> None:
        try:
            found[key] = comparison_digest(compare(*args))
        except Exception as exc:  # the error is an output too
            found[key] = _error(exc)

    runner.compare_tables = recorded
    for seed in (1, 2, 3):
        runner.run_all(reruns=3, seed=seed, real=True, scale=1)
    tables = {}
    for path in sorted((REPO / "tests" / "data" / "ncu-csv").glob("*.csv")):
        try:
            tables[path.name] = with_region_totals(read_table(path))
        except Exception as exc:
            found[path.name] = _error(exc)
    for a, base in tables.items():
        for b, cur in tables.items():
            one(f"{a}|{b}", base, cur)
    wanted = CompareOptions().wanted_metrics()
    for launches in (1_000, 50_000):
        base_path, cur_path = csv_pair(data, "raw", launches, changed=True)
        base, cur = (with_region_totals(read_table(path, wanted)) for path in (base_path, cur_path))
        one(f"generated {launches}", base, cur)
        one(f"generated {launches} reversed", cur, base)
    out.write_text(json.dumps(found, indent=0), encoding="utf-8")
    print(f"{len(found)} digests")
    return 0


def _error(exc: Exception) -> str:
    digest = _Digest()
    digest.add(f"{type(exc).__name__}: {exc}")
    return f"error {digest.hex()}"


def diff(before: Path, after: Path) -> int:
    old, new = (json.loads(path.read_text(encoding="utf-8")) for path in (before, after))
    differ = sorted(key for key in old.keys() | new.keys() if old.get(key) != new.get(key))
    print(f"{len(old)} and {len(new)} digests, {len(differ)} differ" + "".join(f"\n  {key}" for key in differ))
    return 1 if differ else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("out", type=Path, nargs="?")
    parser.add_argument("--data", type=Path, default=Path("/tmp/perfgate-scale"), help="scale.py's CSV pairs")
    parser.add_argument("--diff", type=Path, nargs=2, metavar=("BEFORE", "AFTER"))
    args = parser.parse_args(argv)
    if args.diff:
        return diff(*args.diff)
    if args.out is None:
        parser.error("give OUT.json, or --diff BEFORE AFTER")
    return record(args.out, args.data)


if __name__ == "__main__":
    sys.exit(main())
