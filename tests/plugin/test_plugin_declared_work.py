"""``@pytest.mark.perfgate(flops=…)`` end to end, with no GPU: a stub ``ncu`` exports real Tesla T4 reports of the
corpus (mlp-t4's matrix_addition2D, a 1000 x 1000 addition: 10^6 FLOP counted). The declaration asks ncu for the
FLOP counters, and counted FLOP well above it are redundant work in the report's notes and the kernel's why."""

from __future__ import annotations

import pytest
from helpers.plugin import corpus_report, preload_heavy_modules, read_json, stub_calls, use_stub_ncu

pytest_plugins = ("pytester",)
preload_heavy_modules()

PERF_TEST = """
import pytest

@pytest.mark.perfgate(kernels="regex:matrix_addition", flops=FLOPS)
def test_add(perfgate):
    with perfgate.region("add"):
        pass
"""


def test_a_declared_work_well_under_the_counted_flop_is_redundant_work(pytester: pytest.Pytester,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    pytester.makepyfile(test_perf=PERF_TEST.replace("FLOPS", "400_000"))  # counted: 2.5x
    ncu, calls = use_stub_ncu(pytester, monkeypatch)

    def run(report: str, *args: str) -> pytest.RunResult:
        monkeypatch.setenv("PERFGATE_STUB_REPORT", str(corpus_report(report)))
        return pytester.runpytest("--perfgate", f"--perfgate-ncu={ncu}", *args)

    run("report", "--perfgate-update").assert_outcomes(passed=1)
    [profiled] = [c for c in stub_calls(calls) if "--metrics" in c["argv"]]
    asked = profiled["argv"][profiled["argv"].index("--metrics") + 1].split(",")
    assert "smsp__sass_thread_inst_executed_op_fadd_pred_on.sum" in asked  # the declaration collects the FLOP

    result = run("report_v2")  # slower (uncoalesced): a regression, whose why is shown
    result.assert_outcomes(failed=1)
    report = read_json(pytester.path / "perfgate-report.json")
    assert any(str(note).startswith("redundant work: the kernels counted 2.5× the declared FLOP")
               for note in report["notes"]), report["notes"]
    markdown = (pytester.path / "perfgate-report.md").read_text(encoding="utf-8")
    assert "counted 2.5× the declared FLOP: redundant work" in markdown
