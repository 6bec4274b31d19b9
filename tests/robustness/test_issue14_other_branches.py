"""Issue 14, the compare/report/render side: a gated value that is no measurement never passes (the
comparison is "not measured", exit 2, with the reason), and names from the code under test reach no
terminal as escape sequences (text report and the plugin's summary).

This branch's side of the same issues is done and tested elsewhere: readers keep every unusable value as
NaN with its reason in the measurement's ``unusable`` (``test_unusable_values.py``; ``perfgate.table.
unusable_notes(measurement, metrics)`` phrases them), and ``perfgate.text.inert`` makes a name terminal-safe
(``test_text.py``).
"""

from __future__ import annotations

import csv
import io
import textwrap
from pathlib import Path

import pytest
from helpers.common import REPO
from helpers.plugin import install_stub_ncu

from perfgate.cli import main
from perfgate.collect import read_table
from perfgate.compare import compare_tables

H100 = REPO / "tests" / "data" / "h100"
RAW = H100 / "vector_add.rerun.raw-base.csv"
DURATION = "gpu__time_duration.sum"

COMPARE = "issue 14: fixed in compare/report, other branch"
RENDER = "issue 14: fixed in compare/report, other branch (render_text escapes names)"
PLUGIN = "issue 14: plugin terminal summary escapes names; call site for the plugin owner"


def _raw_with(tmp_path: Path, name: str, cell: str | None, drop: str | None = None) -> Path:
    """The real raw page with the duration cell replaced (or a metric column dropped)."""
    header, units, *rows = list(csv.reader(RAW.open(newline="")))
    if cell is not None:
        rows[0][header.index(DURATION)] = cell
    table = [header, units, *rows]
    if drop is not None:
        at = header.index(drop)
        table = [row[:at] + row[at + 1:] for row in table]
    out = io.StringIO()
    csv.writer(out, quoting=csv.QUOTE_ALL, lineterminator="\n").writerows(table)
    path = tmp_path / name
    path.write_text(out.getvalue())
    return path


def _compare(capsys: pytest.CaptureFixture[str], base: Path, cur: Path) -> tuple[int, str]:
    status = main(["compare", str(base), str(cur)])
    out, err = capsys.readouterr()
    return status, out + err


UNUSABLE = [("n/a", "'n/a': no value was recorded"), ("fast", "'fast' is not a number"), ("1e400", "infinite"),
            ("-119,088", "is not a time anything ran for"), ("0x1F", "'0x1F' is not a number")]



@pytest.mark.parametrize(("cell", "reason"), UNUSABLE, ids=[c for c, _ in UNUSABLE])
@pytest.mark.parametrize("side", ["current", "baseline"])
def test_a_gated_value_that_is_no_measurement_never_passes_and_says_why(capsys: pytest.CaptureFixture[str],
                                                                        tmp_path: Path, side: str, cell: str,
                                                                        reason: str) -> None:
    """Today: "PASS ... (2 unchanged)", the duration row "no data", no note. Needed in compare: a gated metric
    with a value on one side only is a finding that fails (exit 1 or 2), and the notes carry
    ``perfgate.table.unusable_notes(baseline) + unusable_notes(current)``."""
    bad = _raw_with(tmp_path, "bad.csv", cell)
    status, output = _compare(capsys, *((RAW, bad) if side == "current" else (bad, RAW)))
    assert status != 0, output
    assert reason in output and "gpu__time_duration.sum" in output



@pytest.mark.parametrize(("value", "reason"), [("fast", "'fast' is not a number"),
                                               (-0.001, "-0.001 s is not a time anything ran for")])
def test_a_benchmark_minimum_that_is_no_time_never_passes(capsys: pytest.CaptureFixture[str], tmp_path: Path,
                                                          value: object, reason: str) -> None:
    """Today: the benchmark is "no data" and the run passes (its neighbour is compared, so it is no "nothing to
    compare" refusal either)."""
    import json

    stats = {"min": 0.001, "max": 0.002, "mean": 0.0015, "stddev": 0.0001, "median": 0.0014, "rounds": 20}
    document = {"machine_info": {"cpu": {"brand_raw": "Test CPU"}}, "version": "5.1.0",
                "benchmarks": [{"name": "test_x", "fullname": "t.py::test_x", "group": None, "stats": stats},
                               {"name": "test_y", "fullname": "t.py::test_y", "group": None, "stats": stats}]}
    good, bad = tmp_path / "good.json", tmp_path / "bad.json"
    good.write_text(json.dumps(document))
    document["benchmarks"][0]["stats"] = {**stats, "min": value}
    bad.write_text(json.dumps(document))
    status, output = _compare(capsys, good, bad)
    assert status != 0, output
    assert reason in output



