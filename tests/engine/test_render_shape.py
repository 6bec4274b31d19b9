"""One shape of a compared report for every renderer (``perfgate.render.shape.ComparedReport``): made once, frozen,
and a report read back from its JSON makes the same one, so it renders byte for byte as the fresh report."""

from __future__ import annotations

import dataclasses
import html
import json
import sys
from pathlib import Path

import numpy as np
import pytest

from perfgate.collect import read_table
from perfgate.columns import Columns
from perfgate.compare import compare_tables
from perfgate.regions import with_region_totals
from perfgate.render.kernels import why_lines
from perfgate.render import html_bound
from perfgate.render import ComparedReport, format_change, compared, render, render_html, render_markdown, render_parts, render_text
from perfgate.report import Report, build_report, validate_report

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from helpers.csvgen import write_raw_csv  # noqa: E402
from helpers.repeats import noisy, repeated_launches  # noqa: E402
from helpers.reports import hand_made  # noqa: E402


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


def test_summarized_launches_are_the_shared_kernel_rows_of_those_launches(fresh: Report) -> None:
    """The page's summary rows come from the kernel rows every format shares, of the launches summarized: their
    own medians and change, not the repeated-launch judgement of all the kernel's launches."""
    shape = compared(fresh)
    assert shape.arrays is not None
    loop = next(k for k in shape.kernels.kernels if shape.report["launches"]["kernel"][k[0]] == "loop_kernel")
    part = loop[1:]  # some of its launches, as a page summarizes those it does not list
    whole, summarized = shape.kernels.row(loop), shape.kernels.part(part)
    assert any(m.judged_as_group for m in whole.metrics) and not any(m.judged_as_group for m in summarized.metrics)
    unlisted = np.array(part, dtype=np.intp)
    ranks = np.zeros(len(shape.report["launches"]["status"]), dtype=np.int64)
    section = html_bound.summary_section(shape, unlisted, ranks, 1_000_000)
    gated = [m for m in summarized.metrics if m.gated]
    assert gated and section.count("<tr class=") == len(gated) and f">{len(part):,}<br>" in section
    for metric in gated:
        assert f'<td class="num">{html.escape(format_change(metric.change))}</td>' in section


def test_a_listed_launch_says_why_as_every_format_does() -> None:
    """The terminal's "why" of a launch is ``why_lines``, every format's, of the launch's own row (its own values,
    as its gated lines above give them); its code and launch configuration keep their own lines."""
    report = hand_made([{"status": "regression"}], [
        (0, 0, 1000.0, 2000.0, 1.0, "regression", True),  # duration
        (0, 1, 8e6, 4e6, -0.5, "improvement", True),  # DRAM read
        (0, 2, 1e6, 1.5e6, 0.5, "info", False),  # instructions
    ])
    text = render_text(report)
    said = [line.strip() for line in text.splitlines() if line.strip().startswith("why: ")]
    assert said == [f"why: {why}" for why in why_lines(compared(report).kernels.row([0]), others=4)]
    assert said == ["why: smsp__inst_executed.sum 1,000,000 inst → 1,500,000 inst (+50.0%)"]
    assert text.count("DRAM read") == 1 and "improvement DRAM read 8 MB → 4 MB (-50.0%)" in text
