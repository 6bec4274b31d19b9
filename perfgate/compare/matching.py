"""Matching: which launch of the baseline is which launch of the current run.

Launches are matched by their key (kind, kernel identity, NVTX region, occurrence): the n-th launch of a
kernel identity (``identity``: full demangled name, grid, block, shared memory) in a region is compared with
the n-th launch of the same identity in the same region. A kernel whose identity changed (its launch
configuration, its template arguments, its generated name) is first paired with its baseline identity
(``renames``), so its launches match under it. A launch on one side only is *missing* (baseline only) or
*new* (current only). Each launch of
either side gets an integer id, its row in the matched frame, so that the per-metric join is on ints
rather than on four string columns.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

import numpy as np

from perfgate.columns import Columns, Gather, combined_key, filled, first_rows, objects, sort_ranks
from perfgate.compare.arrays import Ints, Objects
from perfgate.compare.codes import Coded, distinct_coded, joined_codes, sorted_ranks
from perfgate.compare.identity import (
    aligned_occurrences,
    identities,
    no_shared_memory,
    occurrences,
    shape_parts,
    shared_memory,
)
from perfgate.compare.renames import BY_NAME, Renames, find_renames
from perfgate.vocabulary import KIND_KERNEL

# Where a launch was found (in the words of pandas' merge indicator, which the tables that carry them use).
BOTH_SIDES, BASELINE_ONLY, CURRENT_ONLY = "both", "left_only", "right_only"

_LAUNCH_COLUMNS = ("launch", "kind", "kernel", "region", "ordinal", "demangled", "device", "grid", "block")
# What launches are matched on: the occurrence counts launches of one identity in one region.
_MATCH_KEY = ("kind", "identity", "region", "occurrence")
_SIDE_COLUMNS = ("demangled", "device", "grid", "block")  # kept per side, suffixed _b and _c
# The kernel identity launches are matched by: the baseline's, for a renamed kernel of the current run.
MATCH_KERNEL = "match_kernel"

_SIDES = objects([BOTH_SIDES, BASELINE_ONLY, CURRENT_ONLY])


class MatchedLaunches:
    """Every launch of either side once, in a table whose row number is the launch id.

    ``frame`` has kind, region, ordinal (the reader's: among launches of the same function name in the
    region, the current run's where the launch is in it; ``ordinal_b`` the baseline's, -1 where absent),
    occurrence (among launches of the same identity);
    ``kernel``, the current run's name where the launch is in it,
    else the baseline's; ``baseline_kernel``, the baseline's ("" for a new launch); ``match_kernel``, the identity
    both sides were matched by; ``matched_by``, the rule that paired a renamed kernel ("name" when the names
    agree, "" for a launch on one side only); ``launch_b``/``launch_c``, the launch number in each side (-1
    where absent) and ``demangled``, ``device``, ``grid`` and ``block`` of each side, suffixed ``_b``
    (baseline) and ``_c`` (current), "" where absent. Launches are in the order of their keys (kind, identity
    matched by, region, occurrence). ``side`` says where each launch was found. ``base_ids``/``cur_ids`` give, per
    row of the baseline/current table, its launch id (-1: none).
    """

    __slots__ = ("frame", "side", "base_ids", "cur_ids", "renames")

    def __init__(self, *, frame: Columns, side: Objects, base_ids: Ints, cur_ids: Ints,
                 renames: Renames = Renames()) -> None:
        self.frame: Final = frame
        self.side: Final = side
        self.base_ids: Final = base_ids
        self.cur_ids: Final = cur_ids
        self.renames: Final = renames

    @property
    def count(self) -> int:
        return len(self.side)

    @property
    def kinds(self) -> Objects:
        kinds: Objects = self.frame["kind"]
        return kinds

    def either_coded(self, name: str) -> Coded:
        """``either``, as codes into distinct values."""
        codes, values = joined_codes([self.frame.coded(f"{name}_b"), self.frame.coded(f"{name}_c")])
        return np.where(self.side == BASELINE_ONLY, codes[:self.count], codes[self.count:]), values

    def either(self, name: str) -> Objects:
        """A per-side column (demangled, device, grid, block): the current run's where the launch is in it,
        else the baseline's."""
        either: Objects = np.where(self.side == BASELINE_ONLY, self.frame[f"{name}_b"], self.frame[f"{name}_c"])
        return either


