"""The HTML table of every launch, put together in numpy (``perfgate.render.html``): the same page as writing it
row by row, on reports made to hold the edge cases (a "why" row without result rows, ties in the largest changes,
numbers that round on a tie, units to escape, -0.0 beside 0.0, missing values)."""

from __future__ import annotations

import math
import random
import statistics
import re
from typing import Any

import numpy as np
import pytest
from helpers.reports import METRICS, hand_made

from perfgate.render import format_change, format_value, format_values, render, render_html, render_parts
from perfgate.quantities import OWN, WHOLE, _formatter, number_style, value_scale
from perfgate.render.formatting import html_escape
from perfgate.render.html import render_html_chunks
from perfgate.render.html_numbers import Writer, _percent_keys, _si_keys, change_texts, distinct, row_scales, value_texts
from perfgate.render.html_table import _ranks
from perfgate.render.kernels import KernelRows, kernel_groups, kernel_row
from perfgate.render.result_arrays import MetricLaunches, ResultArrays, _grid_medians, metric_launches
from perfgate.render.result_arrays import floats as _floats
from perfgate.report import Report

_UNGATED_SHOWN = ("new", "missing", "no data")
_EXPLAINED = ("regression", "improvement")


def rows_one_by_one(report: Report) -> str:
    """The table's rows as perfgate wrote them before numpy, one launch and one result row at a time."""
    launches, results, metrics = report["launches"], report["results"], report["metrics"]
    names = [str(label or metric) for metric, label in zip(metrics["metric"], metrics["label"])]
    units = [u or "" for u in metrics["unit"]]
    from perfgate.quantities import change_for, limit_text

    limits = [html_escape(limit_text(t, u)) for t, u in zip(metrics["threshold"], units)]
    explains = [not re.match(r"^(launch__|time\.stddev$)", str(m or "")) for m in metrics["metric"]]
    has_tests = any(launches["test"])
    out = []
    for index in range(len(launches["status"])):
        rows = [i for i, launch in enumerate(results["launch"]) if launch == index]
        kernel, ordinal = launches["kernel"][index], launches["ordinal"][index]
        name = f"{kernel} #{ordinal}" if launches["kind"][index] == "kernel" and ordinal > 0 else kernel
        test = f'<td class="kernel">{html_escape(launches["test"][index] or "")}</td>' if has_tests else ""
        who = (f'{test}<td class="kernel" title="{html_escape(launches["demangled"][index])}">{html_escape(name)}'
               f'</td><td>{html_escape(launches["region"][index] or "")}</td>')
        for i in rows:
            status, code = results["status"][i], results["metric"][i]
            if not results["gated"][i] and (status not in _UNGATED_SHOWN or status != launches["status"][index]):
                continue
            before, after = map(html_escape, format_values([results["baseline"][i], results["current"][i]],
                                                           units[code]))
            out.append(f'<tr class="{status.replace(" ", "-")}">\n<td>{status}</td>{who}\n'
                       f'<td>{html_escape(names[code])}</td><td class="num">{before}</td><td class="num">{after}'
                       f'</td>\n<td class="num">{change_for(str(metrics["metric"][code] or ""), results["baseline"][i], results["current"][i], results["change"][i], metrics["threshold"][code])}</td><td>{limits[code]}</td>\n'
                       f'</tr>\n')
        moved = [i for i in rows if results["status"][i] == "info" and results["change"][i] is not None
                 and abs(results["change"][i]) >= 0.01 and explains[results["metric"][i]]]
        improved = any(results["status"][i] == "improvement" and results["gated"][i] for i in rows)
        change = launches["launch_change"][index]
        if not change and not ((improved or moved) and launches["status"][index] in _EXPLAINED):
            continue
        moved.sort(key=lambda i: -abs(results["change"][i] or 0.0))
        reasons = [f"{names[results['metric'][i]]} "
                   + " → ".join(format_values([results["baseline"][i], results["current"][i]], units[results["metric"][i]]))
                   + f" ({change_for(str(metrics['metric'][results['metric'][i]] or ''), results['baseline'][i], results['current'][i], results['change'][i], metrics['threshold'][results['metric'][i]])})"
                   for i in moved if not results["gated"][i]][:4]
        text = f"launch config changed: {html_escape(change)}<br>" if change else ""
        if reasons:
            text += "why: " + html_escape("; ".join(reasons))
        if text:
            out.append(f'<tr class="why"><td></td><td colspan="{8 if has_tests else 7}" class="why">{text}</td>'
                       f'</tr>\n')
    return "".join(out)


