"""The timeline thresholds hold for one entry of a region, as the live source measures a test that runs its
regions once: every pair of single entries (one step each) of unchanged H200 runs passes, and every entry of the
planted host synchronisation fails, judged by the comparison's own rule (beyond every limit, in the worse
direction). Each trace's first traced step is left out: CUPTI's first use (the live source traces the test's
own warm-up before its regions)."""

from __future__ import annotations

import gzip
import itertools
import json
from functools import cache

import numpy as np
import pytest
from helpers.timeline import OURS

from perfgate.collect.timeline.attribute import attribute
from perfgate.collect.timeline.chrome import read_chrome_trace
from perfgate.collect.timeline.cupti_dump import read_cupti_dump
from perfgate.collect.timeline.measure import region_instances
from perfgate.compare.joining import relative_change
from perfgate.compare.policies import beyond_limits
from perfgate.metrics import TIMELINE_CATALOG

GATED = [m for m in TIMELINE_CATALOG if m.threshold.gating and m.name != "timeline.kernel_duration"]
UNCHANGED = {
    "mlp": ["mlp.cupti.a.cupti.json.gz", "mlp.cupti.b.cupti.json.gz", "mlp.cupti.c.cupti.json.gz",
            "mlp.torch.a.pt.trace.json.gz", "mlp.torch.b.pt.trace.json.gz"],
    "softmax": ["softmax.cupti.a.cupti.json.gz", "softmax.cupti.b.cupti.json.gz", "softmax.torch.pt.trace.json.gz"],
    "vector_add": ["vector_add.cupti.a.cupti.json.gz", "vector_add.cupti.b.cupti.json.gz",
                   "vector_add.torch.pt.trace.json.gz"],
}
SYNCED = ["mlp.sync.cupti.cupti.json.gz", "mlp.sync.cupti.b.cupti.json.gz", "mlp.sync.torch.pt.trace.json.gz"]


@cache
def entries(name: str) -> dict[str, list[dict[str, float]]]:
    """Each region's entries after the first traced one: metric -> value."""
    with gzip.open(OURS / name, "rt", encoding="utf-8") as handle:
        document = json.load(handle)
    trace = read_cupti_dump(document, OURS / name) if "records" in document else read_chrome_trace(document, OURS / name)
    found: dict[str, list[dict[str, float]]] = {}
    for instance in region_instances(trace, attribute(trace)):
        found.setdefault(instance.path, []).append(instance.values)
    return {path: values[1:] for path, values in found.items()}


def regressions(before: list[dict[str, float]], after: list[dict[str, float]], metric: str) -> np.ndarray:
    """For every (before, after) pair of entries: is ``metric`` a regression under its default threshold?"""
    info = next(m for m in GATED if m.name == metric)
    base = np.repeat([e[metric] for e in before], len(after))
    cur = np.tile([e[metric] for e in after], len(before))
    delta, change = relative_change(base, cur)
    limits = info.threshold
    relative = np.full(len(base), limits.relative if limits.relative is not None else -1.0)
    absolute = np.full(len(base), limits.absolute if limits.absolute is not None else -1.0)
    result: np.ndarray = beyond_limits(delta, change, relative, absolute) & (delta > 0)
    return result


@pytest.mark.parametrize("workload", sorted(UNCHANGED))
def test_no_single_entry_of_an_unchanged_run_fails(workload: str) -> None:
    compared = 0
    for first, second in itertools.permutations(UNCHANGED[workload], 2):
        for region, before in entries(first).items():
            for info in GATED:
                alarms = regressions(before, entries(second)[region], info.name)
                compared += len(alarms)
                assert not alarms.any(), (first, second, region, info.name)
    assert compared > 1000


@pytest.mark.parametrize("region", ["step", "backward"])
def test_every_single_entry_of_the_planted_sync_fails(region: str) -> None:
    for calm, synced in itertools.product(UNCHANGED["mlp"], SYNCED):
        caught = np.zeros(len(entries(calm)[region]) * len(entries(synced)[region]), dtype=bool)
        for info in GATED:
            caught |= regressions(entries(calm)[region], entries(synced)[region], info.name)
        assert caught.all(), (calm, synced)
