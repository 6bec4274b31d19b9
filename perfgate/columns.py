"""Columns: a table as named numpy arrays of one length, the form every stage of the engine passes on.

Not a pandas DataFrame: importing pandas costs more than reading and comparing a ``.ncu-rep`` of a few launches
(the goal is 3x loading it with ``ncu_report``), so pandas is imported where ncu's CSV pages are parsed
(``perfgate.collect.ncu_csv.parsing``). String columns are object arrays of ``str``; numbers are int64, float64 or
bool arrays. A Columns is never changed in place: ``assign``, ``take`` and ``[mask]`` return new ones.

A column may also be held as a ``Gather``, ``values[rows]`` not made yet: a table whose rows repeat a few values
(each launch's kernel on every metric row of it, a metric's name, a result's launch) costs its rows' codes, not an
array of objects per column; the column is made when it is first read, and ``take`` only picks codes. A launch's
text columns are two Gathers deep: each row's launch, then the launch's code into a few distinct texts (the CSV
reader's), so that 500,000 launches of five kernels hold five strings, not 500,000.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final, overload

import numpy as np
import numpy.typing as npt

if TYPE_CHECKING:
    import pandas as pd  # type: ignore[import-untyped, unused-ignore]

Array = npt.NDArray[Any]
# A Gather's rows: int64, or narrower where its values are few (a status column: int8 codes, one byte a row).
Codes = npt.NDArray[np.integer[Any]]


def objects(values: Iterable[Any]) -> npt.NDArray[np.object_]:
    """A 1-D object array of ``values``: ``np.array`` would make a 2-D array of a list of equal-length tuples,
    ``np.fromiter`` takes each item as it is (and is faster)."""
    items = values if isinstance(values, (list, tuple)) else list(values)
    return np.fromiter(items, dtype=object, count=len(items))


def filled(count: int, value: Any) -> npt.NDArray[np.object_]:
    """An object array of ``count`` times the one object ``value``: ``np.full(count, "text", dtype=object)`` makes
    a new string for each row, out of a numpy string, ten times slower."""
    array = np.empty(count, dtype=object)
    array.fill(value)
    return array


def factorize(values: Array) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.object_]]:
    """Each value's index into the distinct values, in order of first appearance, and those values.

    Integers are coded by numpy; strings by pandas' hash table where a CSV page's reading imported it (a 7.5M-row
    status column in 60% of the time), anything else by a dict (Python's equality: None, NaN, 1 == 1.0).
    """
    if values.dtype.kind in "iub":
        codes, firsts = _integer_codes(values)
        return codes, objects(values[firsts].tolist())
    pandas = sys.modules.get("pandas")  # never imported for this: a .ncu-rep compare does without it
    if pandas is not None and len(values) >= 10_000:
        hashed, distinct = pandas.factorize(values)  # None and NaN: -1
        if hashed.min() >= 0 and all(type(value) is str for value in distinct):
            return hashed.astype(np.int64, copy=False), objects(distinct.tolist())
    items = values.tolist()
    index = {value: code for code, value in enumerate(dict.fromkeys(items))}
    codes = np.fromiter(map(index.__getitem__, items), dtype=np.int64, count=len(items))
    return codes, objects(list(index))


def _integer_codes(values: Array) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.intp]]:
    """``factorize`` of integers (or bools): each value's code, and the first row of each code (ascending)."""
    count = len(values)
    if not count:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.intp)
    if values.dtype.kind != "u" or values.dtype.itemsize < 8:  # uint64 might not fit in int64
        ints = values.astype(np.int64, copy=False)
        low, high = int(ints.min()), int(ints.max())
        if high - low < 2 * count + 1024:  # a small range (launch numbers, codes): a table by value, no sort
            shifted = ints - low
            first = np.full(high - low + 1, count, dtype=np.intp)
            np.minimum.at(first, shifted, np.arange(count, dtype=np.intp))
            firsts: npt.NDArray[np.intp] = np.sort(first[first < count])
            rank = np.empty(len(first), dtype=np.int64)
            rank[shifted[firsts]] = np.arange(len(firsts))
            return rank[shifted], firsts
    _, first_at, inverse = np.unique(values, return_index=True, return_inverse=True)
    order = np.argsort(first_at, kind="stable")
    ranks = np.empty(len(order), dtype=np.int64)
    ranks[order] = np.arange(len(order))
    return ranks[inverse.reshape(-1)], first_at[order]


def median(values: npt.NDArray[np.float64]) -> float:
    """The median of values without NaN, as a Python float."""
    return float(np.median(values))


