"""PyTorch profiler (Kineto) Chrome traces: ``prof.export_chrome_trace(...)``, ``.json`` or ``.json.gz``.

Every schema age seen in real traces (``../shared/reference/timeline-and-history.md``): events ``"ph": "X"``
with ``ts``/``dur`` in microseconds (integers in older traces, floats with nanosecond fractions in newer ones);
categories today ``kernel``, ``gpu_memcpy``, ``gpu_memset``, ``cuda_runtime``, ``cuda_driver``,
``user_annotation``, ``cpu_op`` and, in older traces, ``Kernel``, ``Memcpy``, ``Memset``, ``Runtime``,
``Operator`` (where record_function ranges and autograd nodes are ``Operator`` events too: ``_is_range``
tells them apart). The GPU of a kernel is its ``args.device``, named by ``deviceProperties``
when the trace has it. A launch is the runtime/driver event with the kernel's ``args.correlation``.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from perfgate.collect.timeline.model import (
    KERNEL,
    MEMCPY,
    MEMSET,
    NO_CORRELATION,
    RESOLUTION_SETTING,
    Device,
    GpuOp,
    Launch,
    OpRecorder,
    Range,
    Trace,
)
from perfgate.collect.timeline.measure import MAX_TIME_NS
from perfgate.demangled import bare_name, demangled_name
from perfgate.errors import InputError

_OPS = {"kernel": KERNEL, "gpu_memcpy": MEMCPY, "memcpy": MEMCPY, "gpu_memset": MEMSET, "memset": MEMSET}
_LAUNCH_CATEGORIES = {"cuda_runtime", "runtime", "cuda_driver", "driver"}
_STEP = re.compile(r"^ProfilerStep#\d+$")
_AUTOGRAD_NODE = re.compile(r"Backward\d*$")  # autograd's node classes: AddmmBackward, ReluBackward1
_OPERATOR_ARGS = ("Sequence number", "Fwd thread id", "Input Dims", "Input dims", "Input type")


def looks_like_chrome_trace(document: Any) -> bool:
    """A Chrome trace: an object with a ``traceEvents`` list, or a bare list of events with ``ph``."""
    if isinstance(document, dict):
        return isinstance(document.get("traceEvents"), list)
    return (isinstance(document, list) and bool(document) and isinstance(document[0], dict)
            and "ph" in document[0])


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        try:
            value = float(value)
        except (TypeError, ValueError):
            return None
    return float(value) if math.isfinite(value) else None


def _int(value: Any, default: int = 0) -> int:
    number = _number(value)
    return int(number) if number is not None else default


def _dims(value: Any) -> tuple[int, int, int] | None:
    if isinstance(value, list) and len(value) == 3 and all(_number(v) is not None for v in value):
        return (_int(value[0]), _int(value[1]), _int(value[2]))
    return None


def _devices(document: Any) -> dict[int, Device]:
    found: dict[int, Device] = {}
    properties = document.get("deviceProperties") if isinstance(document, dict) else None
    for entry in properties if isinstance(properties, list) else []:
        if isinstance(entry, dict) and _number(entry.get("id")) is not None:
            major, minor = entry.get("computeMajor"), entry.get("computeMinor")
            cc = f"{_int(major)}.{_int(minor)}" if _number(major) is not None and _number(minor) is not None else ""
            found[_int(entry["id"])] = Device(str(entry.get("name", "")), cc)
    return found


def _is_range(category: str, name: str, args: dict[str, Any]) -> bool:
    """A user annotation (record_function, ProfilerStep), never an operator or an autograd node. Older Kineto writes
    both as ``Operator``: there an annotation has no ``::`` in its name, is not an autograd node (``AddmmBackward``,
    with a sequence number and forward thread), and records no inputs (operators do, under record_shapes)."""
    if category == "user_annotation":
        return True
    if category in ("cpu_op", "operator") and _STEP.match(name):
        return True  # ProfilerStep#N is a cpu_op in some versions
    if category != "operator" or "::" in name or _AUTOGRAD_NODE.search(name):
        return False
    return not any(key in args for key in _OPERATOR_ARGS)


def _facts(document: Any) -> dict[str, str | int | float | bool]:
    facts: dict[str, str | int | float | bool] = {}
    if isinstance(document, dict):
        for key in ("schemaVersion", "cupti_version", "cuda_runtime_version", "cuda_driver_version"):
            value = document.get(key)
            if isinstance(value, (str, int, float)) and not isinstance(value, bool):
                facts[f"trace_{key}"] = value
    return facts


def _time(value: Any, path: Path) -> float | None:
    """An event's ``ts`` or ``dur`` (µs); None where it has none; InputError where no clock could have given it."""
    if value is None or isinstance(value, bool):
        return None
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    except OverflowError:  # an integer past any float
        number = math.inf
    if not abs(number) * 1000.0 < MAX_TIME_NS:  # inf and nan too
        raise InputError(path, f"a time stamp out of any clock's range ({number:.3g} µs)",
                         "trace again; the file is corrupt or was edited")
    return number


