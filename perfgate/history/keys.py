"""The history's keys for facts an input may not know: one home, so that what is recorded and what is looked up
meet (a GPU that ncu's CSV details page does not name is recorded as ``unknown``, and looked up as ``unknown``)."""

from __future__ import annotations

UNKNOWN_GPU = "unknown"


def gpu_key(device: object) -> str:
    """A series' GPU: the device's name, ``unknown`` where the input names none."""
    return str(device) if device else UNKNOWN_GPU
