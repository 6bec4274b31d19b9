"""The sixth blind set still regenerates the values and planted changes committed in truth.json (run.py refuses
to score otherwise), every planted change keeps the rule of change README.md fixed."""

from __future__ import annotations

import json
import math

from tests.blind_history6.generate import TRUTH, generate, truth_document
from tests.blind_history6.model import HEAD, MIN_RUNS, MIN_UNITS, TAIL
from tests.blind_history_harness.score import score


def test_generator_reproduces_the_committed_truth() -> None:
    assert truth_document(generate()) == json.loads(TRUTH.read_text(encoding="utf-8"))


def test_every_planted_change_keeps_the_rule_of_change() -> None:
    truth = json.loads(TRUTH.read_text(encoding="utf-8"))
    for row in truth["series"]:
        at = [c["position"] for c in row["changes"]]
        assert at == sorted(at) and all(b - a >= MIN_RUNS for a, b in zip(at, at[1:])), row["name"]
        assert all(HEAD <= p <= row["length"] - TAIL for p in at), row["name"]
        unit = max(row["sigma"], truth["sigma_floor"])
        assert all(abs(math.log(c["factor"])) >= MIN_UNITS * unit * (1 - 1e-9) for c in row["changes"]), row["name"]
        if row["family"].startswith("reverted_"):
            assert len(at) == 2 and math.isclose(row["changes"][0]["factor"] * row["changes"][1]["factor"], 1)


def test_the_truth_itself_scores_perfectly() -> None:
    truth = json.loads(TRUTH.read_text(encoding="utf-8"))
    planted = {row["name"]: [c["position"] for c in row["changes"]] for row in truth["series"]}
    result, unscored = score(truth, planted)
    assert (result.recall, result.precision, result.flat_per_100(), result.flicker_false()) == (1, 1, 0, 0)
    assert (result.total.changes, len(result.flat_families()), unscored) == (375, 7, {"creep": (0, 15)})
    assert sum(result.families[f].series for f in result.flat_families()) == 220
    assert result.reverted_edges() == (110, 110)
