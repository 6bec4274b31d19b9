"""Kernels' codes from the modules they were loaded from: cubins, then Triton's compile cache.

The timeline source's traced child (``perfgate.plugin.kernel_codes``) hands over the cubins CUPTI saw loaded, or,
under torch.profiler, none: the kernels its exported trace names (``trace_kernels``) are looked up in Triton's cache
alone; ``perfgate codes`` the cubins and cache its user names (``perfgate.cli.codes``). Each kernel's ``code_id`` is the
one ncu's report gives for the same machine code (``perfgate.collect.cubin``); where a name has two codes, which
one a launch ran is not known from its name, and it gets none.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from pathlib import Path

from perfgate.collect.cubin import CubinError, cubin_codes
from perfgate.collect.timeline import SOURCE_SETTING, TIMELINE
from perfgate.collect.triton_cache import triton_codes
from perfgate.demangled import demangled_name
from perfgate.errors import InputError
from perfgate.table import KernelCode
from perfgate.vocabulary import KIND_KERNEL


def trace_kernels(trace: Path) -> tuple[set[str], set[str]]:
    """The (demangled) names of the kernels the trace file ``trace`` launched, and its GPUs' compute
    capabilities; InputError for a file that is not a trace (an ``.ncu-rep`` holds its kernels' code already)."""
    from perfgate.collect import read_table  # every reader: only where a trace is read

    measurement = read_table(trace)
    if measurement.settings.get(SOURCE_SETTING) != TIMELINE:
        raise InputError(trace, "is not a trace", "an .ncu-rep holds its kernels' code already: compare it with "
                                                  "--code-identity; give this command a trace")
    table = measurement.table
    kernel_rows = table.equals("kind", KIND_KERNEL)
    return ({str(name) for name in table["demangled"][kernel_rows].tolist()},
            {str(cc) for cc in table["cc"][kernel_rows].tolist() if cc})


def known_kernels(codes: Collection[str], kernels: Collection[str]) -> set[str]:
    """The kernels of ``kernels`` (demangled names) that a code of ``codes`` (by symbol or name) is known for."""
    return {demangled_name(name) for name in codes} & set(kernels)


def kernel_codes(names: Collection[str], cubins: Iterable[bytes], triton_cache: Path | None = None,
                 ccs: Collection[str] = ()) -> tuple[dict[str, KernelCode], list[str]]:
    """The code of each kernel of ``names`` (as CUPTI names them), and what could not be read. A name that two
    loaded modules hold with other code is ambiguous: no code. ``ccs``: the traced GPUs' compute capabilities
    (Triton's cache entries for other GPUs are left out)."""
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
        codes.update(triton_codes(missing, triton_cache, ccs=ccs))
    return codes, problems