def table_of(page: str) -> str:
    every = page[page.index('<table id="results">'):]
    return every[every.index("<tbody>\n") + len("<tbody>\n"):every.index("</tbody>")]


def edge_cases(test: str | None = None) -> Report:
    launches = [
        {"status": "regression", "launch_change": "grid (1, 1, 1) → (2, 1, 1); <block>"},
        {"status": "new", "region": "r<1>"},
        {"status": "no data"},
        {"status": "improvement"},
        {"status": "unchanged", "launch_change": "registers 16 → 18"},  # no result rows: a "why" row only
        {"status": "missing", "kind": "region", "ordinal": 4},
        {"status": "regression"},
        {"status": "improvement", "launch_change": ""},
    ]
    results = [
        (0, 0, 1000.0, 1500.0, 0.5, "regression", True),
        (0, 1, -0.0, 0.0, None, "unchanged", True),
        (0, 2, 100, 200, 1, "info", False),  # five moved: the four largest, ties in report order
        (0, 4, 40.0, 50.0, 0.25, "info", False),
        (0, 5, 3.0, 2.0, -0.25, "info", False),
        (0, 6, 2.5, 3.0, 0.2, "info", False),
        (0, 3, 16, 32, 1, "info", False),  # launch__: explains nothing
        (0, 1, 1e6, 1.25e6, 0.25, "info", False),
        (1, 0, None, 2e9, None, "new", True),
        (1, 4, None, 12.25, None, "new", False),
        (2, 0, None, None, None, "no data", True),
        (2, 1, 5e12, None, None, "no data", True),
        (3, 0, 2000.0, 1000.0, -0.5, "improvement", True),
        (3, 5, 7.0, 7.5, 0.00125, "info", False),  # a tie in tenths of a percent: +0.1%, not +0.2%
        (3, 6, 7.0, 7.0035, 0.0005, "info", False),
        (5, 0, 123.0, None, None, "missing", True),
        (5, 2, 99999.0, None, None, "missing", False),
        (6, 0, 1.0, 2.0, 1e12, "regression", True),
        (6, 2, 2**60, 2**61, 1.0, "info", True),  # gated info: counts as moved, is not named
        (7, 0, 1000.0, 999.0, -0.001, "improvement", True),
        (7, 1, 999.5, 1000.0, 0.0005005, "unchanged", True),
    ]
    return hand_made(launches, results, test)


@pytest.mark.parametrize("test", [None, "tests/test_x.py::test_<y>"])
def test_the_table_is_the_rows_written_one_by_one(test: str | None) -> None:
    report = edge_cases(test)
    page = render_html(report)
    assert table_of(page) == rows_one_by_one(report)
    assert "launch config changed: registers 16 → 18<br></td></tr>" in page  # a launch without result rows
    assert "&lt;b&gt;&amp;" in table_of(page) and "<b>&" not in table_of(page)


def test_a_large_random_report_renders_as_row_by_row() -> None:
    rng = random.Random(7)
    statuses = ["regression", "improvement", "unchanged", "new", "missing", "no data"]
    launches = [{"status": rng.choice(statuses), "launch_change": rng.choice([None, "", "grid → (2, 1, 1)"])}
                for _ in range(300)]
    results = []
    for launch, facts in enumerate(launches):
        for metric in rng.sample(range(7), rng.randint(0, 7)):
            base = rng.choice([None, 0.0, -0.0, 1.0, 1000.0, 999.5, rng.uniform(-1e7, 1e10), rng.randint(0, 10**9)])
            cur = rng.choice([None, base, rng.uniform(0, 1e10)])
            change = rng.choice([None, 0.0, 1e-5, 0.00125, -0.0005, rng.uniform(-1, 1), rng.uniform(-0.02, 0.02)])
            status = rng.choice([facts["status"], "info", "unchanged", "improvement", "regression"])
            results.append((launch, metric, base, cur, change, status, rng.choice([True, False, None])))
    report = hand_made(launches, results)
    assert table_of(render_html(report)) == rows_one_by_one(report)


