"""Nsight Systems SQLite exports (``nsys export --type sqlite``), read with the stdlib's sqlite3, read-only.

Kernels from ``CUPTI_ACTIVITY_KIND_KERNEL`` (names are ids into ``StringIds``), copies and sets from
``..._MEMCPY``/``..._MEMSET``, launch calls from ``CUPTI_ACTIVITY_KIND_RUNTIME`` (by correlation id), closed
NVTX ranges from ``NVTX_EVENTS`` (the label in ``text`` or only in ``textId``), GPUs from ``TARGET_INFO_GPU``,
the nsys version from ``META_DATA_EXPORT`` / ``EXPORT_META_DATA``. Only named columns are read, so columns
other schema versions or tools add do not matter; text that is not UTF-8 (``TARGET_INFO_SYSTEM_ENV`` holds the
profiled host's environment) is decoded with replacement characters instead of failing.
"""

from __future__ import annotations

import re
import sqlite3
from array import array
from pathlib import Path
from typing import Any

import numpy as np

from perfgate.collect.timeline.model import (
    FROM_PROCESS_START,
    KERNEL,
    MEMCPY,
    MEMSET,
    Device,
    Ints,
    LaunchColumns,
    OpRecorder,
    Range,
    Trace,
)
from perfgate.demangled import bare_name, demangled_name
from perfgate.errors import InputError

SQLITE_MAGIC = b"SQLite format 3\x00"
_KERNEL_COLUMNS = ("start", "end", "deviceId", "streamId", "correlationId", "gridX", "gridY", "gridZ", "blockX",
                   "blockY", "blockZ", "registersPerThread", "staticSharedMemory", "dynamicSharedMemory")


def _connect(path: Path) -> sqlite3.Connection:
    try:
        connection = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)
        connection.text_factory = lambda raw: raw.decode("utf-8", "replace")
        connection.execute("SELECT count(*) FROM sqlite_master").fetchone()
    except sqlite3.Error as exc:
        raise InputError(path, f"not a readable SQLite database ({exc})",
                         "export it again with nsys export --type sqlite") from None
    return connection


def _columns(connection: sqlite3.Connection, table: str) -> set[str]:
    return {str(row[1]) for row in connection.execute(f'PRAGMA table_info("{table}")')}


def _strings(connection: sqlite3.Connection, tables: set[str]) -> dict[int, str]:
    if "StringIds" not in tables:
        return {}
    return {int(key): str(value) for key, value in connection.execute("SELECT id, value FROM StringIds")}


def _name_of(strings: dict[int, str], *ids: Any) -> str:
    for key in ids:
        if isinstance(key, int) and key in strings:
            return strings[key]
    return ""


def _kernels(connection: sqlite3.Connection, strings: dict[int, str], ops: OpRecorder) -> None:
    present = _columns(connection, "CUPTI_ACTIVITY_KIND_KERNEL")
    names: list[str] = [c for c in ("shortName", "demangledName", "mangledName") if c in present]
    wanted = [c if c in present else "NULL" for c in _KERNEL_COLUMNS] + (names or ["NULL"])
    known: dict[tuple[Any, ...], tuple[str, str]] = {}  # a few kernels launched many times: each named once
    for row in connection.execute(f"SELECT {', '.join(wanted)} FROM CUPTI_ACTIVITY_KIND_KERNEL"):
        (start, end, device, stream, correlation, gx, gy, gz, bx, by, bz, registers, static, dynamic) = row[:14]
        ids = row[14:]
        named = known.get(ids)
        if named is None:
            demangled = _name_of(strings, *ids[1:], ids[0]) if len(ids) > 1 else _name_of(strings, ids[0])
            short = _name_of(strings, ids[0]) if names and names[0] == "shortName" else ""
            named = known[ids] = (short or bare_name(demangled), demangled_name(demangled) or short)
        ops.add(KERNEL, *named, int(start), int(end), int(device or 0), int(stream or 0),
                int(correlation if correlation is not None else -1),
                (int(gx or 0), int(gy or 0), int(gz or 0)) if gx is not None else None,
                (int(bx or 0), int(by or 0), int(bz or 0)) if bx is not None else None,
                None if registers is None else int(registers), None if static is None else int(static),
                None if dynamic is None else int(dynamic))


def _memory_ops(connection: sqlite3.Connection, tables: set[str], ops: OpRecorder) -> None:
    for table, kind in (("CUPTI_ACTIVITY_KIND_MEMCPY", MEMCPY), ("CUPTI_ACTIVITY_KIND_MEMSET", MEMSET)):
        if table in tables:
            for start, end, device, stream, correlation in connection.execute(
                    f"SELECT start, end, deviceId, streamId, correlationId FROM {table}"):
                ops.add(kind, kind, kind, int(start), int(end), int(device or 0), int(stream or 0),
                        int(correlation if correlation is not None else -1))


