"""Joining: the values of both sides for each (launch, metric) of interest, as flat arrays.

Each metric of interest gets a small integer code shared by both sides, so a (launch id, metric)
pair is one integer key, ``launch id * width + code``, and the join is the union of keys in order: one
slot per possible key where most launches have most metrics (no sort), else a sorted union.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Final

import numpy as np
import numpy.typing as npt

from perfgate.columns import Columns, objects
from perfgate.compare.arrays import Bools, Floats, Ints, Objects
from perfgate.compare.codes import Coded
from perfgate.compare.options import BENCHMARK_TIME_METRIC, TIME_METRIC
from perfgate.vocabulary import KIND_BENCHMARK


def metric_codes(names: Iterable[str]) -> dict[str, int]:
    """A code for each distinct name, in order of first appearance."""
    return {name: i for i, name in enumerate(dict.fromkeys(names))}


def relative_change(baseline: Floats, current: Floats) -> tuple[Floats, Floats]:
    """``(delta, change)``: current - baseline, and that delta relative to |baseline| (±inf from 0)."""
    delta = current - baseline
    # The division's own ±inf from 0 (the sign of the delta), its 0 / 0 made 0 (no change) in place: two arrays of
    # 7.5M rows fewer than choosing between whole arrays.
    with np.errstate(divide="ignore", invalid="ignore"):
        change = delta / np.abs(baseline)
    unmoved = baseline == 0
    unmoved &= delta == 0
    change[unmoved] = 0.0
    return delta, change


class SideValues:
    """One table's columns as numpy arrays, with metric names coded against the shared codes."""

    def __init__(self, table: Columns, ids: Ints, codes: Mapping[str, int]) -> None:
        found, names = table.coded("metric")  # a reader's table holds codes: no string of a row is looked at
        # A byte a row where the codes allow (11M rows a side at 500k launches with derived metrics: 11 MB, not 88);
        # the keys and masks it is read into are int64 and bool as before.
        narrow = np.int8 if max(codes.values(), default=0) < np.iinfo(np.int8).max else np.int64
        to_code = np.array([codes.get(str(n), -1) for n in names.tolist()] + [-1], dtype=narrow)
        self.metric: npt.NDArray[np.signedinteger[Any]] = to_code[found]  # -1: not a metric we compare
        self.ids = ids
        self.value: Floats = table["value"].astype(float, copy=False)
        self._table = table

    def unit_codes(self) -> Coded:
        """Each row's unit, as codes into the units."""
        return self._table.coded("unit")

    def per_launch(self, code: int, count: int) -> Floats:
        """The value of one metric for each launch id; NaN where absent. Of duplicates, the first wins."""
        values = np.full(count, np.nan)
        rows = np.flatnonzero(self.metric == code)
        rows = rows[self.ids[rows] >= 0]
        values[self.ids[rows][::-1]] = self.value[rows][::-1]
        return values

    def codes_present(self) -> set[int]:
        return set(np.flatnonzero(np.bincount(self.metric + 1)[1:]).tolist())  # metric -1: none we compare

    def selected(self, wanted: Ints) -> Ints:
        """Indices of the rows that carry a wanted metric of a kept launch."""
        top = int(self.metric.max(initial=-1))
        is_wanted = np.zeros(top + 2, dtype=bool)  # by code; the last one for -1, no metric we compare
        is_wanted[wanted[wanted <= top]] = True
        selected: Ints = np.flatnonzero(is_wanted[self.metric] & (self.ids >= 0))
        return selected

    def keys(self, rows: Ints, width: int) -> tuple[Ints, Ints]:
        """The sorted distinct (launch, metric) keys of ``rows``, and the row each key takes its value from.

        Of rows with the same key the last one wins (``np.unique`` on the reversed rows): unlike
        ``per_launch``. Kept so: the other choice could change a verdict.
        """
        keys = self.ids[rows] * width + self.metric[rows]
        unique_keys, first = np.unique(keys[::-1], return_index=True)
        taken: Ints = rows[::-1][first]
        return unique_keys, taken


