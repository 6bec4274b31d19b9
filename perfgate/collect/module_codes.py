"""Kernels' codes from the modules they were loaded from: cubins, then Triton's compile cache.

The timeline source's traced child (``perfgate.plugin.kernel_codes``) hands over the cubins CUPTI saw loaded;
``perfgate codes`` the cubins and cache its user names (``perfgate.cli.codes``). Each kernel's ``code_id`` is the
one ncu's report gives for the same machine code (``perfgate.collect.cubin``); where a name has two codes, which
one a launch ran is not known from its name, and it gets none.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from pathlib import Path

from perfgate.collect.cubin import CubinError, cubin_codes
from perfgate.collect.triton_cache import triton_codes
from perfgate.table import KernelCode


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
