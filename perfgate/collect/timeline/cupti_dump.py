"""perfgate's CUPTI trace: what the live timeline source writes (``perfgate.plugin.tracer``) and reads back.

A JSON document, optionally gzip-compressed (``*.cupti.json.gz``)::

    {
      "format": "perfgate-cupti-trace", "version": 1,
      "devices": [{"id": 0, "name": "NVIDIA H200", "cc": "9.0"}],
      "records": [ {"kind": 10, "start": ..., "end": ..., "correlation_id": 22, "name": "_ZN2at6native...",
                    "device_id": 0, "stream_id": 7, "grid_x": 32, ..., "block_x": 128, ...,
                    "registers_per_thread": 255, "static_shared_memory": 0, "dynamic_shared_memory": 33792}, ...],
      "regions": [ {"name": "layer1", "path": "layer1", "thread": 140660615307584,
                    "start": ..., "end": ..., "step": false}, ...],
      "dropped": 0
    }

``records`` are CUPTI activity records with their fields as cupti-python names them (snake case), times in
CUPTI's nanosecond timestamps: kind 10 ``CONCURRENT_KERNEL``, 1 ``MEMCPY``, 2 ``MEMSET``, 4 ``DRIVER`` and
5 ``RUNTIME`` (the API calls: ``correlation_id``, ``thread_id``, ``cbid``); other kinds (38 synchronisation,
12 NVTX markers) are kept but not needed. ``regions`` are ``perfgate.region`` host intervals from
``cupti.get_timestamp()`` on the thread that entered them (Python's ``threading.get_ident()``, of which CUPTI
keeps the low 32 bits as ``thread_id``); ``step`` marks one iteration of the measured loop. ``format``,
``version``, ``devices`` and ``dropped`` may be absent (the fixtures recorded with
``tests/gpu/capture_timeline.py`` have only ``records`` and ``regions``).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from perfgate.collect.timeline.model import (
    KERNEL,
    MEMCPY,
    MEMSET,
    NO_CORRELATION,
    Device,
    GpuOp,
    Launch,
    OpColumns,
    Range,
    Trace,
)
from perfgate.demangled import bare_name, demangled_name
from perfgate.errors import InputError

FORMAT_NAME = "perfgate-cupti-trace"
FORMAT_VERSION = 1
KIND_MEMCPY, KIND_MEMSET, KIND_DRIVER, KIND_RUNTIME, KIND_KERNEL, KIND_CONCURRENT_KERNEL = 1, 2, 4, 5, 3, 10
_OPS = {KIND_KERNEL: KERNEL, KIND_CONCURRENT_KERNEL: KERNEL, KIND_MEMCPY: MEMCPY, KIND_MEMSET: MEMSET}
_THREAD_BITS = 0xFFFFFFFF  # CUPTI's thread_id is the low 32 bits of pthread_self()


def looks_like_cupti_dump(document: Any) -> bool:
    return (isinstance(document, dict) and isinstance(document.get("records"), list)
            and isinstance(document.get("regions", []), list)
            and document.get("format", FORMAT_NAME) == FORMAT_NAME)


def _int(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return None


def _dims(record: dict[str, Any], prefix: str) -> tuple[int, int, int] | None:
    values = [_int(record.get(f"{prefix}_{axis}")) for axis in "xyz"]
    return (values[0], values[1], values[2]) if all(v is not None for v in values) else None  # type: ignore[return-value]


def _op(kind: str, record: dict[str, Any], start: int, end: int) -> GpuOp:
    correlation = _int(record.get("correlation_id"))
    common = (start, end, _int(record.get("device_id")) or 0, _int(record.get("stream_id")) or 0,
              NO_CORRELATION if correlation is None else correlation)
    if kind != KERNEL:
        return GpuOp(kind, kind, kind, *common)
    name = str(record.get("name", ""))
    return GpuOp(KERNEL, bare_name(name), demangled_name(name), *common, grid=_dims(record, "grid"), block=_dims(record, "block"),
                 registers=_int(record.get("registers_per_thread")),
                 static_shared=_int(record.get("static_shared_memory")),
                 dynamic_shared=_int(record.get("dynamic_shared_memory")))


def _ranges(document: dict[str, Any], path: Path) -> list[Range]:
    ranges = []
    for index, region in enumerate(document.get("regions", [])):
        start, end, thread = (_int(region.get(key)) if isinstance(region, dict) else None
                              for key in ("start", "end", "thread"))
        if start is None or end is None or thread is None or not isinstance(region.get("name"), str):
            raise InputError(path, f"regions[{index}] needs a name, a thread and integer start and end",
                             "record the trace again with perfgate's timeline source")
        ranges.append(Range(region["name"], str(thread & _THREAD_BITS), start, end, step=bool(region.get("step"))))
    return ranges


def _devices(document: dict[str, Any]) -> dict[int, Device]:
    found = {}
    for entry in document.get("devices") or []:
        if isinstance(entry, dict) and _int(entry.get("id")) is not None:
            found[int(entry["id"])] = Device(str(entry.get("name", "")), str(entry.get("cc", "")))
    return found


def read_cupti_dump(document: dict[str, Any], path: Path, streamed: Iterable[Any] | None = None) -> Trace:
    """The trace; ``streamed``: its records as they are read from the file (``json_input.open_json``), where
    ``document`` holds the rest."""
    ops: list[GpuOp] = []
    launches: dict[int, Launch] = {}
    for record in document["records"] if streamed is None else streamed:
        if not isinstance(record, dict):
            continue
        kind, start, end = _int(record.get("kind")), _int(record.get("start")), _int(record.get("end"))
        if kind is None or start is None or end is None:
            continue
        if kind in _OPS:
            ops.append(_op(_OPS[kind], record, start, end))
        elif kind in (KIND_RUNTIME, KIND_DRIVER):
            correlation, thread = _int(record.get("correlation_id")), _int(record.get("thread_id"))
            if correlation is not None and thread is not None and correlation not in launches:
                launches[correlation] = Launch(correlation, str(thread & _THREAD_BITS), start, end)
    if not looks_like_cupti_dump(document):  # read one record at a time: known only once all are read
        raise InputError(path, f'neither a Chrome trace nor a {FORMAT_NAME} (its "format" or "regions" is another)',
                         "pass a trace torch.profiler or perfgate's timeline source wrote")
    facts: dict[str, str | int | float | bool] = {}
    dropped = _int(document.get("dropped"))
    if dropped:
        raise InputError(path, f"CUPTI dropped {dropped} activity record{'s' if dropped != 1 else ''} while tracing: "
                               "the trace is incomplete", "trace it again, with fewer iterations of the test's loop")
    return Trace("cupti", _as_columns(ops), launches, _ranges(document, path), _devices(document), facts)


def _as_columns(ops: list[GpuOp]) -> Sequence[GpuOp]:
    """The ops as columns, held so while they are measured; a number past int64 (no CUPTI writes one) keeps the
    list, for ``measure.check_times`` to refuse in its words."""
    try:
        return OpColumns.of(ops)
    except OverflowError:
        return ops
