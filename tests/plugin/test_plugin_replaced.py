"""``pytest --perfgate`` on a test whose kernel was rewritten under another name (issue 35, item 4): the real Tesla
T4 reports of mlp-t4, v5 (``matrix_addition2D``, 81.4 us) and v6 (``matrix_addition1D``, 47.1 us, another grid),
carry no NVTX state, so the test's report is kept whole and the replacement is judged through the test's total."""

from __future__ import annotations

import pytest
from helpers.plugin import MATRIX_ADDITION_TEST, preload_heavy_modules, read_json, use_stub_ncu, corpus_report

pytest_plugins = ("pytester",)
preload_heavy_modules()


@pytest.mark.parametrize(("before", "after", "outcome"), [
    ("report_v5_4_per_thread", "report_v6_1d_1_per_thread", "passed"),
    ("report_v6_1d_1_per_thread", "report_v5_4_per_thread", "failed"),
])
def test_a_kernel_replaced_in_a_test_is_judged_through_the_tests_total(
        pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, before: str, after: str, outcome: str) -> None:
    pytester.makepyfile(test_perf=MATRIX_ADDITION_TEST)
    ncu, _ = use_stub_ncu(pytester, monkeypatch)
    monkeypatch.setenv("PERFGATE_STUB_REPORT", str(corpus_report(before)))
    pytester.runpytest("--perfgate", f"--perfgate-ncu={ncu}", "--perfgate-update").assert_outcomes(passed=1)
    monkeypatch.setenv("PERFGATE_STUB_REPORT", str(corpus_report(after)))
    result = pytester.runpytest("--perfgate", f"--perfgate-ncu={ncu}")
    result.assert_outcomes(**{outcome: 1})
    report = read_json(pytester.path / "perfgate-report.json")
    assert report["verdict"] == ("pass" if outcome == "passed" else "fail")
    [note] = [n for n in report["notes"] if "kernels replaced outside any region" in n]
    old, new = (("matrix_addition2D", "matrix_addition1D") if outcome == "passed" else
                ("matrix_addition1D", "matrix_addition2D"))
    assert f"{old} → {new} (no rule pairs them); judged through the whole report's total (every kernel launch: 1 " \
           "kernel launch in the baseline, 1 in the current run): duration " in note
