"""Which Nsight Compute rule findings appeared or disappeared between a launch's baseline and current run."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from perfgate.compare.matching import MatchedLaunches
from perfgate.table import Measurement


def finding_changes(launches: MatchedLaunches, baseline: Measurement,
                    current: Measurement) -> tuple[list[list[str] | None], list[list[str] | None]]:
    """(appeared, gone) per launch id: lists of finding labels, or None where a side's report carries no
    rule results (not known), or the launch is on one side only."""
    base: Mapping[int, Sequence[str]] | None = baseline.findings
    cur: Mapping[int, Sequence[str]] | None = current.findings
    count = launches.count
    if not base or not cur:
        return [None] * count, [None] * count
    appeared: list[list[str] | None] = []
    gone: list[list[str] | None] = []
    frame = launches.frame
    for before_at, after_at in zip(frame["launch_b"].tolist(), frame["launch_c"].tolist()):
        if before_at < 0 or after_at < 0:  # a launch on one side only
            appeared.append(None)
            gone.append(None)
            continue
        before, after = base.get(int(before_at), ()), cur.get(int(after_at), ())
        appeared.append([f for f in after if f not in before])
        gone.append([f for f in before if f not in after])
    return appeared, gone
