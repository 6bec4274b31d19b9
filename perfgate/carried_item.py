"""One regression a baseline update carries (:class:`Carried`, an item of the new baseline's ``regressions``
list) and what marks it accepted: the shapes that ``perfgate.carried`` (which finds them) and
``perfgate.history.accept`` (which marks them from the history) both use, kept here so that neither imports the
other."""

from __future__ import annotations

from typing import Callable, Sequence, TypedDict


class Accepted(TypedDict):
    by: str
    reason: str
    commit: str


class Carried(TypedDict):
    """A regression the new baseline carries, as written in its ``regressions`` list."""

    kind: str
    kernel: str
    region: str
    metric: str
    before: float
    after: float
    change: float | None  # after / before - 1; None from 0
    threshold: str
    accepted: Accepted | None  # None: none recorded, or no history configured


# Adds who accepted each regression, from the history (``perfgate.history.accept.acceptance_check``).
AcceptanceCheck = Callable[[Sequence[Carried], str], list[Carried]]  # items, the GPU