def test_a_gated_metric_missing_from_one_side_is_not_a_pass(capsys: pytest.CaptureFixture[str],
                                                            tmp_path: Path) -> None:
    """Today: "note: gated metric gpu__time_duration.sum is only in ...: not compared" and exit 0."""
    cut = _raw_with(tmp_path, "cut.csv", None, drop=DURATION)
    status, output = _compare(capsys, RAW, cut)
    assert status != 0, output



def test_compare_tables_notes_name_each_unusable_value(tmp_path: Path) -> None:
    """The one-line fix in compare_tables' notes: ``notes += unusable_notes(baseline, compared) +
    unusable_notes(current, compared)`` (``perfgate.table``)."""
    current = read_table(_raw_with(tmp_path, "cur.csv", "n/a"))
    notes = compare_tables(read_table(RAW), current).notes
    assert any("gpu__time_duration.sum has no usable value ('n/a': no value was recorded)" in n for n in notes), notes


HOSTILE_REPORT = {
    "format": "perfgate-report", "version": 1, "verdict": "fail",
    "summary": {"regression": 1, "no data": 0, "missing": 0, "new": 0, "improvement": 0, "unchanged": 0},
    "comparisons": [{"baseline": "base\x1b[2J.csv", "current": "cur.csv", "baseline_devices": [],
                     "current_devices": [], "settings": {}, "test": None}],
    "launches": [{"kind": "kernel", "kernel": "k\rOK         \x1b]52;c;ZXZpbA==\x07", "demangled": "k",
                  "region": "r\nPASS: no regression in 1 compared", "ordinal": 0, "status": "regression",
                  "launch_change": "grid \x1b[31m", "device": "GPU", "test": None, "path": None, "line": None}],
    "results": [],
    "notes": ["note with \x1b[2J"],
}



def test_render_text_shows_names_inert() -> None:
    """The one-line fix in perfgate/render/__init__.py::render_text: ``return "\\n".join(inert(line) for line in
    lines) + "\\n"`` (``from perfgate.text import inert``)."""
    from perfgate.render import render_text
    from perfgate.report import validate_report

    text = render_text(validate_report(HOSTILE_REPORT, "hostile.json"))  # a version 1 report, upgraded
    assert "\x1b" not in text and "\r" not in text and "\x07" not in text
    assert [line for line in text.splitlines() if line.startswith(("PASS", "FAIL"))] == [text.splitlines()[-1]]



def test_plugin_summary_lines_are_inert(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    """The one-line fix in perfgate/plugin/session.py::pytest_terminal_summary: ``terminalreporter.write_line(
    inert(line), ...)`` (the failure text comes from render_text, fixed above)."""
    ncu = install_stub_ncu(pytester.path.parent / f"{pytester.path.name}-bin")
    pytester.makepyfile(test_perf=textwrap.dedent("""
        import pytest

        @pytest.mark.perfgate
        def test_x(perfgate):
            with perfgate.region("r\\x1bc\\rOK"):
                pass
    """))
    for name in ("GITHUB_STEP_SUMMARY", "PYTEST_ADDOPTS", "PERFGATE_STUB_MODE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("PERFGATE_ASSUME_GPU", "1")
    monkeypatch.setenv("PERFGATE_STUB_REPORT", "regions")
    monkeypatch.setenv("PERFGATE_STUB_NS", "test_x=100000")
    args = ("--perfgate", f"--perfgate-ncu={ncu}", "-p", "no:cacheprovider")
    pytester.runpytest_subprocess(*args, "--perfgate-update").assert_outcomes(passed=1)
    monkeypatch.setenv("PERFGATE_STUB_NS", "test_x=300000")
    result = pytester.runpytest_subprocess(*args)
    result.assert_outcomes(failed=1)
    summary = result.stdout.str().split("perfgate", 1)[-1]
    assert "REGRESSION" in summary and "\x1b" not in result.stdout.str() and "\r" not in result.stdout.str()
