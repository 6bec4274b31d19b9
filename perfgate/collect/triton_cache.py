"""Triton kernels' code identity from Triton's compile cache.

Triton keeps each compiled kernel in ``$TRITON_CACHE_DIR`` (default ``~/.triton/cache``) as
``<hash>/<name>.cubin`` beside ``<name>.json``, its metadata, whose ``name`` is the kernel's symbol in the cubin
and the name CUPTI gives its launches, and whose ``target`` the GPU it was compiled for (``{"backend": "cuda",
"arch": 90}``: Triton 3.x). The cache keeps every version a kernel was compiled in (other source, other constants,
other Triton, another GPU): a name whose entries hold more than one code is ambiguous, and gets none. Where the
traced GPUs are known (``ccs``), entries compiled for another GPU are left out first: a cache shared by two GPU
models holds each kernel once for each.
"""

from __future__ import annotations

import json
import os
from collections.abc import Collection, Mapping
from pathlib import Path
from typing import Any

from perfgate.collect.cubin import CubinError, cubin_codes
from perfgate.table import KernelCode

GROUP_PREFIX = "__grp__"  # Triton's index of one compilation's files, not a kernel's metadata


def triton_cache_dir(environ: Mapping[str, str] | None = None) -> Path:
    """Where Triton keeps compiled kernels: ``TRITON_CACHE_DIR``, else ``TRITON_HOME/.triton/cache``, else
    ``~/.triton/cache``."""
    env = os.environ if environ is None else environ
    if env.get("TRITON_CACHE_DIR"):
        return Path(env["TRITON_CACHE_DIR"])
    return Path(env.get("TRITON_HOME") or Path.home()) / ".triton" / "cache"


def _arch(cc: str) -> int | None:
    """Triton's ``target.arch`` of a compute capability (``"9.0"`` -> 90)."""
    major, _, minor = cc.partition(".")
    return int(major) * 10 + int(minor) if major.isdigit() and minor.isdigit() else None


def _for_other_gpu(metadata: dict[str, Any], archs: set[int]) -> bool:
    """Whether an entry was compiled for a GPU none of ``archs`` is; an entry that does not say is kept."""
    target = metadata.get("target")
    arch = target.get("arch") if isinstance(target, dict) else None
    return bool(archs) and isinstance(arch, int) and arch not in archs


def _entries(cache: Path, names: Collection[str], archs: set[int]) -> list[tuple[str, Path]]:
    """(kernel name, its cubin) for each cached kernel named in ``names``, compiled for one of ``archs`` (all
    where ``archs`` is empty)."""
    found = []
    for metadata_file in sorted(cache.glob("*/*.json")):
        if metadata_file.name.startswith(GROUP_PREFIX):
            continue
        cubin = metadata_file.with_suffix(".cubin")
        if not metadata_file.is_file():  # Triton writes files: a FIFO here would never end its read
            continue
        try:
            metadata = json.loads(metadata_file.read_text(encoding="utf-8"))
        except (OSError, ValueError, RecursionError):  # a half-written entry, or another tool's file
            continue
        name = metadata.get("name") if isinstance(metadata, dict) else None  # else another tool's file
        if isinstance(name, str) and name in names and cubin.is_file() and not _for_other_gpu(metadata, archs):
            found.append((name, cubin))
    return found


def triton_codes(names: Collection[str], cache: Path | None = None, nvdisasm: str | None = None,
                 ccs: Collection[str] = ()) -> dict[str, KernelCode]:
    """The code of each kernel of ``names`` that Triton's cache holds in one version only, among the entries
    compiled for the GPUs of compute capabilities ``ccs`` (every entry where none is given)."""
    folder = triton_cache_dir() if cache is None else cache
    archs = {arch for arch in map(_arch, ccs) if arch is not None}
    seen: dict[str, dict[str, KernelCode]] = {}  # name -> code_id -> its code
    unreadable: set[str] = set()  # a version whose code is not known may be the one that ran
    for name, cubin in _entries(folder, set(names), archs) if folder.is_dir() else []:
        try:
            code = cubin_codes(cubin.read_bytes(), {name}, nvdisasm=nvdisasm).get(name)
        except (OSError, CubinError):
            code = None
        if code is None:
            unreadable.add(name)
        else:
            seen.setdefault(name, {})[code.code_id] = code
    return {name: next(iter(codes.values())) for name, codes in seen.items()
            if len(codes) == 1 and name not in unreadable}
