"""pytest-benchmark suites on a virtual clock, for the compare's, the plugin's and the history's tests: timings that
the machine's load cannot move."""

from __future__ import annotations

import sys
from pathlib import Path

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


# Two benchmarks, for the compare of pytest-benchmark JSON, timed by the virtual clock that advances only with
# the work done (VIRTUAL_CLOCK): what a slower benchmark is then does not depend on how
# loaded the machine is. With process time, unchanged code was seen +97% to +136% slower on a loaded 2-core
# machine, more than any limit that still proves something.
VIRTUAL_SUITE = """
import os
import virtual_clock

def spin(n):
    virtual_clock.spend(n * 1e-8)  # 2000 steps: 20 us of virtual time
    return sum(i * i for i in range(50))

def test_fast(benchmark):
    benchmark(spin, 2000)

def test_tunable(benchmark):
    benchmark(spin, int(os.environ.get("SPIN", "2000")))
"""


# VIRTUAL_SUITE with rounds that differ (by up to 5%, as rounds do), in a fixed order: identical rounds tie, and
# ties make a rank test more decisive than real timings allow.
UNEVEN_SUITE = VIRTUAL_SUITE.replace("import virtual_clock", "import itertools\nimport virtual_clock\n\n"
                                     "uneven = itertools.cycle([1.0, 1.03, 0.98, 1.05, 1.01, 0.99, 1.02])").replace(
    "virtual_clock.spend(n * 1e-8)", "virtual_clock.spend(n * 1e-8 * next(uneven))")


def run_virtual_benchmarks(pytester: pytest.Pytester, out: Path, spin: int, rounds: int = 30,
                           suite: str = VIRTUAL_SUITE) -> None:
    """pytest-benchmark's JSON of ``suite`` (:data:`VIRTUAL_SUITE`) written to ``out``, its tunable benchmark
    ``spin`` steps, at least ``rounds`` rounds (below 30: exactly that many, the time allowed being too short for
    more)."""
    pytester.makepyfile(test_bench=suite.replace('"2000"', f'"{spin}"'), virtual_clock=VIRTUAL_CLOCK)
    pytester.syspathinsert()
    for module in ("test_bench", "virtual_clock"):  # in-process runs: each run imports its own copy
        sys.modules.pop(module, None)
    result = pytester.runpytest("-p", "no:perfgate", "-p", "no:cacheprovider", "--benchmark-enable",
                                f"--benchmark-json={out}", "--benchmark-timer=virtual_clock.timer",
                                f"--benchmark-min-rounds={rounds}", "--benchmark-min-time=0.0002",
                                f"--benchmark-max-time={0.25 if rounds >= 30 else 1e-6}", "--benchmark-save-data",
                                "--benchmark-disable-gc")
    result.assert_outcomes(passed=2)


@pytest.fixture
def suite(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    # PYTEST_XDIST_WORKER: when this file itself runs under xdist, pytest-benchmark would see it in
    # the in-process runs below and switch benchmarks off.
    for name in ("GITHUB_STEP_SUMMARY", "PARSE_N", "PYTEST_ADDOPTS", "PYTEST_XDIST_WORKER"):
        monkeypatch.delenv(name, raising=False)
    pytester.makepyfile(test_bench=BENCH_SUITE, virtual_clock=VIRTUAL_CLOCK)
    pytester.syspathinsert()
    return pytester
