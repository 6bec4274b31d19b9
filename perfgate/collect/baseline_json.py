"""Reading a perfgate baseline file (``perfgate/schemas/baseline-v1.schema.json``): checked, as a table.

``perfgate.baseline`` builds and writes these files; the format is described there.
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from perfgate.collect.json_input import load_json
from perfgate.collect.screen import shown, value_problem
from perfgate.demangled import demangled_name
from perfgate.errors import InputError
from perfgate.limits import FIX_SIZE, MAX_FINDING_CHARS, MAX_FINDINGS, check_name_length, max_input_bytes, size_text
from perfgate.table import KernelCode, Measurement, make_table
from perfgate.vocabulary import KIND_KERNEL, KINDS

FORMAT_NAME = "perfgate-baseline"
FORMAT_VERSION = 1
# "regressions": what an update carried (perfgate.carried), for the reader of its diff; not read back.
_TOP_KEYS = {"format", "version", "device", "settings", "source", "entries", "regressions"}
_ENTRY_KEYS = {"kind", "name", "demangled", "region", "ordinal", "grid", "block", "metrics", "samples", "findings",
               "code"}
_CODE_ID = re.compile(r"^[0-9a-f]{16}$")
MAX_OPCODES = 2000  # distinct opcodes of one kernel's instruction mix (SASS has a few hundred)


def looks_like_baseline(document: Any) -> bool:
    return isinstance(document, dict) and document.get("format") == FORMAT_NAME


def _finite(value: int | float) -> bool:
    try:
        return math.isfinite(float(value))
    except OverflowError:  # an integer beyond float range
        return False


def _fail(path: Path, problem: str) -> InputError:
    return InputError(path, f"not a valid perfgate baseline: {problem}",
                      "regenerate it with 'perfgate baseline REPORT' or fix it by hand")


def table_from_baseline(document: Any, path: Path) -> Measurement:
    """Validate a parsed baseline document and turn it into the normalized table and its facts."""
    device, entries, settings = _checked_document(document, path)
    rows: list[dict[str, Any]] = []
    samples: dict[str, list[float]] = {}
    findings: dict[int, tuple[str, ...]] = {}
    code: dict[int, KernelCode] = {}
    for index, entry in enumerate(entries):
        rows.extend(_entry_rows(entry, index, device, path))
        if "findings" in entry:
            findings[index] = _entry_findings(entry["findings"], index, path)
        if "code" in entry:
            code[index] = _entry_code(entry["code"], index, path)
        raw = entry.get("samples")
        if raw is not None:
            if not isinstance(raw, list) or not all(isinstance(v, (int, float)) and not isinstance(v, bool)
                                                    and _finite(v) and v > 0 for v in raw):
                raise _fail(path, f"entries[{index}].samples must be a list of raw timings (positive numbers of "
                                  "seconds)")
            samples[entry["name"]] = [float(v) for v in raw]
    # Written for every kernel entry when the run collected ncu sections, else for none: "not known".
    return Measurement(make_table(rows), source=str(path), settings=dict(settings), samples=samples,
                       findings=findings or None, code=code or None)


def _entry_code(value: Any, index: int, path: Path) -> KernelCode:
    """An entry's machine code: ``{"id": 16 hex digits, "opcodes": {opcode: count}}``."""
    opcodes = value.get("opcodes") if isinstance(value, dict) else None
    if not (isinstance(value, dict) and set(value) == {"id", "opcodes"} and isinstance(value["id"], str)
            and _CODE_ID.match(value["id"]) and isinstance(opcodes, dict) and len(opcodes) <= MAX_OPCODES
            and all(isinstance(op, str) and 0 < len(op) <= 64 and isinstance(count, int)
                    and not isinstance(count, bool) and count >= 0 for op, count in opcodes.items())):
        raise _fail(path, f"entries[{index}].code must be {{\"id\": 16 hex digits, \"opcodes\": {{opcode: count}}}} "
                          f"(at most {MAX_OPCODES} opcodes)")
    return KernelCode(value["id"], dict(opcodes))


def _entry_findings(value: Any, index: int, path: Path) -> tuple[str, ...]:
    if not isinstance(value, list) or len(value) > MAX_FINDINGS or not all(
            isinstance(v, str) and 0 < len(v) <= MAX_FINDING_CHARS for v in value):
        raise _fail(path, f"entries[{index}].findings must be a list of at most {MAX_FINDINGS} ncu rule findings "
                          f"(non-empty strings of at most {MAX_FINDING_CHARS} characters)")
    return tuple(value)


