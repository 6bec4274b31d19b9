"""Matching: which launch of the baseline is which launch of the current run.

Launches are matched by their key (kind, kernel, NVTX region, ordinal): the n-th launch of a kernel
in a region is compared with the n-th launch of the same kernel in the same region. A kernel whose
name changed is first paired with its baseline name (``renames``), so its launches match under that
name. A launch on one side only is *missing* (baseline only) or *new* (current only). Each launch of
either side gets an integer id, its row in the matched frame, so that the per-metric join is on ints
rather than on four string columns.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np
import pandas as pd  # type: ignore[import-untyped, unused-ignore]

from perfgate.compare.arrays import Ints, Objects
from perfgate.compare.renames import BY_NAME, Renames, find_renames
from perfgate.table import LAUNCH_KEY
from perfgate.vocabulary import KIND_KERNEL

# Where a launch was found: pandas' merge indicator values.
BOTH_SIDES, BASELINE_ONLY, CURRENT_ONLY = "both", "left_only", "right_only"

_LAUNCH_COLUMNS = ("launch", *LAUNCH_KEY, "demangled", "device", "grid", "block")
# The kernel name launches are matched by: the baseline's name, for a renamed kernel of the current run.
MATCH_KERNEL = "match_kernel"
_MATCH_KEY = ("kind", MATCH_KERNEL, "region", "ordinal")


@dataclass(frozen=True)
class MatchedLaunches:
    """Every launch of either side once, in a frame whose row number is the launch id.

    ``frame`` has the key columns plus ``launch``, ``demangled``, ``device``, ``grid`` and ``block``
    of each side, suffixed ``_b`` (baseline) and ``_c`` (current); ``kernel`` is the current run's
    name where the launch is in it, ``baseline_kernel`` the baseline's ("" for a new launch),
    ``match_kernel`` the name both sides were matched by and ``matched_by`` the rule that paired a
    renamed kernel ("name" when the names agree, "" for a launch on one side only). ``side`` says where
    each launch was found. ``base_ids``/``cur_ids`` give, per row of the baseline/current table, its
    launch id, or -1 for a launch dropped because an earlier launch had the same key.
    """

    frame: pd.DataFrame
    side: Objects
    base_ids: Ints
    cur_ids: Ints
    renames: Renames = field(default_factory=Renames)

    @property
    def count(self) -> int:
        return len(self.side)

    @property
    def kinds(self) -> Objects:
        kinds: Objects = self.frame["kind"].to_numpy()
        return kinds


def _launches(table: pd.DataFrame) -> pd.DataFrame:
    """One row per launch; of launches with the same key, the first in the table."""
    return table[list(_LAUNCH_COLUMNS)].drop_duplicates("launch").drop_duplicates(list(LAUNCH_KEY))


def _launch_ids(table: pd.DataFrame, launch_numbers: pd.Series) -> Ints:
    """Map each row of ``table`` to its launch id (row of the matched frame), -1 if dropped."""
    if table.empty:
        return np.zeros(0, dtype=np.int64)
    known = launch_numbers.dropna().astype("int64")
    size = int(max(table["launch"].max(), known.max() if len(known) else 0)) + 1
    lookup = np.full(size, -1, dtype=np.int64)
    lookup[known.to_numpy()] = known.index.to_numpy()
    ids: Ints = lookup[table["launch"].to_numpy(dtype=np.int64)]
    return ids


def _renamed_frame(base: pd.DataFrame, cur: pd.DataFrame, renames: Renames) -> pd.DataFrame:
    """The matched frame when some kernels of the current run are matched under their baseline name."""
    names: Objects = cur["kernel"].to_numpy(dtype=object, copy=True)
    rules: Objects = np.full(len(cur), BY_NAME, dtype=object)
    kernels = (cur["kind"] == KIND_KERNEL).to_numpy()
    for index, key in enumerate(zip(cur["region"], cur["kernel"], strict=True)):
        found = renames.pairs.get(key) if kernels[index] else None
        if found is not None:
            names[index], rules[index] = found
    base = base.assign(**{MATCH_KERNEL: base["kernel"].to_numpy()})
    cur = cur.assign(**{MATCH_KERNEL: names, "matched_by": rules})
    frame = base.merge(cur, on=list(_MATCH_KEY), how="outer", suffixes=("_b", "_c"), indicator="side")
    in_cur = frame["kernel_c"].notna().to_numpy()
    frame["kernel"] = np.where(in_cur, frame["kernel_c"].to_numpy(dtype=object),
                               frame["kernel_b"].to_numpy(dtype=object))
    frame["baseline_kernel"] = frame["kernel_b"].fillna("").to_numpy(dtype=object)
    both = (frame["side"] == BOTH_SIDES).to_numpy()
    frame["matched_by"] = np.where(both, frame["matched_by"].fillna("").to_numpy(dtype=object), "")
    return frame.reset_index(drop=True)


def match_launches(baseline: pd.DataFrame, current: pd.DataFrame,
                   aliases: Mapping[str, str] | None = None) -> MatchedLaunches:
    """Pair the launches of two tables by their key, renamed kernels under their baseline name; unpaired
    ones are kept, marked by side. ``aliases``: the user's pairing rules (``renames``)."""
    base, cur = _launches(baseline), _launches(current)
    frame = base.merge(cur, on=list(LAUNCH_KEY), how="outer", suffixes=("_b", "_c"), indicator="side")
    frame = frame.reset_index(drop=True)
    side: Objects = frame["side"].astype(str).to_numpy()
    renames = Renames()
    if (side == BASELINE_ONLY).any() and (side == CURRENT_ONLY).any():
        renames = find_renames(base, cur, aliases or {})
    if renames:
        frame = _renamed_frame(base, cur, renames)
        side = frame["side"].astype(str).to_numpy()
    else:
        kernel = frame["kernel"].to_numpy(dtype=object)
        frame[MATCH_KERNEL] = kernel
        frame["baseline_kernel"] = np.where(side == CURRENT_ONLY, "", kernel)
        frame["matched_by"] = np.where(side == BOTH_SIDES, BY_NAME, "")
    return MatchedLaunches(frame=frame, side=side, base_ids=_launch_ids(baseline, frame["launch_b"]),
                           cur_ids=_launch_ids(current, frame["launch_c"]), renames=renames)
