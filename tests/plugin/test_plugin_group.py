"""One profiled child for many perf tests (``pytest --perfgate`` without ``--perfgate-isolate``).

Real pytest sessions (pytester) with the stand-in ncu in its ``regions`` mode: it really runs the child
pytest with every test of the group, and exports ncu's raw CSV page with one launch per region the child
entered, each under its test's NVTX tag, as real ncu prints nested ranges.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from helpers.plugin import preload_heavy_modules, read_json, stub_calls, use_stub_ncu

pytest_plugins = ("pytester",)
preload_heavy_modules()

SUITE = """
import os
import pytest

NAMES = ["a", "b", "c", "d", "e", "f", "g", "h", "i", "j"]

@pytest.mark.perfgate
@pytest.mark.parametrize("name", NAMES)
def test_op(perfgate, name):
    if perfgate.profiling and os.environ.get("CRASH") == name:
        os.kill(os.getpid(), 9)
    with perfgate.region(f"op_{name}"):
        if name == "j":
            with perfgate.region("inner"):
                pass

@pytest.mark.perfgate(kernels="only_this")
def test_other_options(perfgate):
    with perfgate.region("other"):
        pass
"""
BASELINES = Path("baselines") / "nvidia-h100-80gb-hbm3-sm90"


class Group:
    def __init__(self, pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
        self.pytester = pytester
        self.ncu, self.calls_file = use_stub_ncu(pytester, monkeypatch, also_clear=("CRASH", "PERFGATE_STUB_NS"))
        monkeypatch.setenv("PERFGATE_STUB_REPORT", "regions")
        pytester.makepyfile(test_ops=SUITE)

    def run(self, *args: str) -> pytest.RunResult:
        return self.pytester.runpytest("--perfgate", f"--perfgate-ncu={self.ncu}", "-p", "no:randomly", *args)

    def ncu_runs(self) -> list[list[str]]:
        """The node ids each ncu run profiled."""
        return [[a for a in call["argv"] if "::" in a] for call in stub_calls(self.calls_file)]

    def report(self) -> dict[str, Any]:
        return read_json(self.pytester.path / "perfgate-report.json")


@pytest.fixture
def group(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> Group:
    return Group(pytester, monkeypatch)


def test_tests_sharing_ncu_options_share_one_child(group: Group) -> None:
    first = group.run("--perfgate-update")
    first.assert_outcomes(passed=11)
    # Progress: a long profile must not look like a hang.
    first.stdout.fnmatch_lines(["perfgate: profiling 10 perf tests in one child under ncu (limit 6000 s) ...",
                                "perfgate: ncu ran 10 perf tests in * s: 11 launches profiled, 1 replay pass each*"])
    runs = group.ncu_runs()
    assert len(runs) == 2  # the ten test_op cases together, test_other_options (other kernels=) alone
    assert len(runs[0]) == 10 and runs[1] == ["test_ops.py::test_other_options"]
    written = sorted(p.name for p in (group.pytester.path / BASELINES).iterdir())
    assert len(written) == 11
    # Each test got its own launches, its tag taken off the region ("t9 > inner" -> "inner"; the stand-in
    # ncu prints each region entered as its own launch, not nested).
    j = read_json(group.pytester.path / BASELINES / "test_ops__test_op_j.json")
    assert sorted({(e["kind"], e["region"]) for e in j["entries"]}) == [
        ("kernel", "inner"), ("kernel", "op_j"), ("region", ""), ("region", "inner"), ("region", "op_j")]
    a = read_json(group.pytester.path / BASELINES / "test_ops__test_op_a.json")
    assert {e["region"] for e in a["entries"]} == {"op_a"}

    again = group.run()
    again.assert_outcomes(passed=11)
    assert len(group.ncu_runs()) == 4 and group.report()["summary"]["unchanged"] > 0


def test_a_regression_in_a_group_fails_only_its_test(group: Group, monkeypatch: pytest.MonkeyPatch) -> None:
    group.run("--perfgate-update").assert_outcomes(passed=11)
    monkeypatch.setenv("PERFGATE_STUB_NS", "=100000,test_op[c]=180000")
    slower = group.run()
    slower.assert_outcomes(passed=10, failed=1)
    slower.stdout.fnmatch_lines(["FAILED test_ops.py::test_op[[]c[]] - Failed: perfgate: performance regression"])
    assert len(group.ncu_runs()) == 4


def test_a_crash_fails_the_test_that_was_running_and_the_others_run_alone(group: Group,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    group.run("--perfgate-update").assert_outcomes(passed=11)
    monkeypatch.setenv("CRASH", "d")
    crashed = group.run()
    crashed.assert_outcomes(passed=10, failed=1)
    crashed.stdout.fnmatch_lines(["*test_ops.py::test_op[[]d[]] was running when the profiled child failed under ncu"
                                  " (10 perf tests profiled together; the others are profiled again one by one)*"])
    runs = group.ncu_runs()[2:]
    assert len(runs[0]) == 10 and sum(1 for r in runs[1:] if len(r) == 1) == 10  # 9 test_op again, and the other


def test_isolate_gives_each_test_its_own_child(group: Group) -> None:
    group.run("--perfgate-update", "--perfgate-isolate").assert_outcomes(passed=11)
    assert [len(r) for r in group.ncu_runs()] == [1] * 11


def test_ten_grouped_perf_tests_are_profiled_by_one_ncu_run(group: Group) -> None:
    """What keeps ten grouped perf tests near the cost of one (ten isolated children cost ~10x; the time itself is
    a benchmark's: tests/benchmarks/test_bench_plugin_group.py): one ncu run profiles all ten."""
    group.run("--perfgate-update").assert_outcomes(passed=11)
    before = len(group.ncu_runs())
    group.run("test_ops.py::test_op").assert_outcomes(passed=10)
    runs = group.ncu_runs()[before:]
    assert len(runs) == 1 and len(runs[0]) == 10, runs
