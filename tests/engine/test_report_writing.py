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
from perfgate.render import render_text
from perfgate.report import build_report, dump_parts, dumps, summarize

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


def test_each_results_launch_from_compare_is_the_one_its_key_names(comparison: Comparison) -> None:
    assert comparison.result_launch is not None
    by_key = comparison._replace(result_launch=None)
    assert build_report(comparison) == build_report(by_key)


def test_the_metrics_table_from_compares_metric_codes_is_the_one_its_columns_make(comparison: Comparison) -> None:
    assert comparison.result_metric is not None
    by_columns = comparison._replace(result_metric=None)
    report = build_report(comparison)
    assert report == build_report(by_columns)
    assert len(report["metrics"]["metric"]) > 1


def test_the_text_of_a_report_with_result_arrays_is_that_of_its_lists(comparison: Comparison) -> None:
    """``perfgate compare`` renders text from the report its other formats write (results as numpy arrays, null as
    NaN): each listed kernel reads its rows as the report's lists hold them, None for NaN and ±inf (a kernel without
    baseline values says so)."""
    report = build_report(comparison)
    arrays = build_report(comparison, result_arrays=True)
    first = report["launches"]["status"].index("regression")
    kernel = [at for at, name in enumerate(report["launches"]["kernel"]) if name == report["launches"]["kernel"][first]
              and report["launches"]["region"][at] == report["launches"]["region"][first]]
    for copy in (report, arrays):
        for launch in kernel:  # as compare leaves a kernel without values: no data, judged in no group
            copy["launches"]["status"][launch] = "no data"
            if copy["launches"].get("group"):
                copy["launches"]["group"][launch] = None
        copy["summary"] = summarize(copy["launches"]["status"])
    rows = [at for at, owner in enumerate(report["results"]["launch"]) if owner in set(kernel)]
    for name, odd in (("baseline", math.nan), ("change", math.inf), ("delta", -math.inf)):
        column = arrays["results"][name] = np.array(arrays["results"][name])  # a copy: it is compare's own
        column[rows] = odd
        for at in rows:
            report["results"][name][at] = None  # type: ignore[literal-required]
    text = render_text(report)
    assert "no values of the gated metrics in the baseline" in text
    assert render_text(arrays) == text and render_text(json.loads(dumps(arrays))) == text


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