def first_rows(*keys: Array) -> npt.NDArray[np.intp]:
    """The position of the first row of each distinct combination of ``keys`` (columns of one length), in row
    order: what ``drop_duplicates`` keeps."""
    if not keys or not len(keys[0]):
        return np.zeros(0, dtype=np.intp)
    if len(keys) == 1 and keys[0].dtype.kind in "iub":
        key = keys[0]
        if (key[1:] >= key[:-1]).all():  # sorted (launch numbers): its first rows are where it changes
            return np.flatnonzero(np.concatenate(([True], key[1:] != key[:-1])))
        return _integer_codes(key)[1]
    combined = np.zeros(len(keys[0]), dtype=np.int64)
    for key in keys:
        codes = _integer_codes(key)[0] if key.dtype.kind in "iub" else factorize(key)[0]
        combined = _integer_codes(combined * (int(codes.max()) + 1) + codes)[0]  # stays below the row count
    # Codes count up in order of first appearance: a row is its code's first where the running maximum grows.
    running = np.maximum.accumulate(combined)
    rows: npt.NDArray[np.intp] = np.flatnonzero(np.concatenate(([True], running[1:] > running[:-1])))
    return rows


def sort_ranks(values: Array) -> tuple[npt.NDArray[np.int64], int]:
    """Each value's place among the distinct values in sorted order, and how many distinct values there are:
    integers that sort as the values do. Only the distinct values are sorted (by Python's ``<``)."""
    codes, distinct = factorize(values)
    by_value = sorted(range(len(distinct)), key=distinct.tolist().__getitem__)
    rank = np.empty(len(distinct), dtype=np.int64)
    rank[by_value] = np.arange(len(distinct))
    return rank[codes], len(distinct)


def combined_key(*keys: tuple[npt.NDArray[np.int64], int]) -> npt.NDArray[np.int64]:
    """One integer per row that orders the rows as ``keys`` do (the first the primary one), equal for equal rows;
    each key integers in ``[0, size)`` with its size. Past int64, the key so far is renumbered (in order) first."""
    combined = np.zeros(len(keys[0][0]), dtype=np.int64)
    span = 1
    for key, size in keys:
        size = max(size, 1)
        if span * size >= 1 << 62:
            distinct, inverse = np.unique(combined, return_inverse=True)
            combined, span = inverse.reshape(-1).astype(np.int64), len(distinct)
        combined = combined * size + key
        span *= size
    return combined


def sorted_order(*keys: tuple[npt.NDArray[np.int64], int]) -> npt.NDArray[np.intp]:
    """The rows in the order of ``keys`` (as ``combined_key`` takes them), ties in order: one sort, not lexsort's."""
    order: npt.NDArray[np.intp] = np.argsort(combined_key(*keys), kind="stable")
    return order


class Gather:
    """A column as ``values[rows]``, made only when read (see the module's docstring). Columns that share one
    ``rows`` array (the per-launch columns of a table, by launch) have their rows taken once by ``take``. ``values``
    may itself be a Gather: a reader's per-launch column held as codes into its distinct values, read on each row
    through the row's launch. Its rows then never become one object per launch."""

    __slots__ = ("values", "rows")

    def __init__(self, values: Array | Gather, rows: Codes) -> None:
        self.values: Final = values
        self.rows: Final = rows

    def __len__(self) -> int:
        return len(self.rows)

    def coded(self) -> tuple[npt.NDArray[np.int64], Array]:
        """``(codes, values)``, ``values[codes]`` the column: through a Gather of a Gather, the inner values."""
        codes, values = self._codes()
        return codes.astype(np.int64, copy=False), values

    def _codes(self) -> tuple[Codes, Array]:
        """``coded``, its codes as narrow as they are held (made int64 once, at the end, if at all)."""
        if isinstance(self.values, Gather):
            inner_codes, values = self.values._codes()
            codes: Codes = inner_codes[self.rows]
            return codes, values
        return self.rows, self.values

    def leaf(self) -> Array:
        """The values the codes of ``coded`` point into."""
        return self.values.leaf() if isinstance(self.values, Gather) else self.values

    def at(self, rows: Any) -> Any:
        """The column's value(s) at ``rows`` (an index or integer positions), without making the column."""
        return self.values.at(self.rows[rows]) if isinstance(self.values, Gather) else self.values[self.rows[rows]]

    def over(self, values: Array) -> Gather:
        """The same rows over other values, one per value of ``leaf`` (a test of each, as ``Columns.equals``)."""
        return Gather(self.values.over(values) if isinstance(self.values, Gather) else values, self.rows)

    def made(self) -> Array:
        codes, values = self._codes()
        made: Array = values[codes]
        return made


