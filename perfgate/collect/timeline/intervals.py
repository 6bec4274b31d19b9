"""Unions of time intervals: GPU busy time without counting overlapping streams twice.

numpy, not a library: the one operation needed (merge sorted intervals, measure them inside a window) is a
few vector lines, and no interval library does it over arrays.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

Ints = npt.NDArray[np.int64]


def merged(starts: Any, ends: Any) -> tuple[Ints, Ints]:
    """The union of intervals ``[start, end)`` as disjoint intervals, sorted."""
    begin = np.asarray(starts, dtype=np.int64)
    finish = np.asarray(ends, dtype=np.int64)
    if not begin.size:
        return begin, finish
    order = np.argsort(begin, kind="stable")
    begin, finish = begin[order], np.maximum(finish[order], begin[order])
    reach = np.maximum.accumulate(finish)
    new = np.ones(begin.size, dtype=bool)
    new[1:] = begin[1:] > reach[:-1]
    last_of_group = np.append(new[1:], True)  # the running reach there is the merged interval's end
    return begin[new], reach[last_of_group]


def union_length(starts: Any, ends: Any) -> int:
    begin, finish = merged(starts, ends)
    return int((finish - begin).sum())


class BusyTimeline:
    """All GPU activity of a trace, merged once; ``busy(lo, hi)`` is the busy time inside a window."""

    def __init__(self, starts: Any, ends: Any) -> None:
        self.begin, self.finish = merged(starts, ends)
        self._before = np.concatenate(([0], np.cumsum(self.finish - self.begin)))

    def busy(self, lo: int, hi: int) -> int:
        """Nanoseconds in ``[lo, hi)`` during which anything ran on the GPU."""
        if hi <= lo or not self.begin.size:
            return 0
        first = int(np.searchsorted(self.finish, lo, side="right"))  # first interval ending after lo
        last = int(np.searchsorted(self.begin, hi, side="left"))  # intervals starting before hi
        if first >= last:
            return 0
        total = int(self._before[last] - self._before[first])
        total -= max(0, lo - int(self.begin[first]))
        total -= max(0, int(self.finish[last - 1]) - hi)
        return total


class QueuedWork:
    """``end_before(t)``: when the GPU work that started before ``t`` ended (the last of it)."""

    def __init__(self, starts: Any, ends: Any) -> None:
        begin = np.asarray(starts, dtype=np.int64)
        order = np.argsort(begin, kind="stable")
        self.begin = begin[order]
        self.reach = np.maximum.accumulate(np.asarray(ends, dtype=np.int64)[order]) if begin.size else begin

    def end_before(self, moment: int) -> int:
        at = int(np.searchsorted(self.begin, moment, side="left"))
        return int(self.reach[at - 1]) if at else np.iinfo(np.int64).min