def test_the_page_in_chunks_is_the_page() -> None:
    report = edge_cases()
    assert "".join(render_html_chunks(report)) == render_html(report)
    for fmt in ("text", "md", "html", "json"):  # what a file writer gets: the same text, in parts
        parts = list(render_parts(report, fmt))
        joined = b"".join(parts).decode() if fmt == "json" else "".join(str(part) for part in parts)
        assert joined == render(report, fmt)


def test_change_texts_are_format_change() -> None:
    """Changes rounded to tenths of a percent in numpy, only where that rounding is certain."""
    rng = random.Random(3)
    changes: list[Any] = [None, 0.0, -0.0, 0.0004999, 0.0005, -0.0005, 0.00125, -0.00125, 0.00135, 1e9, 1e12,
                          -1e15, 0.9995, 0.01, -0.01, 1, -1, 7, 2**53 + 1, -(2**60) - 3, 10**17 + 1]
    changes += [rng.uniform(-2, 2) for _ in range(20000)]
    changes += [round(rng.uniform(-5, 5), 4) + 0.00005 * rng.choice([-1, 0, 1]) for _ in range(20000)]
    changes += [rng.choice([-1, 1]) * 10 ** rng.uniform(-6, 13) for _ in range(20000)]
    texts = change_texts(_floats(changes), changes, np.arange(len(changes))).tolist()
    assert texts == [format_change(c) for c in changes]


def test_values_beyond_float_range_are_formatted_as_before() -> None:
    column: list[Any] = [1.5, None, 10**400, 2]
    values = _floats(column)
    assert np.isnan(values[1]) and np.isnan(values[2]) and values[3] == 2.0


def number_cases() -> list[Any]:
    """Values for a unit's texts: ties and their neighbours at every rounding (3 and 4 digits, with and
    without a prefix), powers of ten, tiny and huge, negative, zero, whole numbers about 1e9, ints beyond 2**53,
    and random ones."""
    rng = random.Random(11)
    values: list[Any] = [None, 0.0, -0.0, 1, -1, 2**53, 2**53 + 1, -(2**60) - 3, 10**17 + 1, 1e300,
                         -1e300, 5e-324, 1e-310, 999999999.0, 1e9, 1e9 - 0.5, -999999999.0, 999.5, 999.95, 9999.5,
                         99950.0, 999500.0, 999.4999999, 0.00012345, 0.000012345]
    for exponent in range(-12, 20):
        for value in (10.0 ** exponent, 10 ** exponent):
            values += [value, -value, np.nextafter(float(value), 0.0), np.nextafter(float(value), math.inf)]
        for _ in range(40):
            digits = rng.randrange(100, 10000)
            tie = (digits + 0.5) * 10.0 ** (exponent - 3)
            values += [tie, -tie, np.nextafter(tie, 0.0), np.nextafter(tie, math.inf), tie * (1 + 1e-7)]
    values += [rng.choice([-1, 1]) * 10 ** rng.uniform(-12, 18) for _ in range(20000)]
    values += [rng.randrange(-10**10, 10**10) for _ in range(5000)]
    values += [float(rng.randrange(0, 10**6)) + rng.choice([0.0, 0.5, 0.25]) for _ in range(5000)]
    return [float(v) if isinstance(v, np.floating) else v for v in values]


@pytest.mark.parametrize("unit", ["byte", "inst", "register/thread", "<b>&", "ns", "s", "%", ""])
def test_number_texts_are_format_value(unit: str) -> None:
    """Each distinct text made once, from one value of a rounding key where the unit has one: the same text
    as formatting every value."""
    column = number_cases()
    text_of = _formatter(unit)
    writer = Writer.of(unit)
    assert (writer.keys is not None) == (number_style(unit) != "time")
    assert (writer.whole is not None) == (number_style(unit) == "count")
    texts = value_texts(_floats(column), np.arange(len(column)), writer, column,
                   lambda v: "—" if v is None else writer.text(v)).tolist()
    assert texts == ["—" if v is None else html_escape(text_of(v)) for v in column]


