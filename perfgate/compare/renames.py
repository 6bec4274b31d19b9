"""Renames: which kernel of the baseline a kernel of the current run is, when its name changed.

Compilers that generate kernels name them with counters and heuristics that change between builds:
TorchInductor's ``triton_red_fused_sum_0`` becomes ``triton_red_fused_sum_3`` when the graph is
regenerated, and cuBLAS or CUTLASS pick ``…_tilesize256x128x8_stage3…`` instead of
``…_tilesize128x128x8_stage4…`` when a heuristic changes. Without help such a kernel is "missing"
under its old name and "new" under its new one, and is not compared at all.

A kernel here is an identity (``identity``: demangled name, grid, block, shared memory). Only identities
that are on one side only are considered (an identity present on both sides in a region keeps its
launches), always within one region, and these rules are tried in order:

1. ``config``: the same demangled name, another launch configuration (grid, block, shared memory).
2. ``template``: the same function name, other template arguments (``gemm_tiled<128, 64, 8>`` ->
   ``gemm_tiled<64, 64, 8>``).
3. ``alias``: the user's rules, ``[tool.perfgate] kernel_aliases`` (a glob pattern -> the name
   the kernels matching it are known by). A missing and a new kernel that come to the same name pair.
4. ``normalized``: the documented normalization of generated names (:func:`normalized_name`): a
   missing and a new kernel with the same normalized name pair.
5. ``position``: a missing and a new kernel launched the same number of times, at the same positions
   among the kernel launches of their region, with the same grid and block each time.

Under rules 1 to 4 a name shared by several missing or several new kernels is ambiguous: the
position rule may still tell them apart (and a single pair left over is then paired); what it cannot
is not guessed but listed (a note), and those kernels stay missing and new.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import NamedTuple
from fnmatch import fnmatchcase

import numpy as np

from perfgate.columns import Columns
from perfgate.compare.codes import counts_by_pair, distinct_coded
from perfgate.compare.identity import name_of
from perfgate.vocabulary import KIND_KERNEL, NO_ENTRIES

# How a launch of the current run found its baseline launch (a column of the launch table).
BY_NAME, BY_ALIAS, BY_NORMALIZED, BY_POSITION = "name", "alias", "normalized", "position"
BY_CONFIG, BY_TEMPLATE = "config", "template"
RULE_WORDS = {
    BY_CONFIG: "the same kernel with another launch configuration",
    BY_TEMPLATE: "the same kernel function with other template arguments",
    BY_ALIAS: "a [tool.perfgate] kernel_aliases rule",
    BY_NORMALIZED: "the same name once generated counters and tile shapes are dropped",
    BY_POSITION: "the same region, position and launch configuration",
}

# TorchInductor/Triton (triton_poi_fused_add_0, triton_red_fused_sum_3, triton_tem_fused_mm_1) and XLA
# (fusion_12, loop_add_fusion_3, input_reduce_fusion.1) number the kernels they generate.
_COUNTED = re.compile(r"^triton_|fusion")
_TRAILING_COUNTER = re.compile(r"[_.]\d+$")
# cuBLAS, cuBLASLt (nvjet) and CUTLASS name the kernel their heuristics chose by its tile, warp and
# stage shapes and its alignment: sm80_xmma_gemm_…_tilesize128x128x8_stage3_warpsize2x2x1_…_aligna4_…,
# ampere_sgemm_128x64_tn, cutlass_80_tensorop_s1688gemm_128x128_16x4_tn_align4, nvjet_hsh_128x256_64x4_2x1_v….
_LIBRARY = re.compile(r"(?i)^(?:sm\d+_xmma|(?:maxwell|pascal|volta|turing|ampere|ada|hopper|blackwell)_|cutlass|nvjet)"
                      r"|cublas")
_SHAPE_TOKEN = re.compile(r"(?i)^(?:(?:tilesize|warpsize|tile|cluster)?\d+(?:x\d+)+|stage\d+|align[a-z]?\d+)$")


def normalized_name(name: str) -> str:
    """``name`` without what code generators change between builds; other names are returned as they are.

    - Triton/TorchInductor and XLA kernels lose their trailing counter:
      ``triton_red_fused_sum_3`` -> ``triton_red_fused_sum``, ``loop_add_fusion_2`` -> ``loop_add_fusion``.
    - cuBLAS/cuBLASLt/CUTLASS kernels lose their tile, warp and stage shapes and alignments:
      ``ampere_sgemm_128x64_tn`` -> ``ampere_sgemm_tn``.
    """
    if _COUNTED.search(name):
        return _TRAILING_COUNTER.sub("", name)
    if _LIBRARY.search(name):
        return "_".join(token for token in name.split("_") if not _SHAPE_TOKEN.match(token))
    return name


def aliased_name(name: str, aliases: Mapping[str, str]) -> str:
    """The name a kernel is known by under the user's rules: that of the first pattern it matches, in the
    order written, else its own."""
    for pattern, known_as in aliases.items():
        if fnmatchcase(name, pattern):
            return known_as
    return name


class Ambiguity(NamedTuple):
    """Kernels (identities) of one region that one rule could not pair one to one."""

    region: str
    rule: str
    known_as: str
    baseline: tuple[str, ...]
    current: tuple[str, ...]


class Renames(NamedTuple):
    """The pairs found: (region, current identity) -> (baseline identity, rule), in the order found."""

    pairs: Mapping[tuple[str, str], tuple[str, str]] = NO_ENTRIES
    ambiguous: tuple[Ambiguity, ...] = ()

    def __bool__(self) -> bool:  # a tuple's truth would be its length
        return bool(self.pairs)


_Signature = tuple[tuple[int, str, str], ...]


class _Side:
    """The kernel launches of one side that are candidates, with what the position rule needs."""

    def __init__(self, launches: Columns, names: set[tuple[str, str]]) -> None:
        self._launches = launches
        self._names = names
        self._signatures: dict[tuple[str, str], _Signature] | None = None

    def signature(self, region: str, name: str) -> _Signature | None:
        """(position in the region, grid, block) of each launch, in ordinal order; None without a known config."""
        if self._signatures is None:
            self._signatures = self._all_signatures()
        found = self._signatures.get((region, name))
        if found is None or any(not grid or not block for _, grid, block in found):
            return None
        return found

    def _all_signatures(self) -> dict[tuple[str, str], _Signature]:
        frame = self._launches[np.argsort(self._launches["launch"], kind="stable")]
        counted: dict[str, int] = {}
        found: dict[tuple[str, str], list[tuple[int, int, str, str]]] = {}
        for region, kernel, ordinal, grid, block in zip(
                frame["region"].tolist(), frame["identity"].tolist(), frame["occurrence"].tolist(),
                frame["grid"].tolist(), frame["block"].tolist(), strict=True):
            position = counted.get(region, 0)  # the launch's position among its region's launches
            counted[region] = position + 1
            if (region, kernel) in self._names:
                found.setdefault((region, kernel), []).append((int(ordinal), position, str(grid), str(block)))
        return {key: tuple((p, g, b) for _, p, g, b in sorted(launches, key=lambda launch: launch[0]))
                for key, launches in sorted(found.items())}


def _by_position(region: str, missing: list[str], new: list[str], base: _Side, cur: _Side) -> list[tuple[str, str]]:
    """Pairs (baseline name, current name) whose launches coincide in position and configuration."""
    wanted: dict[_Signature, list[str]] = {}
    for name in new:
        signature = cur.signature(region, name)
        if signature is not None:
            wanted.setdefault(signature, []).append(name)
    pairs = []
    for name in missing:
        signature = base.signature(region, name)
        candidates = wanted.get(signature, []) if signature is not None else []
        if len(candidates) == 1:
            pairs.append((name, candidates[0]))
    return pairs


def _by_rule(region: str, rule: str, known_as: Callable[[str], str], missing: list[str], new: list[str],
             base: _Side, cur: _Side) -> tuple[list[tuple[str, str]], list[Ambiguity]]:
    """Pairs by a naming rule, the position rule settling names it gives to several kernels."""
    missing_by: dict[str, list[str]] = {}
    new_by: dict[str, list[str]] = {}
    for name in missing:
        missing_by.setdefault(known_as(name), []).append(name)
    for name in new:
        new_by.setdefault(known_as(name), []).append(name)
    pairs: list[tuple[str, str]] = []
    ambiguous: list[Ambiguity] = []
    for key, old_names in missing_by.items():
        new_names = new_by.get(key)
        if not new_names:
            continue
        if len(old_names) == 1 and len(new_names) == 1:
            pairs.append((old_names[0], new_names[0]))
            continue
        settled = _by_position(region, old_names, new_names, base, cur)
        pairs.extend(settled)
        old_left = tuple(n for n in old_names if n not in {a for a, _ in settled})
        new_left = tuple(n for n in new_names if n not in {b for _, b in settled})
        if len(old_left) == 1 and len(new_left) == 1:
            pairs.append((old_left[0], new_left[0]))  # the only two left under that name
        elif old_left and new_left:
            ambiguous.append(Ambiguity(region=region, rule=rule, known_as=key, baseline=old_left, current=new_left))
    return pairs, ambiguous


def _one_sided_kernels(base: Columns, cur: Columns) -> tuple[set[tuple[str, str]], set[tuple[str, str]]]:
    """The (region, kernel) pairs of kernel launches in the baseline only, and in the current run only.

    In sets of both sides' names: a rerun of 10,000 launches is the usual case, and has none.
    """
    def kernels(side: Columns) -> set[tuple[str, str]]:
        rows = np.flatnonzero(side.equals("kind", KIND_KERNEL))
        return set(counts_by_pair(distinct_coded(side, "region"), distinct_coded(side, "identity"), rows))

    base_names, cur_names = kernels(base), kernels(cur)
    return base_names - cur_names, cur_names - base_names


def _function_names(side: Columns) -> dict[str, str]:
    """Each identity's function name: its last launch's."""
    identities, kernels = distinct_coded(side, "identity"), distinct_coded(side, "kernel")
    last = np.full(len(identities[1]), -1, dtype=np.int64)
    np.maximum.at(last, identities[0], np.arange(len(side), dtype=np.int64))
    present = np.flatnonzero(last >= 0)
    return dict(zip(identities[1][present].tolist(), kernels[1][kernels[0][last[present]]].tolist(), strict=True))


def find_renames(base: Columns, cur: Columns, aliases: Mapping[str, str]) -> Renames:
    """Pair the kernel identities that are in one side's region only. ``base``/``cur``: one row per launch, with
    columns launch, kind, kernel (the function name), identity, region, occurrence, grid and block."""
    missing, new = _one_sided_kernels(base, cur)
    regions = sorted({r for r, _ in missing} & {r for r, _ in new})
    if not regions:
        return Renames()
    base_side = _Side(base[base.equals("kind", KIND_KERNEL)], missing)
    cur_side = _Side(cur[cur.equals("kind", KIND_KERNEL)], new)
    pairs: dict[tuple[str, str], tuple[str, str]] = {}
    ambiguous: list[Ambiguity] = []
    function = {**_function_names(base), **_function_names(cur)}
    rules: list[tuple[str, Callable[[str], str]]] = [
        (BY_CONFIG, name_of), (BY_TEMPLATE, function.__getitem__),
        (BY_NORMALIZED, lambda identity: normalized_name(function[identity]))]
    if aliases:
        rules.insert(2, (BY_ALIAS, lambda identity: aliased_name(function[identity], aliases)))
    for region in regions:
        old_names = sorted(n for r, n in missing if r == region)
        new_names = sorted(n for r, n in new if r == region)
        for rule, known_as in rules:
            found, unclear = _by_rule(region, rule, known_as, old_names, new_names, base_side, cur_side)
            ambiguous.extend(unclear)
            # Kernels paired, or listed as ambiguous, are settled: no later rule guesses about them.
            done_old = {a for a, _ in found} | {n for a in unclear for n in a.baseline}
            done_new = {b for _, b in found} | {n for a in unclear for n in a.current}
            pairs.update({(region, b): (a, rule) for a, b in found})
            old_names = [n for n in old_names if n not in done_old]
            new_names = [n for n in new_names if n not in done_new]
        for a, b in _by_position(region, old_names, new_names, base_side, cur_side):
            pairs[(region, b)] = (a, BY_POSITION)
    return Renames(pairs=pairs, ambiguous=tuple(ambiguous))