def _launches(connection: sqlite3.Connection, tables: set[str]) -> LaunchColumns:
    """The first call of each correlation id, as columns: a kernel-dense export holds hundreds of thousands."""
    columns: tuple[array[int], ...] = (array("q"), array("q"), array("q"), array("q"))
    correlations, thread_codes, starts, ends = columns
    threads: dict[Any, int] = {}  # a few threads make every launch
    if "CUPTI_ACTIVITY_KIND_RUNTIME" in tables:
        for correlation, thread, start, end in connection.execute(
                "SELECT correlationId, globalTid, start, end FROM CUPTI_ACTIVITY_KIND_RUNTIME ORDER BY start"):
            if correlation is not None:
                correlations.append(int(correlation))
                thread_codes.append(threads.setdefault(thread, len(threads)))
                starts.append(int(start))
                ends.append(int(end))
    first = np.sort(np.unique(np.frombuffer(correlations, dtype=np.int64), return_index=True)[1])

    def kept(column: array[int]) -> Ints:
        return np.frombuffer(column, dtype=np.int64)[first]

    return LaunchColumns(kept(correlations), kept(thread_codes), [str(thread) for thread in threads], kept(starts),
                         kept(ends))


# torch.autograd.profiler.emit_nvtx() names each operator's and autograd node's NVTX range "aten::addmm, seq = 12,
# op_id = 5, sizes = [...]": operators, not user annotations, so never regions.
_OPERATOR_RANGE = re.compile(r", (?:seq|op_id) = -?\d")


def _ranges(connection: sqlite3.Connection, tables: set[str]) -> list[Range]:
    if "NVTX_EVENTS" not in tables:
        return []
    joined = "LEFT JOIN StringIds s ON n.textId = s.id" if "StringIds" in tables else ""
    label = "coalesce(n.text, s.value, '')" if joined else "coalesce(n.text, '')"
    query = (f"SELECT {label}, n.globalTid, n.start, n.end FROM NVTX_EVENTS n {joined} "
             "WHERE n.end IS NOT NULL AND n.start IS NOT NULL ORDER BY n.start")
    return [Range(str(name), str(thread), int(start), int(end)) for name, thread, start, end in
            connection.execute(query) if not _OPERATOR_RANGE.search(str(name))]


def _devices(connection: sqlite3.Connection, tables: set[str]) -> dict[int, Device]:
    if "TARGET_INFO_GPU" not in tables:
        return {}
    present = _columns(connection, "TARGET_INFO_GPU")
    cc = "computeMajor, computeMinor" if {"computeMajor", "computeMinor"} <= present else "NULL, NULL"
    return {int(key): Device(str(name or ""), f"{major}.{minor}" if major is not None else "")
            for key, name, major, minor in connection.execute(f"SELECT id, name, {cc} FROM TARGET_INFO_GPU")}


def _facts(connection: sqlite3.Connection, tables: set[str]) -> dict[str, str | int | float | bool]:
    facts: dict[str, str | int | float | bool] = {}
    for table in ("META_DATA_EXPORT", "EXPORT_META_DATA"):
        if table in tables and {"name", "value"} <= _columns(connection, table):
            rows = dict(connection.execute(f"SELECT name, value FROM {table}").fetchall())
            found = {"trace_nsys_version": rows.get("EXPORT_PRODUCT_VERSION"),
                     "trace_export_schema": rows.get("EXPORT_SCHEMA_VERSION")}
            facts = {key: str(value) for key, value in found.items() if value is not None}
            break
    if "META_DATA_CAPTURE" in tables and {"name", "value"} <= _columns(connection, "META_DATA_CAPTURE"):
        capture = dict(connection.execute("SELECT name, value FROM META_DATA_CAPTURE WHERE name IN "
                                          "('START_TRIGGER', 'START_DELAY_MS')").fetchall())
        # Traced from the process's start (no --delay, no capture range): a kernel's first launch in the export
        # is its first in the process (``measure.module_loading``).
        if capture.get("START_TRIGGER") == "Immediate" and str(capture.get("START_DELAY_MS")) == "0":
            facts[FROM_PROCESS_START] = True
    return facts


def read_nsys_sqlite(path: Path) -> Trace:
    connection = _connect(path)
    try:
        tables = {str(row[0]) for row in connection.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        if not tables & {"CUPTI_ACTIVITY_KIND_KERNEL", "NVTX_EVENTS", "StringIds", "TARGET_INFO_GPU"}:
            raise InputError(path, "an SQLite database that is no Nsight Systems export",
                             "pass the file nsys export --type sqlite wrote")
        strings = _strings(connection, tables)
        ops = OpRecorder()
        if "CUPTI_ACTIVITY_KIND_KERNEL" in tables:
            _kernels(connection, strings, ops)
        _memory_ops(connection, tables, ops)
        return Trace("nsys", ops.columns(), _launches(connection, tables),
                     _ranges(connection, tables), _devices(connection, tables), _facts(connection, tables))
    except sqlite3.Error as exc:
        raise InputError(path, f"a broken Nsight Systems export ({exc})", "export it again") from None
    except (ValueError, OverflowError) as exc:  # SQLite keeps any type in any column: int() of text, blob or inf
        raise InputError(path, f"a broken Nsight Systems export (a number column holds something else: {exc})",
                         "export it again") from None
    except TypeError:  # int(None): a time column a kernel or copy must have is missing or NULL
        raise InputError(path, "a broken Nsight Systems export (a GPU op without its start or end time)",
                         "export it again") from None
    finally:
        connection.close()
