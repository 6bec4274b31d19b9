"""The HTML page of ``perfgate compare`` reads the results as numpy arrays (``build_report(result_arrays=True)``):
it is the page of the same report read back as lists, and the kernels grouped in numpy are the launches of each
``kernel_keys``."""

from __future__ import annotations

import json
import lzma
from pathlib import Path

import numpy as np
import pytest
from helpers.common import REPO
from helpers.csvgen import write_raw_csv

from perfgate.collect import read_table
from perfgate.compare import compare_tables
from perfgate.config import Settings
from perfgate.options import selection
from perfgate.regions import with_region_totals
from perfgate.render import render_html, render_markdown, render_text
from perfgate.render.kernels import kernel_groups, kernels_of, launch_groups, without_repeated_totals
from perfgate.render.result_arrays import ResultArrays
from perfgate.report import Report, build_report, kernel_keys, validate_report
from perfgate.verdict import verdict_of

DATA = REPO / "tests" / "data"


def _both(base: Path, current: Path) -> tuple[Report, Report]:
    """The report of ``current`` against ``base`` with its results as Python lists and as numpy arrays."""
    settings = Settings()
    options = selection(metrics=settings.metrics, thresholds=settings.thresholds,
                        significance=settings.significance, allow_device_mismatch=False)
    tables = [with_region_totals(read_table(path, options.wanted_metrics())) for path in (base, current)]
    comparison = compare_tables(tables[0], tables[1], options)
    reports = build_report(comparison), build_report(comparison, result_arrays=True)
    for report in reports:
        report["verdict"] = verdict_of(report)
    return reports


@pytest.mark.parametrize("kernel", ["vector_add", "mlp"])
@pytest.mark.parametrize("page", ["details", "raw"])
def test_the_page_of_result_arrays_is_the_page_of_the_lists(kernel: str, page: str) -> None:
    base, current = (DATA / "h100" / f"{kernel}.rerun.{page}{side}.csv" for side in ("-base", ""))
    for pair in ((base, current), (current, base)):
        as_lists, as_arrays = _both(*pair)
        assert isinstance(as_arrays["results"]["baseline"], np.ndarray)
        assert render_html(as_arrays) == render_html(as_lists)
        # Every format reads the results through ResultArrays: text and Markdown too, lists or arrays alike.
        assert render_text(as_arrays) == render_text(as_lists)
        assert render_markdown(as_arrays) == render_markdown(as_lists)
        lists, arrays = ResultArrays(as_lists), ResultArrays(as_arrays)
        assert lists.names == arrays.names and (lists.status == arrays.status).all()
        for name in ("baseline", "current", "change"):
            assert np.array_equal(getattr(lists, name), getattr(arrays, name), equal_nan=True)
            assert list(arrays.values[name][i] for i in range(len(lists.values[name]))) == lists.values[name]


def test_a_missing_or_infinite_value_reads_as_none() -> None:
    as_lists, as_arrays = _both(*(DATA / "h100" / f"mlp.rerun.raw{side}.csv" for side in ("-base", "")))
    as_arrays["results"]["change"][:3] = [np.nan, np.inf, -np.inf]
    arrays = ResultArrays(as_arrays)
    assert [arrays.values["change"][i] for i in range(3)] == [None, None, None]
    assert np.isnan(arrays.change[:3]).all()


def _sessions() -> list[Report]:
    return [validate_report(json.loads(lzma.decompress(path.read_bytes())), path.name)
            for path in sorted(DATA.glob("h*/**/sessions/*.json.xz")) if ".trace." not in path.name]


def test_kernels_grouped_in_numpy_are_the_launches_of_each_kernel_key() -> None:
    reports = _sessions()
    assert reports
    for report in reports:
        by_key: dict[tuple[object, ...], list[int]] = {}
        for index, key in enumerate(kernel_keys(report["launches"])):
            by_key.setdefault(key, []).append(index)
        expected = without_repeated_totals(report, list(by_key.values()))
        assert kernels_of(report, launch_groups(report)) == kernel_groups(report) == expected


def test_every_format_renders_regressed_launches_from_result_arrays_as_from_lists(tmp_path: Path) -> None:
    """``perfgate compare``'s report holds its results as numpy arrays; text lists each regressed launch with its
    kernel row (the same summary as the other formats), which reads them as it reads lists."""
    base, current = tmp_path / "base.csv", tmp_path / "current.csv"
    write_raw_csv(base, 40, 20, seed=1, run=1)
    write_raw_csv(current, 40, 20, seed=2, scale=1.01)
    as_lists, as_arrays = _both(base, current)
    assert as_lists["summary"].get("regression")
    for render in (render_text, render_markdown, render_html):
        assert render(as_arrays) == render(as_lists)


def test_a_column_without_infinity_is_read_as_it_is_not_copied() -> None:
    as_lists, as_arrays = _both(*(DATA / "h100" / f"mlp.rerun.raw{side}.csv" for side in ("-base", "")))
    arrays = ResultArrays(as_arrays)
    assert np.shares_memory(arrays.baseline, as_arrays["results"]["baseline"])
    assert not arrays.baseline.flags.writeable  # a renderer reads it, never writes the report's own


def test_a_kernel_none_of_whose_launches_is_listed_is_summarized_once(monkeypatch: pytest.MonkeyPatch) -> None:
    import perfgate.render.kernels as kernels

    as_lists, as_arrays = _both(*(DATA / "h100" / f"mlp.rerun.raw{side}.csv" for side in ("-base", "")))
    rows = kernels.KernelRows(as_arrays)
    made: list[list[int]] = []
    original = kernels.metric_launches
    monkeypatch.setattr(kernels, "metric_launches", lambda arrays, indexes: made.append(indexes) or original(
        arrays, indexes))
    whole = next(kernel for kernel in rows.kernels if len(kernel) > 1)
    part, row = rows.part(whole), rows.row(whole)
    assert part.launches == row.launches == whole
    rows.part(whole[1:])
    assert made == [whole, whole[1:]]  # the whole kernel's once, for its row and its part alike