class JoinedRows:
    """One entry per (launch, metric) present on either side, sorted by launch id then metric code.

    ``baseline``/``current`` are NaN where that side has no value; ``unit`` is the current run's
    unit where it has one, else the baseline's; ``names``, every metric name, in code order.
    """

    __slots__ = ("launch_id", "metric_code", "baseline", "current", "units", "names", "_changes")

    def __init__(self, *, launch_id: Ints, metric_code: Ints, baseline: Floats, current: Floats, units: Coded,
                 names: tuple[str, ...]) -> None:
        self.launch_id: Final = launch_id
        self.metric_code: Final = metric_code
        self.baseline: Final = baseline
        self.current: Final = current
        self.units: Final = units  # each entry's unit, as codes into distinct units
        self.names: Final = names
        self._changes: tuple[Floats, Floats] | None = None

    def changes(self) -> tuple[Floats, Floats]:
        """``relative_change`` of each entry, made once: every judgement of the rows reads it."""
        if self._changes is None:
            self._changes = relative_change(self.baseline, self.current)
        return self._changes

    def __len__(self) -> int:
        return len(self.launch_id)

    @property
    def unit(self) -> Objects:
        """Each entry's unit (made when asked: the stages read the codes)."""
        codes, values = self.units
        unit: Objects = values[codes]
        return unit

    @property
    def metric(self) -> Objects:
        """Each entry's metric name (made when asked: the stages read the codes)."""
        metric: Objects = objects(self.names)[self.metric_code]
        return metric

    def is_metric(self, name: str) -> Bools:
        """Which entries are of metric ``name`` (compared as codes: cheaper than strings)."""
        code = self.names.index(name) if name in self.names else -1
        found: Bools = self.metric_code == code
        return found


def _with_fillers(codes: Mapping[str, int], bare_kinds: Objects) -> tuple[dict[str, int], Ints]:
    """Codes extended by the placeholder metrics if needed, and the placeholder code of each bare launch.

    A launch whose metrics were all filtered out still needs a row to carry its status: its time
    metric, with no values.
    """
    extended = dict(codes)
    if bare_kinds.size:
        for name in (BENCHMARK_TIME_METRIC, TIME_METRIC):
            extended.setdefault(name, len(extended))
    filler: Ints = np.where(bare_kinds == KIND_BENCHMARK, extended.get(BENCHMARK_TIME_METRIC, -1),
                            extended.get(TIME_METRIC, -1)).astype(np.int64)
    return extended, filler


def _sorted_union(*keys: Ints) -> Ints:
    """``np.union1d`` of integer arrays by one sort (numpy 2's ``np.unique`` hashes first, slower on integers)."""
    joined = np.concatenate([np.asarray(k, dtype=np.int64) for k in keys])
    joined.sort(kind="stable")  # sorted runs (each side's keys): merged in linear time
    union: Ints = joined[np.concatenate(([True], joined[1:] != joined[:-1]))] if joined.size else joined
    return union


Taken = npt.NDArray[np.signedinteger[Any]]  # each joined entry's row of a side, -1 where none: int32 where it fits


def _joined_keys(base: SideValues, base_rows: Ints, cur: SideValues, cur_rows: Ints, fillers: Ints,
                 width: int, count: int) -> tuple[Ints, Taken, Taken]:
    """The sorted union of both sides' (launch, metric) keys and the fillers', and for each key the row of each
    side it takes its value from (-1: none; of a side's rows with the same key, the last)."""
    if count * width <= 4 * (len(base_rows) + len(cur_rows) + len(fillers)) + 1024:
        # Keys are dense (most launches have most metrics): one slot per possible key, no sort.
        slots: list[Taken] = []
        for side, rows in ((base, base_rows), (cur, cur_rows)):
            # A row's number in 4 bytes where the side's rows allow: a slot per possible key, 11M at 500k launches.
            slot = np.full(count * width, -1, dtype=np.int32 if len(side.value) < 2**31 else np.int64)
            keys = side.ids[rows] * width + side.metric[rows]
            slot[keys] = rows
            if np.count_nonzero(slot >= 0) != len(rows):  # a key twice: its last row, whatever numpy's order
                np.maximum.at(slot, keys, rows)
            slots.append(slot)
        present = (slots[0] >= 0) | (slots[1] >= 0)
        present[fillers] = True
        all_keys: Ints = np.flatnonzero(present)
        return all_keys, slots[0][all_keys], slots[1][all_keys]
    base_keys, base_taken = base.keys(base_rows, width)
    cur_keys, cur_taken = cur.keys(cur_rows, width)
    all_keys = _sorted_union(base_keys, cur_keys, fillers)
    taken = []
    for keys, rows in ((base_keys, base_taken), (cur_keys, cur_taken)):
        row = np.full(len(all_keys), -1, dtype=np.int64)
        row[np.searchsorted(all_keys, keys)] = rows
        taken.append(row)
    return all_keys, taken[0], taken[1]


