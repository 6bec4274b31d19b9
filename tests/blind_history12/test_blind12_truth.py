"""The twelfth blind set's generator still makes the series its truth.json pins, and the set keeps its shape
(README.md: "Protocol", "What counts as a change" and "Families")."""

from __future__ import annotations

import json
from collections import Counter

import numpy as np

from tests.blind_history12.families import FAMILIES, GAP, RULES
from tests.blind_history12.generate import TRUTH, generate, truth_document
from tests.blind_history12.model import EDGE, FLOOR, NOISES, UNITS, pools, scale
from tests.blind_history12.run import SET


def test_the_generator_reproduces_truth_json() -> None:
    assert truth_document(generate()) == json.loads(TRUTH.read_text(encoding="utf-8"))


def test_the_set_has_its_families_and_every_change_keeps_its_edges() -> None:
    truth = json.loads(TRUTH.read_text(encoding="utf-8"))
    rows = truth["series"]
    assert 500 <= len(rows) <= 600
    assert sum(row["family"].startswith("flat_") for row in rows) >= 250
    assert sum(len(row["changes"]) for row in rows) >= 300
    assert Counter(row["family"] for row in rows) == {f.name: f.count for f in FAMILIES}
    assert truth["rules"] == RULES and truth["match_tolerance"] == 2 and truth["edge"] == EDGE
    for row in rows:
        positions = [c["position"] for c in row["changes"]]
        assert all(EDGE <= p <= row["length"] - EDGE for p in positions), row["name"]
        assert all(b - a >= 8 for a, b in zip(positions, positions[1:])), row["name"]
        if row["family"].startswith("multi_"):
            assert all(b - a >= GAP for a, b in zip(positions, positions[1:])), row["name"]
        assert (not positions) == (row["family"].startswith("flat_") or row["family"] == "creep"), row["name"]
        assert (row["creep"] is not None) == (row["family"] == "creep")


def test_every_planted_change_is_at_least_the_smallest_that_counts() -> None:
    measured = pools()
    for row in json.loads(TRUTH.read_text(encoding="utf-8"))["series"]:
        smallest = max(4 * scale(NOISES[row["noise"]], measured), FLOOR)
        for change in row["changes"]:
            assert abs(np.log(change["ratio"])) >= smallest * (1 - 1e-5), (row["name"], change)


def test_every_series_files_as_a_history_row() -> None:
    for s in generate()[::50]:
        gpu, test, kind, kernel, metric, unit = SET.series_row(s)
        assert (kernel, kind, unit) == (s.name, NOISES[s.noise].kind, UNITS[s.metric])
        assert len(s.commits) == len(s.values) and (s.values > 0).all()