def _launches(table: Columns) -> Columns:
    """One row per launch: its first in the table; its text columns held as codes into their distinct values
    (``Gather``), which the stages below group and count by."""
    launches = table.select(_LAUNCH_COLUMNS)[first_rows(table["launch"])]
    coded = {name: Gather(values, codes) for name in _LAUNCH_COLUMNS if launches.dtype(name).kind == "O"
             for codes, values in [distinct_coded(launches, name)]}
    return launches.assign(**coded)


def _identified(baseline: Columns, current: Columns) -> tuple[Columns, Columns]:
    """Each side's launches (one row each) with their ``identity`` and ``occurrence`` (``identity``)."""
    base, cur = _launches(baseline), _launches(current)
    parts = shape_parts(base, cur, baseline, current)
    sides = []
    for launches, table in ((base, baseline), (cur, current)):
        smem = shared_memory(table, launches["launch"]) if parts.shared_memory else no_shared_memory(len(launches))
        identity_codes, identity_values = identities(launches, smem, parts)
        sides.append(launches.assign(identity=Gather(identity_values, identity_codes),
                                     occurrence=occurrences(launches, (identity_codes, identity_values))))
    base, cur = sides
    return base, cur.assign(occurrence=aligned_occurrences(base, cur))


def _launch_ids(table: Columns, launch_numbers: Ints) -> Ints:
    """Map each row of ``table`` to its launch id (row of the matched frame), -1 if dropped.
    ``launch_numbers``: per launch id, its launch number in ``table`` (-1: not in it)."""
    if table.empty:
        return np.zeros(0, dtype=np.int64)
    known = np.flatnonzero(launch_numbers >= 0)
    size = int(max(int(table["launch"].max()), int(launch_numbers.max(initial=0)))) + 1
    lookup = np.full(size, -1, dtype=np.int64)
    lookup[launch_numbers[known]] = known
    ids: Ints = lookup[table["launch"].astype(np.int64)]
    return ids


def _stacked_keys(base: Columns, cur: Columns, cur_names: Coded) -> Ints:
    """The sort key of each launch of both sides, the baseline's then the current run's: (kind, identity matched
    by, region, occurrence); ``cur_names``: the identities the current run's launches are matched by."""
    return combined_key(*(sorted_ranks([base.coded("identity"), cur_names]) if key == "identity" else
                          sort_ranks(np.concatenate([base[key], cur[key]])) if key == "occurrence" else
                          sorted_ranks([base.coded(key), cur.coded(key)]) for key in _MATCH_KEY))


def _outer_join(keys: Ints, count: int) -> tuple[Ints, Ints, Ints]:
    """The union of both sides' keys (``_stacked_keys``: the first ``count`` the baseline's), in key order: for
    each key, the row of each side (-1: absent; of a side's rows with the same key, its last) and the first of
    ``keys`` that is it."""
    _, first, inverse = np.unique(keys, return_index=True, return_inverse=True)
    inverse = inverse.reshape(-1)
    rows = np.arange(len(inverse), dtype=np.int64)
    base_rows = np.full(len(first), -1, dtype=np.int64)
    np.maximum.at(base_rows, inverse[:count], rows[:count])
    cur_rows = np.full(len(first), -1, dtype=np.int64)
    np.maximum.at(cur_rows, inverse[count:], rows[count:] - count)
    return base_rows, cur_rows, first


def _per_side(column: Any, rows: Ints, fill: Any) -> Any:
    """``column[rows]``, ``fill`` where ``rows`` is -1."""
    if isinstance(fill, str):  # an object array of strings, each row's the column's object or ``fill``
        taken = filled(len(rows), fill)
        present = rows >= 0
        taken[present] = column[rows[present]]
        return taken
    if not len(column):
        return np.full(len(rows), fill, dtype=np.int64)
    return np.where(rows >= 0, column[np.maximum(rows, 0)], fill)


def _coded_per_side(column: Coded, rows: Ints, fill: str) -> Gather:
    """``_per_side`` of a coded column of text, as a ``Gather`` of its values and ``fill``."""
    codes, values = column
    taken = np.full(len(rows), len(values), dtype=np.int64)
    present = rows >= 0
    taken[present] = codes[rows[present]]
    return Gather(objects([*values.tolist(), fill]), taken)


