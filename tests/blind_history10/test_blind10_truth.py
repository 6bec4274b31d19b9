"""The tenth blind set's generator still makes the series its truth.json pins, and the set keeps its shape
(README.md: "Protocol" and "Families")."""

from __future__ import annotations

import json
from collections import Counter

from tests.blind_history10.families import EDGE, FAMILIES, RULES
from tests.blind_history10.generate import TRUTH, generate, truth_document
from tests.blind_history10.run import KIND, SET
from tests.blind_history10.model import UNITS


def test_the_generator_reproduces_truth_json() -> None:
    assert truth_document(generate()) == json.loads(TRUTH.read_text(encoding="utf-8"))


def test_the_set_has_its_families_and_every_change_keeps_its_edges() -> None:
    truth = json.loads(TRUTH.read_text(encoding="utf-8"))
    rows = truth["series"]
    assert 450 <= len(rows) <= 550
    assert sum(row["family"].startswith("flat_") for row in rows) >= 220
    assert Counter(row["family"] for row in rows) == {f.name: f.count for f in FAMILIES}
    assert truth["rules"] == RULES and truth["match_tolerance"] == 2
    for row in rows:
        positions = [c["position"] for c in row["changes"]]
        assert all(EDGE <= p <= row["length"] - EDGE for p in positions), row["name"]
        assert (not positions) == (row["family"].startswith("flat_") or row["family"] == "creep"), row["name"]
        assert (row["creep"] is not None) == (row["family"] == "creep")


def test_every_series_files_as_a_history_row() -> None:
    for s in generate()[:: 50]:
        gpu, test, kind, kernel, metric, unit = SET.series_row(s)
        assert (kernel, kind, unit) == (s.name, KIND[s.kind], UNITS[s.metric])
        assert len(s.commits) == len(s.values)
