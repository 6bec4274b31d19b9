"""The search for the first bad commit, with no I/O: commits in order, what is already known of them, a judge.

``commits[0]`` is good and ``commits[-1]`` bad (both verified by the caller); each commit between is judged good,
bad or skip by ``judge`` (a run of the test, or the history's verdict, which costs nothing). The search halves
the range between the newest good and the oldest bad commit; a skipped commit (it failed to build, its test
errored, its result could be judged neither way) is left out and the commit nearest the middle among the others
is tried instead. It stops with a culprit only when a bad commit directly follows a good one; otherwise (every
commit left is skipped, or the budget of runs is spent) it stops with the narrowed range and names nobody: a
wrong culprit costs a team more than a range.
"""

from __future__ import annotations

import enum
from typing import Callable, Mapping, NamedTuple, Sequence


class Judged(str, enum.Enum):
    GOOD = "good"
    BAD = "bad"
    SKIP = "skip"


class Outcome(NamedTuple):
    """Where the search stopped: ``culprit`` (the first bad commit) or None and the range ``(good, bad)`` that holds
    it; ``verdicts``: every commit judged, in the order judged; ``reason``: why it stopped."""

    culprit: str | None
    good: str
    bad: str
    verdicts: tuple[tuple[str, Judged], ...]
    reason: str


BUDGET_SPENT = "budget"
ALL_SKIPPED = "skipped"
FOUND = "found"


def next_probe(low: int, high: int, skipped: set[int]) -> int | None:
    """The index strictly between ``low`` and ``high`` nearest their middle that is not skipped (the older of two
    equally near), or None when every one is."""
    middle = (low + high) // 2
    for distance in range(high - low):
        for at in (middle - distance, middle + distance):
            if low < at < high and at not in skipped:
                return at
    return None


def bisect(commits: Sequence[str], judge: Callable[[str], Judged], known: Mapping[str, Judged] | None = None,
           budget: int | None = None, spent: Callable[[], int] | None = None) -> Outcome:
    """The first bad commit of ``commits`` (oldest first; the first good, the last bad). ``known``: verdicts that
    cost nothing (the history's); each is used before any run. ``budget``: at most this many calls of ``judge``,
    or, with ``spent``, no call once ``spent()`` (the runs so far, counted by the caller) reaches it."""
    if len(commits) < 2:
        raise ValueError("a bisection needs a good and a bad commit")
    known = known or {}
    low, high = 0, len(commits) - 1
    for at, commit in enumerate(commits[1:-1], start=1):  # the history narrows the range before any run
        if known.get(commit) is Judged.GOOD and at > low and at < high:
            low = at
    for at in range(len(commits) - 2, low, -1):
        if known.get(commits[at]) is Judged.BAD:
            high = at
    verdicts: list[tuple[str, Judged]] = []
    skipped = {at for at in range(low + 1, high) if known.get(commits[at]) is Judged.SKIP}
    runs = 0
    while high - low > 1:
        probe = next_probe(low, high, skipped)
        if probe is None:
            return Outcome(None, commits[low], commits[high], tuple(verdicts), ALL_SKIPPED)
        if budget is not None and (spent() if spent is not None else runs) >= budget:
            return Outcome(None, commits[low], commits[high], tuple(verdicts), BUDGET_SPENT)
        verdict = judge(commits[probe])
        runs += 1
        verdicts.append((commits[probe], verdict))
        if verdict is Judged.GOOD:
            low = probe
        elif verdict is Judged.BAD:
            high = probe
        else:
            skipped.add(probe)
    return Outcome(commits[high], commits[low], commits[high], tuple(verdicts), FOUND)
