"""The blind sets' matching rule pairs one to one, the closest first (every set's README: "Matching and scores")."""

from __future__ import annotations

from tests.blind_history_harness.score import match


def test_matching_is_one_to_one_within_the_tolerance() -> None:
    assert match([10, 20], [11, 12, 21], 2) == [(0, 0), (1, 2)]
    assert match([10, 12], [11], 2) == [(0, 0)]
    assert match([10], [13], 2) == []
