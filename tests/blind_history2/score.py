"""Scoring a detector's change points against truth.json's (the rule and the scores truth.json states)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from tests.blind_history2.families import FLICKER_FAMILIES, REVERTED_FAMILIES

Detections = dict[str, list[int]]  # series name -> positions found


def match(truth: list[int], found: list[int], tolerance: int) -> list[tuple[int, int]]:
    """One-to-one (truth index, detection index) pairs within ``tolerance``, the closest first (ties: the earlier
    change, then the earlier detection)."""
    pairs = sorted((abs(t - f), i, j) for i, t in enumerate(truth) for j, f in enumerate(found)
                   if abs(t - f) <= tolerance)
    used_t: set[int] = set()
    used_f: set[int] = set()
    out = []
    for _, i, j in pairs:
        if i not in used_t and j not in used_f:
            used_t.add(i)
            used_f.add(j)
            out.append((i, j))
    return out


@dataclass
class Tally:
    changes: int = 0
    found: int = 0
    detections: int = 0
    false: int = 0
    series: int = 0

    def add(self, changes: int, found: int, detections: int) -> None:
        self.series += 1
        self.changes += changes
        self.found += found
        self.detections += detections
        self.false += detections - found


@dataclass
class Score:
    total: Tally = field(default_factory=Tally)
    families: dict[str, Tally] = field(default_factory=dict)
    errors: list[dict[str, Any]] = field(default_factory=list)  # each miss and false point, with its series

    @property
    def recall(self) -> float:
        return self.total.found / self.total.changes if self.total.changes else 1.0

    @property
    def precision(self) -> float:
        return (self.total.detections - self.total.false) / self.total.detections if self.total.detections else 1.0

    def sum(self, families: tuple[str, ...], what: str) -> int:
        return sum(getattr(t, what) for name, t in self.families.items() if name in families)

    def flat_per_100(self) -> float:
        flat = [t for name, t in self.families.items() if name.startswith("flat_")]
        return 100 * sum(t.detections for t in flat) / max(sum(t.series for t in flat), 1)

    def flicker_false(self) -> int:
        return self.sum(FLICKER_FAMILIES, "false")

    def reverted_found(self) -> int:
        return self.sum(REVERTED_FAMILIES, "found")


def score(truth: dict[str, Any], found: Detections) -> Score:
    tolerance = int(truth["match_tolerance"])
    result = Score()
    for row in truth["series"]:
        planted = [int(c["position"]) for c in row["changes"]]
        detected = sorted(found.get(row["name"], []))
        pairs = match(planted, detected, tolerance)
        result.total.add(len(planted), len(pairs), len(detected))
        result.families.setdefault(row["family"], Tally()).add(len(planted), len(pairs), len(detected))
        hit_t, hit_f = {i for i, _ in pairs}, {j for _, j in pairs}
        for i, position in enumerate(planted):
            if i not in hit_t:
                result.errors.append({"series": row["name"], "kind": "missed", "position": position,
                                      "change": row["changes"][i], "detected": detected, "planted": planted})
        for j, position in enumerate(detected):
            if j not in hit_f:
                result.errors.append({"series": row["name"], "kind": false_kind(position, planted, hit_t),
                                      "position": position, "detected": detected, "planted": planted})
    return result


def false_kind(position: int, planted: list[int], matched: set[int]) -> str:
    """What a false point is: on a series with no change; near a change nothing else found (misplaced, 3-6 off);
    near a change already found (a second point for it); elsewhere."""
    if not planted:
        return "false on a flat series"
    near = [(abs(p - position), i) for i, p in enumerate(planted) if abs(p - position) <= 6]
    if any(i not in matched for _, i in near):
        return "misplaced (3-6 off)"
    if near:
        return "second point for a found change"
    return "false elsewhere in a series with changes"