def join_metrics(base: SideValues, cur: SideValues, codes: Mapping[str, int], compared: Sequence[str],
                 kinds: Objects) -> JoinedRows:
    """Join the ``compared`` metrics of both sides; ``kinds`` gives each launch id's kind."""
    wanted = np.array([codes[m] for m in compared], dtype=np.int64)
    base_rows, cur_rows = base.selected(wanted), cur.selected(wanted)
    has_rows = np.zeros(len(kinds), dtype=bool)
    has_rows[base.ids[base_rows]] = True
    has_rows[cur.ids[cur_rows]] = True
    bare = np.flatnonzero(~has_rows)
    extended, filler = _with_fillers(codes, kinds[bare])
    width = len(extended)
    all_keys, base_taken, cur_taken = _joined_keys(base, base_rows, cur, cur_rows, bare * width + filler, width,
                                                   len(kinds))
    base_value, _ = _taken(base.value, base_taken)
    cur_value, cur_at = _taken(cur.value, cur_taken)
    (base_codes, base_unit), (cur_codes, cur_unit), units = _shared_codes(base.unit_codes(), cur.unit_codes(), "")
    # Each entry's unit: the current run's where it has the value, else the baseline's, else "" (the last unit).
    if cur_at is None:
        unit: Ints = cur_unit[cur_codes[cur_taken]]
    else:
        unit = np.full(len(all_keys), len(units) - 1, dtype=cur_unit.dtype)
        base_only = np.flatnonzero((base_taken >= 0) & (cur_taken < 0))
        unit[base_only] = base_unit[base_codes[base_taken[base_only]]]
        unit[cur_at] = cur_unit[cur_codes[cur_taken[cur_at]]]
    return JoinedRows(launch_id=all_keys // width, metric_code=all_keys % width, baseline=base_value,
                      current=cur_value, units=(unit, units), names=tuple(extended))


def _taken(values: Floats, taken: Taken) -> tuple[Floats, Ints | None]:
    """``values[taken]``, NaN where ``taken`` is -1; and the entries that have a value (None: every one, the usual
    case of two runs of the same launches, which needs no mask)."""
    if not taken.size or int(taken.min()) >= 0:
        every: Floats = values[taken]
        return every, None
    at = np.flatnonzero(taken >= 0)
    found = np.full(taken.size, np.nan)
    found[at] = values[taken[at]]
    return found, at


def _shared_codes(base: Coded, cur: Coded, last: str) -> tuple[tuple[Ints, Ints], tuple[Ints, Ints], Objects]:
    """Both sides' codes into one set of distinct values, ``last`` the last of them (whether a side has it or not):
    each side as (its codes, each of its values' shared code), so that only the rows needed are mapped."""
    distinct = [value for value in dict.fromkeys([*base[1].tolist(), *cur[1].tolist()]) if value != last]
    index = {value: code for code, value in enumerate([*distinct, last])}

    # A byte a code where the units are few (as they are): the entries' units are read through them, 7.5M at 500k
    # launches with derived metrics.
    narrow = np.int8 if len(index) <= np.iinfo(np.int8).max else np.int64

    def mapped(side: Coded) -> tuple[Ints, Ints]:
        side_codes, values = side
        return side_codes, np.array([index[v] for v in values.tolist()] or [len(index) - 1], dtype=narrow)

    return mapped(base), mapped(cur), objects(list(index))
