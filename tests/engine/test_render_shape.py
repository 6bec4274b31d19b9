"""One shape of a compared report for every renderer (``perfgate.render.shape.ComparedReport``): made once, frozen,
and a report read back from its JSON makes the same one, so it renders byte for byte as the fresh report."""

from __future__ import annotations

import dataclasses
import json
import sys
from pathlib import Path

import numpy as np
import pytest

from perfgate.collect import read_table
from perfgate.columns import Columns
from perfgate.compare import compare_tables
from perfgate.regions import with_region_totals
from perfgate.render import ComparedReport, compared, render, render_html, render_markdown, render_parts, render_text
from perfgate.report import Report, build_report, validate_report

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from helpers.csvgen import write_raw_csv  # noqa: E402
from helpers.repeats import noisy, repeated_launches  # noqa: E402


@pytest.fixture(scope="module")
def fresh(tmp_path_factory: pytest.TempPathFactory) -> Report:
    """A compared report as ``perfgate compare`` builds it (results as numpy arrays), with a loop's repeated
    launches judged as one (the ``groups`` table) beside single launches."""
    folder = tmp_path_factory.mktemp("csv")
    base, cur = folder / "base.csv", folder / "cur.csv"
    write_raw_csv(base, 60, 8, seed=1, run=1)
    write_raw_csv(cur, 60, 8, seed=2, scale=1.01)
    rng = np.random.default_rng(3)
    sides = []
    for shift, source, table in ((0.0, "base", base), (0.08, "cur", cur)):
        loop = repeated_launches(noisy(rng, shift), source, kernel="loop_kernel")
        sides.append(loop.with_table(Columns.concat([loop.table, with_region_totals(read_table(table)).table])))
    report = build_report(compare_tables(*sides), result_arrays=True)
    assert report["groups"]["group"] and isinstance(report["results"]["current"], np.ndarray)
    return report


def _joined(parts: object) -> str:
    return "".join(p.decode() if isinstance(p, bytes) else p for p in parts)  # type: ignore[attr-defined]


def test_a_report_read_back_from_json_renders_as_the_fresh_one(fresh: Report) -> None:
    read_back = validate_report(json.loads(_joined(render_parts(fresh, "json"))), "read back")
    one, other = compared(fresh), compared(read_back)
    assert one.summary == other.summary and one.notes == other.notes
    assert one.kernels.kernels == other.kernels.kernels
    for fmt in ("text", "md", "html"):
        assert _joined(render_parts(one, fmt)) == _joined(render_parts(other, fmt)) == _joined(
            render_parts(fresh, fmt)), fmt
        assert render(one, fmt) == render(fresh, fmt), fmt
    # JSON: the same report (a report read back holds its optional columns in the contract's order)
    assert json.loads(render(one, "json")) == json.loads(render(other, "json")) == json.loads(render(fresh, "json"))
    assert _joined(render_parts(one, "json")) == render(fresh, "json")
    assert render_text(other, show_unchanged=True) == render_text(fresh, show_unchanged=True)


def test_the_shape_is_made_once_and_not_changed(fresh: Report) -> None:
    shape = compared(fresh)
    assert compared(shape) is shape and isinstance(shape, ComparedReport)
    kernels, arrays = shape.kernels, shape.arrays
    render_markdown(shape)
    render_html(shape)
    assert shape.kernels is kernels and shape.arrays is arrays and kernels.arrays is arrays  # shared, not remade
    with pytest.raises(dataclasses.FrozenInstanceError):
        shape.report = fresh  # type: ignore[misc]


def test_a_report_without_launches_has_no_arrays(fresh: Report) -> None:
    empty = validate_report(json.loads(_joined(render_parts(fresh, "json"))), "read back")
    for table in ("launches", "results"):
        empty[table] = {name: [] for name in empty[table]}  # type: ignore[literal-required]
    empty["groups"] = {name: [] for name in empty["groups"]}  # type: ignore[typeddict-item]
    empty["summary"] = {name: 0 for name in empty["summary"]}
    shape = compared(empty)
    assert shape.arrays is None and shape.groups is None and shape.kernels.kernels == []
    assert "<html" in render_html(shape) and render_markdown(shape) == render_markdown(empty)
