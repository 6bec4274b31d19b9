"""A pytest-benchmark suite on a virtual clock, for the plugin's and the history's tests: timings that
the machine's load cannot move."""

from __future__ import annotations

import pytest

VIRTUAL_CLOCK = """
now = 0.0

def timer():  # pytest-benchmark's --benchmark-timer; each call ticks, so it can calibrate
    global now
    now += 1e-9
    return now

def spend(seconds):
    global now
    now += seconds
"""


BENCH_SUITE = """
import os
import virtual_clock

def work(n):
    virtual_clock.spend(n * 1e-8)  # 3000 steps: 30 us of virtual time
    return sum(i * i for i in range(100))

def test_parse(benchmark):
    benchmark(work, int(os.environ.get("PARSE_N", "3000")))

def test_render(benchmark):
    benchmark(work, 3000)
"""


BENCH_OPTIONS = ("--benchmark-enable", "--benchmark-timer=virtual_clock.timer", "--benchmark-min-time=0.0002",
                 "--benchmark-max-time=0.25", "--benchmark-min-rounds=15", "--benchmark-disable-gc")


@pytest.fixture
def suite(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    # PYTEST_XDIST_WORKER: when this file itself runs under xdist, pytest-benchmark would see it in
    # the in-process runs below and switch benchmarks off.
    for name in ("GITHUB_STEP_SUMMARY", "PARSE_N", "PYTEST_ADDOPTS", "PYTEST_XDIST_WORKER"):
        monkeypatch.delenv(name, raising=False)
    pytester.makepyfile(test_bench=BENCH_SUITE, virtual_clock=VIRTUAL_CLOCK)
    pytester.syspathinsert()
    return pytester