@pytest.mark.parametrize("unit", ["byte", "inst", "register/thread", "<b>&", "ns", "s", "%", ""])
def test_number_texts_at_a_row_s_scale_are_its_formatter_s(unit: str) -> None:
    """At each scale a row can share (``value_scale``): the texts made once per rounding key are the formatter's."""
    column = [v for v in number_cases() if v is None or abs(v) < 2.0 ** 53]
    scales = {"time": [*range(4), OWN], "percent": [0], "si": [*range(WHOLE), OWN]}.get(number_style(unit),
                                                                                          range(OWN + 1))
    for scale in scales:
        text_of, writer = _formatter(unit, scale), Writer.of(unit, scale)
        texts = value_texts(_floats(column), np.arange(len(column)), writer, column,
                       lambda v: "—" if v is None else writer.text(v)).tolist()
        assert texts == ["—" if v is None else html_escape(text_of(v)) for v in column], scale


@pytest.mark.parametrize("unit", ["byte", "inst", "register/thread", "ns", "s", "%"])
def test_row_scales_in_numpy_are_value_scale(unit: str) -> None:
    column = number_cases()
    rng = random.Random(3)
    first = [rng.choice(column) for _ in range(20000)]
    second = [rng.choice([*column[:50], None, 0.0, value, value * 1.05]) for value in first]
    scales = row_scales(unit, _floats(first), _floats(second))
    assert scales.tolist() == [value_scale(unit, [a, b]) for a, b in zip(first, second)]
    assert {OWN, *range(3)} <= set(scales.tolist()) or unit == "%"


@pytest.mark.parametrize("keys_of", [_si_keys, _percent_keys])
def test_rounding_keys_are_certain_for_most_values(keys_of: Any) -> None:
    values = _floats(number_cases())
    _, certain = keys_of(values)
    assert certain[np.abs(values) < 1e11].mean() > 0.9  # the ties and their neighbours are not
    assert not certain[np.isnan(values)].any()


def kernels_of_many_launches(regular: bool) -> Report:
    """Three kernels of 100 launches each: their metrics in one order (a loop's launches) or each launch its own
    subset in its own order; values with None, ints (some beyond 2**53), -0.0."""
    rng = random.Random(5 if regular else 6)
    statuses = ["regression", "improvement", "unchanged", "new", "missing", "no data"]
    launches = [{"status": rng.choice(statuses)} for _ in range(300)]
    results = []
    for launch, facts in enumerate(launches):
        metrics = list(range(7)) if regular else rng.sample(range(7), rng.randint(0, 7))
        for metric in metrics:
            base = rng.choice([None, 0.0, -0.0, 1.5, 2**60 + 1, rng.randint(0, 10**6), rng.uniform(-1e3, 1e9)])
            base = 2**60 + 2 * launch if metric == 6 else base  # medians no float holds
            cur = rng.choice([None, base, rng.randint(0, 10**6), rng.uniform(0, 1e9)])
            status = rng.choice([facts["status"], "info", "unchanged", "improvement", "regression"])
            results.append((launch, metric, base, cur, rng.choice([None, 0.1]), status, rng.choice([True, False])))
    return hand_made(launches, results)


def python_metric_launches(report: Report, indexes: list[int]) -> list[MetricLaunches]:
    """What ``metric_launches`` must give, worked out plainly from the report's lists: each metric's rows in
    report order, one row's values as they are, ``statistics.median`` of several without None, of those with both
    values where some have both and others not (a kernel that lost or gained launches)."""
    results = report["results"]
    by_code: dict[int, list[int]] = {}
    for i, launch in enumerate(results["launch"]):
        if launch in indexes:
            by_code.setdefault(results["metric"][i], []).append(i)
    out = []
    for code, rows in by_code.items():
        if len(rows) == 1:
            before, after, change = (results[name][rows[0]] for name in ("baseline", "current", "change"))
        else:
            paired = [i for i in rows if results["baseline"][i] is not None and results["current"][i] is not None]
            rows_valued = paired if paired and len(paired) < len(rows) else rows
            before, after = ((statistics.median(known) if (known := [results[name][i] for i in rows_valued
                                                                   if results[name][i] is not None]) else None)
                             for name in ("baseline", "current"))
            change = after / before - 1 if before and after is not None else None
        out.append(MetricLaunches(code, len(rows), tuple(dict.fromkeys(results["status"][i] for i in rows)),
                                  any(results["gated"][i] for i in rows), before, after, change))
    return out