def _joined(base: Columns, cur: Columns, keys: Ints, cur_names: Coded, cur_rules: Objects | None) -> Columns:
    """The matched frame: both sides' launches joined on their ``keys`` (``_stacked_keys``: kind, identity
    matched by, region, occurrence)."""
    b, c, first = _outer_join(keys, len(base))
    in_base, in_cur = b >= 0, c >= 0
    side = _SIDES[np.where(in_base & in_cur, 0, np.where(in_base, 1, 2))]
    kind, region, match_kernel = (Gather(values, codes[first]) for codes, values in (
        joined_codes([base.coded("kind"), cur.coded("kind")]), joined_codes([base.coded("region"), cur.coded("region")]),
        joined_codes([base.coded("identity"), cur_names])))
    occurrence = np.concatenate([base["occurrence"], cur["occurrence"]])[first]
    kernel_b = _coded_per_side(base.coded("kernel"), b, "").made()
    kernel_c = _coded_per_side(cur.coded("kernel"), c, "").made()
    ordinal = np.where(in_cur, _per_side(cur["ordinal"], c, -1), _per_side(base["ordinal"], b, -1))
    data: dict[str, Any] = {
        "kind": kind, "kernel": np.where(in_cur, kernel_c, kernel_b),
        "region": region, "ordinal": ordinal.astype(np.int64, copy=False),
        "occurrence": occurrence.astype(np.int64, copy=False),
        "ordinal_b": _per_side(base["ordinal"], b, -1).astype(np.int64),
        MATCH_KERNEL: match_kernel, "baseline_kernel": kernel_b,
        "launch_b": _per_side(base["launch"], b, -1).astype(np.int64),
        "launch_c": _per_side(cur["launch"], c, -1).astype(np.int64),
    }
    matched = in_base & in_cur
    if cur_rules is None:
        data["matched_by"] = objects(["", BY_NAME])[matched.astype(np.intp)]
    else:
        data["matched_by"] = _per_side(cur_rules, np.where(matched, c, -1), "")
    for name in _SIDE_COLUMNS:
        data[f"{name}_b"] = _coded_per_side(base.coded(name), b, "")
        data[f"{name}_c"] = _coded_per_side(cur.coded(name), c, "")
    data["side"] = side
    return Columns(data, len(first))


def _renamed_names(cur: Columns, renames: Renames) -> tuple[Coded, Objects]:
    """Per launch of the current run, the identity it is matched by and the rule that paired it."""
    regions, identities = distinct_coded(cur, "region"), distinct_coded(cur, "identity")
    kernels = np.flatnonzero(cur.equals("kind", KIND_KERNEL))
    size = len(identities[1]) + 1
    pairs, inverse = np.unique(regions[0][kernels] * size + identities[0][kernels], return_inverse=True)
    names = dict.fromkeys(identities[1].tolist())
    name_codes, rules = identities[0].copy(), filled(len(cur), BY_NAME)
    for index, pair in enumerate(pairs.tolist()):
        found = renames.pairs.get((regions[1][pair // size], identities[1][pair % size]))
        if found is not None:
            names.setdefault(found[0])
            rows = kernels[inverse.reshape(-1) == index]
            name_codes[rows], rules[rows] = list(names).index(found[0]), found[1]
    return (name_codes, objects(list(names))), rules


def match_launches(baseline: Columns, current: Columns, aliases: Mapping[str, str] | None = None,
                   renames: Renames | None = None) -> MatchedLaunches:
    """Pair the launches of two tables by their key, renamed kernels under their baseline name; unpaired
    ones are kept, marked by side. ``aliases``: the user's pairing rules (``renames``); ``renames``: the pairs
    already found for the same kernel launches (the tables given again with other totals), not searched again."""
    base, cur = _identified(baseline, current)
    keys = _stacked_keys(base, cur, cur.coded("identity"))
    frame = _joined(base, cur, keys, cur.coded("identity"), None)
    side: Objects = frame["side"]
    if renames is None:
        renames = Renames()
        if (side == BASELINE_ONLY).any() and (side == CURRENT_ONLY).any():
            renames = find_renames(base, cur, aliases or {})
    if renames:
        names, rules = _renamed_names(cur, renames)
        frame = _joined(base, cur, _stacked_keys(base, cur, names), names, rules)
        side = frame["side"]
    return MatchedLaunches(frame=frame, side=side, base_ids=_launch_ids(baseline, frame["launch_b"]),
                           cur_ids=_launch_ids(current, frame["launch_c"]), renames=renames)