class Columns:
    """Named 1-D numpy arrays (or ``Gather``s) of equal length."""

    __slots__ = ("_data", "_length")

    def __init__(self, data: Mapping[str, Array | Gather], length: int | None = None) -> None:
        self._data: dict[str, Array | Gather] = dict(data)
        lengths = {len(array) for array in self._data.values()}
        if len(lengths) > 1:
            raise ValueError(f"columns of different lengths: { {k: len(v) for k, v in self._data.items()} }")
        self._length = lengths.pop() if lengths else (length or 0)

    @overload
    def __getitem__(self, key: str) -> Array: ...

    @overload
    def __getitem__(self, key: Array | slice | Sequence[int]) -> Columns: ...

    def __getitem__(self, key: str | Array | slice | Sequence[int]) -> Array | Columns:
        if isinstance(key, str):
            column = self._data[key]
            if isinstance(column, Gather):  # made once: the table reads as if it had always held the array
                column = self._data[key] = column.made()
            return column
        return self.take(key)

    def take(self, rows: Array | slice | Sequence[int]) -> Columns:
        """The rows ``rows`` selects: a boolean mask, integer positions (in that order) or a slice."""
        picked: Array | slice
        if isinstance(rows, slice):
            picked, size = rows, len(range(*rows.indices(self._length)))
        else:
            picked = np.asarray(rows)
            if picked.dtype != np.bool_:
                picked = picked.astype(np.int64, copy=False)
                size = len(picked)
            else:
                size = int(picked.sum())
        # id of a Gather's rows -> its rows picked; a column that is those rows too (a table's launch numbers, which
        # its per-launch columns gather by) is picked once with them, and stays one array.
        taken_rows: dict[int, Array] = {}

        def pick(column: Array | Gather) -> Array | Gather:
            if not isinstance(column, Gather):
                taken = taken_rows.get(id(column))
                if taken is None:
                    taken = taken_rows[id(column)] = column[picked]
                return taken
            at = taken_rows.get(id(column.rows))
            if at is None:
                at = taken_rows[id(column.rows)] = column.rows[picked]
            return Gather(column.values, at)

        return Columns({name: pick(column) for name, column in self._data.items()}, size)

    def dtype(self, name: str) -> np.dtype[Any]:
        """The type of column ``name``'s values, without making it."""
        column = self._data[name]
        return column.leaf().dtype if isinstance(column, Gather) else column.dtype

    def coded(self, name: str) -> tuple[npt.NDArray[np.int64], Array]:
        """Column ``name`` as codes into values (``values[codes]`` is the column): a ``Gather``'s rows and values,
        which may repeat a value or hold one no row has; else ``factorize``'s, distinct."""
        column = self._data[name]
        if isinstance(column, Gather):
            return column.coded()
        return factorize(column)

    def picked(self, name: str, rows: Array) -> Array:
        """``self[name][rows]`` (integer positions), without making the whole column where it is a ``Gather``."""
        column = self._data[name]
        picked: Array = column.at(rows) if isinstance(column, Gather) else column[rows]
        return picked

    def equals(self, name: str, value: object) -> npt.NDArray[np.bool_]:
        """``self[name] == value``: where the column is a ``Gather``, its values are compared, not its rows'."""
        column = self._data[name]
        if isinstance(column, Gather):
            found: npt.NDArray[np.bool_] = column.over(np.asarray(column.leaf() == value, dtype=bool)).made()
            return found
        return np.asarray(column == value, dtype=bool)

    def __len__(self) -> int:
        return self._length

    def __contains__(self, name: object) -> bool:
        return name in self._data

    def __iter__(self) -> Iterator[str]:
        return iter(self._data)

    def __repr__(self) -> str:
        return f"Columns({self._length} rows: {', '.join(self._data)})"

    @property
    def empty(self) -> bool:
        return self._length == 0

    @property
    def columns(self) -> tuple[str, ...]:
        return tuple(self._data)

    def assign(self, **arrays: Array | Gather) -> Columns:
        """The same columns with ``arrays`` added or replaced."""
        return Columns({**self._data, **arrays}, self._length)

    def select(self, names: Iterable[str]) -> Columns:
        return Columns({name: self._data[name] for name in names}, self._length)

    def row(self, index: int) -> dict[str, Any]:
        """One row as plain Python values."""
        values = {name: column.at(index) if isinstance(column, Gather) else column[index]
                  for name, column in self._data.items()}
        return {name: value.item() if isinstance(value, np.generic) else value for name, value in values.items()}

    def rows(self) -> Iterator[dict[str, Any]]:
        """Every row as a dict of plain Python values."""
        names = list(self._data)
        for values in zip(*(self[name].tolist() for name in names), strict=True):
            yield dict(zip(names, values, strict=True))

    def to_frame(self) -> pd.DataFrame:
        """A pandas DataFrame of the same columns (for tests and exploring; the engine does not use it)."""
        import pandas as pd  # type: ignore[import-untyped, unused-ignore]

        frame: pd.DataFrame = pd.DataFrame({name: self[name] for name in self._data}, index=pd.RangeIndex(self._length))
        return frame

    @staticmethod
    def concat(parts: Sequence[Columns]) -> Columns:
        """The rows of ``parts`` one after another; they have the same columns, in the same order."""
        if not parts:
            return Columns({})
        for part in parts[1:]:
            if part.columns != parts[0].columns:
                raise ValueError(f"concat of different columns: {parts[0].columns} and {part.columns}")
        return Columns._joined(parts, np.concatenate, sum(len(part) for part in parts))

    @staticmethod
    def placed(parts: Sequence[Columns], positions: Sequence[Codes]) -> Columns:
        """``concat(parts)`` with its rows in another order, in one pass (``concat`` then ``take`` copied each column
        twice): ``positions[k]`` is where each row of ``parts[k]`` goes (together a permutation of every row)."""
        if not parts:
            return Columns({})
        size = sum(len(part) for part in parts)

        def place(columns: Sequence[Array]) -> Array:
            out: Array = np.empty(size, dtype=np.result_type(*columns))
            for column, at in zip(columns, positions, strict=True):
                out[at] = column
            return out

        return Columns._joined(parts, place, size)

    @staticmethod
    def interleaved(parts: Sequence[Columns], block: int, kept: Codes | None = None) -> Columns:
        """``placed`` where the rows of ``parts[0]`` come in blocks of ``block`` (a launch's rows) and each other part
        has a row per block, placed after the block's rows in the order of the parts (of a block, only the places
        ``kept``, where given): each column written as a grid of a row per block, a column of the grid at a time."""
        if not parts:
            return Columns({})
        count = len(parts[1]) if len(parts) > 1 else len(parts[0]) // max(block, 1)
        own = block if kept is None else len(kept)
        width = own + len(parts) - 1

        def place(columns: Sequence[Array]) -> Array:
            out: Array = np.empty(count * width, dtype=np.result_type(*columns))
            grid = out.reshape(count, width)
            blocks = columns[0].reshape(count, block)
            grid[:, :own] = blocks if kept is None else np.take(blocks, kept, axis=1)  # ``[:, kept]``: 2x the time
            for at, column in enumerate(columns[1:], start=own):
                grid[:, at] = column
            return out

        return Columns._joined(parts, place, count * width)

    @staticmethod
    def _joined(parts: Sequence[Columns], join: Callable[[Sequence[Array]], Array], size: int) -> Columns:
        joined_rows: dict[tuple[int, ...], Array] = {}  # ids of the parts' shared rows (or columns) -> joined
        return Columns({name: _concat_column([part._data[name] for part in parts], joined_rows, join)
                        for name in parts[0].columns}, size)


