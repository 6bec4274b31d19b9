"""The JSON report contract (``perfgate.report``): shape, writing, reading untrusted reports, v1 upgrade,
merge, and the human formats bounded by what needs attention. Hand-built reports: no corpus needed."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from perfgate.errors import InputError
from perfgate.render import (
    TEXT_LAUNCHES,
    render_html,
    render_json,
    render_markdown,
    render_text,
    verdict_line,
)
from perfgate.render.formatting import text_length
from perfgate.report import (
    FORMAT_VERSION,
    MAX_REPORT_BYTES,
    dumps,
    empty_report,
    launch_rows,
    load_report,
    merge_reports,
    result_rows,
    summarize,
    validate_report,
)

COMMENT_LIMIT = 65_536


def synthetic(statuses: list[str], *, test: str | None = None, metrics: int = 2, kernels: int = 7) -> dict[str, Any]:
    """A version 2 report with one launch per status (worst first, as compare orders them)."""
    rank = ["regression", "no data", "missing", "new", "improvement", "unchanged"]
    statuses = sorted(statuses, key=rank.index)
    n = len(statuses)
    launches = {"kind": ["kernel"] * n, "kernel": [f"kernel_{i % kernels}" for i in range(n)],
                "demangled": [f"void kernel_{i % kernels}<float, 128>(const float *, float *, int)" for i in range(n)],
                "region": [""] * n, "ordinal": [i // kernels for i in range(n)], "status": statuses,
                "device": ["NVIDIA H100 80GB HBM3"] * n, "launch_change": [""] * n, "test": [test] * n,
                "path": [None] * n, "line": [None] * n}
    names = ["gpu__time_duration.sum", "dram__bytes_read.sum", "sm__throughput.avg.pct_of_peak_sustained_elapsed"]
    table = {"metric": names[:metrics] + names[2:3], "label": ["duration", "DRAM read", "SM throughput %"][:metrics]
             + ["SM throughput %"], "unit": ["ns", "byte", "%"][:metrics] + ["%"],
             "threshold": ["5%+2000", "2%+4096", "off"][:metrics] + ["off"],
             "direction": ["lower", "lower", "higher"][:metrics] + ["higher"]}
    results: dict[str, list[Any]] = {k: [] for k in ("launch", "metric", "baseline", "current", "change", "delta",
                                                    "status", "gated")}
    for i, status in enumerate(statuses):
        for code in range(metrics + 1):
            gated = code < metrics
            worse = status == "regression" and code == 0
            base, cur = 100_000.0 * (code + 1), 100_000.0 * (code + 1) * (1.5 if worse else 1.001)
            row_status = status if status in ("new", "missing", "no data") else (
                "info" if not gated else "regression" if worse else "unchanged")
            if status == "improvement" and code == 0:
                cur, row_status = base * 0.5, "improvement"
            for key, value in (("launch", i), ("metric", code), ("baseline", base), ("current", cur),
                               ("change", (cur - base) / base), ("delta", cur - base), ("status", row_status),
                               ("gated", gated)):
                results[key].append(value)
    report = empty_report()
    report.update(verdict="fail" if "regression" in statuses else "pass", summary=summarize(statuses),
                  launches=launches, metrics=table, results=results,  # type: ignore[typeddict-item]
                  comparisons=[{"baseline": "base.csv", "current": "cur.csv", "baseline_devices": ["H100 (CC 9.0)"],
                                "current_devices": ["H100 (CC 9.0)"], "settings": {}, "test": None}])
    return validate_report(json.loads(dumps(report)), "synthetic")  # type: ignore[return-value]


# ---------------------------------------------------------------- shape and writing

def test_the_written_report_is_version_2_with_column_tables() -> None:
    report = synthetic(["regression", "unchanged", "unchanged"])
    text = render_json(report)
    document = json.loads(text)
    assert document["format"] == "perfgate-report" and document["version"] == FORMAT_VERSION == 2
    for table, columns in (("launches", 11 + 9), ("metrics", 5), ("results", 8), ("groups", 9)):
        assert len(document[table]) == columns
        assert len({len(values) for values in document[table].values()}) == 1
    assert document["results"]["launch"] == sorted(document["results"]["launch"])
    assert "NaN" not in text and "Infinity" not in text
    assert text.count("\n") <= 64  # one line per field and column: no per-value indentation


def test_result_rows_are_the_version_1_rows() -> None:
    report = synthetic(["regression"])
    (launch,) = launch_rows(report)
    rows = result_rows(report)
    assert set(launch) == {"kind", "kernel", "demangled", "region", "ordinal", "status", "device", "launch_change",
                           "test", "path", "line"}
    assert set(rows[0]) == {"kind", "kernel", "demangled", "region", "ordinal", "metric", "label", "unit", "baseline",
                            "current", "change", "delta", "status", "gated", "threshold", "direction", "device",
                            "test", "path", "line"}
    assert rows[0]["kernel"] == launch["kernel"] and rows[0]["label"] == "duration" and rows[0]["status"] == "regression"


def test_json_is_far_smaller_than_rows_repeating_launch_facts() -> None:
    report = synthetic(["unchanged"] * 500, test="tests/test_long_name.py::test_a_perf_test[large]")
    rows = {**report, "version": 1, "launches": launch_rows(report), "results": result_rows(report)}
    assert len(render_json(report)) * 3 < len(json.dumps(rows))


# ---------------------------------------------------------------- untrusted reports

@pytest.mark.parametrize(("change", "message"), [
    (lambda r: r["results"]["baseline"].__setitem__(0, "<img src=x>"), '"results.baseline" row 0: must be a number'),
    (lambda r: r["results"]["gated"].__setitem__(1, "yes"), '"results.gated" row 1'),
    (lambda r: r["results"]["launch"].__setitem__(0, 99), 'must name a row of "launches"'),
    (lambda r: r["results"]["metric"].__setitem__(0, -1), 'must name a row of "metrics"'),
    (lambda r: r["results"]["launch"].reverse(), "grouped by launch"),
    (lambda r: r["results"]["status"].__setitem__(0, "fine"), "row 0: status 'fine' is not one of"),
    (lambda r: r["launches"]["status"].__setitem__(0, "info"), '"launches.status" row 0: status \'info\' is not one'),
    (lambda r: r["launches"]["kernel"].__setitem__(0, None), '"launches.kernel" row 0: must be a string'),
    (lambda r: r["launches"]["line"].__setitem__(0, "3"), '"launches.line" row 0'),
    (lambda r: r["launches"]["status"].pop(), "differ in length"),
    (lambda r: r["metrics"]["unit"].__setitem__(0, ["ns"]), '"metrics.unit" row 0'),
    (lambda r: r.__setitem__("results", [1, 2]), 'must be an object of columns'),
    (lambda r: r.__setitem__("notes", [{"x": 1}]), '"notes" must be a list of strings'),
    (lambda r: r["comparisons"][0].__setitem__("current_devices", "H100"), "list of strings"),
    (lambda r: r.__setitem__("version", 3), "version 3 is not supported"),
    (lambda r: r.__setitem__("verdict", "maybe"), '"verdict" must be one of \'fail\', \'not measured\''),
])
def test_a_crafted_report_is_refused_with_one_line(change: Any, message: str) -> None:
    document = json.loads(render_json(synthetic(["regression", "unchanged"])))
    change(document)
    with pytest.raises(InputError, match=None) as raised:
        validate_report(document, "artifact.json")
    assert message in str(raised.value) and "\n" not in str(raised.value)


def test_summary_and_verdict_are_recomputed() -> None:
    document = json.loads(render_json(synthetic(["regression", "unchanged"])))
    document.update(verdict="pass", summary={"regression": 0, "unchanged": 99, "<img>": 1})
    report = validate_report(document, "lying.json")
    assert report["verdict"] == "fail" and report["summary"] == summarize(["regression", "unchanged"])


def test_non_finite_numbers_become_null_and_unknown_columns_are_dropped() -> None:
    document = json.loads(render_json(synthetic(["unchanged"])))
    document["results"]["change"][0] = 1e999  # json.loads turns it into inf
    document["results"]["extra"] = ["x"] * len(document["results"]["launch"])
    report = validate_report(json.loads(json.dumps(document).replace("Infinity", "1e999")), "big.json")
    assert report["results"]["change"][0] is None and "extra" not in report["results"]


def test_load_report_caps_the_size_and_reads_strict_json(tmp_path: Path) -> None:
    big = tmp_path / "big.json"
    with big.open("wb") as handle:
        handle.truncate(MAX_REPORT_BYTES + 1)
    with pytest.raises(InputError, match="larger than 256 MiB"):
        load_report(big)
    nan = tmp_path / "nan.json"
    nan.write_text('{"format": "perfgate-report", "version": 2, "x": NaN}')
    with pytest.raises(InputError, match="numbers must be finite"):
        load_report(nan)
    cut = tmp_path / "cut.json"
    cut.write_text(render_json(synthetic(["unchanged"]))[:-30])
    with pytest.raises(InputError, match="broken JSON"):
        load_report(cut)


def test_reading_and_rendering_a_report_imports_no_pandas(tmp_path: Path) -> None:
    """jinja2 lays out the Markdown (perfgate.render.templates); pandas stays unloaded. numpy is loaded: every format
    summarizes a kernel's launches from the report's results as arrays (``perfgate.render.result_arrays``), the one
    way that stays fast at 500,000 launches."""
    path = tmp_path / "r.json"
    path.write_text(render_json(synthetic(["regression", "unchanged"])))
    code = ("import sys; from perfgate.report import load_report; from perfgate.render import render_markdown, "
            f"render_text; r = load_report({str(path)!r}); render_markdown(r); render_text(r); "
            "print(' '.join(m for m in ('pandas',) if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == ""


# ---------------------------------------------------------------- version 1

def test_a_version_1_report_is_upgraded() -> None:
    report = synthetic(["regression", "improvement", "unchanged"])
    old = {**json.loads(render_json(report)), "version": 1, "launches": launch_rows(report),
           "results": result_rows(report)[::-1]}  # v1 rows need not be grouped
    upgraded = validate_report(json.loads(json.dumps(old)), "v1.json")
    assert upgraded["version"] == 2
    assert sorted(map(repr, result_rows(upgraded))) == sorted(map(repr, result_rows(report)))
    assert launch_rows(upgraded) == launch_rows(report)


def test_version_1_rows_that_name_no_launch_are_left_out_with_a_note() -> None:
    report = synthetic(["regression"])
    rows = result_rows(report)
    old = {**json.loads(render_json(report)), "version": 1, "launches": launch_rows(report),
           "results": [*rows, {**rows[0], "kernel": "ghost"}]}
    upgraded = validate_report(old, "v1.json")
    assert len(upgraded["results"]["launch"]) == len(rows)
    assert any("1 result row of this version 1 report named no launch" in n for n in upgraded["notes"])


def test_version_1_rows_without_a_kernel_are_refused() -> None:
    old = {"format": "perfgate-report", "version": 1, "verdict": "pass", "launches": [{"status": "unchanged"}]}
    with pytest.raises(InputError, match="launche? 0 lacks a string kernel"):
        validate_report(old, "v1.json")


# ---------------------------------------------------------------- merge

def test_merge_sorts_launches_worst_first_and_keeps_each_launchs_rows() -> None:
    one = synthetic(["improvement", "unchanged"], test="t::a")
    two = synthetic(["regression", "new"], test="t::b")
    merged = merge_reports([one, two])
    assert merged["launches"]["status"] == ["regression", "new", "improvement", "unchanged"]
    assert merged["verdict"] == "fail" and merged["summary"]["regression"] == 1
    assert sorted(map(repr, result_rows(merged))) == sorted(map(repr, [*result_rows(one), *result_rows(two)]))
    assert merged["results"]["launch"] == sorted(merged["results"]["launch"])
    assert len(merged["metrics"]["metric"]) == 3  # the same metric facts once
    validate_report(json.loads(render_json(merged)), "merged")


# ---------------------------------------------------------------- bounded human formats

def test_markdown_of_10000_regressions_fits_one_comment_and_says_what_it_left_out() -> None:
    report = synthetic(["regression"] * 10_000 + ["improvement"] * 50 + ["unchanged"] * 2000, kernels=20_000)
    markdown = render_markdown(report)
    assert text_length(markdown) <= 64_000 < COMMENT_LIMIT
    assert markdown.startswith("### ❌ perfgate: 10,000 regressions in 12,050 compared")
    listed = markdown.count("| ❌ |")  # one row per kernel: here each kernel was launched once
    assert 100 < listed < 10_000
    assert "<details><summary>and 9,990 more kernels that need attention</summary>" in markdown
    assert (f"Launches not listed here, to fit a PR comment: {10_000 - listed:,} regressions, 50 improvements, "
            "2,000 unchanged. The JSON and HTML reports list every launch.") in markdown
    for line in markdown.splitlines():
        assert not line.startswith("|") or line.endswith("|")
    assert markdown.count("<details>") == markdown.count("</details>")


def test_markdown_lists_everything_when_it_fits() -> None:
    markdown = render_markdown(synthetic(["regression", "unchanged", "unchanged"]))
    assert "Not listed" not in markdown
    assert "<details><summary>2 other kernels (unchanged)</summary>" in markdown and markdown.count("| ✅ |") == 2


def test_text_lists_at_most_50_kernels_then_counts_the_rest() -> None:
    report = synthetic(["regression"] * 120 + ["no data"] * 3 + ["unchanged"] * 30, kernels=200)
    text = render_text(report)
    assert text.count("\nREGRESSION ") + text.startswith("REGRESSION ") == TEXT_LAUNCHES == 50
    assert "... not listed: 70 regressions, 3 no data (the JSON and HTML reports list every launch)" in text
    assert text.splitlines()[-1] == verdict_line(report) == (
        "FAIL: 120 regressions in 150 compared (120 regressions, 3 no data, 30 unchanged)")


def test_html_lists_every_launch() -> None:
    report = synthetic(["regression"] * 300 + ["unchanged"] * 300)
    page = render_html(report)
    every = page[page.index('id="results"'):]
    assert every.count('<tr class="regression">') == 300 and every.count('<tr class="unchanged">') == 300 * 2 + 300


@pytest.mark.parametrize("fmt", ["text", "md"])
def test_a_report_built_for_a_human_format_renders_as_the_whole_one(fmt: str, tmp_path: Path) -> None:
    """compare builds only the metric rows text or Markdown can show; the output is the same."""
    from helpers.csvgen import write_raw_csv

    from perfgate.cli import main
    from perfgate.collect import read_table
    from perfgate.compare import compare_tables
    from perfgate.regions import with_region_totals
    from perfgate.render import render
    from perfgate.report import build_report

    base, cur = tmp_path / "base.csv", tmp_path / "cur.csv"
    write_raw_csv(base, 3000, 20, seed=1, run=1)
    write_raw_csv(cur, 3000, 20, seed=2, scale=1.01)
    out = tmp_path / f"report.{fmt}"
    assert main(["compare", str(base), str(cur), "--format", fmt, "-o", str(out)]) == 1
    whole = build_report(compare_tables(*(with_region_totals(read_table(p)) for p in (base, cur))))
    whole["comparisons"][0].update(baseline=str(base), current=str(cur))
    assert out.read_text(encoding="utf-8") == render(whole, fmt)


def test_publish_reads_a_version_1_report(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    from perfgate.cli import main

    report = synthetic(["regression", "unchanged"])
    old = tmp_path / "v1.json"
    old.write_text(json.dumps({**report, "version": 1, "launches": launch_rows(report),
                               "results": result_rows(report)}), encoding="utf-8")
    summary = tmp_path / "summary.md"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    assert main(["publish", str(old), "--no-comment", "--no-check"]) == 0
    assert "job summary: appended" in capsys.readouterr().out
    assert summary.read_text(encoding="utf-8").strip() == render_markdown(report).strip()


def test_text_names_kernels_of_one_name_as_every_format_does() -> None:
    """Two instantiations of one template, each launched once: named by what tells them apart, as the Markdown names
    them, not ``reduce_kernel`` and ``reduce_kernel #1`` (which reads as two launches of one kernel)."""
    report = synthetic(["regression", "regression", "unchanged"], kernels=3)
    report["launches"]["kernel"] = ["reduce_kernel"] * 3
    report["launches"]["demangled"] = ["void reduce_kernel<float, 128>(float *)", "void reduce_kernel<float, 256>(float *)",
                                       "void reduce_kernel<half, 128>(half *)"]
    text = render_text(report)
    assert "REGRESSION  reduce_kernel<float, 128>\n" in text and "REGRESSION  reduce_kernel<float, 256>\n" in text
    assert "#1" not in text
    assert "reduce\\_kernel&lt;float, 256&gt;" in render_markdown(report)


def test_a_share_of_a_peak_moves_in_points_in_every_format() -> None:
    """ncu's SM throughput 90.9% → 50.0% is -40.9 points (as the roofline's share beside it reads), not -45.0%; a
    share gated by a relative limit is judged, and shown, in percent."""
    from perfgate.quantities import change_for

    report = synthetic(["regression"], kernels=1)
    results = report["results"]
    at = next(i for i, code in enumerate(results["metric"]) if code == 2)  # SM throughput %, not gated
    results["baseline"][at], results["current"][at], results["change"][at] = 90.9, 50.0, 50.0 / 90.9 - 1
    said = "SM throughput % 90.9% → 50.0% (-40.9 pp)"
    assert f"why: {said}" in render_text(report)
    assert said in render_markdown(report) and said in render_html(report)
    metric = "sm__throughput.avg.pct_of_peak_sustained_elapsed"
    assert change_for(metric, 90.9, 50.0, 50.0 / 90.9 - 1, "5%") == "-45.0%"
