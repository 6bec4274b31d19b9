"""The fourth blind set still regenerates the values and planted changes committed in truth.json (run.py refuses
to score otherwise)."""

from __future__ import annotations

import json

from tests.blind_history4.generate import TRUTH, generate, truth_document
from tests.blind_history_harness.score import score


def test_generator_reproduces_the_committed_truth() -> None:
    assert truth_document(generate()) == json.loads(TRUTH.read_text(encoding="utf-8"))


def test_the_truth_itself_scores_perfectly() -> None:
    truth = json.loads(TRUTH.read_text(encoding="utf-8"))
    planted = {row["name"]: [c["position"] for c in row["changes"]] for row in truth["series"]}
    result, unscored = score(truth, planted)
    assert (result.recall, result.precision, result.flat_per_100(), result.flicker_false()) == (1, 1, 0, 0)
    assert (result.total.changes, len(result.flat_families()), unscored) == (430, 9, {"creep": (0, 15)})
    assert sum(result.families[f].series for f in result.flat_families()) == 230
