"""Kernel identity: which launches of a side are "the same kernel", before either side is matched.

A kernel is known by its full demangled name (template arguments included: ``gemm_tiled<128, 64, 8>`` and
``gemm_tiled<64, 64, 8>`` are two kernels, and so are PyTorch's ``vectorized_elementwise_kernel<4, AddFunctor>``
and ``…<4, MulFunctor>``), its NVTX region, and its launch configuration: grid, block and shared memory per
block. The occurrence index (the n-th launch) counts only launches of the same identity, so an op inserted
before a loop, or kernels reordered, leave every other launch paired with its own.

A part takes part only when both sides know it: a side without grid/block (an old baseline), without the
shared-memory launch facts, or with bare function names only (a CSV exported with ``--print-kernel-base
function``) would otherwise leave every launch unmatched.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from perfgate.columns import Columns, factorize, objects
from perfgate.compare.arrays import Ints
from perfgate.compare.codes import Coded, combined, counts_by_pair, distinct_coded
from perfgate.demangled import short_name
from perfgate.vocabulary import KIND_KERNEL

SHARED_MEMORY_METRICS = ("launch__shared_mem_per_block_static", "launch__shared_mem_per_block_dynamic")
_SEPARATOR = "\x1f"  # between the parts of an identity: no name a compiler writes holds it


class ShapeParts(NamedTuple):
    """Which parts of a launch's identity both sides know, and so take part in it."""

    grid: bool
    block: bool
    shared_memory: bool
    demangled: bool = True  # full demangled names on both sides (else the function names are compared)


def shape_parts(base: Columns, cur: Columns, base_table: Columns, cur_table: Columns) -> ShapeParts:
    """The configuration parts known on both sides (``base``/``cur``: one row per launch)."""
    def known(launches: Columns, column: str) -> bool:
        kernels = launches.picked(column, np.flatnonzero(launches.equals("kind", KIND_KERNEL)))
        return bool(kernels.size) and bool((kernels != "").any())

    def has_shared(table: Columns) -> bool:
        _, names = table.coded("metric")
        return any(name in SHARED_MEMORY_METRICS for name in names.tolist())

    def demangled(launches: Columns) -> bool:  # names beyond the bare function name (not a CSV's "function" base)
        kernels = np.flatnonzero(launches.equals("kind", KIND_KERNEL))
        return bool((launches.picked("demangled", kernels) != launches.picked("kernel", kernels)).any())

    return ShapeParts(grid=known(base, "grid") and known(cur, "grid"),
                      block=known(base, "block") and known(cur, "block"),
                      shared_memory=has_shared(base_table) and has_shared(cur_table),
                      demangled=demangled(base) == demangled(cur))


def shared_memory(table: Columns, launches: Ints) -> Coded:
    """Per launch number in ``launches``, its static and dynamic shared memory per block as text ("" unknown), as
    codes into the distinct texts."""
    codes, names = table.coded("metric")
    numbers = table["launch"].astype(np.int64, copy=False)
    size = int(max(int(numbers.max(initial=-1)), int(launches.max(initial=-1)))) + 1
    parts = []
    for metric in SHARED_MEMORY_METRICS:
        value = np.full(size, np.nan)
        matching = np.flatnonzero(names == metric)
        if matching.size:
            rows = np.flatnonzero(codes == matching[0])[::-1]  # of a launch's rows, the first wins
            value[numbers[rows]] = table["value"][rows]
        distinct, inverse = np.unique(np.nan_to_num(value[launches], nan=-1.0), return_inverse=True)
        parts.append((inverse.reshape(-1).astype(np.int64), distinct))  # -1: not known (NaN never equals itself)
    found, first = combined(*parts)
    pairs = zip(*(values[part_codes[first]].tolist() for part_codes, values in parts))
    return found, objects(["/".join(f"{v:g}" if v >= 0 else "" for v in pair) if max(pair) >= 0 else ""
                           for pair in pairs])  # neither known (traces): no "/" to show


def no_shared_memory(count: int) -> Coded:
    """``shared_memory`` where it takes no part in identities: "" for every launch."""
    return np.zeros(count, dtype=np.int64), objects([""])


def identities(launches: Columns, smem: Coded, parts: ShapeParts) -> Coded:
    """Per launch (one row each), its identity, as codes into the distinct identities: the demangled name (the
    function name where none, or where one side has only function names), grid, block and shared memory, those
    both sides know. Benchmarks and region totals are known by their name alone."""
    kernel = launches.equals("kind", KIND_KERNEL)
    kernel_coded = (kernel.astype(np.int64), objects([False, True]))
    used = [coded for known, coded in ((True, distinct_coded(launches, "kernel")),
                                        (parts.demangled, distinct_coded(launches, "demangled")),
                                        (parts.grid, distinct_coded(launches, "grid")),
                                        (parts.block, distinct_coded(launches, "block")),
                                        (parts.shared_memory, smem)) if known]
    found, first = combined(kernel_coded, *used)
    texts = []
    for row in first.tolist():
        name, *rest = (values[codes[row]] for codes, values in used)
        if not kernel[row]:
            texts.append(name)
            continue
        if parts.demangled:
            demangled, *rest = rest
            name = demangled if demangled != "" else name
        for part in rest:
            name = name + _SEPARATOR + part
        texts.append(name)
    text_codes, distinct = factorize(objects(texts))  # two combinations may read the same
    return text_codes[found], distinct


