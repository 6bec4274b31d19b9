"""The seventh blind set still regenerates the series committed in truth.json (run.py refuses to score otherwise),
every planted change keeps the rule of change README.md fixed, and the truth scores itself perfectly."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest

from tests.blind_history7 import model
from tests.blind_history7.generate import TRUTH, generate, truth_document
from tests.blind_history_harness.score import score

FLICKER_METRICS = {model.METRICS["flicker"][0], model.METRICS["flicker_atom"][0]}


@pytest.fixture(scope="module")
def truth() -> dict[str, Any]:
    document: dict[str, Any] = json.loads(TRUTH.read_text(encoding="utf-8"))
    return document


def test_the_generator_reproduces_truth(truth: dict[str, Any]) -> None:
    assert truth_document(generate()) == truth


def rule_breaks(row: dict[str, Any]) -> list[str]:
    """How a series' planted changes break the rule of change (README.md: "What counts as a change")."""
    positions = [c["position"] for c in row["changes"]]
    bounds = [0, *positions, row["length"]]
    levels = [b - a for a, b in zip(bounds, bounds[1:])]
    breaks = [f"a level of {n} values" for n in levels if n < model.MIN_VALUES_PER_LEVEL]
    for i, change in enumerate(row["changes"]):
        factor, sigma = change["factor"], row["sigma"]
        short = min(levels[i], levels[i + 1]) < model.SHORT_LEVEL
        units = model.MIN_UNITS_SHORT if short else model.MIN_UNITS
        if row["metric"] in FLICKER_METRICS:
            ok = abs(factor - 1) >= model.MIN_FLICKER_SPREADS * sigma * (1 - 1e-6) and sigma > 0
        elif sigma == 0:
            ok = factor != 1
        else:
            ok = abs(math.log(factor)) >= units * sigma * (1 - 1e-6)
        if not ok:
            breaks.append(f"position {change['position']}: factor {factor} at sigma {sigma}")
    return breaks


def test_every_planted_change_keeps_the_rule(truth: dict[str, Any]) -> None:
    broken = {row["name"]: rule_breaks(row) for row in truth["series"] if rule_breaks(row)}
    assert broken == {}
    flat = [row for row in truth["series"] if row["family"].startswith("flat_")]
    assert len(flat) >= 200 and all(not row["changes"] for row in flat)


def test_the_truth_scores_itself_perfectly(truth: dict[str, Any]) -> None:
    found = {row["name"]: [c["position"] for c in row["changes"]] for row in truth["series"]}
    result, unscored = score(truth, found)
    assert (result.recall, result.precision, result.flat_per_100(), result.flicker_false()) == (1.0, 1.0, 0.0, 0)
    assert (result.total.series, result.total.changes, result.reverted_edges()) == (555, 399, (100, 100))
    assert unscored == {"creep": (0, 15)}
