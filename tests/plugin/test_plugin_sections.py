"""``--perfgate-sections``: ncu sections collected besides the metrics, so ncu's rules run and their
findings explain a regression in the test's failure, the reports and the PR comment.

End to end with no GPU: a real pytest run (pytester) and the stub ncu exporting perfgate's own H100
reports of the CuPy example profiled with ncu's ``detailed`` sections, first unchanged, then with the
uncoalesced indexing of ``PERFGATE_EXAMPLE_REGRESSION=1``.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers.plugin import preload_heavy_modules, read_json, stub_calls, use_stub_ncu

from perfgate.config import load_settings
from perfgate.errors import ConfigError
from perfgate.report import result_rows

pytest_plugins = ("pytester",)
preload_heavy_modules()

DATA = Path(__file__).resolve().parents[1] / "data" / "h100" / "default-metrics"
PERF_TEST = """
import pytest

@pytest.mark.perfgate(kernels="vector_add")
def test_vector_add(perfgate):
    with perfgate.region("vector_add"):
        pass
"""
BASELINE = Path("baselines") / "nvidia-h100-80gb-hbm3-sm90" / "test_va__test_vector_add.json"


@pytest.fixture
def run(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch):  # type: ignore[no-untyped-def]
    pytester.makepyfile(test_va=PERF_TEST)
    ncu, calls = use_stub_ncu(pytester, monkeypatch)

    def run(report: str, *args: str) -> tuple[pytest.RunResult, list[list[str]]]:
        monkeypatch.setenv("PERFGATE_STUB_REPORT", str(DATA / report))
        result = pytester.runpytest("--perfgate", f"--perfgate-ncu={ncu}", "-rsx", *args)
        return result, [call["argv"] for call in stub_calls(calls) if call["argv"] != ["--version"]]

    return run


def test_sections_are_collected_stored_with_the_baseline_and_explain_the_regression(
        run, pytester: pytest.Pytester) -> None:  # type: ignore[no-untyped-def]
    result, calls = run("vector_add.rules.ncu-rep", "--perfgate-update", "--perfgate-sections=SpeedOfLight,SourceCounters")
    result.assert_outcomes(passed=1)
    argv = calls[-1]
    at = argv.index("--metrics")
    assert argv[at - 4:at] == ["--section", "SpeedOfLight", "--section", "SourceCounters"]
    baseline = read_json(pytester.path / BASELINE)
    assert baseline["settings"]["sections"] == "SpeedOfLight,SourceCounters"
    [kernel] = [e for e in baseline["entries"] if e["kind"] == "kernel"]
    assert "Uncoalesced Global Accesses" not in kernel["findings"] and kernel["findings"]

    result, _ = run("vector_add.rules.regressed.ncu-rep", "--perfgate-sections=SpeedOfLight,SourceCounters")
    result.assert_outcomes(failed=1)
    out = result.stdout.str()
    assert "regression  duration 79.1 µs → 380.4 µs (+380.9%)" in out
    assert "why: ncu findings appeared: " in out and "Uncoalesced Global Accesses" in out
    markdown = (pytester.path / "perfgate-report.md").read_text(encoding="utf-8")
    assert "Uncoalesced Global Accesses" in markdown
    assert "different ncu settings" not in out


def test_dram_write_is_not_judged_against_a_baseline_replayed_otherwise(run, pytester: pytest.Pytester) -> None:  # type: ignore[no-untyped-def]
    """Sections turn ncu's one replay pass into several, and DRAM writes depend on that (measured on the H100:
    8-31% more with 10-13 passes than with 1, everything else unchanged). Against a baseline recorded in one
    pass, DRAM write is shown but not judged: "not measured" (not a pass, not a false alarm), failed when
    strict, until the baseline is recorded again with the sections."""
    result, calls = run("vector_add.ncu-rep", "--perfgate-update")
    result.assert_outcomes(passed=1)
    assert "--section" not in calls[-1]
    assert read_json(pytester.path / BASELINE)["settings"]["replay_passes"] == 1
    result, _ = run("vector_add.rules.regressed.ncu-rep", "--perfgate-sections=SpeedOfLight")
    result.assert_outcomes(failed=1)  # the duration regression is still caught
    report = read_json(pytester.path / "perfgate-report.json")
    [entry] = report["unmeasured"]
    assert entry["launch"] == "every launch" and entry["cause"].startswith(
        "dram__bytes_write.sum not judged: ncu replayed the kernels differently than for the baseline (1 replay "
        "pass → 20)")
    write = [r for r in result_rows(report) if r["metric"] == "dram__bytes_write.sum"]
    assert write and not any(r["gated"] for r in write)

    result, _ = run("vector_add.rules.ncu-rep", "--perfgate-sections=SpeedOfLight")
    result.assert_outcomes(passed=1)
    assert read_json(pytester.path / "perfgate-report.json")["verdict"] == "not measured"
    assert "perfgate NOT MEASURED" in result.stdout.str()
    result, _ = run("vector_add.rules.ncu-rep", "--perfgate-sections=SpeedOfLight", "--perfgate-strict")
    result.assert_outcomes(failed=1)
    assert "(--perfgate-strict: a gated value not judged fails)" in result.stdout.str()
    run("vector_add.rules.ncu-rep", "--perfgate-sections=SpeedOfLight", "--perfgate-update")
    result, _ = run("vector_add.rules.ncu-rep", "--perfgate-sections=SpeedOfLight", "--perfgate-strict")
    result.assert_outcomes(passed=1)  # recorded again with the sections: judged again


@pytest.mark.parametrize("value", ["Speed-Of-Light", "1st", "SpeedOfLight,,", ""])
def test_a_section_id_that_is_not_one_is_a_usage_error(run, value: str) -> None:  # type: ignore[no-untyped-def]
    result, calls = run("vector_add.rules.ncu-rep", f"--perfgate-sections={value}")
    if value in ("SpeedOfLight,,", ""):  # empty items are dropped; nothing at all is no section
        result.assert_outcomes(passed=1)
        return
    assert result.ret == pytest.ExitCode.USAGE_ERROR and not calls
    assert "--perfgate-sections" in result.stderr.str() and "Traceback" not in result.stderr.str()


@pytest.mark.parametrize(("toml", "words"), [
    ('sections = "SpeedOfLight"', 'sections must be a list of ncu section identifiers, e.g. ["SpeedOfLight"]'),
    ('sections = ["SpeedOfLight", "Source Counters"]', "'Source Counters' is not an ncu section identifier"),
    ("sections = [1]", "sections must be a list of ncu section identifiers"),
])
def test_bad_sections_in_pyproject_are_one_clear_error(tmp_path: Path, toml: str, words: str) -> None:
    (tmp_path / "pyproject.toml").write_text(f"[tool.perfgate]\n{toml}\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=None) as info:
        load_settings(tmp_path / "pyproject.toml")
    assert words in str(info.value) and "\n" not in str(info.value)


def test_sections_from_pyproject_deduplicated_in_order(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text('[tool.perfgate]\nsections = ["SourceCounters", "SpeedOfLight", '
                                             '"SourceCounters"]\n', encoding="utf-8")
    assert load_settings(tmp_path / "pyproject.toml").sections == ("SourceCounters", "SpeedOfLight")