def read_chrome_trace(document: Any, path: Path, streamed: Iterable[Any] | None = None) -> Trace:
    """The GPU ops, launches and ranges of a parsed Chrome trace; ``streamed``: its events, as they are read from
    the file (``json_input.open_json``), where ``document`` holds the rest."""
    events = document.get("traceEvents") if isinstance(document, dict) else document
    if streamed is not None:
        events = streamed
    elif not isinstance(events, list):
        raise InputError(path, "a Chrome trace without a traceEvents list", "export it again with torch.profiler")
    origin: float | None = None
    whole_microseconds = True  # every GPU op's ts and dur: older Kineto writes integers, newer ns fractions
    ops = OpRecorder()
    launches: dict[int, Launch] = {}
    ranges: list[Range] = []
    for event in events:
        if not isinstance(event, dict) or event.get("ph") != "X":
            continue
        ts, dur = _time(event.get("ts"), path), _time(event.get("dur"), path)
        if ts is None or dur is None:
            continue
        if origin is None:
            origin = ts
        start = round((ts - origin) * 1000.0)
        end = start + round(dur * 1000.0)
        category = str(event.get("cat", "")).lower()
        name = str(event.get("name", ""))
        raw_args = event.get("args")
        args: dict[str, Any] = raw_args if isinstance(raw_args, dict) else {}
        kind = _OPS.get(category)
        if kind is not None:
            _add(ops, _op(kind, name, start, end, args), path)
            whole_microseconds = whole_microseconds and ts.is_integer() and dur.is_integer()
        elif category in _LAUNCH_CATEGORIES:
            correlation = _int(args.get("correlation"), NO_CORRELATION)
            if correlation != NO_CORRELATION and correlation not in launches:
                launches[correlation] = Launch(correlation, f"{event.get('pid')}/{event.get('tid')}", start, end)
        elif _is_range(category, name, args):
            ranges.append(Range(name, f"{event.get('pid')}/{event.get('tid')}", start, end,
                                step=bool(_STEP.match(name))))
    facts = _facts(document)
    columns = ops.columns()
    if len(columns) and whole_microseconds:
        facts[RESOLUTION_SETTING] = 1000  # ns: a kernel's duration is known to the microsecond only
    return Trace("kineto", columns, launches, ranges, _devices(document), facts)


def _add(ops: OpRecorder, op: GpuOp, path: Path) -> None:
    try:
        ops.add(*op)
    except OverflowError:  # a device, stream or correlation id past int64: no profiler writes one
        raise InputError(path, f"a GPU op's device, stream or correlation id out of range ({op.device:.3g}, "
                               f"{op.stream:.3g}, {op.correlation:.3g})", "trace again; the file is corrupt or was edited") from None


def _op(kind: str, name: str, start: int, end: int, args: dict[str, Any]) -> GpuOp:
    correlation = _int(args.get("correlation"), NO_CORRELATION)
    if kind != KERNEL:
        return GpuOp(kind, kind, name, start, end, _int(args.get("device")), _int(args.get("stream")), correlation)
    registers = _number(args.get("registers per thread"))  # "shared memory" does not say static or dynamic: left out
    return GpuOp(KERNEL, bare_name(name), demangled_name(name), start, end, _int(args.get("device")), _int(args.get("stream")),
                 correlation, grid=_dims(args.get("grid")), block=_dims(args.get("block")),
                 registers=None if registers is None else int(registers))