@pytest.mark.parametrize("regular", [True, False])
def test_kernels_of_many_launches_are_summarized_in_numpy_as_in_python(regular: bool) -> None:
    report = kernels_of_many_launches(regular)
    arrays = ResultArrays(report)
    rows = KernelRows(report, arrays=arrays)
    kernels = kernel_groups(report)
    assert len(kernels) == 3 and all(len(k) == 100 for k in kernels)
    for indexes in kernels:
        fast, slow = metric_launches(arrays, indexes), python_metric_launches(report, indexes)
        assert fast == slow  # medians of ints compare equal to their floats
        for one, other in zip(fast, slow):
            unit = METRICS["unit"][one.code]
            assert [format_value(v, unit) for v in (one.before, one.after)] == \
                [format_value(v, unit) for v in (other.before, other.after)]
        assert rows.row(indexes) == kernel_row(report, indexes)
    assert any((m.before or 0) > 2**53 for k in kernels for m in metric_launches(arrays, k))


@pytest.mark.parametrize("spread", [10**3, 10**12])  # by a table over the keys' range, by sorting
def test_distinct_keys_index_their_rows(spread: int) -> None:
    rng = np.random.default_rng(1)
    keys = rng.integers(-spread, spread, 5000)[rng.integers(0, 5000, 20000)]
    inverse, one = distinct(keys)
    assert (keys[one][inverse] == keys).all()
    assert len(np.unique(keys[one])) == len(one) == len(np.unique(keys))


@pytest.mark.parametrize("skewed", [False, True])  # in a table of a row per group, by np.lexsort
def test_ranks_in_groups_are_sorted_ranks_with_ties_in_row_order(skewed: bool) -> None:
    rng = random.Random(2)
    sizes = [rng.randint(1, 6) for _ in range(2000)] + ([3000] if skewed else [])
    groups = np.repeat(np.arange(len(sizes)), sizes)
    values = np.array([float(rng.randint(-5, 0)) for _ in range(len(groups))])  # ties
    expected = np.empty(len(groups), dtype=np.intp)
    start = 0
    for size in sizes:
        rows = sorted(range(start, start + size), key=lambda i: values[i])
        expected[rows] = np.arange(size)
        start += size
    assert (_ranks(groups, values) == expected).all()
    assert len(_ranks(groups[:0], values[:0])) == 0


def test_grid_medians_are_numpys_to_the_bit() -> None:
    """A grid's medians, read from each metric's values sorted, are ``np.median``'s to the bit, the sign of a zero
    median included (which of 0.0 and -0.0 lies in the middle is np.median's selection's); a metric with NaN or a
    value of 2**53 or more is left to ``_median``."""
    rng = np.random.default_rng(3)
    pools = [[0.0, -0.0], [0.0, -0.0, 1.5, -2.0], [-0.0, 3.0], [1.0, 2.0, np.nan], [1.0, 2.0**53], [-2.0**53, 0.0]]
    for launches in (2, 3, 4, 7, 1000, 1001):
        for _ in range(20):
            columns = [rng.choice(pools[i % len(pools)], size=launches) for i in range(12)]
            values = np.stack(columns, axis=1).ravel()  # a row per launch, a column per metric
            grid = np.arange(values.size).reshape(launches, len(columns))
            want = {at: float(np.median(column)) for at, column in enumerate(columns)
                    if not (np.isnan(column) | (np.abs(column) >= 2.0**53)).any()}
            found = _grid_medians(values, grid)
            assert list(found) == list(want)
            assert [(value, math.copysign(1.0, value)) for value in found.values()] == \
                [(value, math.copysign(1.0, value)) for value in want.values()]