def _concat_column(columns: Sequence[Array | Gather], joined_rows: dict[tuple[int, ...], Array],
                   join: Callable[[Sequence[Array]], Array]) -> Array | Gather:
    """One column of ``Columns.concat`` (``join``: ``np.concatenate``) or ``Columns.placed``: Gathers over one
    ``values`` stay a Gather (rows joined once for the columns that share them), Gathers over different values one
    Gather over their values one after another (no column made as objects to add rows)."""
    arrays = [column for column in columns if not isinstance(column, Gather)]
    if len(arrays) == len(columns):  # joined once with the Gathers whose rows these are, if any
        key = tuple(id(array) for array in arrays)
        if key not in joined_rows:
            joined_rows[key] = join(arrays)
        return joined_rows[key]
    if not all(isinstance(column, Gather) for column in columns):
        return join([column.made() if isinstance(column, Gather) else column for column in columns])
    gathers = [column for column in columns if isinstance(column, Gather)]
    if all(gather.values is gathers[0].values for gather in gathers):
        key = tuple(id(gather.rows) for gather in gathers)
        if key not in joined_rows:
            joined_rows[key] = join([gather.rows for gather in gathers])
        return Gather(gathers[0].values, joined_rows[key])
    coded = [gathers[0]._codes()] + [gather.coded() for gather in gathers[1:]]  # the first as narrow as it is held
    starts = np.cumsum([0] + [len(values) for _, values in coded[:-1]]).tolist()
    # Made once for the columns with the same rows, inner Gathers and counts of values (a table's metric and unit).
    key = (*(id(g.rows) for g in gathers), *(id(g.values) for g in gathers if isinstance(g.values, Gather)), *starts)
    if key not in joined_rows:
        joined_rows[key] = join([codes + start if start else codes for (codes, _), start in zip(coded, starts)])
    return Gather(np.concatenate([values for _, values in coded]), joined_rows[key])
