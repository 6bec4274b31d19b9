"""The timeline source's code identity: each traced kernel's ``code_id`` from the cubin it ran from.

In the traced child (``perfgate.plugin.tracer``, when ``PERFGATE_CODE_IDENTITY`` is set: ``--perfgate-code-identity``)
CUPTI's module-loaded callback hands over each module's cubin as CUDA loads it; at the end of the test the cubins
are disassembled for the kernels the trace launched, then Triton's compile cache is read for the kernels whose
module loaded before the trace began (``perfgate.collect.module_codes``: the same ``code_id`` as ncu's report
gives). Under torch.profiler (Kineto holds CUPTI's one callback subscriber: no cubin can be
kept) only Triton's cache is read, for the kernels the exported trace names, and the file's problems say how many
got no code (``write_cache_codes``). The child writes them beside its trace (``<trace>.codes.json``, names as CUPTI gives them:
``perfgate.collect.timeline.codes_file``, which reads it back); the parent gives each kernel launch of the trace's
table its code (``Measurement.code``), which the same-code rule compares.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import shutil
from collections.abc import Collection, Iterable, Mapping
from pathlib import Path
from typing import Any

from perfgate.collect.cubin import ENV_NVDISASM, elf_reader_missing, find_nvdisasm
from perfgate.collect.module_codes import kernel_codes, known_kernels, trace_kernels
from perfgate.collect.timeline.codes_file import codes_file, codes_json
from perfgate.collect.triton_cache import triton_cache_dir
from perfgate.demangled import kernel_function_name
from perfgate.table import KernelCode
from perfgate.vocabulary import some_of

LISTED_KERNELS = 3  # kernels named in the note of those without code; the rest are counted


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


def write_codes(trace: Path, records: Iterable[Mapping[str, Any]], cubins: ModuleCubins,
                kernel_kinds: Collection[int], ccs: Collection[str] = ()) -> None:
    """The traced kernels' codes beside the trace file ``trace`` (``perfgate.collect.timeline.codes_file``);
    ``ccs``: the traced GPUs' compute capabilities."""
    names = {str(r["name"]) for r in records if r.get("kind") in kernel_kinds and r.get("name")}
    try:
        codes, problems = kernel_codes(names, cubins.cubins, ccs=ccs)
    except Exception as exc:  # the trace is written: a failure here costs the codes, never the test's result
        codes, problems = {}, [f"reading the loaded modules failed ({type(exc).__name__}: {exc})"]
    _write(trace, codes, [*cubins.problems, *problems])


def _write(trace: Path, codes: Mapping[str, KernelCode], problems: list[str]) -> None:
    target = codes_file(trace)
    temporary = target.with_name(target.name + ".tmp")
    temporary.write_text(codes_json(codes, problems), encoding="utf-8")
    os.replace(temporary, target)


def write_cache_codes(trace: Path, ccs: Collection[str] = ()) -> None:
    """The codes Triton's compile cache holds for the kernels the trace file ``trace`` (torch.profiler's export)
    launched, beside it, and one problem saying which kernels got none and why. ``ccs``: the traced GPUs' compute
    capabilities where the trace names none."""
    try:
        kernels, traced_ccs = trace_kernels(trace)
        problems = _tools_missing()
        codes = {} if problems else kernel_codes(kernels, [], ccs=traced_ccs or ccs)[0]  # its problems: the cubins'
        problems += _without_code(kernels, codes)
    except Exception as exc:  # the trace is written: a failure here costs the codes, never the test's result
        codes, problems = {}, [f"reading the traced kernels' code failed ({type(exc).__name__}: {exc})"]
    with contextlib.suppress(OSError):
        _write(trace, codes, problems)


def _tools_missing() -> list[str]:
    """The problems of a traced process without nvdisasm or pyelftools (Triton's cache would give every kernel no
    code, silently)."""
    problems = [problem] if (problem := elf_reader_missing()) else []
    tool = find_nvdisasm()
    if tool is not None and shutil.which(tool) is not None:
        return problems
    named = f" ({ENV_NVDISASM} names {tool}, not a program)" if tool else ""
    return [f"no nvdisasm in the traced process{named}: install the CUDA toolkit or nvidia-cuda-nvdisasm, or name "
            f"it in {ENV_NVDISASM}", *problems]


def _without_code(kernels: Collection[str], codes: Mapping[str, KernelCode]) -> list[str]:
    """The one problem naming the traced kernels that got no code from Triton's cache; none where all did."""
    missing = set(kernels) - known_kernels(codes, kernels)
    if not missing:
        return []
    names = sorted({kernel_function_name(name) for name in missing})  # as the report names kernels
    listed = some_of(names, LISTED_KERNELS)
    return [f"{len(missing)} of {len(kernels)} traced kernel{'s' if len(kernels) != 1 else ''} "
            f"{'have' if len(missing) != 1 else 'has'} no machine code ({listed}): torch.profiler gives no loaded "
            f"modules, so only Triton's compile cache ({triton_cache_dir()}) was read; install cupti-python in the "
            "traced process for every kernel's code"]
