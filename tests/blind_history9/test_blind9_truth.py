"""The ninth blind set's truth stands (README.md: "Protocol" and "What counts as a change"): the generator
reproduces truth.json, every planted change keeps the rule, and the truth scores itself perfectly."""

from __future__ import annotations

import json
from collections import Counter

import numpy as np
import pytest

from tests.blind_history9.generate import MIN_SEGMENT, MIN_STEP, TRUTH, Series, generate, truth_document
from tests.blind_history_harness.score import score

LOOK = MIN_SEGMENT  # positions each side a person's eye takes in: a spell of 2 to 4 sick runs stays a minority


@pytest.fixture(scope="module")
def made() -> list[Series]:
    return generate()


def test_the_generator_reproduces_truth(made: list[Series]) -> None:
    assert truth_document(made) == json.loads(TRUTH.read_text(encoding="utf-8"))


def test_the_set_has_its_shape(made: list[Series]) -> None:
    families = Counter(s.family for s in made)
    assert 450 <= len(made) <= 600
    assert sum(n for f, n in families.items() if f.startswith("flat_")) >= 220
    assert len({s.name for s in made}) == len(made)


def test_every_planted_change_keeps_the_rule(made: list[Series]) -> None:
    for s in made:
        if s.family == "creep":
            assert not s.changes and s.creep is not None
            continue
        bounds = [0] + [c.position for c in s.changes] + [len(s.commits)]
        assert all(b - a >= MIN_SEGMENT for a, b in zip(bounds, bounds[1:])), s.name
        for k, c in enumerate(s.changes):
            before = s.values[max(bounds[k], c.position - LOOK):c.position]
            after = s.values[c.position:min(bounds[k + 2], c.position + LOOK)]
            if s.how == "counter":
                assert len(set(before)) == 1 and len(set(after)) == 1 and before[0] != after[0], s.name
            elif s.how == "flicker":  # a step of >= 3 flickers over a flicker range of <= 2: a gap of >= 1 flicker
                gap = max(min(after) - max(before), min(before) - max(after))
                assert gap >= s.sigma * before[0] * 0.99, s.name
            elif s.how == "idle":
                assert abs(np.median(after) - np.median(before)) >= s.sigma, s.name
            else:  # planted >= 3 noise units; seen through the noise, the medians still differ by >= 1 unit
                assert abs(np.log(c.factor)) >= MIN_STEP * s.sigma * 0.999, s.name
                assert abs(np.log(np.median(after) / np.median(before))) >= s.sigma, s.name


def test_the_truth_scores_itself_perfectly() -> None:
    truth = json.loads(TRUTH.read_text(encoding="utf-8"))
    perfect = {row["name"]: [c["position"] for c in row["changes"]] for row in truth["series"]}
    result, unscored = score(truth, perfect)
    assert (result.recall, result.precision, result.flat_per_100(), result.flicker_false()) == (1.0, 1.0, 0.0, 0)
    assert (result.total.series, result.total.changes) == (522, 312)
    assert result.reverted_edges() == (80, 80)
    assert unscored == {"creep": (0, 15)}
