"""The eighth blind set's truth is what its generator makes, every planted change keeps the README's rule of change,
and the truth scores itself perfectly (README.md: "What counts as a change")."""

from __future__ import annotations

import json
import math
from collections import Counter
from typing import Any

import numpy as np
import pytest

from tests.blind_history8.families import FAMILIES, MIN_SEGMENT, RULES, min_k
from tests.blind_history8.generate import TRUTH, Series, boundaries, generate, truth_document
from tests.blind_history8.model import robust_scale
from tests.blind_history_harness.score import score


@pytest.fixture(scope="module")
def made() -> list[Series]:
    return generate()


@pytest.fixture(scope="module")
def truth() -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads(TRUTH.read_text(encoding="utf-8"))
    return loaded


def test_the_generator_reproduces_the_committed_truth(made: list[Series], truth: dict[str, Any]) -> None:
    assert truth_document(made) == truth


def test_the_set_has_the_families_the_readme_lists(truth: dict[str, Any]) -> None:
    families = Counter(row["family"] for row in truth["series"])
    assert families == {f.name: f.count for f in FAMILIES}
    assert 450 <= len(truth["series"]) <= 600
    assert sum(n for name, n in families.items() if name.startswith("flat_")) >= 220
    assert all(not row["changes"] for row in truth["series"] if row["family"].startswith("flat_"))
    assert all(row["changes"] for row in truth["series"] if not row["family"].startswith(("flat_", "creep")))
    for name in RULES["reverted_families"]:
        for row in (r for r in truth["series"] if r["family"] == name):
            first, second = (c["factor"] for c in row["changes"])
            assert first > 1 and abs(first * second - 1) < 1e-5


def test_every_planted_change_keeps_the_rule_of_change(made: list[Series]) -> None:
    for s in made:
        segments = boundaries([p for p, _ in s.changes], len(s.values))
        for (start, at, end), (_, factor) in zip(segments, s.changes):
            assert min(at - start, end - at) >= MIN_SEGMENT, s.name
            before, after = s.values[start:at], s.values[at:end]
            if s.counter:  # the two value sets stand apart by at least either set's spread
                span = max(np.ptp(before), np.ptp(after))
                assert max(before.min() - after.max(), after.min() - before.max()) >= span, s.name
                continue
            level = np.zeros(len(s.values))
            for p, f in s.changes:
                level[p:] += math.log(f)
            noise = np.log(s.values) - level
            least = min_k(at - start, end - at) * robust_scale(noise[start:end])
            assert abs(math.log(factor)) >= least - 1e-5, (s.name, at, factor, least)


def test_the_truth_scores_itself_perfectly(truth: dict[str, Any]) -> None:
    planted = {row["name"]: [c["position"] for c in row["changes"]] for row in truth["series"]}
    result, unscored = score(truth, planted)
    scored = [row for row in truth["series"] if row["family"] not in RULES["unscored_families"]]
    assert result.total.changes == sum(len(row["changes"]) for row in scored) == 317
    assert result.total.series == len(scored)
    assert (result.recall, result.precision, result.flat_per_100(), result.flicker_false()) == (1.0, 1.0, 0.0, 0)
    assert result.reverted_edges() == (70, 70)
    assert unscored == {"creep": (0, 15)}
