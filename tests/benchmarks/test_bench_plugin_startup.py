"""Cheap until a perf test runs: collecting a 2,000-test suite with perfgate installed, and with
``--perfgate`` on, costs no more than with ``-p no:perfgate`` (issue 25: at most 1.10x), and nothing
heavy (pandas, numpy, ncu_report, the gate) is imported before the first perf test or benchmark runs.

The speed is measured in CPU time of each pytest process (``scale.measure``), the three variants
interleaved, median of the per-round ratios. In the normal suite the limit is 1.15x (what importing
pandas alone would add is ~1.4x); the precise 1.10x is the benchmark's, with ``--benchmark-enable``:
``python -m pytest tests/benchmarks/test_bench_plugin_startup.py --benchmark-enable -p no:xdist -s``.

One process's CPU time moves by 5-10% on a shared VM, as much as the goal, so the benchmark asserts the goal
on the instructions each variant executes, counted by valgrind's callgrind where it is installed: the same
count on every run (``PYTHONHASHSEED=0``), at ~40x the time. The suite declares the ``perfgate`` marker in
its pytest.ini, as a suite that runs without the plugin would: else the plugin-free run pays for 200
unknown-marker warnings (~3% of its instructions) and flatters the ratio.
"""

from __future__ import annotations

import re
import shutil
import statistics
import subprocess
import sys
from pathlib import Path

import pytest
from scale import Run, environment, measure

TESTS, FILES = 2000, 20
ROUNDS = 5
# The benchmark's CPU ratio takes more rounds: one process's CPU time moves by a few percent on a shared VM.
PRECISE_ROUNDS = 15
ATTEMPTS = 3
GENEROUS, GOAL = 1.15, 1.10
HEAVY = ("pandas", "numpy", "jinja2", "ncu_report", "perfgate.compare", "perfgate.gate", "perfgate.plugin.runner",
         "perfgate.collect", "perfgate.table", "nvtx")
COLLECT = ("--collect-only", "-q", "-p", "no:cacheprovider")
VARIANTS = {"installed": (), "--perfgate": ("--perfgate",), "-p no:perfgate": ("-p", "no:perfgate")}


