"""The integer codes the comparison is made of give what the plain Python they replace gives (issue 10).

``columns.factorize``/``first_rows`` (integers through a table by value, or a sort where the range is wide),
``sort_ranks``/``sorted_order`` (one sort of combined keys for ``np.lexsort``), the launch match's outer join in
key order, and the join of metric values through one slot per (launch, metric) or, where launches have few of
the metrics, a sorted union: each is checked against a straightforward reference on random inputs.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from perfgate.columns import Columns, combined_key, factorize, first_rows, objects, sort_ranks, sorted_order
from perfgate.compare import compare_tables
from perfgate.compare.codes import STATUS_CODE, STATUS_NAMES, is_status, status_codes, status_column
from perfgate.compare.joining import SideValues, join_metrics
from perfgate.compare.matching import _outer_join
from perfgate.table import Measurement, make_table
from perfgate.vocabulary import STATUS_ORDER, Status


def _factorize(values: list[Any]) -> tuple[list[int], list[Any]]:
    index: dict[Any, int] = {}
    return [index.setdefault(v, len(index)) for v in values], list(index)


def _first_rows(*keys: list[Any]) -> list[int]:
    seen: set[tuple[Any, ...]] = set()
    rows = []
    for row, key in enumerate(zip(*keys, strict=True)):
        if key not in seen:
            seen.add(key)
            rows.append(row)
    return rows


def _integers(rng: np.random.Generator, kind: int, size: int) -> np.ndarray:
    if kind == 0:
        return rng.integers(-3, 5, size)  # a small range: the table by value
    if kind == 1:
        return rng.integers(-2**62, 2**62, size)  # a wide one: the sort
    if kind == 2:
        return rng.integers(0, 2, size).astype(bool)
    if kind == 3:
        return rng.integers(0, 2**64 - 1, size, dtype=np.uint64)
    return np.sort(rng.integers(0, 6, size))  # sorted, as launch numbers are


@pytest.mark.parametrize("kind", range(5))
def test_factorize_and_first_rows_of_integers_keep_the_order_of_first_appearance(kind: int) -> None:
    rng = np.random.default_rng(kind)
    for _ in range(200):
        values = _integers(rng, kind, int(rng.integers(0, 40)))
        codes, distinct = factorize(values)
        expected_codes, expected_distinct = _factorize(values.tolist())
        assert codes.dtype == np.int64 and codes.tolist() == expected_codes
        assert distinct.tolist() == expected_distinct
        assert [type(v) for v in distinct.tolist()] == [type(v) for v in expected_distinct]
        assert first_rows(values).tolist() == _first_rows(values.tolist())
        names = objects(rng.choice(["a", "b", "c"], len(values)).tolist())
        small = rng.integers(0, 3, len(values))
        for keys in ([names], [values, names], [names, small], [values, names, small]):
            assert first_rows(*keys).tolist() == _first_rows(*(k.tolist() for k in keys))


def test_sorted_order_is_lexsort_and_keeps_ties_in_order() -> None:
    rng = np.random.default_rng(7)
    for size in (0, 1, 9, 500):
        words = objects(rng.choice(["b", "a", "ab", "", "ba"], size).tolist())
        numbers = rng.integers(-5, 5, size)
        ranks = [sort_ranks(words), sort_ranks(numbers), (rng.integers(0, 3, size), 3)]
        expected = sorted(range(size), key=lambda i: (words[i], int(numbers[i]), int(ranks[2][0][i])))
        assert sorted_order(*ranks).tolist() == expected
        assert sorted_order(ranks[0]).tolist() == sorted(range(size), key=lambda i: words[i])
        wide = [(key, 1 << 40) for key, _ in ranks[:2]]  # sizes whose product overflows: renumbered on the way
        assert sorted_order(*wide).tolist() == sorted(range(size), key=lambda i: (words[i], int(numbers[i])))


def test_the_outer_join_of_launch_keys_is_in_key_order_and_a_sides_last_row_of_a_key_wins() -> None:
    rng = np.random.default_rng(3)
    for _ in range(100):
        sides = []
        for _side in range(2):
            size = int(rng.integers(0, 30))
            sides.append([objects(rng.choice(["kernel", "region"], size).tolist()),
                          objects(rng.choice(["k_b", "k_a", "k"], size).tolist()),
                          objects(rng.choice(["", "layer1", "layer1 > x"], size).tolist()),
                          rng.integers(0, 4, size)])
        base_at = {key: i for i, key in enumerate(zip(*(c.tolist() for c in sides[0])))}
        cur_at = {key: i for i, key in enumerate(zip(*(c.tolist() for c in sides[1])))}
        keys = sorted(base_at.keys() | cur_at.keys())
        both = [np.concatenate([b, c]) for b, c in zip(*sides, strict=True)]
        base_rows, cur_rows, first = _outer_join(combined_key(*map(sort_ranks, both)), len(sides[0][0]))
        assert base_rows.tolist() == [base_at.get(k, -1) for k in keys]
        assert cur_rows.tolist() == [cur_at.get(k, -1) for k in keys]
        assert [tuple(column[row] for column in both) for row in first.tolist()] == keys


def _side(rng: np.random.Generator, launches: int, per_launch: int, names: list[str]) -> tuple[Columns, np.ndarray]:
    ids = np.repeat(rng.permutation(launches)[:max(launches - 3, 0)], per_launch)  # a few launches lack rows
    ids = np.where(rng.random(len(ids)) < 0.05, -1, ids)  # rows of dropped launches
    rows = len(ids)
    table = Columns({"metric": objects(rng.choice(names, rows).tolist()), "value": rng.random(rows),
                     "unit": objects(rng.choice(["ns", "byte", ""], rows).tolist())})
    return table, ids.astype(np.int64)


def _reference_join(sides: list[tuple[Columns, np.ndarray]], codes: dict[str, int], compared: list[str],
                    kinds: np.ndarray) -> list[tuple[int, str, float, float, str]]:
    found: dict[tuple[int, int], list[Any]] = {}
    for at, (table, ids) in enumerate(sides):
        for row, (launch, metric) in enumerate(zip(ids.tolist(), table["metric"].tolist(), strict=True)):
            if launch >= 0 and metric in compared:
                entry = found.setdefault((launch, codes[metric]), [metric, np.nan, np.nan, None, None])
                entry[1 + at] = float(table["value"][row])  # the last row of a key wins
                entry[3 + at] = table["unit"][row]
    # The current run's unit where it has the value, else the baseline's.
    found = {key: [metric, base, cur, cur_unit if cur_unit is not None else base_unit]
             for key, (metric, base, cur, base_unit, cur_unit) in found.items()}
    names = dict(codes)
    for launch in sorted(set(range(len(kinds))) - {launch for launch, _ in found}):
        filler = "gpu__time_duration.sum"  # a launch with no compared metric keeps a row, with no values
        code = names.setdefault(filler, len(names))
        found[(launch, code)] = [filler, np.nan, np.nan, ""]
    return [(launch, *found[(launch, code)]) for launch, code in sorted(found)]


@pytest.mark.parametrize(("per_launch", "names"), [(12, 6), (1, 20)], ids=["dense", "sparse"])
def test_joined_metric_values_are_those_of_a_join_by_launch_and_metric(per_launch: int, names: int) -> None:
    rng = np.random.default_rng(per_launch)
    metrics = [f"m{i}.sum" for i in range(names)]
    codes = {name: i for i, name in enumerate(metrics)}
    compared = metrics[:max(names - 2, 1)]
    kinds = objects(["kernel"] * 300)
    sides = [_side(rng, 300, per_launch, metrics) for _ in range(2)]
    joined = join_metrics(SideValues(sides[0][0], sides[0][1], codes), SideValues(sides[1][0], sides[1][1], codes),
                          codes, compared, kinds)
    got = list(zip(joined.launch_id.tolist(), joined.metric.tolist(), joined.baseline.tolist(),
                   joined.current.tolist(), joined.unit.tolist(), strict=True))
    expected = _reference_join(sides, codes, compared, kinds)
    assert len(got) == len(expected)
    for row, want in zip(got, expected, strict=True):
        assert row[:2] == want[:2] and row[4] == want[4]
        np.testing.assert_array_equal(row[2:4], want[2:4])


def test_launches_are_matched_by_occurrence_in_report_order_whatever_their_ordinal() -> None:
    def launch(number: int, kernel: str, value: float) -> dict[str, Any]:
        return {"kind": "kernel", "kernel": kernel, "demangled": kernel, "region": "", "ordinal": 0, "launch": number,
                "device": "NVIDIA H100", "cc": "9.0", "grid": "(1, 1, 1)", "block": "(32, 1, 1)",
                "metric": "gpu__time_duration.sum", "unit": "ns", "value": value}

    base = Measurement(make_table([launch(0, "b", 10.0), launch(1, "a", 1.0), launch(2, "a", 5.0)]), source="base")
    cur = Measurement(make_table([launch(0, "a", 2.0), launch(1, "a", 3.0), launch(2, "b", 10.0)]), source="cur")
    results = compare_tables(base, cur).results
    # The occurrence counts launches of one identity in report order: a table whose ordinals repeat loses none.
    assert results["kernel"].tolist() == ["a", "a", "b"]
    assert results["baseline"].tolist() == [1.0, 5.0, 10.0] and results["current"].tolist() == [2.0, 3.0, 10.0]


def test_a_status_code_is_its_place_in_the_display_order_and_its_column_reads_as_the_names() -> None:
    assert [STATUS_CODE[status] for status in STATUS_ORDER] == list(range(len(STATUS_ORDER)))
    names = [Status.INFO.value, Status.REGRESSION.value, Status.NO_DATA.value, Status.INFO.value]
    codes = status_codes(names)
    assert codes.dtype == np.int8 and STATUS_NAMES[codes].tolist() == names
    assert is_status(codes, Status.INFO).tolist() == [True, False, False, True]
    assert is_status(codes, Status.INFO, Status.NO_DATA).tolist() == [True, False, True, True]
    table = Columns({"status": status_column(codes)})
    assert table["status"].tolist() == names
