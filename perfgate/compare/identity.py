"""Kernel identity: which launches of a side are "the same kernel", before either side is matched.

A kernel is known by its full demangled name (template arguments included: ``gemm_tiled<128, 64, 8>`` and
``gemm_tiled<64, 64, 8>`` are two kernels, and so are PyTorch's ``vectorized_elementwise_kernel<4, AddFunctor>``
and ``…<4, MulFunctor>``), its NVTX region, and its launch configuration: grid, block and shared memory per
block. The occurrence index (the n-th launch) counts only launches of the same identity, so an op inserted
before a loop, or kernels reordered, leave every other launch paired with its own.

A shape component takes part only when both sides know it: a side without grid/block (an old baseline) or
without the shared-memory launch facts would otherwise leave every launch unmatched.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from perfgate.collect.ncu_csv.names import kernel_function_name
from perfgate.columns import Columns, objects
from perfgate.compare.arrays import Ints, Objects
from perfgate.vocabulary import KIND_KERNEL

SHARED_MEMORY_METRICS = ("launch__shared_mem_per_block_static", "launch__shared_mem_per_block_dynamic")
_SEPARATOR = "\x1f"  # between the parts of an identity: no name a compiler writes holds it


class ShapeParts(NamedTuple):
    """Which parts of a launch's configuration both sides know, and so take part in its identity."""

    grid: bool
    block: bool
    shared_memory: bool


def shape_parts(base: Columns, cur: Columns, base_table: Columns, cur_table: Columns) -> ShapeParts:
    """The configuration parts known on both sides (``base``/``cur``: one row per launch)."""
    def known(launches: Columns, column: str) -> bool:
        kernels = launches[column][launches["kind"] == KIND_KERNEL]
        return bool(kernels.size) and bool((kernels != "").any())

    def has_shared(table: Columns) -> bool:
        _, names = table.coded("metric")
        return any(name in SHARED_MEMORY_METRICS for name in names.tolist())

    return ShapeParts(grid=known(base, "grid") and known(cur, "grid"),
                      block=known(base, "block") and known(cur, "block"),
                      shared_memory=has_shared(base_table) and has_shared(cur_table))


def shared_memory(table: Columns, launches: Ints) -> Objects:
    """Per launch number in ``launches``, its static and dynamic shared memory per block as text ("" unknown)."""
    found = {int(at): ["", ""] for at in launches.tolist()}
    codes, names = table.coded("metric")
    for slot, metric in enumerate(SHARED_MEMORY_METRICS):
        matching = [code for code, name in enumerate(names.tolist()) if name == metric]
        if not matching:
            continue
        rows = np.flatnonzero(codes == matching[0])
        for at, value in zip(table["launch"][rows].tolist(), table["value"][rows].tolist(), strict=True):
            if at in found and value == value:  # NaN: not known
                found[at][slot] = f"{value:g}"
    return objects(["/".join(found[int(at)]) for at in launches.tolist()])


def identities(launches: Columns, smem: Objects, parts: ShapeParts) -> Objects:
    """Per launch (one row each), its identity: the demangled name (the function name where none), grid, block
    and shared memory, those both sides know. Benchmarks and region totals are known by their name alone."""
    names = np.where(launches["demangled"] != "", launches["demangled"], launches["kernel"])
    pieces = [names.astype(object)]
    for used, column in ((parts.grid, launches["grid"]), (parts.block, launches["block"]),
                         (parts.shared_memory, smem)):
        if used:
            pieces.append(column)
    kernel = launches["kind"] == KIND_KERNEL
    found: Objects = objects([_SEPARATOR.join(p) if is_kernel else str(p[0])
                              for p, is_kernel in zip(zip(*(x.tolist() for x in pieces)), kernel.tolist())])
    found[~kernel] = launches["kernel"][~kernel]
    return found


def occurrences(launches: Columns, identity: Objects) -> Ints:
    """Per launch, its index among the launches of the same (kind, identity, region), in report order."""
    order = np.argsort(launches["launch"], kind="stable")
    keys = zip(launches["kind"][order].tolist(), identity[order].tolist(), launches["region"][order].tolist())
    counted: dict[tuple[str, str, str], int] = {}
    found = np.zeros(len(order), dtype=np.int64)
    for row, key in zip(order.tolist(), keys, strict=True):
        found[row] = counted.get(key, 0)
        counted[key] = found[row] + 1
    return found


def short_name(demangled: str) -> str:
    """``gemm_tiled<128, 64, 8>`` of ``void ns::gemm_tiled<128, 64, 8>(float *, int)``: the function name with its
    template arguments, without return type, namespaces or parameters."""
    bare = kernel_function_name(demangled)
    name = demangled.strip()
    if name.endswith(")"):
        depth = 0
        for i in range(len(name) - 1, -1, -1):
            depth += {")": 1, "(": -1}.get(name[i], 0)
            if depth == 0:
                name = name[:i].rstrip()
                break
    at = name.rfind(bare + "<") if bare else -1
    return name[at:] if at >= 0 and name.endswith(">") else bare


def name_of(identity: str) -> str:
    """The demangled name an identity was made of."""
    return identity.split(_SEPARATOR, 1)[0]


def shown(identity: str, with_shape: bool = False) -> str:
    """An identity as a reader sees it: ``gemm_tiled<128, 64, 8>``, with its configuration when asked
    (``gemm_tiled<128, 64, 8> grid (64, 1, 1) block (256, 1, 1)``)."""
    name, *shape = identity.split(_SEPARATOR)
    text = short_name(name)
    if with_shape:
        labels = ("grid", "block", "shared memory")
        text += "".join(f" {label} {part}" for label, part in zip(labels, shape) if part)
    return text
