"""The thirteenth blind set's generator still makes the series its truth.json pins, and the set keeps its shape
(README.md: "Protocol", "What counts as a change", "The noise model" and "Families")."""

from __future__ import annotations

import json
from collections import Counter, defaultdict

import numpy as np

from tests.blind_history13.families import FAMILIES, GAP, RULES, smallest
from tests.blind_history13.generate import TRUTH, generate, truth_document
from tests.blind_history13.model import EDGE, NOISES, REPEAT_GAP, SPELL_RUNS, UNITS, pools, scale, spaced_draws
from tests.blind_history13.run import SET


def test_the_generator_reproduces_truth_json() -> None:
    assert truth_document(generate()) == json.loads(TRUTH.read_text(encoding="utf-8"))


def test_the_set_has_its_families_and_every_change_keeps_its_edges() -> None:
    truth = json.loads(TRUTH.read_text(encoding="utf-8"))
    rows = truth["series"]
    assert 500 <= len(rows) <= 600
    assert sum(row["family"].startswith("flat_") for row in rows) >= 300
    assert sum(len(row["changes"]) for row in rows) >= 250
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


def test_a_test_shares_its_runs_and_a_layer_moves_every_kernel_at_one_commit() -> None:
    rows = json.loads(TRUTH.read_text(encoding="utf-8"))["series"]
    by_test = defaultdict(list)
    for row in rows:
        by_test[row["test"]].append(row)
    for members in by_test.values():
        assert len({(r["gpu"], r["first_commit"], r["last_commit"], tuple(r["skipped"])) for r in members}) == 1
        layer = [r for r in members if r["family"].startswith("layer_")]
        assert len(layer) in (0, 6)
        assert len({(c["commit"], c["ratio"] > 1) for r in layer for c in r["changes"]}) <= 1


def test_runner_spells_are_shorter_than_a_change_and_touch_only_kernel_times() -> None:
    truth = json.loads(TRUTH.read_text(encoding="utf-8"))
    spells = [s for per_gpu in truth["runner_spells"].values() for s in per_gpu]
    assert spells and all(SPELL_RUNS[0] <= s["runs"] <= SPELL_RUNS[1] < 8 for s in spells)
    for row in truth["series"]:
        assert not row["spell_commits"] or NOISES[row["noise"]].run_effects, row["name"]


def test_a_pool_value_never_comes_back_within_its_gap() -> None:
    for size in (30, 70, 464):
        drawn = spaced_draws(size, 1000, np.random.default_rng(size)).tolist()
        gap = min(REPEAT_GAP, size // 3)
        last: dict[int, int] = {}
        for i, value in enumerate(drawn):
            assert i - last.get(value, -gap - 1) > gap, (size, i)
            last[value] = i


def test_every_planted_change_is_at_least_the_smallest_that_counts() -> None:
    measured = pools()
    for row in json.loads(TRUTH.read_text(encoding="utf-8"))["series"]:
        least = smallest(scale(NOISES[row["noise"]], measured))
        for change in row["changes"]:
            assert abs(np.log(change["ratio"])) >= least * (1 - 1e-5), (row["name"], change)


def test_every_series_files_as_a_history_row() -> None:
    for s in generate()[::50]:
        gpu, test, kind, kernel, metric, unit = SET.series_row(s)
        assert (kernel, kind, unit) == (s.name, NOISES[s.noise].kind, UNITS[s.metric])
        assert len(s.commits) == len(s.values) and (s.values > 0).all()
