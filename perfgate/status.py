"""Statuses of a compared metric or launch. Import-light: the renderers and publish use it too."""

from __future__ import annotations

import enum


class Status(str, enum.Enum):
    REGRESSION = "regression"
    IMPROVEMENT = "improvement"
    UNCHANGED = "unchanged"
    NEW = "new"
    MISSING = "missing"
    NO_DATA = "no data"
    INFO = "info"  # metric rows only: shown to explain, not gated


# Display order: what needs attention first.
STATUS_ORDER = (Status.REGRESSION, Status.NO_DATA, Status.MISSING, Status.NEW, Status.IMPROVEMENT,
                Status.UNCHANGED, Status.INFO)
