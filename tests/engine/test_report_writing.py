"""The fast paths of compare -> report -> JSON give what the general ones give (issue 10)."""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

import numpy as np
import pytest

from perfgate.collect import read_table
from perfgate.columns import Columns
from perfgate.compare import Comparison, compare_tables
from perfgate.files import write_atomically
from perfgate.regions import with_region_totals
from perfgate.render import TEXT_LAUNCHES, render_text
from perfgate.report import build_report, build_view, dump_parts, dumps

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from helpers.csvgen import write_raw_csv  # noqa: E402
from helpers.repeats import noisy, repeated_launches  # noqa: E402


@pytest.fixture(scope="module")
def comparison(tmp_path_factory: pytest.TempPathFactory) -> Comparison:
    folder = tmp_path_factory.mktemp("csv")
    base, cur = folder / "base.csv", folder / "cur.csv"
    write_raw_csv(base, 400, 12, seed=1, run=1)
    write_raw_csv(cur, 400, 12, seed=2, scale=1.01)
    return compare_tables(*(with_region_totals(read_table(p)) for p in (base, cur)))


@pytest.mark.parametrize(("unchanged", "first"), [(True, None), (False, None), (True, 7), (False, 50)])
def test_each_results_launch_from_compare_is_the_one_its_key_names(comparison: Comparison, unchanged: bool,
                                                                   first: int | None) -> None:
    assert comparison.result_launch is not None
    by_key = comparison._replace(result_launch=None)
    assert build_view(comparison, unchanged_results=unchanged, results_of_first=first) == \
        build_view(by_key, unchanged_results=unchanged, results_of_first=first)


@pytest.mark.parametrize(("unchanged", "first"), [(True, None), (False, None), (True, 7), (False, 50)])
def test_the_metrics_table_from_compares_metric_codes_is_the_one_its_columns_make(comparison: Comparison,
                                                                                 unchanged: bool,
                                                                                 first: int | None) -> None:
    assert comparison.result_metric is not None
    by_columns = comparison._replace(result_metric=None)
    view = build_view(comparison, unchanged_results=unchanged, results_of_first=first)
    assert view == build_view(by_columns, unchanged_results=unchanged, results_of_first=first)
    assert len(view["metrics"]["metric"]) > 1


def test_a_view_renders_as_its_whole_report_and_is_no_report(comparison: Comparison) -> None:
    """The text of a view (the rows it does not list left out) is its report's; a view has no "format", so
    nothing reads it as a report."""
    report = build_report(comparison)
    text = build_view(comparison, unchanged_results=False, results_of_first=TEXT_LAUNCHES)
    assert render_text(text) == render_text(report)
    assert len(text["results"]["launch"]) < len(report["results"]["launch"])
    assert not {"format", "version", "generator"} & set(text)
    file_format = {name: report[name] for name in ("format", "version", "generator")}  # type: ignore[literal-required]
    assert {**report, "results": text["results"], "groups": text["groups"]} == {**text, **file_format}


def test_results_follow_their_launches_in_display_order(comparison: Comparison) -> None:
    assert comparison.result_launch is not None
    at = comparison.result_launch
    assert (np.diff(at) >= 0).all()
    for column in ("kind", "kernel", "region", "ordinal"):
        assert comparison.results[column].tolist() == comparison.launches[column][at].tolist()


def test_the_json_written_a_column_at_a_time_is_dumps(comparison: Comparison, tmp_path: Path) -> None:
    report = build_report(comparison)
    assert any("→" in note for note in report["launches"]["launch_change"])  # a 2-byte-per-character string
    text = dumps(report)
    parts = list(dump_parts(report))
    assert len(parts) > len(report) and b"".join(parts) == text.encode("utf-8")  # UTF-8, as orjson makes it
    assert json.loads(text) == json.loads(json.dumps(report))
    write_atomically(tmp_path / "r.json", dump_parts(report))
    assert (tmp_path / "r.json").read_bytes() == text.encode("utf-8")
    # The results table left numpy arrays gives the same text, nulls included.
    arrays = build_report(comparison, result_arrays=True)
    assert not isinstance(arrays["results"]["change"], list) and dumps(arrays) == text
    changes = arrays["results"]["change"] = np.array(arrays["results"]["change"])  # a copy: it is compare's own
    for at, odd in ((3, math.nan), (8, math.inf), (9, -math.inf)):  # null in JSON
        changes[at] = odd
        report["results"]["change"][at] = None
    assert dumps(arrays) == dumps(report)
    # An array orjson does not take as it is (a strided view) is written all the same.
    arrays["results"]["change"] = np.repeat(changes, 2)[::2]
    assert dumps(arrays) == dumps(report)
    empty = build_report(comparison._replace(results=comparison.results[:0],
                                             result_launch=np.zeros(0, dtype=np.int64)))
    assert b"".join(dump_parts(empty)).decode() == dumps(empty)


def test_every_float_is_written_as_a_number_that_reads_back_as_itself() -> None:
    """The writer's floats (orjson's shortest round trip) read back exactly, whatever their size; NaN and ±inf
    are null, in a list or an array alike."""
    rng = np.random.default_rng(5)
    bits = rng.integers(0, 2**63, 20_000, dtype=np.uint64) | (rng.integers(0, 2, 20_000, dtype=np.uint64) << 63)
    values = np.concatenate([bits.view(np.float64), 10.0 ** np.arange(-30, 30), [0.0, -0.0, 5e-324, 1e-5,
                             0.1, 1e16, 1.7976931348623157e308]])
    finite = np.isfinite(values)
    report = {"results": {"change": values}, "notes": [], "summary": {"x": values[finite][:3].tolist()}}
    text = dumps(report)  # type: ignore[arg-type]
    read = json.loads(text)
    assert read["results"]["change"] == [v if ok else None for v, ok in zip(values.tolist(), finite.tolist())]
    assert read["summary"]["x"] == values[finite][:3].tolist()
    assert "NaN" not in text and "Infinity" not in text


def test_an_integer_beyond_64_bits_is_written_too() -> None:
    """A report read back can hold integers no 64 bits hold (JSON has no limit); orjson refuses them, and the
    json module writes them instead."""
    report = {"results": {"baseline": [2**70, 1.5, None], "launch": [0, 1, 2]}, "notes": ["µs → ms"]}
    text = dumps(report)  # type: ignore[arg-type]
    assert json.loads(text) == report
    assert '"baseline": [1180591620717411303424,1.5,null]' in text and '"µs → ms"' in text


def test_inconclusive_kernels_are_noted_once_each_in_join_order() -> None:
    rng = np.random.default_rng(11)
    sides = []
    for shift, source in ((0.0, "base"), (0.05, "cur")):
        first = repeated_launches(noisy(rng, shift), source, kernel="zeta_kernel")
        second = repeated_launches(noisy(rng, shift), source, kernel="alpha_kernel", start=40)
        sides.append(first.with_table(Columns.concat([first.table, second.table])))
    comparison = compare_tables(*sides)
    notes = [n for n in comparison.notes if "inconclusive" in n]
    assert [n.split()[0] for n in notes] == ["alpha_kernel", "zeta_kernel"]
