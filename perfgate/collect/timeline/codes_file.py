"""The kernels' machine code beside a trace: ``<trace>.codes.json``, and each kernel launch's code from it.

The timeline source's traced child writes it beside its trace (``perfgate.plugin.kernel_codes``, from the cubins
CUDA loaded and Triton's compile cache)::

    {"codes": {"<kernel name as the trace names it>": {"id": "<16 hex digits>", "opcodes": {"FADD": 2, ...}}},
     "problems": ["what could not be read", ...]}

The plugin reads it (``--perfgate-code-identity``), and so does ``read_table(..., code=True)`` (``perfgate compare
--code-identity``) where it lies beside a trace it reads: the same-code rule judges two saved traces as the
plugin judges the live ones. A trace stored compressed (``trace.cupti.json.gz``) finds it under either name
(``trace.cupti.json.gz.codes.json`` or ``trace.cupti.json.codes.json``). A file not of this shape is an error,
never a guessed code.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np

from perfgate.demangled import demangled_name
from perfgate.errors import InputError
from perfgate.table import CODE_SHAPE, KernelCode, Measurement, code_document, code_of_document
from perfgate.vocabulary import KIND_KERNEL

CODES_SUFFIX = ".codes.json"
CODE_PROBLEMS_SETTING = "code_problems"  # a measurement's setting: what the codes file's writer could not read
MAX_PROBLEMS = 20
_COMPRESSED = (".gz", ".xz")
MAX_CODES_BYTES = 64 << 20  # thousands of kernels' opcode counts are a few MB
_FIX = ("write it again with the trace (pytest --perfgate --perfgate-source=timeline --perfgate-code-identity), "
        "or remove it to compare without the kernels' code")


def codes_file(trace: Path) -> Path:
    """Where the codes of the trace file ``trace`` are written."""
    return trace.with_name(trace.name + CODES_SUFFIX)


def codes_beside(trace: Path) -> Path | None:
    """The codes file beside ``trace``, if there is one: under its name, or a compressed trace's name without the
    compression's suffix."""
    names = [trace.name]
    if trace.suffix in _COMPRESSED:
        names.append(trace.stem)
    return next((found for found in (trace.with_name(name + CODES_SUFFIX) for name in names) if found.is_file()),
                None)


def codes_json(codes: Mapping[str, KernelCode], problems: Sequence[str]) -> str:
    """A codes file's text."""
    return json.dumps({"codes": {name: code_document(code) for name, code in codes.items()},
                       "problems": list(problems)})


def read_codes(path: Path) -> tuple[dict[str, KernelCode], list[str]]:
    """A codes file's codes by kernel name, and the problems its writer met; InputError for a file that is not
    one (unreadable, not JSON, a code not of ``CODE_SHAPE``)."""
    try:
        if path.stat().st_size > MAX_CODES_BYTES:
            raise InputError(path, f"a codes file over {MAX_CODES_BYTES >> 20} MB", _FIX)
        document = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise InputError(path, f"cannot read the kernels' codes ({exc.strerror or exc})", _FIX) from None
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise InputError(path, f"the kernels' codes are not JSON ({exc})", _FIX) from None
    entries = document.get("codes") if isinstance(document, dict) else None
    problems = document.get("problems", []) if isinstance(document, dict) else None
    if not isinstance(entries, dict) or not isinstance(problems, list):
        raise InputError(path, 'not a codes file: expected {"codes": {kernel: code}, "problems": [...]}', _FIX)
    codes: dict[str, KernelCode] = {}
    for name, entry in entries.items():
        code = code_of_document(entry)
        if code is None or not name:
            raise InputError(path, f"the code of {name!r} must be {CODE_SHAPE}", _FIX)
        codes[name] = code
    return codes, [str(problem) for problem in problems]


def with_codes(measurement: Measurement, codes: Mapping[str, KernelCode]) -> Measurement:
    """``measurement`` with each kernel launch's code (``Measurement.code``), by its demangled name (a CUPTI trace
    names kernels mangled, torch.profiler demangled); no code known: unchanged. Two codes under one demangled
    name: which one a launch ran is not known, so none."""
    by_demangled: dict[str, KernelCode | None] = {}
    for name, code in codes.items():
        key = demangled_name(name)
        by_demangled[key] = code if by_demangled.get(key, code) == code else None
    table = measurement.table
    kernels = np.flatnonzero(table.equals("kind", KIND_KERNEL))
    launch_code: dict[int, KernelCode] = {}
    for launch, demangled in zip(table["launch"][kernels].tolist(), table["demangled"][kernels].tolist(),
                                 strict=True):
        known = by_demangled.get(str(demangled))
        if known is not None:
            launch_code[int(launch)] = known
    return measurement._replace(code=launch_code) if launch_code else measurement


def trace_codes(measurement: Measurement, trace: Path) -> Measurement:
    """A trace's measurement with the codes of the codes file beside it (``codes_beside``), if there is one, and
    what its writer could not read (the setting ``CODE_PROBLEMS_SETTING``, which the compare's notes say)."""
    found = codes_beside(trace)
    if found is None:
        return measurement
    codes, problems = read_codes(found)
    if problems:
        listed = json.dumps(problems[:MAX_PROBLEMS], separators=(",", ":"))
        measurement = measurement._replace(settings={**measurement.settings, CODE_PROBLEMS_SETTING: listed})
    return with_codes(measurement, codes)

