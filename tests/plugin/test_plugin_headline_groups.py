"""The session's headline counts a kernel judged as one (its repeated launches: one group) once, as ``compare``'s
headline does (``perfgate.report.kernel_summary``). A real pytester run: the stub ncu exports a launch of
``stub_kernel`` per region entered, so a test entering one region four times launches one kernel four times."""

from __future__ import annotations

import pytest
from helpers.plugin import preload_heavy_modules, use_stub_ncu

from perfgate.render.common import headline
from perfgate.report import load_report

pytest_plugins = ("pytester",)
preload_heavy_modules()

PERF_TEST = """
def test_softmax(perfgate):
    for _ in range(4):
        with perfgate.region("softmax"):
            pass
"""


def _run(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, nanoseconds: int,
         *args: str) -> pytest.RunResult:
    ncu, _ = use_stub_ncu(pytester, monkeypatch)
    monkeypatch.setenv("PERFGATE_STUB_REPORT", "regions")
    monkeypatch.setenv("PERFGATE_STUB_NS", f"test_softmax={nanoseconds}")
    return pytester.runpytest("--perfgate", f"--perfgate-ncu={ncu}", *args)


def test_four_regressed_launches_of_one_grouped_kernel_count_once(pytester: pytest.Pytester,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    pytester.makepyfile(test_perf=PERF_TEST)
    _run(pytester, monkeypatch, 10_000, "--perfgate-update").assert_outcomes(passed=1)
    result = _run(pytester, monkeypatch, 20_000, "--perfgate-report=report.json")
    result.assert_outcomes(failed=1)
    summary = result.stdout.str().split("- perfgate -", 1)[1].splitlines()
    head = next(line for line in summary if line.startswith("perfgate FAIL"))
    assert head == "perfgate FAIL: 2 regressions in 1 test", head  # the kernel and its region's total
    listed = [line for line in summary if line.startswith("  REGRESSION")]
    assert len(listed) == 1 and "stub_kernel [softmax]" in listed[0]
    assert headline(load_report(pytester.path / "report.json")).startswith("2 regressions in ")  # compare's count
