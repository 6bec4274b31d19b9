"""Ten perf tests of one group (the same ncu options) against one of them alone, under the stand-in ncu: grouped
in one profiled child, ten cost little more than one (ten isolated children cost ~10x). Wall time of whole
pytester sessions, best of three, interleaved; run with ``--benchmark-enable``. The normal suite checks what
makes it so, one ncu run for the ten (tests/plugin/test_plugin_group.py)."""

from __future__ import annotations

import time

import pytest
from helpers.plugin import preload_heavy_modules, use_stub_ncu

pytest_plugins = ("pytester",)
preload_heavy_modules()

SUITE = """
import pytest

@pytest.mark.perfgate
@pytest.mark.parametrize("name", list("abcdefghij"))
def test_op(perfgate, name):
    with perfgate.region(f"op_{name}"):
        pass
"""
GOAL = 1.3  # ten grouped perf tests against one


def test_bench_ten_grouped_perf_tests_against_one(benchmark, pytester: pytest.Pytester,  # type: ignore[no-untyped-def]
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    if benchmark.disabled:
        pytest.skip("a timing goal: run with --benchmark-enable")
    ncu, _ = use_stub_ncu(pytester, monkeypatch)
    monkeypatch.setenv("PERFGATE_STUB_REPORT", "regions")
    pytester.makepyfile(test_ops=SUITE)

    def run(*args: str) -> float:
        started = time.perf_counter()
        pytester.runpytest("--perfgate", f"--perfgate-ncu={ncu}", "-p", "no:randomly", *args)
        return time.perf_counter() - started

    run("--perfgate-update")
    ten, one = [], []
    for _ in range(3):
        ten.append(run("test_ops.py::test_op"))
        one.append(run("test_ops.py::test_op[a]"))
    benchmark.pedantic(run, args=("test_ops.py::test_op",), rounds=1, iterations=1)
    ratio = min(ten) / min(one)
    benchmark.extra_info.update(ten=round(min(ten), 3), one=round(min(one), 3), ratio=round(ratio, 3))
    assert ratio <= GOAL, benchmark.extra_info
