"""Where the timeline tests' traces live: perfgate's own H200 fixtures, and the third-party corpus (skipped
where ../shared/corpus/timeline is absent)."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers.common import CORPUS, REPO

TIMELINE_CORPUS = CORPUS / "timeline"
OURS = REPO / "tests" / "data" / "h200" / "timeline"


def corpus_trace(relative: str) -> Path:
    path = TIMELINE_CORPUS / relative
    if not path.is_file():
        pytest.skip(f"timeline corpus file {path} not available (../shared/corpus/timeline)")
    return path
