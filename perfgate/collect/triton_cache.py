"""Triton kernels' code identity from Triton's compile cache.

Triton keeps each compiled kernel in ``$TRITON_CACHE_DIR`` (default ``~/.triton/cache``) as
``<hash>/<name>.cubin`` beside ``<name>.json``, its metadata, whose ``name`` is the kernel's symbol in the cubin
and the name CUPTI gives its launches. The cache keeps every version a kernel was compiled in (other source,
other constants, other Triton): a name whose entries hold more than one code is ambiguous, and gets none.
"""

from __future__ import annotations

import json
import os
from collections.abc import Collection, Mapping
from pathlib import Path

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


def _entries(cache: Path, names: Collection[str]) -> list[tuple[str, Path]]:
    """(kernel name, its cubin) for each cached kernel named in ``names``."""
    found = []
    for metadata in sorted(cache.glob("*/*.json")):
        if metadata.name.startswith(GROUP_PREFIX):
            continue
        cubin = metadata.with_suffix(".cubin")
        try:
            name = json.loads(metadata.read_text(encoding="utf-8")).get("name")
        except (OSError, ValueError, AttributeError):  # another tool's file, a half-written entry
            continue
        if isinstance(name, str) and name in names and cubin.is_file():
            found.append((name, cubin))
    return found


def triton_codes(names: Collection[str], cache: Path | None = None,
                 nvdisasm: str | None = None) -> dict[str, KernelCode]:
    """The code of each kernel of ``names`` that Triton's cache holds in one version only."""
    folder = triton_cache_dir() if cache is None else cache
    seen: dict[str, dict[str, KernelCode]] = {}  # name -> code_id -> its code
    for name, cubin in _entries(folder, set(names)) if folder.is_dir() else []:
        try:
            code = cubin_codes(cubin.read_bytes(), {name}, nvdisasm=nvdisasm).get(name)
        except (OSError, CubinError):
            continue
        if code is not None:
            seen.setdefault(name, {})[code.code_id] = code
    return {name: next(iter(codes.values())) for name, codes in seen.items() if len(codes) == 1}
