"""Where the timeline tests' traces live: perfgate's own H200 fixtures, and the third-party corpus (skipped
where ../shared/corpus/timeline is absent)."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers.common import CORPUS, REPO

TIMELINE_CORPUS = CORPUS / "timeline"
OURS = REPO / "tests" / "data" / "h200" / "timeline"
# The MLP example's regions entered with nothing inside, for pytester runs whose traced child replays a trace of
# them recorded on the H200 (PERFGATE_TIMELINE_REPLAY), and the timeline baseline such a run writes.
MLP_REGIONS_TEST = """
def test_mlp(perfgate):
    for name in ("layer0", "layer1", "layer2", "layer3", "backward"):
        with perfgate.region(name):
            pass
"""
MLP_TIMELINE_BASELINE = Path("baselines") / "nvidia-h200-sm90" / "test_perf__test_mlp.timeline.json"


def corpus_trace(relative: str) -> Path:
    path = TIMELINE_CORPUS / relative
    if not path.is_file():
        pytest.skip(f"timeline corpus file {path} not available (../shared/corpus/timeline)")
    return path