@pytest.fixture(scope="module")
def suite(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """2,000 plain tests in 20 files, some marked perfgate and using the fixture, as a real suite would."""
    root = tmp_path_factory.mktemp("suite")
    (root / "pytest.ini").write_text("[pytest]\nmarkers =\n    perfgate: a perf test (declared by the suite)\n",
                                     encoding="utf-8")
    per_file = TESTS // FILES
    for index in range(FILES):
        lines = ["import pytest", ""]
        for number in range(per_file):
            if number % 10 == 0:
                lines += ["@pytest.mark.perfgate(kernels='regex:k')", f"def test_{number}(perfgate):",
                          "    with perfgate.region('r'):", "        pass", ""]
            else:
                lines += [f"def test_{number}():", "    assert True", ""]
        (root / f"test_gen_{index}.py").write_text("\n".join(lines), encoding="utf-8")
    # Reports what perfgate left in sys.modules, so the heavy-import check covers a real pytest run.
    (root / "conftest.py").write_text(
        "import os, sys\n"
        "def pytest_sessionfinish(session):\n"
        "    out = os.environ.get('LOADED_MODULES_FILE')\n"
        "    if out:\n"
        f"        heavy = {HEAVY!r}\n"
        "        open(out, 'w').write(' '.join(m for m in heavy if m in sys.modules))\n", encoding="utf-8")
    return root


def _environ(**extra: str) -> dict[str, str]:
    env = environment(**extra)
    env.pop("PYTEST_ADDOPTS", None)
    return env


def _check(suite: Path, *extra: str, env: dict[str, str] | None = None) -> str:
    done = subprocess.run([sys.executable, "-m", "pytest", *extra], cwd=suite, capture_output=True, text=True,
                          env=env or _environ(), check=False)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    return done.stdout


def _collect(suite: Path, *extra: str) -> Run:
    return measure([sys.executable, "-m", "pytest", *COLLECT, *extra], cwd=suite, ok=(0,), env=_environ())


def _ratios(suite: Path, rounds: int = ROUNDS) -> dict[str, float]:
    """Median over interleaved rounds of (CPU of a variant) / (CPU with -p no:perfgate)."""
    runs: dict[str, list[Run]] = {name: [] for name in VARIANTS}
    for _ in range(rounds):
        for name, extra in VARIANTS.items():
            runs[name].append(_collect(suite, *extra))
    off = runs["-p no:perfgate"]
    ratios = {name: statistics.median(r.cpu / o.cpu for r, o in zip(runs[name], off)) for name in VARIANTS}
    print(f"\ncollect {TESTS} tests, CPU median of {rounds}: "
          + ", ".join(f"{name} {statistics.median(r.cpu for r in runs[name]) * 1000:.0f} ms ({ratios[name]:.3f}x)"
                      for name in VARIANTS))
    return ratios


def test_collecting_2000_tests_costs_no_more_with_the_plugin(suite: Path) -> None:
    for extra in VARIANTS.values():
        assert f"{TESTS} tests collected" in _check(suite, *COLLECT, *extra)  # and warms .pyc files
    for _ in range(ATTEMPTS):
        ratios = _ratios(suite)
        if max(ratios.values()) <= GENEROUS:
            return
        # A burst of load from a neighbouring process can spoil one round; a real cost fails every round.
    pytest.fail(f"collecting with perfgate cost {ratios} of the CPU without it (limit {GENEROUS}x), "
                f"{ATTEMPTS} times")


@pytest.mark.parametrize("variant", ["installed", "--perfgate"])
def test_bench_collect_2000_tests(suite: Path, benchmark, variant: str) -> None:  # type: ignore[no-untyped-def]
    """The CPU ratio over more rounds, with ``--benchmark-enable`` (in ``extra_info``; once as a smoke test
    otherwise). It asserts what load cannot break: the precise 1.10x is asserted on instructions (below), as
    this ratio measured 0.95-1.08x on the development VM for a cost of ~2%."""
    benchmark.pedantic(_collect, args=(suite, *VARIANTS[variant]), rounds=3, iterations=1)
    if benchmark.disabled:
        return
    ratio = _ratios(suite, PRECISE_ROUNDS)[variant]
    benchmark.extra_info["cpu_ratio"] = round(ratio, 3)
    assert ratio <= GENEROUS


@pytest.mark.parametrize("extra", [COLLECT, (*COLLECT, "--perfgate"),
                                   ("-q", "-p", "no:cacheprovider", "--perfgate", "--perfgate-ncu=/nonexistent/ncu")],
                         ids=["collect", "collect --perfgate", "run --perfgate, perf tests skipped"])
def test_nothing_heavy_is_imported_before_a_perf_test_runs(suite: Path, tmp_path: Path, extra: tuple[str, ...]) -> None:
    loaded = tmp_path / "loaded.txt"
    out = _check(suite, *extra, f"--perfgate-report={tmp_path / 'report.json'}",
                 env=_environ(LOADED_MODULES_FILE=str(loaded)))
    # Neither perfgate nor pytest's own plugins pulled in pandas & co; a run writes the session report after its
    # last test, whose Markdown and HTML page jinja2 lays out (perfgate.render.templates), the page's table of
    # launches with numpy (perfgate.render.html_table).
    allowed = set() if "--collect-only" in extra else {"jinja2", "numpy"}
    assert set(loaded.read_text().split()) <= allowed, out[-1000:]


def test_importing_the_plugin_imports_nothing_heavy() -> None:
    code = ("import sys, perfgate.plugin, perfgate.plugin.session\n"
            f"print(' '.join(m for m in {HEAVY!r} if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == ""


def _instructions(suite: Path, *extra: str) -> int:
    """Instructions the pytest process executed collecting the suite (callgrind's count of the process run, not
    of the children it forks, whose count starts from the parent's at the fork)."""
    done = subprocess.run(["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", sys.executable, "-m",
                           "pytest", *COLLECT, *extra], cwd=suite, capture_output=True, text=True, check=False,
                          env={**_environ(), "PYTHONHASHSEED": "0"})
    assert done.returncode == 0, done.stderr[-2000:]
    main = re.search(r"^==(\d+)== Command:", done.stderr, re.MULTILINE)
    assert main is not None, done.stderr[-2000:]
    counts = dict(re.findall(r"^==(\d+)== Collected : (\d+)", done.stderr, re.MULTILINE))
    return int(counts[main.group(1)])


@pytest.mark.parametrize("variant", ["installed", "--perfgate"])
def test_bench_collect_2000_tests_instructions(suite: Path, benchmark,  # type: ignore[no-untyped-def]
                                               variant: str) -> None:
    """The 1.10x goal in instructions, where CPU time is too noisy to tell 1% from 5% (valgrind: ~25 s a run)."""
    if benchmark.disabled or shutil.which("valgrind") is None:
        pytest.skip("counts instructions under valgrind: with --benchmark-enable, where valgrind is installed")
    _check(suite, *COLLECT, *VARIANTS[variant])  # warms .pyc files
    without = _instructions(suite, *VARIANTS["-p no:perfgate"])
    count = benchmark.pedantic(_instructions, args=(suite, *VARIANTS[variant]), rounds=1, iterations=1)
    ratio = count / without
    benchmark.extra_info.update(instructions=count, without_plugin=without, ratio=round(ratio, 4))
    print(f"\ncollect {TESTS} tests, {variant}: {count:,} instructions, {ratio:.4f}x of {without:,} without the plugin")
    assert ratio <= GOAL
