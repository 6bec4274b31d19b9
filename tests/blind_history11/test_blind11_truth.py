"""The eleventh blind set's generator still makes the series its truth.json pins, and the set keeps its shape and
its rule (README.md: "Protocol", "What counts as a change" and "Families"). No detector runs here."""

from __future__ import annotations

import functools
import json
from collections import Counter
from typing import Any

from tests.blind_history11.families import FAMILIES, RULES
from tests.blind_history11.generate import TRUTH, generate, truth_document
from tests.blind_history11.model import EDGE, MIN_HOLD, MIN_RATIO, MIN_UNITS, UNITS, Series
from tests.blind_history11.run import SET


@functools.lru_cache(maxsize=1)
def made() -> list[Series]:
    return generate()


def truth() -> dict[str, Any]:
    return json.loads(TRUTH.read_text(encoding="utf-8"))  # type: ignore[no-any-return]


def test_the_generator_reproduces_truth_json() -> None:
    assert truth_document(made()) == truth()


def test_the_set_has_its_families_and_every_change_keeps_the_rule_and_its_edges() -> None:
    document = truth()
    rows = document["series"]
    assert 500 <= len(rows) <= 600
    assert sum(row["family"].startswith("flat_") for row in rows) >= 240
    assert 280 <= sum(len(row["changes"]) for row in rows) <= 350
    assert Counter(row["family"] for row in rows) == {f.name: f.count for f in FAMILIES}
    assert document["rules"] == RULES and document["match_tolerance"] == 2
    assert set(RULES["flicker_families"] + RULES["reverted_families"]) <= {f.name for f in FAMILIES}
    for row in rows:
        positions = [c["position"] for c in row["changes"]]
        assert all(EDGE <= p <= row["length"] - EDGE for p in positions), row["name"]
        assert all(b - a >= MIN_HOLD for a, b in zip(positions, positions[1:] + [row["length"]])), row["name"]
        smallest = max(MIN_RATIO, MIN_UNITS * row["sigma"])
        assert all(abs(c["ratio"] - 1) >= smallest * (1 - 1e-6) for c in row["changes"]), row["name"]
        assert (not positions) == (row["family"].startswith("flat_") or row["family"] == "creep"), row["name"]
        assert (row["creep"] is not None) == (row["family"] == "creep")
        assert row["length"] >= 20 and row["last_commit"] - row["first_commit"] + 1 == row["length"] + len(
            row["skipped"]), row["name"]


def test_every_series_files_as_a_history_row() -> None:
    names = set()
    for s in made():
        gpu, test, kind, kernel, metric, unit = SET.series_row(s)
        assert (kernel, kind, unit) == (s.name, "kernel", UNITS[s.metric])
        assert len(s.commits) == len(s.values) and s.commits == sorted(set(s.commits))
        names.add(kernel)
    assert len(names) == len(made())