def occurrences(launches: Columns, identity: Coded) -> Ints:
    """Per launch, its index among the launches of the same (kind, identity, region), in report order."""
    key = combined(distinct_coded(launches, "kind"), identity, distinct_coded(launches, "region"))[0]
    order = np.lexsort((launches["launch"], key))  # by key, then report order
    sorted_key = key[order]
    starts = np.flatnonzero(np.r_[True, sorted_key[1:] != sorted_key[:-1]])
    rank = np.arange(len(order)) - np.repeat(starts, np.diff(np.r_[starts, len(order)]))
    found = np.empty(len(order), dtype=np.int64)
    found[order] = rank
    return found


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


EDITS_ALIGNED = 64  # launches inserted or removed in a region up to which its sequences are aligned
ALIGNED_LAUNCHES = 20_000  # and its launches a side: the search costs up to (n + m) x EDITS_ALIGNED steps


def aligned_occurrences(base: Columns, cur: Columns) -> Ints:
    """The current run's occurrences, aligned with the baseline's in the regions where some identity is launched a
    different number of times on each side (an op inserted into a step): there the two sequences of identities are
    aligned (``common_positions``), so that the launch which is new is the one inserted, not the last of its
    identity. Elsewhere, and where more than ``EDITS_ALIGNED`` launches differ or a side holds more than
    ``ALIGNED_LAUNCHES``, the n-th launch of an identity is the n-th."""
    found: Ints = cur["occurrence"].copy()
    for region in _regions_counted_apart(base, cur):
        b_rows, c_rows = _in_order(base, region), _in_order(cur, region)
        if max(len(b_rows), len(c_rows)) > ALIGNED_LAUNCHES:
            continue
        b_ids, c_ids = base["identity"][b_rows].tolist(), cur["identity"][c_rows].tolist()
        common = common_positions(b_ids, c_ids, EDITS_ALIGNED)
        if common is None:
            continue
        paired = dict((j, i) for i, j in common)
        counts: dict[str, int] = {}
        for identity in b_ids:
            counts[identity] = counts.get(identity, 0) + 1
        for position, row in enumerate(c_rows.tolist()):
            if position in paired:
                found[row] = base["occurrence"][b_rows[paired[position]]]
            else:  # past the baseline's occurrences of its identity: new
                found[row] = counts.get(c_ids[position], 0)
                counts[c_ids[position]] = found[row] + 1
    return found


def common_positions(a: list[str], b: list[str], limit: int) -> list[tuple[int, int]] | None:
    """The positions (i, j) of a longest common subsequence of ``a`` and ``b``, by Myers' O((n + m) D) diff; None
    when more than ``limit`` items differ. By hand: ``difflib`` finds the longest common *block* first, which on a
    repeated step (gemm, add, gelu, mul, gemm, add, ...) aligns one step with the next."""
    n, m = len(a), len(b)
    frontier: dict[int, int] = {1: 0}  # per diagonal k = x - y, the furthest x reached
    trace = []
    for d in range(min(limit, n + m) + 1):
        trace.append(dict(frontier))
        for k in range(-d, d + 1, 2):
            if k == -d or (k != d and frontier[k - 1] < frontier[k + 1]):
                x = frontier[k + 1]
            else:
                x = frontier[k - 1] + 1
            y = x - k
            while x < n and y < m and a[x] == b[y]:
                x, y = x + 1, y + 1
            frontier[k] = x
            if x >= n and y >= m:
                return _walked_back(trace, n, m)
    return None


def _walked_back(trace: list[dict[int, int]], n: int, m: int) -> list[tuple[int, int]]:
    """The common positions of the path Myers' search found, from its end back to its start."""
    x, y = n, m
    common = []
    for d in range(len(trace) - 1, -1, -1):
        frontier, k = trace[d], x - y
        previous = k + 1 if k == -d or (k != d and frontier[k - 1] < frontier[k + 1]) else k - 1
        start_x = frontier[previous]
        start_y = start_x - previous
        while x > start_x and y > start_y:
            x, y = x - 1, y - 1
            common.append((x, y))
        x, y = start_x, start_y
    return common[::-1]


def _in_order(launches: Columns, region: str) -> Ints:
    """The kernel launches of ``region``, in report order."""
    rows = np.flatnonzero((launches["region"] == region) & (launches["kind"] == KIND_KERNEL))
    ordered: Ints = rows[np.argsort(launches["launch"][rows], kind="stable")]
    return ordered


def _regions_counted_apart(base: Columns, cur: Columns) -> list[str]:
    """The regions where an identity launched on both sides is launched a different number of times."""
    def counted(launches: Columns) -> dict[tuple[str, str], int]:
        kernels = np.flatnonzero(launches.equals("kind", KIND_KERNEL))
        return counts_by_pair(distinct_coded(launches, "region"), distinct_coded(launches, "identity"), kernels)

    before, after = counted(base), counted(cur)
    return sorted({region for (region, identity), n in after.items() if before.get((region, identity), n) != n})