def _checked_document(document: Any, path: Path) -> tuple[dict[str, Any], Sequence[Any], dict[str, Any]]:
    """The document's top level checked: its device, entries and settings."""
    if not looks_like_baseline(document):
        raise _fail(path, f'"format" must be "{FORMAT_NAME}"')
    version = document.get("version")
    if version != FORMAT_VERSION:
        raise InputError(path, f"baseline format version {version!r} is not supported (this perfgate reads "
                               f"version {FORMAT_VERSION})", "upgrade perfgate or regenerate the baseline")
    unknown = sorted(set(document) - _TOP_KEYS)
    if unknown:
        raise _fail(path, f"unknown key(s) {', '.join(unknown)}")
    device = document.get("device")
    if not isinstance(device, dict) or not isinstance(device.get("name"), str) or not device["name"] or \
            not isinstance(device.get("cc"), str):
        raise _fail(path, '"device" must be an object with string "name" and "cc"')
    entries = document.get("entries")
    if not isinstance(entries, Sequence) or isinstance(entries, str):  # a list; baseline_documents' own Sequence
        raise _fail(path, '"entries" must be a list')
    if not entries:
        raise InputError(path, "not a valid perfgate baseline: it has no entries, so it would gate nothing",
                         "regenerate it with 'perfgate baseline REPORT' from a report with launches or benchmarks")
    settings = document.get("settings", {})
    if not isinstance(settings, dict) or not all(isinstance(v, (str, int, float, bool)) or v is None
                                                 for v in settings.values()):
        raise _fail(path, '"settings" must be an object of plain values (strings, numbers, booleans)')
    if not isinstance(document.get("source", ""), str):
        raise _fail(path, '"source" must be a string')
    if not isinstance(document.get("regressions", []), list):
        raise _fail(path, '"regressions" must be a list')
    check_name_length((device["name"],), path, "device name")
    return device, entries, settings


# A region "signature" that is its entry count (as the H200 timeline fixtures hold): read as none.
_REGION_ENTRY_COUNT = re.compile(r"one entry|median of \d+ entries")


def _signature(kind: str, demangled: str) -> str:
    """An entry's ``demangled`` as read: a kernel's mangled name (CUPTI's, as a timeline baseline keeps it)
    demangled, so it matches the traces read today; no signature for a region that stored its entry count."""
    if kind == KIND_KERNEL:
        return demangled_name(demangled)
    return "" if _REGION_ENTRY_COUNT.fullmatch(demangled) else demangled


def _entry_rows(entry: Any, index: int, device: dict[str, Any], path: Path) -> list[dict[str, Any]]:
    """One entry checked, as table rows: one per metric (a NaN duration when it has none)."""
    where = f"entries[{index}]"
    if not isinstance(entry, dict):
        raise _fail(path, f"{where} must be an object")
    unknown = sorted(set(entry) - _ENTRY_KEYS)
    if unknown:
        raise _fail(path, f"{where} has unknown key(s) {', '.join(unknown)}")
    kind = entry.get("kind")
    if kind not in KINDS:
        raise _fail(path, f'{where}.kind must be one of {", ".join(KINDS)}')
    name = entry.get("name")
    if not isinstance(name, str) or not name:
        raise _fail(path, f"{where}.name must be a non-empty string")
    ordinal = entry.get("ordinal", 0)
    if not isinstance(ordinal, int) or isinstance(ordinal, bool) or ordinal < 0:
        raise _fail(path, f"{where}.ordinal must be a non-negative integer")
    metrics = entry.get("metrics")
    if not isinstance(metrics, dict):
        raise _fail(path, f"{where}.metrics must be an object")
    for key in ("demangled", "region", "grid", "block"):
        if not isinstance(entry.get(key, ""), str):
            raise _fail(path, f"{where}.{key} must be a string")
    check_name_length((name, entry.get("demangled", ""), entry.get("region", "")), path)
    base = {
        "kind": kind, "kernel": name, "demangled": _signature(kind, entry.get("demangled", name)),
        "region": entry.get("region", ""),
        "ordinal": ordinal, "launch": index, "device": device["name"], "cc": device.get("cc", ""),
        "grid": entry.get("grid", ""), "block": entry.get("block", ""),
    }
    rows = [{**base, "metric": metric, "unit": unit, "value": value}
            for metric, unit, value in (_metric_value(metric, measured, where, path)
                                        for metric, measured in metrics.items())]
    if not metrics:
        rows.append({**base, "metric": "gpu__time_duration.sum", "unit": "ns", "value": math.nan})
    return rows


def _metric_value(metric: str, measured: Any, where: str, path: Path) -> tuple[str, str, float]:
    """One ``"metric": {"value", "unit"}`` of an entry checked: (metric, unit, value; NaN for null)."""
    at = f"{where}.metrics[{shown(metric)}]"
    if not isinstance(measured, dict) or "value" not in measured or set(measured) - {"value", "unit"}:
        raise _fail(path, f'{at} must be an object with "value" and "unit"')
    value, unit = measured["value"], measured.get("unit", "")
    if not isinstance(unit, str):
        raise _fail(path, f"{at}.unit must be a string")
    if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float))
                              or not _finite(value)):
        raise _fail(path, f"{at}.value must be a finite number or null")
    problem = None if value is None else value_problem(metric, unit, float(value))
    if problem is not None:
        raise _fail(path, f"{at}.value {problem}")
    return metric, unit, math.nan if value is None else float(value)


def read_baseline(path: str | os.PathLike[str]) -> Measurement:
    """Read and validate one baseline file (as big and as deeply nested as any input may be, no more)."""
    file_path = Path(path)
    try:
        size = file_path.stat().st_size
    except OSError as exc:
        raise InputError(file_path, f"cannot read baseline ({exc.strerror or exc})") from exc
    if size > max_input_bytes():
        raise InputError(file_path, f"{size:,} bytes, more than perfgate's input limit of "
                                    f"{size_text(max_input_bytes())}", FIX_SIZE)
    return table_from_baseline(load_json(file_path), file_path)
