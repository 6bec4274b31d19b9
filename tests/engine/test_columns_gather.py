"""Columns held as ``Gather``s (``values[rows]``, made when read) read as the arrays they stand for (issue 10).

The raw CSV reader holds a launch's columns and a metric's name and unit so, and the comparison its results: every
way of reading a table (a column, ``take``, ``row``, ``rows``, ``concat``, ``coded``, ``picked``, ``equals``) must
give what the same table of plain arrays gives.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from perfgate.collect import read_table
from perfgate.columns import Columns, Gather, factorize, objects
from perfgate.compare import compare_tables
from perfgate.regions import with_region_totals
from perfgate.table import COLUMNS, Measurement

DATA = Path(__file__).parents[1] / "data" / "ncu-csv"


def _plain(table: Columns) -> Columns:
    """The same table with every column made: the reference (``table`` itself is left as it is)."""
    made = _fresh(table)
    return Columns({name: np.array(made[name], copy=True) for name in made.columns}, len(table))


def _fresh(table: Columns) -> Columns:
    """A copy whose ``Gather``s are not made yet (reading a column makes it in that table only)."""
    return Columns(dict(table._data), len(table))


def _same(left: Columns, right: Columns) -> None:
    assert left.columns == right.columns and len(left) == len(right)
    for name in left.columns:
        assert left[name].dtype == right[name].dtype, name
        assert left[name].tolist() == right[name].tolist() or (
            left[name].dtype.kind == "f" and np.array_equal(left[name], right[name], equal_nan=True)), name


def _gathered(rng: np.random.Generator, size: int) -> Columns:
    launch = np.sort(rng.integers(0, 6, size))
    return Columns({
        "kernel": Gather(objects([f"k{i % 3}" for i in range(6)]), launch),
        "ordinal": Gather(np.arange(6, dtype=np.int64) % 2, launch),  # shares its rows with "kernel"
        "launch": launch,
        "metric": Gather(objects(["a", "b", "a", ""]), rng.integers(0, 4, size)),  # "a" twice: values may repeat
        "value": rng.random(size),
        # Narrow codes (a status column's int8), directly and through a Gather of the rows' launches.
        "status": Gather(objects(["x", "y", "z"]), rng.integers(0, 3, size).astype(np.int8)),
        "launch_status": Gather(Gather(objects(["x", "y"]), (np.arange(6) % 2).astype(np.int8)), launch),
    }, size)


@pytest.mark.parametrize("seed", range(5))
def test_a_gathered_table_reads_as_its_plain_arrays(seed: int) -> None:
    rng = np.random.default_rng(seed)
    size = int(rng.integers(0, 40))
    table = _gathered(rng, size)
    plain = _plain(table)
    _same(_fresh(table), plain)
    picks: list[Any] = [rng.random(size) < 0.5, rng.integers(0, max(size, 1), 7) if size else [], slice(1, None, 2)]
    for rows in picks:
        _same(_fresh(table)[rows], plain[rows])
        _same(_fresh(table).take(rows).take(slice(None, None, -1)), plain.take(rows).take(slice(None, None, -1)))
    assert list(_fresh(table).rows()) == list(plain.rows())
    for index in range(size):
        assert _fresh(table).row(index) == plain.row(index)
    _same(Columns.concat([_fresh(table), _fresh(table)[::2]]), Columns.concat([plain, plain[::2]]))
    for name in ("kernel", "ordinal", "metric", "value", "status", "launch_status"):
        codes, values = _fresh(table).coded(name)
        assert codes.dtype == np.int64 and values[codes].tolist() == plain[name].tolist()
        positions = rng.integers(0, max(size, 1), 5) if size else np.zeros(0, dtype=np.int64)
        assert _fresh(table).picked(name, positions).tolist() == plain[name][positions].tolist()
        assert _fresh(table).dtype(name) == plain[name].dtype
    for value in ("a", "", "k1", "none", "x", "y"):
        for name in ("kernel", "metric", "status", "launch_status"):
            assert _fresh(table).equals(name, value).tolist() == (plain[name] == value).tolist()


def test_take_picks_shared_rows_once_and_a_column_is_made_once() -> None:
    table = _gathered(np.random.default_rng(0), 20)[np.arange(10)]
    kernel, ordinal = table._data["kernel"], table._data["ordinal"]
    assert isinstance(kernel, Gather) and isinstance(ordinal, Gather) and kernel.rows is ordinal.rows
    assert isinstance(table._data["metric"], Gather)
    assert table["kernel"] is table["kernel"]  # made on the first read, then kept


@pytest.mark.parametrize("name", ["raw.csv", "raw_legacy.csv", "raw_nvtx.csv"])
def test_the_raw_readers_table_is_the_table_of_its_plain_columns(name: str) -> None:
    read = read_table(DATA / name)
    gathered = [column for column in COLUMNS if isinstance(read.table._data[column], Gather)]
    assert gathered == [c for c in COLUMNS if c not in ("launch", "value")]
    measurement = with_region_totals(read)  # region totals (raw_nvtx.csv) are appended: the columns made
    plain = measurement.with_table(_plain(measurement.table))
    _same(_fresh(measurement.table), plain.table)
    gathered_result = compare_tables(_with_fresh(measurement), _with_fresh(measurement))
    plain_result = compare_tables(plain, plain)
    _same(_plain(gathered_result.results), _plain(plain_result.results))
    _same(_plain(gathered_result.launches), _plain(plain_result.launches))
    assert gathered_result.notes == plain_result.notes


def _with_fresh(measurement: Measurement) -> Measurement:
    return measurement.with_table(_fresh(measurement.table))


def test_concat_keeps_gathers_and_reads_as_the_arrays_joined() -> None:
    """``concat`` of Gathers over one values, or over different values (a table and the derived rows added to it),
    stays a Gather that reads as the plain arrays joined; rows shared by two columns in every part stay shared."""
    launches = Gather(objects(["k1", "k2"]), np.array([0, 1, 1], dtype=np.int8))
    first = Columns({"kernel": launches, "grid": Gather(objects(["(1)", "(2)"]), launches.rows),
                     "metric": Gather(objects(["a", "b"]), np.array([0, 1, 0])), "value": np.arange(3.0)})
    added = first[np.array([2, 0])].assign(metric=Gather(objects(["derived.x"]), np.zeros(2, dtype=np.int8)))
    joined = Columns.concat([first, added])
    for name in ("kernel", "grid", "metric"):
        assert isinstance(joined._data[name], Gather)
    assert joined._data["kernel"].rows is joined._data["grid"].rows  # type: ignore[union-attr]
    assert joined["kernel"].tolist() == ["k1", "k2", "k2", "k2", "k1"]
    assert joined["metric"].tolist() == ["a", "b", "a", "derived.x", "derived.x"]
    assert joined["value"].tolist() == [0.0, 1.0, 2.0, 2.0, 0.0]
    mixed = Columns.concat([first.select(["metric"]), Columns({"metric": objects(["c"])})])
    assert mixed["metric"].tolist() == ["a", "b", "a", "c"]


def test_placed_is_concat_then_take_in_one_pass() -> None:
    """``placed`` puts each part's rows where ``positions`` say, as ``concat`` then ``take`` of the inverse order:
    plain columns, Gathers over one values (rows still shared) and over different values alike."""
    launches = Gather(objects(["k1", "k2"]), np.array([0, 1, 1], dtype=np.int8))
    first = Columns({"kernel": launches, "grid": Gather(objects(["(1)", "(2)"]), launches.rows),
                     "metric": Gather(objects(["a", "b"]), np.array([0, 1, 0])), "value": np.arange(3.0)})
    added = first[np.array([2, 0])].assign(metric=Gather(objects(["derived.x"]), np.zeros(2, dtype=np.int8)),
                                           value=np.array([7, 8]))  # ints joined with floats: floats
    order = np.array([3, 0, 4, 2, 1])  # the joined table's rows in the order wanted
    where = np.empty(5, dtype=np.int64)
    where[order] = np.arange(5)
    placed = Columns.placed([first, added], [where[:3], where[3:]])
    expected = Columns.concat([first, added])[order]
    for name in ("kernel", "grid", "metric"):
        assert isinstance(placed._data[name], Gather)
    assert placed._data["kernel"].rows is placed._data["grid"].rows  # type: ignore[union-attr]
    for name in expected.columns:
        assert placed[name].tolist() == expected[name].tolist() and placed[name].dtype == expected[name].dtype


def test_a_column_that_is_the_per_launch_columns_rows_stays_one_array() -> None:
    """A table's launch numbers are the rows its per-launch columns gather by (the CSV reader's): taken, joined
    or placed, they stay one array with those rows, not two of a row each (88 MB at 11M rows)."""
    launch = np.repeat(np.arange(3, dtype=np.int64), 2)
    kernels = Gather(objects(["a", "b", "c"]), np.arange(3, dtype=np.int64))
    table = Columns({"launch": launch, "kernel": Gather(kernels, launch), "value": np.arange(6.0)})
    taken = table[np.array([0, 1, 4, 5])]
    assert taken._data["launch"] is taken._data["kernel"].rows  # type: ignore[union-attr]
    heads = table[np.array([0, 2, 4])].assign(value=np.array([10.0, 20.0, 30.0]))
    for joined in (Columns.concat([table, heads]), Columns.interleaved([table, heads], 2),
                   Columns.placed([table, heads], [np.array([0, 1, 3, 4, 6, 7]), np.array([2, 5, 8])])):
        assert joined._data["launch"] is joined._data["kernel"].rows  # type: ignore[union-attr]
    placed = Columns.interleaved([table, heads], 2)
    assert placed["launch"].tolist() == [0, 0, 0, 1, 1, 1, 2, 2, 2]
    assert placed["kernel"].tolist() == ["a"] * 3 + ["b"] * 3 + ["c"] * 3
    assert placed["value"].tolist() == [0.0, 1.0, 10.0, 2.0, 3.0, 20.0, 4.0, 5.0, 30.0]


def test_metric_and_unit_coded_alike_stay_one_array_of_codes() -> None:
    """A table's metric and unit gather by the same codes (a reader's: a unit a metric), and so do the derived rows
    added to it: joined, interleaved or placed, the two columns' codes are made once (60 MB a column at 7.5M rows)
    and read as their own values."""
    codes = np.array([0, 1, 0, 1])
    table = Columns({"metric": Gather(objects(["a", "b"]), codes), "unit": Gather(objects(["ns", "byte"]), codes),
                     "value": np.arange(4.0)})
    once = np.zeros(2, dtype=np.int8)
    derived = Columns({"metric": Gather(objects(["derived.x"]), once), "unit": Gather(objects(["%"]), once),
                       "value": np.array([10.0, 20.0])})
    for joined in (Columns.concat([table, derived]), Columns.interleaved([table, derived], 2),
                   Columns.placed([table, derived], [np.array([0, 1, 3, 4]), np.array([2, 5])])):
        assert joined._data["metric"].rows is joined._data["unit"].rows  # type: ignore[union-attr]
    placed = Columns.interleaved([table, derived], 2)
    assert placed["metric"].tolist() == ["a", "b", "derived.x", "a", "b", "derived.x"]
    assert placed["unit"].tolist() == ["ns", "byte", "%", "ns", "byte", "%"]
    other = Columns({"metric": Gather(objects(["derived.x", "derived.y"]), np.array([0, 1], dtype=np.int8)),
                     "unit": Gather(objects(["%"]), once), "value": np.array([10.0, 20.0])})
    apart = Columns.concat([table, other])  # the same rows but a count of values apart: codes apart
    assert apart["metric"].tolist() == ["a", "b", "a", "b", "derived.x", "derived.y"]
    assert apart["unit"].tolist() == ["ns", "byte", "ns", "byte", "%", "%"]


@pytest.mark.parametrize("values", [
    ["sm", "dram", "sm", "l2", "dram\x00x", "\udcff"] * 2_000,  # strings: pandas' hash table where imported
    ["sm", None, "sm", float("nan"), "l2"] * 2_000,  # None and NaN: the dict's, as before
    [1, 1.0, True, "1", 2] * 2_000,  # equal across types: the dict's
])
def test_factorize_codes_strings_in_order_of_first_appearance(values: list[Any],
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    import pandas as pd

    hashed: list[int] = []
    original = pd.factorize
    monkeypatch.setattr(pd, "factorize", lambda column: hashed.append(len(column)) or original(column))
    codes, distinct = factorize(objects(values))
    index = {value: code for code, value in enumerate(dict.fromkeys(values))}
    assert codes.tolist() == [index[value] for value in values] and distinct.tolist() == list(index)
    assert codes.dtype == np.int64 and hashed == [len(values)]
