"""The timeline source: kernel launches and per-region wall time, GPU idle and launch overhead from traces.

Nsight Compute replays each kernel alone; it cannot see what happens between kernels (a host
synchronisation, lost stream overlap, a starved GPU). A trace can. Three formats are read into one
``Trace`` (``model``) and from there into perfgate's normalized table (``measure``):

- PyTorch profiler / Kineto Chrome traces (``chrome``), ``.json`` or ``.json.gz``;
- Nsight Systems SQLite exports (``nsys``);
- perfgate's own CUPTI trace (``cupti_dump``), which the live source of ``pytest --perfgate`` writes.

A trace's measurement carries the setting ``source: timeline``; it is never compared with an Nsight
Compute report (``perfgate.compare.sources``).
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from perfgate.collect.timeline.attribute import RangeLimit
from perfgate.collect.timeline.checks import check_trace
from perfgate.collect.timeline.chrome import looks_like_chrome_trace, read_chrome_trace
from perfgate.collect.timeline.cupti_dump import FORMAT_NAME, looks_like_cupti_dump, read_cupti_dump
from perfgate.collect.timeline.measure import SOURCE_SETTING, TIMELINE, measurement_of
from perfgate.collect.timeline.model import Trace
from perfgate.collect.timeline.nsys import SQLITE_MAGIC, read_nsys_sqlite
from perfgate.errors import InputError
from perfgate.table import Measurement

__all__ = ["SOURCE_SETTING", "SQLITE_MAGIC", "TIMELINE", "looks_like_trace", "read_nsys_export", "streams_events",
           "streams_event_list", "table_from_trace"]

TRACE_EVENTS, RECORDS = "traceEvents", "records"  # a Chrome trace's events; perfgate's CUPTI trace's records


def streams_events(key: str, document: dict[str, Any]) -> bool:
    """Whether a JSON input's top-level list under ``key`` is a trace's events, read one at a time
    (``json_input.open_json``): a Chrome trace's, or the records of perfgate's CUPTI trace (``document``: the
    keys before the list)."""
    return key == TRACE_EVENTS or (key == RECORDS and document.get("format", FORMAT_NAME) == FORMAT_NAME)


def streams_event_list(first: Any) -> bool:
    """Whether a JSON input's top-level list, whose first element is ``first``, is a Chrome trace's bare list of
    events, read one at a time as the object form's ``traceEvents`` is."""
    return looks_like_chrome_trace([first])


def looks_like_trace(document: Any) -> bool:
    return looks_like_chrome_trace(document) or looks_like_cupti_dump(document)


def table_from_trace(document: Any, path: Path, events: Iterable[Any] | None = None, key: str = "") -> Measurement:
    """A parsed Chrome trace or perfgate CUPTI trace as the normalized table; ``events``: the list under ``key``
    as it is read (``streams_events``), ``document`` holding the rest; no key: a Chrome trace's bare list of
    events (``streams_event_list``)."""
    if events is not None:
        read = read_cupti_dump if key == RECORDS else read_chrome_trace
        return _measured(read(document, path, events), path)
    trace = read_cupti_dump(document, path) if looks_like_cupti_dump(document) else read_chrome_trace(document, path)
    return _measured(trace, path)


def read_nsys_export(path: Path) -> Measurement:
    return _measured(read_nsys_sqlite(path), path)


def _measured(trace: Trace, path: Path) -> Measurement:
    check_trace(trace, path)
    try:
        return measurement_of(trace, path)
    except RangeLimit as exc:
        raise InputError(path, exc.problem, exc.fix) from None
