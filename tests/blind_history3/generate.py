"""Generates the third blind change-point set and writes its truth file (issue 35; README.md: the protocol)::

    PYTHONPATH=. python tests/blind_history3/generate.py [--write]

Without ``--write`` it checks that the generator still reproduces truth.json (exit 0) or says it does not
(exit 1). Every series has its own random stream (the seed and its index), so any one regenerates alone.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from tests.blind_history3.families import (FAMILIES, FLAT_PREFIX, FLICKER_FAMILIES, REVERTED_FAMILIES,
                                           UNSCORED_FAMILIES, Changes, Noise, Plan)
from tests.blind_history3.model import COMMITS, EXACT, Context, make_context, present_commits, values

SEED = 35_0003
TRUTH = Path(__file__).with_name("truth.json")
TOLERANCE = 2  # a detection within this many positions of a planted change finds it


@dataclass
class Series:
    name: str
    family: str
    metric: str
    commits: list[int]  # the commit index of each value
    values: np.ndarray
    changes: list[dict[str, Any]]  # planted: position, commit, factor

    @property
    def exact(self) -> bool:
        return self.metric == EXACT


def true_levels(plan: Plan, length: int) -> np.ndarray:
    level = np.full(length, plan.profile.level)
    for position, factor in plan.steps:
        level[position:] *= factor
    if plan.creep is not None:
        first, span, rise = plan.creep
        level *= 1 + rise * np.clip((np.arange(length) - first + 1) / span, 0, 1)
    return level


def one_series(index: int, family: str, plan_of: Changes, noise: Noise, context: Context) -> Series:
    rng = np.random.default_rng([SEED, 1, index])
    profile = noise(rng)
    commits = present_commits(profile, rng)
    plan = plan_of(rng, profile, commits)
    level = true_levels(plan, len(commits))
    made = values(plan.profile, level, commits, context, rng)
    changes = [{"position": p, "commit": int(commits[p]), "factor": round(f, 6)} for p, f in plan.steps]
    return Series(f"blind3_{family}_{index:03d}", family, profile.metric, commits.tolist(), made, changes)


def generate() -> list[Series]:
    context = make_context(np.random.default_rng([SEED, 0]))
    made: list[Series] = []
    for family, count, noise, plan_of in FAMILIES:
        for _ in range(count):
            made.append(one_series(len(made), family, plan_of, noise, context))
    return made


def digest(values_: np.ndarray) -> str:
    """The values' sha256, rounded to a thousandth (ns or counts) so a last-bit difference in exp or log between
    platforms does not count."""
    return hashlib.sha256(np.round(values_, 3).astype("<f8").tobytes()).hexdigest()


def truth_document(made: Sequence[Series]) -> dict[str, Any]:
    return {
        "set": "perfgate blind change-point set 3 (a stand-in for issue 35's held-out series)",
        "seed": SEED, "commits": COMMITS, "match_tolerance": TOLERANCE,
        "rules": {"match": "a detection at a position within match_tolerance of a planted change finds it, one "
                           "to one, the closest pairs first (ties: the earlier change, then the earlier detection)",
                  "flat_families": f"families named {FLAT_PREFIX}*",
                  "flicker_families": list(FLICKER_FAMILIES), "reverted_families": list(REVERTED_FAMILIES),
                  "unscored_families": list(UNSCORED_FAMILIES)},
        "series": [{"name": s.name, "family": s.family, "metric": s.metric, "length": len(s.values),
                    "first_commit": s.commits[0],
                    "skipped_commits": sorted(set(range(s.commits[0], COMMITS)) - set(s.commits)),
                    "changes": s.changes, "sha256": digest(s.values)} for s in made],
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--write", action="store_true", help="write truth.json (only before the first run)")
    args = parser.parse_args(argv)
    document = truth_document(generate())
    if args.write:
        TRUTH.write_text(json.dumps(document, indent=1) + "\n", encoding="utf-8")
        return 0
    same = json.loads(TRUTH.read_text(encoding="utf-8")) == document
    print("truth.json reproduced" if same else "truth.json NOT reproduced", file=sys.stderr)
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
