"""Columns as integer codes into their distinct values, so that grouping, counting, ordering and judging costs
numpy passes over integers and Python work per distinct value only: launch columns (a few kernels, regions and
configurations against up to millions of launches), and the statuses of joined rows and launches."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from types import MappingProxyType
from typing import Any, Final

import numpy as np

from perfgate.columns import Columns, Gather, combined_key, factorize, objects
from perfgate.compare.arrays import Bools, Ints, Objects, StatusCodes
from perfgate.vocabulary import STATUS_ORDER, STATUS_RANK, Status

Coded = tuple[Ints, Objects]  # (codes, values): values[codes] is the column

# A status, per joined row or per launch, is held as its place in STATUS_ORDER (int8): the judgement's passes over
# 10M rows read bytes, not references to strings, and the codes sort as the statuses do (the smaller, the more it
# needs attention). STATUS_NAMES[code] is its name, made where a table column is handed on.
STATUS_CODE: Final[Mapping[Status, int]] = MappingProxyType({status: STATUS_RANK[status.value]
                                                            for status in STATUS_ORDER})
STATUS_NAMES: Final[Objects] = objects([status.value for status in STATUS_ORDER])


def status_codes(names: Iterable[str]) -> StatusCodes:
    """Status names (``Status`` values) as codes."""
    return np.fromiter(map(STATUS_RANK.__getitem__, names), dtype=np.int8)


def status_filled(count: int, status: Status) -> StatusCodes:
    """``count`` rows of ``status``."""
    return np.full(count, STATUS_CODE[status], dtype=np.int8)


def is_status(codes: StatusCodes, *statuses: Status) -> Bools:
    """Which of ``codes`` are one of ``statuses``."""
    if len(statuses) == 1:
        found: Bools = codes == STATUS_CODE[statuses[0]]
        return found
    return np.isin(codes, [STATUS_CODE[status] for status in statuses])


def status_column(codes: StatusCodes) -> Gather:
    """The codes as a table's status column: its strings are made only if a later stage reads it."""
    return Gather(STATUS_NAMES, codes)


def distinct_coded(table: Columns, name: str) -> Coded:
    """Column ``name`` as codes into its values, no value twice (a ``Gather``'s values may repeat one)."""
    codes, values = table.coded(name)
    value_codes, distinct = factorize(values)
    if len(distinct) == len(values):
        return codes.astype(np.int64, copy=False), values
    return value_codes[codes], distinct


def combined(*parts: Coded) -> tuple[Ints, Ints]:
    """The combinations of several coded columns of one length: a code per row into the distinct combinations,
    and each combination's first row."""
    key = combined_key(*((codes, len(values)) for codes, values in parts))
    _, first, inverse = np.unique(key, return_index=True, return_inverse=True)
    return inverse.reshape(-1).astype(np.int64), first.astype(np.int64)


def joined_codes(sides: Sequence[Coded]) -> Coded:
    """The codes of several coded columns (the sides' rows one after another) into one set of distinct values."""
    index: dict[Any, int] = {}
    for _, values in sides:
        for value in values.tolist():
            index.setdefault(value, len(index))
    codes = [np.fromiter((index[v] for v in values.tolist()), dtype=np.int64, count=len(values))[side_codes]
             if len(values) else np.zeros(len(side_codes), dtype=np.int64) for side_codes, values in sides]
    return np.concatenate(codes) if codes else np.zeros(0, dtype=np.int64), objects(list(index))


def sorted_ranks(sides: Sequence[Coded]) -> tuple[Ints, int]:
    """``columns.sort_ranks`` of the sides' rows one after another: each row's place among the distinct values in
    sorted order (Python's ``<``), and how many there are."""
    codes, values = joined_codes(sides)
    by_value = sorted(range(len(values)), key=values.tolist().__getitem__)
    rank = np.empty(len(values), dtype=np.int64)
    rank[by_value] = np.arange(len(values))
    return rank[codes], len(values)


def counts_by_pair(first: Coded, second: Coded, rows: Ints) -> dict[tuple[Any, Any], int]:
    """How many of ``rows`` hold each (first, second) pair of values."""
    size = len(second[1]) + 1
    pairs, counts = np.unique(first[0][rows] * size + second[0][rows], return_counts=True)
    return {(first[1][pair // size], second[1][pair % size]): int(count)
            for pair, count in zip(pairs.tolist(), counts.tolist(), strict=True)}
