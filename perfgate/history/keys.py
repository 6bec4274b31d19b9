"""The history's keys, one home: a series is one metric of one kernel (GPU, test, kind, kernel, region, metric), so
that what is recorded and what is looked up meet. Facts an input may not know are keyed the same way on both
sides (a GPU that ncu's CSV details page does not name is recorded as ``unknown``, and looked up as ``unknown``;
no test or region is ``""``, no kind is a kernel).

Keys are plain tuples, not named ones: a report's every launch and metric makes one when it is recorded, and a
named tuple costs several times as much to build."""

from __future__ import annotations

from typing import Any, Mapping, Sequence

UNKNOWN_GPU = "unknown"
SERIES_FIELDS = ("gpu", "test", "kind", "kernel", "region", "metric")  # perfgate_series' unique key, in order
KERNEL_FIELDS = SERIES_FIELDS[:-1]  # every metric of one kernel (its findings, its dashboard page)
SeriesKey = tuple[str, str, str, str, str, str]  # SERIES_FIELDS
KernelKey = tuple[str, str, str, str, str]  # KERNEL_FIELDS
SELECT_SERIES_KEYS = f"SELECT id, {', '.join(SERIES_FIELDS)} FROM perfgate_series"


def gpu_key(device: object) -> str:
    """A series' GPU: the device's name, ``unknown`` where the input names none."""
    return str(device) if device else UNKNOWN_GPU


def series_key(device: object, test: str | None, kind: str | None, kernel: str, region: str | None,
               metric: str | None) -> SeriesKey:
    """The series of a launch's metric, from a report's or a table's columns."""
    return (gpu_key(device), test or "", kind or "kernel", kernel, region or "", metric or "")


def kernel_key(device: object, test: str | None, kind: str | None, kernel: str, region: str | None) -> KernelKey:
    """The kernel of a launch: its series' key without the metric."""
    return (gpu_key(device), test or "", kind or "kernel", kernel, region or "")


def facts_key(facts: Mapping[str, Any], fields: Sequence[str] = SERIES_FIELDS) -> tuple[str, ...]:
    """The key of a stored series from its facts (``perfgate.history.series.SERIES_COLUMNS``)."""
    return tuple(facts[name] for name in fields)


def with_test(key: SeriesKey, test: str) -> SeriesKey:
    """``key`` as measured by ``test`` (``""``: by no test, a report compared by hand)."""
    return (key[0], test, key[2], key[3], key[4], key[5])
