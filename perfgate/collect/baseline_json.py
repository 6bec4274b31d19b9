"""Reading a perfgate baseline file (``perfgate/schemas/baseline-v1.schema.json``): checked, as a table.

``perfgate.baseline`` builds and writes these files; the format is described there.
"""

from __future__ import annotations

import math
import os
import re
from array import array
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from perfgate.collect.json_input import FIX, open_json
from perfgate.columns import Columns, Gather, objects
from perfgate.collect.screen import shown, value_problem
from perfgate.demangled import demangled_name
from perfgate.errors import InputError
from perfgate.limits import (
    FIX_SIZE,
    MAX_FINDING_CHARS,
    MAX_FINDINGS,
    MAX_JSON_DEPTH,
    check_name_length,
    json_depth_exceeds,
    max_input_bytes,
    size_text,
)
from perfgate.table import CODE_SHAPE, COLUMNS, KernelCode, Measurement, code_of_document, normalized
from perfgate.vocabulary import KIND_KERNEL, KINDS

FORMAT_NAME = "perfgate-baseline"
FORMAT_VERSION = 1
# "regressions": what an update carried (perfgate.carried), for the reader of its diff; not read back.
_TOP_KEYS = {"format", "version", "device", "settings", "source", "entries", "regressions"}
_ENTRY_KEYS = {"kind", "name", "demangled", "region", "ordinal", "grid", "block", "metrics", "samples", "findings",
               "code"}


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


def streams_entries(key: str, document: dict[str, Any]) -> bool:
    """Whether a JSON input's list under ``key`` is a baseline's entries, read one at a time
    (``json_input.open_json``): the keys before it (``document``) make it a baseline and name its device, as
    perfgate writes them. A baseline of 200,000 launches (139 MB) parsed whole took about 900 MB."""
    return key == "entries" and looks_like_baseline(document) and "device" in document


def baseline_fix(key: str, document: dict[str, Any]) -> str:
    """The fix that a broken baseline's error gives, its entries streamed or not (``open_json``'s ``stream_fix``)."""
    return FIX


def table_from_baseline(document: Any, path: Path, entries: Iterable[Any] | None = None) -> Measurement:
    """Validate a parsed baseline document and turn it into the normalized table and its facts; ``entries``: its
    entries as they are read (``streams_entries``), ``document`` holding the rest (its keys after the entries
    are there once they run out). Each entry goes into columns as it comes: none is held as a dict."""
    device, listed, settings = _checked_document(document, path, streamed=entries is not None)
    columns = EntryColumns(device, path)
    for index, entry in enumerate(listed if entries is None else entries):
        try:
            columns.add(entry, index)
        except InputError:  # one too deep says so, as the document parsed whole does (entries are 2 levels down)
            if entries is not None and json_depth_exceeds(entry, MAX_JSON_DEPTH - 2):
                raise InputError(path, f"JSON nested more than {MAX_JSON_DEPTH} levels deep", FIX) from None
            raise
    if entries is not None:  # the keys after the entries (settings too, where a hand-edited file moved them)
        _, _, settings = _checked_document(document, path)
    if not columns.count:
        raise InputError(path, "not a valid perfgate baseline: it has no entries, so it would gate nothing",
                         "regenerate it with 'perfgate baseline REPORT' from a report with launches or benchmarks")
    # Written for every kernel entry when the run collected ncu sections, else for none: "not known".
    return Measurement(columns.table(), source=str(path), settings=dict(settings), samples=columns.samples,
                       findings=columns.findings or None, code=columns.code or None)


def _entry_code(value: Any, index: int, path: Path) -> KernelCode:
    """An entry's machine code: ``{"id": 16 hex digits, "opcodes": {opcode: count}}``."""
    code = code_of_document(value)
    if code is None:
        raise _fail(path, f"entries[{index}].code must be {CODE_SHAPE}")
    return code


def _entry_findings(value: Any, index: int, path: Path) -> tuple[str, ...]:
    if not isinstance(value, list) or len(value) > MAX_FINDINGS or not all(
            isinstance(v, str) and 0 < len(v) <= MAX_FINDING_CHARS for v in value):
        raise _fail(path, f"entries[{index}].findings must be a list of at most {MAX_FINDINGS} ncu rule findings "
                          f"(non-empty strings of at most {MAX_FINDING_CHARS} characters)")
    return tuple(value)


def _checked_document(document: Any, path: Path, streamed: bool = False
                      ) -> tuple[dict[str, Any], Sequence[Any], dict[str, Any]]:
    """The document's top level checked: its device, entries and settings (``streamed``: its entries are read
    one at a time and not there yet, nor the keys after them)."""
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


_LAUNCH_TEXTS = ("kind", "kernel", "demangled", "region", "grid", "block")


