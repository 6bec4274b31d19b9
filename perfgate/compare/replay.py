"""Counts that depend on how ncu replayed a kernel: judged only between runs replayed alike.

Measured on an H100 (ncu 2025.3.1, ``tests/data/h100``): the same MLP read 8-31% more DRAM writes
replayed in 10 or 13 passes than in one pass (small reductions 12 KB -> 1.4 MB), while 10 and 13
passes agreed within 4% and duration, DRAM reads, instructions and L2 sectors did not move. A
multi-pass replay saves and restores the memory a kernel may touch between passes (the report's
``profiler__replayer_bytes_mem_backed_up``, 2-4 GB there); a one-pass run does not. So the line is
drawn between one pass and several, not between pass counts.
"""

from __future__ import annotations

from typing import Any, Mapping

from perfgate.compare.options import CompareOptions
from perfgate.metrics import OFF
from perfgate.vocabulary import REPLAY_PASSES

REPLAY_SENSITIVE_METRICS = frozenset({"dram__bytes_write.sum"})  # the counts measured to move with the replay


def _passes(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None


def replay_change(before: Mapping[str, Any], now: Mapping[str, Any]) -> str | None:
    """``"1 replay pass → 13"`` when one side ran in one pass and the other in several; else None (also when a
    side does not say, as a CSV export does not)."""
    old, new = _passes(before.get(REPLAY_PASSES)), _passes(now.get(REPLAY_PASSES))
    if old is None or new is None or (old == 1) == (new == 1):
        return None
    return f"{old} replay pass{'es' if old != 1 else ''} → {new}"


def not_judged_across_replays(options: CompareOptions, change: str) -> tuple[CompareOptions, list[tuple[str, str]]]:
    """Options that show but do not gate the replay-sensitive metrics, and the "not measured" entries saying so."""
    sensitive = [m for m in options.gated_metrics() if m in REPLAY_SENSITIVE_METRICS]
    if not sensitive:
        return options, []
    thresholds = {**options.thresholds, **{m: OFF for m in sensitive}}
    return options._replace(thresholds=thresholds), [
        ("every launch", f"{m} not judged: ncu replayed the kernels differently than for the baseline ({change}), "
                         "and this count depends on the replay; record the baseline again with these settings")
        for m in sensitive]
