"""An environment error shared by a whole group of perf tests (one profiled child for all of them) is said once,
not once per test (issue 25, part 1): the child lacks ``nvtx``, or ncu refuses counters. Real pytester sessions
with the stand-in ncu in its ``regions`` mode."""

from __future__ import annotations

import pytest
from helpers.plugin import preload_heavy_modules, stub_calls, use_stub_ncu

pytest_plugins = ("pytester",)
preload_heavy_modules()

SUITE = """
import pytest

@pytest.mark.perfgate
@pytest.mark.parametrize("name", ["a", "b", "c", "d"])
def test_op(perfgate, name):
    with perfgate.region(f"op_{name}"):
        pass
"""
NO_NVTX_IN_CHILD = """
import os, sys
if os.environ.get("PERFGATE_CHILD") == "1":
    sys.modules["nvtx"] = None  # as if the package were not installed in the profiled environment
"""


def _run(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, *args: str,
         mode: str = "ok") -> tuple[pytest.RunResult, int]:
    ncu, calls = use_stub_ncu(pytester, monkeypatch)
    monkeypatch.setenv("PERFGATE_STUB_REPORT", "regions")
    monkeypatch.setenv("PERFGATE_STUB_MODE", mode)
    pytester.makepyfile(test_ops=SUITE)
    # -rN: no short test summary, whose lines pytest cuts to the terminal's width except under CI=true
    result = pytester.runpytest("--perfgate", f"--perfgate-ncu={ncu}", "-p", "no:randomly", "-rN", *args)
    return result, len(stub_calls(calls))


def test_nvtx_missing_in_the_child_is_said_once_for_the_group(pytester: pytest.Pytester,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    pytester.makeconftest(NO_NVTX_IN_CHILD)
    result, ncu_runs = _run(pytester, monkeypatch)
    result.assert_outcomes(failed=4)  # each test failed, in the one child that ran them all
    assert ncu_runs == 1  # not profiled again one by one to meet the same cause four times
    summary = result.stdout.str().split("- perfgate -", 1)[1]
    assert summary.count("failed while profiled") == 1, summary
    result.stdout.fnmatch_lines(["  4 perf tests (test_ops.py::test_op[[]a], test_ops.py::test_op[[]b], "
                                 "test_ops.py::test_op[[]c] and 1 more): failed: the test failed while profiled*"])
    assert result.stdout.str().count("the 'nvtx' package is missing in the profiled process") == 4  # each test's


def test_a_test_failing_alone_in_a_group_keeps_the_others_measured(pytester: pytest.Pytester,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    pytester.makepyfile(test_one="""
        def test_broken(perfgate):
            with perfgate.region("r"):
                raise RuntimeError("broken on its own")
        """)
    result, _ = _run(pytester, monkeypatch)
    result.assert_outcomes(passed=4, failed=1)  # a cause of its own: the group's other tests are measured


def test_counters_refused_for_the_group_are_said_once(pytester: pytest.Pytester,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    result, ncu_runs = _run(pytester, monkeypatch, mode="noperm")
    result.assert_outcomes(skipped=4)
    assert ncu_runs == 1
    summary = result.stdout.str().split("- perfgate -", 1)[1]
    assert summary.count("ERR_NVGPUCTRPERM") == 2, summary  # the headline's cause, and the tests it held back
    result.stdout.fnmatch_lines(["  4 perf tests (test_ops.py::test_op[[]a], *and 1 more): skipped: no permission*"])