class EntryColumns:
    """A baseline's entries as table columns, filled an entry at a time as they are read: each launch's texts as
    codes into their distinct values, each metric a row (launch, metric and unit codes, value). 200,000 entries
    held as dicts, then as row dicts, took about 900 MB; as columns, about 30 MB."""

    def __init__(self, device: dict[str, Any], path: Path) -> None:
        self.device, self.path = device, path
        self.texts: dict[str, dict[str, int]] = {name: {} for name in (*_LAUNCH_TEXTS, "metric", "unit")}
        self.codes = {name: array("q") for name in _LAUNCH_TEXTS}  # per entry
        self.ordinals = array("q")
        self.rows = {name: array("q") for name in ("launch", "metric", "unit")}  # per row
        self.values = array("d")
        self.signatures: dict[tuple[str, str], str] = {}  # (kind, demangled) as written -> as read
        self.samples: dict[str, list[float]] = {}
        self.findings: dict[int, tuple[str, ...]] = {}
        self.code: dict[int, KernelCode] = {}
        self.count = 0

    def add(self, entry: Any, index: int) -> None:
        """One entry checked, into the columns: a row per metric (a NaN duration when it has none)."""
        kind, name = _entry_launch(entry, index, self.path)
        demangled = entry.get("demangled", name)
        signature = self.signatures.get((kind, demangled))
        if signature is None:
            signature = self.signatures.setdefault((kind, demangled), _signature(kind, demangled))
        launch = (kind, name, signature, entry.get("region", ""), entry.get("grid", ""), entry.get("block", ""))
        where = f"entries[{index}]"
        measured = [_metric_value(metric, value, where, self.path) for metric, value in entry["metrics"].items()]
        if "findings" in entry:
            self.findings[index] = _entry_findings(entry["findings"], index, self.path)
        if "code" in entry:
            self.code[index] = _entry_code(entry["code"], index, self.path)
        raw = entry.get("samples")
        if raw is not None:
            if not isinstance(raw, list) or not all(isinstance(v, (int, float)) and not isinstance(v, bool)
                                                    and _finite(v) and v > 0 for v in raw):
                raise _fail(self.path, f"{where}.samples must be a list of raw timings (positive numbers of seconds)")
            self.samples[name] = [float(v) for v in raw]
        for column, text in zip(_LAUNCH_TEXTS, launch, strict=True):
            known = self.texts[column]
            self.codes[column].append(known.setdefault(text, len(known)))
        self.ordinals.append(entry.get("ordinal", 0))
        for metric, unit, value in measured or [("gpu__time_duration.sum", "ns", math.nan)]:
            self.rows["launch"].append(self.count)
            self.rows["metric"].append(self.texts["metric"].setdefault(metric, len(self.texts["metric"])))
            self.rows["unit"].append(self.texts["unit"].setdefault(unit, len(self.texts["unit"])))
            self.values.append(value)
        self.count += 1

    def table(self) -> Columns:
        launch = np.array(self.rows["launch"], dtype=np.int64)

        def coded(column: str, codes: Any) -> Gather:
            return Gather(objects(list(self.texts[column])), np.array(codes, dtype=np.int64))

        data: dict[str, npt.NDArray[Any] | Gather] = {
            **{column: Gather(coded(column, self.codes[column]), launch) for column in _LAUNCH_TEXTS},
            "ordinal": Gather(np.array(self.ordinals, dtype=np.int64), launch), "launch": launch,
            "device": Gather(objects([self.device["name"]]), np.zeros(len(launch), dtype=np.int8)),
            "cc": Gather(objects([self.device.get("cc", "")]), np.zeros(len(launch), dtype=np.int8)),
            "metric": coded("metric", self.rows["metric"]), "unit": coded("unit", self.rows["unit"]),
            "value": np.array(self.values, dtype=np.float64),
        }
        return normalized(Columns({column: data[column] for column in COLUMNS}))


def _entry_launch(entry: Any, index: int, path: Path) -> tuple[str, str]:
    """One entry's launch checked (everything but its metrics' values, findings, code and samples): its kind and
    name."""
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
    if not isinstance(ordinal, int) or isinstance(ordinal, bool) or not 0 <= ordinal < 2**63:  # an int64 column
        raise _fail(path, f"{where}.ordinal must be a non-negative integer below 2**63")
    if not isinstance(entry.get("metrics"), dict):
        raise _fail(path, f"{where}.metrics must be an object")
    for key in ("demangled", "region", "grid", "block"):
        if not isinstance(entry.get(key, ""), str):
            raise _fail(path, f"{where}.{key} must be a string")
    check_name_length((name, entry.get("demangled", ""), entry.get("region", "")), path)
    return kind, name


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
    document, _, entries = open_json(file_path, streams_entries, stream_fix=baseline_fix)
    return table_from_baseline(document, file_path, entries)
