"""The timeline source's code identity: each traced kernel's ``code_id`` from the cubin it ran from.

In the traced child (``perfgate.plugin.tracer``, when ``PERFGATE_CODE_IDENTITY`` is set: ``--perfgate-code-identity``)
CUPTI's module-loaded callback hands over each module's cubin as CUDA loads it; at the end of the test the cubins
are disassembled for the kernels the trace launched (``perfgate.collect.cubin``: the same ``code_id`` as ncu's
report gives), then Triton's compile cache for the kernels whose module loaded before the trace began. The child
writes them beside its trace (``<trace>.codes.json``: ``{"codes": {name: {"id", "opcodes"}}, "problems": [...]}``,
names as CUPTI gives them); the parent gives each kernel launch of the trace's table its code
(``Measurement.code``), which the same-code rule compares.
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
from collections.abc import Collection, Iterable, Mapping
from pathlib import Path
from typing import Any

import numpy as np

from perfgate.table import KernelCode, Measurement
from perfgate.vocabulary import KIND_KERNEL

CODES_SUFFIX = ".codes.json"


class _ModuleResourceData(ctypes.Structure):
    """CUPTI's ``CUpti_ModuleResourceData``, which the resource callback's ``resource_descriptor`` points to."""

    _fields_ = [("module_id", ctypes.c_uint32), ("cubin_size", ctypes.c_size_t), ("cubin", ctypes.c_void_p)]


class ModuleCubins:
    """Copies of the cubins CUDA loads while the test runs (CUPTI's ``MODULE_LOADED`` resource callback; the cubin
    is valid only inside the callback)."""

    def __init__(self, cupti: Any) -> None:
        self.cupti = cupti
        self.cubins: list[bytes] = []
        self.problems: list[str] = []
        self.subscriber: Any = None

    def start(self) -> None:
        try:
            self.subscriber = self.cupti.subscribe(self._loaded, None)
            self.cupti.enable_callback(1, self.subscriber, self.cupti.CallbackDomain.RESOURCE,
                                       self.cupti.CallbackIdResource.MODULE_LOADED)
        except Exception as exc:  # another CUPTI subscriber (one at a time), an older cupti-python
            self.problems.append(f"CUPTI's module-loaded callback is not available ({type(exc).__name__}: {exc})")

    def _loaded(self, userdata: Any, domain: Any, callback_id: Any, data: Any) -> None:
        pointer = getattr(data, "resource_descriptor", None)
        if not pointer:
            return
        module = _ModuleResourceData.from_address(int(pointer))
        if module.cubin and module.cubin_size:
            self.cubins.append(ctypes.string_at(module.cubin, module.cubin_size))

    def stop(self) -> None:
        if self.subscriber is not None:
            with contextlib.suppress(Exception):
                self.cupti.unsubscribe(self.subscriber)
            self.subscriber = None


def kernel_codes(names: Collection[str], cubins: Iterable[bytes],
                 triton_cache: Path | None = None) -> tuple[dict[str, KernelCode], list[str]]:
    """The code of each kernel of ``names`` (as CUPTI names them), and what could not be read. A name that two
    loaded modules hold with other code is ambiguous: no code."""
    from perfgate.collect.cubin import CubinError, cubin_codes
    from perfgate.collect.triton_cache import triton_codes

    wanted = set(names)
    found: dict[str, dict[str, KernelCode]] = {}
    problems: list[str] = []
    for cubin in cubins:
        try:
            codes = cubin_codes(cubin, wanted)
        except CubinError as exc:
            if str(exc) not in problems:
                problems.append(str(exc))
            continue
        for name, code in codes.items():
            found.setdefault(name, {})[code.code_id] = code
    codes = {name: next(iter(by_id.values())) for name, by_id in found.items() if len(by_id) == 1}
    missing = wanted - found.keys()
    if missing:
        codes.update(triton_codes(missing, triton_cache))
    return codes, problems


def codes_file(trace: Path) -> Path:
    return trace.with_name(trace.name + CODES_SUFFIX)


def write_codes(trace: Path, records: Iterable[Mapping[str, Any]], cubins: ModuleCubins,
                kernel_kinds: Collection[int]) -> None:
    """The traced kernels' codes beside the trace file ``trace``."""
    names = {str(r["name"]) for r in records if r.get("kind") in kernel_kinds and r.get("name")}
    try:
        codes, problems = kernel_codes(names, cubins.cubins)
    except Exception as exc:  # the trace is written: a failure here costs the codes, never the test's result
        codes, problems = {}, [f"reading the loaded modules failed ({type(exc).__name__}: {exc})"]
    document = {"codes": {name: {"id": code.code_id, "opcodes": dict(code.opcodes)} for name, code in codes.items()},
                "problems": [*cubins.problems, *problems]}
    target = codes_file(trace)
    temporary = target.with_name(target.name + ".tmp")
    temporary.write_text(json.dumps(document), encoding="utf-8")
    os.replace(temporary, target)


def read_codes(trace: Path) -> tuple[dict[str, KernelCode], list[str]]:
    """What the child wrote beside ``trace``: codes by kernel name, and its problems; nothing where it wrote none."""
    try:
        document = json.loads(codes_file(trace).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}, []
    codes = {str(name): KernelCode(str(entry["id"]), {str(k): int(v) for k, v in entry["opcodes"].items()})
             for name, entry in (document.get("codes") or {}).items()
             if isinstance(entry, dict) and isinstance(entry.get("id"), str) and isinstance(entry.get("opcodes"), dict)}
    return codes, [str(problem) for problem in document.get("problems") or []]


def with_codes(measurement: Measurement, codes: Mapping[str, KernelCode]) -> Measurement:
    """``measurement`` with each kernel launch's code (``Measurement.code``), by its demangled name; no code known:
    unchanged."""
    from perfgate.demangled import demangled_name

    by_demangled: dict[str, KernelCode | None] = {}
    for name, code in codes.items():
        key = demangled_name(name)
        by_demangled[key] = code if by_demangled.get(key, code) == code else None  # two codes: ambiguous
    table = measurement.table
    kernels = np.flatnonzero(table.equals("kind", KIND_KERNEL))
    launch_code: dict[int, KernelCode] = {}
    for launch, demangled in zip(table["launch"][kernels].tolist(), table["demangled"][kernels].tolist(),
                                 strict=True):
        known = by_demangled.get(str(demangled))
        if known is not None:
            launch_code[int(launch)] = known
    return measurement._replace(code=launch_code) if launch_code else measurement
