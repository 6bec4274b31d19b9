"""Whether an exact counter's change point (``search.is_piecewise_constant``) moves its level, beyond the t-test.

A code change gives a counter a new count, one value that holds from its commit on; the runner cannot make one.
Two things make an exact counter's split pass the t-test without such a count:

- **bumps** (a near-exact counter's rare one-run extra traffic, each a different value): two or three of them side
  by side make a segment of the search whose median is one of them, but no value in it comes up twice. A level is
  a value held: a side with no repeated value is none.
- **flicker** (an atomic's retries, an autotuner's two configurations): the counter alternates between a few
  fixed counts, and a state may hold for tens of runs. Both the count it leaves and the count it takes come up
  elsewhere in its history, away from the point (``REACH`` commits: a split a few commits off a step's commit
  must not read that step's own values as recurring), where a step's new count, or a reverted regression's, is
  new. A regression reverted and landed again looks the same and is not named again. (Asking also that the count
  a split leaves be gone after it named no more flicker and lost three steps of quantised timings on the blind
  sets.)
"""

from __future__ import annotations

import numpy as np

REACH = 3  # commits beside a point whose values are its own, not recurrences (``search.MIN_SIDE``)


def held(segment: np.ndarray) -> bool:
    """Whether some value of ``segment`` comes up twice in it (a level, not a row of one-run bumps)."""
    if len(segment) < 2:
        return False
    ordered = np.sort(segment)
    return bool(np.any(ordered[1:] == ordered[:-1]))


def recurs(series: np.ndarray, value: float, start: int, stop: int) -> bool:
    """Whether ``value`` comes up in ``series`` outside ``[start, stop)``."""
    return bool(np.any(series[:max(start, 0)] == value) or np.any(series[stop:] == value))


def moves_level(series: np.ndarray, start: int, at: int, stop: int, before: float, after: float) -> bool:
    """Whether an exact counter's point ``at`` between segments ``[start, at)`` and ``[at, stop)`` (medians
    ``before`` and ``after``) is a step of its level: each side holds a value, and not both counts recur elsewhere
    (the one it leaves before ``start`` or past ``at + REACH``, the one it takes before ``at - REACH`` or past
    ``stop``)."""
    if not (held(series[start:at]) and held(series[at:stop])):
        return False
    return not (recurs(series, before, start, at + REACH) and recurs(series, after, at - REACH, stop))
