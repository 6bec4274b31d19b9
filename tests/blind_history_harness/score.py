"""Scores a detector's change points against truth.json, by the rules each set's README.md fixed before any run."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

Detections = dict[str, list[int]]  # series name -> positions reported (the first value at the new level)


def match(planted: list[int], found: list[int], tolerance: int) -> list[tuple[int, int]]:
    """One-to-one (planted index, detection index) pairs at most ``tolerance`` apart, the closest pairs first
    (ties: the earlier planted change, then the earlier detection)."""
    candidates = sorted((abs(p - f), i, j) for i, p in enumerate(planted) for j, f in enumerate(found)
                        if abs(p - f) <= tolerance)
    taken_planted: set[int] = set()
    taken_found: set[int] = set()
    pairs = []
    for _, i, j in candidates:
        if i not in taken_planted and j not in taken_found:
            taken_planted.add(i)
            taken_found.add(j)
            pairs.append((i, j))
    return pairs


@dataclass
class Tally:
    series: int = 0
    changes: int = 0
    found: int = 0
    detections: int = 0

    @property
    def false(self) -> int:
        return self.detections - self.found


@dataclass
class Score:
    rules: dict[str, Any]
    total: Tally = field(default_factory=Tally)
    families: dict[str, Tally] = field(default_factory=dict)
    misses: list[tuple[str, int]] = field(default_factory=list)
    false_points: list[tuple[str, int]] = field(default_factory=list)

    @property
    def recall(self) -> float:
        return self.total.found / self.total.changes if self.total.changes else 1.0

    @property
    def precision(self) -> float:
        return self.total.found / self.total.detections if self.total.detections else 1.0

    def over(self, families: list[str] | tuple[str, ...], what: str) -> int:
        return sum(getattr(t, what) for name, t in self.families.items() if name in families)

    def flat_families(self) -> list[str]:
        return [name for name in self.families if name.startswith("flat_")]

    def flat_per_100(self) -> float:
        flat = self.flat_families()
        return 100 * self.over(flat, "detections") / max(self.over(flat, "series"), 1)

    def flicker_false(self) -> int:
        return self.over(self.rules["flicker_families"], "false")

    def reverted_edges(self) -> tuple[int, int]:
        families = self.rules["reverted_families"]
        return self.over(families, "found"), self.over(families, "changes")


def score(truth: dict[str, Any], found: Detections) -> tuple[Score, dict[str, tuple[int, int]]]:
    """The score over the scored families, and per unscored family (series reported, series)."""
    result = Score(truth["rules"])
    unscored: dict[str, tuple[int, int]] = {}
    for row in truth["series"]:
        detected = sorted(found.get(row["name"], []))
        if row["family"] in truth["rules"]["unscored_families"]:
            reported, count = unscored.get(row["family"], (0, 0))
            unscored[row["family"]] = (reported + bool(detected), count + 1)
            continue
        planted = [int(c["position"]) for c in row["changes"]]
        pairs = match(planted, detected, int(truth["match_tolerance"]))
        for tally in (result.total, result.families.setdefault(row["family"], Tally())):
            tally.series += 1
            tally.changes += len(planted)
            tally.found += len(pairs)
            tally.detections += len(detected)
        hit_planted, hit_found = {i for i, _ in pairs}, {j for _, j in pairs}
        result.misses += [(row["name"], p) for i, p in enumerate(planted) if i not in hit_planted]
        result.false_points += [(row["name"], f) for j, f in enumerate(detected) if j not in hit_found]
    return result, unscored
