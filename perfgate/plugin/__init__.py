"""pytest plugin entry point (``pytest11: perfgate``): hooks only.

Cheap when off: at import this module uses only the stdlib, pytest and perfgate's stdlib-only
modules (config, metrics, options, errors, and this package's marker, fixture and options). With
``--perfgate`` the session object (``perfgate.plugin.session``, as light) is registered; the machinery
that runs ncu, reads reports and gates (numpy, ncu_report: ``.runner``, ``perfgate.gate``) is
imported when the first perf test or benchmark runs, so ``--collect-only`` stays as cheap as without.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from perfgate.config import SOURCES, Settings
from perfgate.errors import ConfigError
from perfgate.options import metrics_arg, positive_seconds, probability, sections_arg, threshold_arg
from perfgate.plugin.fixture import (
    ENV_CHILD_RESULT,
    ChildRecorder,
    PerfgateFixture,
    child_group,
    in_profiling_child,
)
from perfgate.plugin.marker import MARKER_HELP, MARKER_NAME, parse_marker
from perfgate.plugin.tracer import ENV_TIMELINE, TimelineRecorder

_DEFAULTS = Settings()
_CHILD_RECORDER = pytest.StashKey[ChildRecorder]()
_TIMELINE_RECORDER = pytest.StashKey[TimelineRecorder]()
SESSION_PLUGIN_NAME = "perfgate-session"


def _on_off(flag: bool) -> str:
    return "on" if flag else "off"


def _catalog_thresholds() -> str:
    from perfgate.metrics import CATALOG

    return ", ".join(f"{m.label} {m.threshold.spec}" for m in CATALOG if m.threshold.gating).replace("%", "%%")


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("perfgate", "perfgate: performance-regression gate (Nsight Compute, pytest-benchmark)")
    group.addoption("--perfgate", action="store_true", default=False,
                    help="run perf tests (@pytest.mark.perfgate or the perfgate fixture) under Nsight Compute, gate "
                         "them and pytest-benchmark results against the stored baselines, and write a session report "
                         "(default: off: perf tests run as plain tests)")
    group.addoption("--perfgate-update", action="store_true", default=False,
                    help="write or update the baselines from this run instead of failing on regressions; implies "
                         "--perfgate (default: off)")
    group.addoption("--perfgate-baselines", metavar="DIR", default=None,
                    help="baseline directory, one subfolder per GPU or CPU model; relative to the current directory "
                         f"(default: [tool.perfgate] baselines, else {_DEFAULTS.baselines!r}, relative to the "
                         "pyproject.toml's folder, else to the rootdir)")
    group.addoption("--perfgate-strict", action="store_true", default=None,
                    help="fail instead of skip when ncu, a GPU or counter permission is missing, and fail tests "
                         f"that have no baseline (default: [tool.perfgate] strict, else {_on_off(_DEFAULTS.strict)})")
    group.addoption("--perfgate-report", metavar="PATH", default=None,
                    help="session report (JSON; .md and .html written beside it); relative to the current directory "
                         f"(default: [tool.perfgate] report, else {_DEFAULTS.report!r}, relative to the "
                         "pyproject.toml's folder, else to the rootdir)")
    group.addoption("--perfgate-ncu", metavar="PATH", default=None,
                    help=f"the Nsight Compute CLI to run (default: [tool.perfgate] ncu, else {_DEFAULTS.ncu!r} "
                         "found on PATH)")
    group.addoption("--perfgate-clock-control", metavar="MODE", default=None,
                    help="ncu --clock-control, recorded in the baseline: base locks clocks for repeatable numbers, "
                         f"none leaves them free (default: [tool.perfgate] clock_control, else "
                         f"{_DEFAULTS.clock_control!r})")
    group.addoption("--perfgate-cache-control", metavar="MODE", default=None, choices=("all", "none"),
                    help="ncu --cache-control, recorded in the baseline: all flushes caches before each pass "
                         f"(default: [tool.perfgate] cache_control, else {_DEFAULTS.cache_control!r})")
    group.addoption("--perfgate-timeout", metavar="SECONDS", default=None, type=positive_seconds,
                    help="seconds one perf test may run under ncu before it is killed and failed "
                         f"(default: [tool.perfgate] timeout, else {_DEFAULTS.timeout:g})")
    group.addoption("--perfgate-keep-artifacts", action="store_true", default=None,
                    help="keep ncu's report, log, command line and the test's output of every perf test in "
                         "perfgate-artifacts/ beside the session report, not only of failed ones (default: "
                         f"[tool.perfgate] keep_artifacts, else {_on_off(_DEFAULTS.keep_artifacts)})")
    group.addoption("--perfgate-isolate", action="store_true", default=None,
                    help="profile each perf test in its own child process under its own ncu, instead of one child "
                         "per group of perf tests that share ncu's options (default: [tool.perfgate] isolate, else "
                         f"{_on_off(_DEFAULTS.isolate)})")
    group.addoption("--perfgate-metrics", metavar="NAMES", default=None, type=metrics_arg,
                    help="comma-separated metrics to compare, replacing the configured set; prefix each with '+' to "
                         "add to it (default: [tool.perfgate] metrics, else the curated set)")
    group.addoption("--perfgate-sections", metavar="IDS", default=None, type=sections_arg,
                    help="comma-separated ncu sections to collect besides the metrics (ncu --section; "
                         "`ncu --list-sections` names them), so that ncu's rule findings such as 'Uncoalesced "
                         "Global Accesses' explain a regression; costs replay passes; 'none' for none (default: "
                         "[tool.perfgate] sections, else none)")
    group.addoption("--perfgate-significance", metavar="P", default=None, type=probability,
                    help="p-value a benchmark slowdown must beat when raw timings exist on both sides (default: "
                         f"[tool.perfgate] significance, else {_DEFAULTS.significance:g})")
    group.addoption("--perfgate-source", metavar="SOURCE", default=None, choices=SOURCES,
                    help="what measures the perf tests: ncu (Nsight Compute's counters), timeline (a CUPTI activity "
                         "trace: region wall time, GPU idle, kernel durations; no counter permission needed), both, "
                         "or auto (ncu, and the timeline where counters are refused) (default: [tool.perfgate] "
                         f"source, else {_DEFAULTS.source!r})")
    group.addoption("--perfgate-history", metavar="URL", default=None,
                    help="record each session in this history: sqlite:///PATH or postgresql://... (default: "
                         "[tool.perfgate] history, else off; see docs/history.md)")
    group.addoption("--perfgate-history-thresholds", action="store_true", default=None,
                    help="judge each test against the median of the history's recent base-branch runs (its "
                         "baseline where a series has too few) and size each metric's threshold from their spread, "
                         "never above the hand-set one (default: [tool.perfgate] history_thresholds, else off)")
    group.addoption("--perfgate-threshold", metavar="METRIC=SPEC", action="append", default=[],
                    type=threshold_arg,
                    help="gate METRIC with SPEC: '5%%' relative, '1000' absolute (base unit), '5%%+1000' both, 'off' "
                         "not gated; repeatable; a marker's thresholds= wins for its test (default: [tool.perfgate] "
                         f"thresholds, else the catalog's: {_catalog_thresholds()})")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", MARKER_HELP)
    if in_profiling_child():
        # Inside ncu: record the outcome for the parent; never profile recursively.
        result = os.environ.get(ENV_CHILD_RESULT)
        if result:
            recorder = ChildRecorder(Path(result), child_group())
            config.stash[_CHILD_RECORDER] = recorder
            config.pluginmanager.register(recorder, "perfgate-child")
        if os.environ.get(ENV_TIMELINE):  # the timeline source's child: trace the test instead of NVTX ranges
            timeline = TimelineRecorder(Path(os.environ[ENV_TIMELINE]))
            config.stash[_TIMELINE_RECORDER] = timeline
            config.pluginmanager.register(timeline, "perfgate-timeline")
        return
    if not (config.getoption("perfgate") or config.getoption("perfgate_update")):
        return
    from perfgate.errors import PerfgateError
    from perfgate.plugin.session import PerfgateSession

    try:
        session = PerfgateSession.from_config(config)
    except PerfgateError as exc:
        raise pytest.UsageError(f"perfgate: {exc}") from None
    config.pluginmanager.register(session, SESSION_PLUGIN_NAME)


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """A test that only uses the ``perfgate`` fixture is a perf test too: mark it, so ``-m perfgate`` selects it
    (tryfirst: before pytest deselects by marker)."""
    for item in items:
        if "perfgate" in getattr(item, "fixturenames", ()) and item.get_closest_marker(MARKER_NAME) is None:
            item.add_marker(MARKER_NAME)


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    # Validate the marker in plain runs too, so a typo is caught before the first --perfgate run.
    marker = item.get_closest_marker(MARKER_NAME)
    if marker is not None:
        try:
            parse_marker(marker.args, marker.kwargs, item.nodeid)
        except ConfigError as exc:
            # from None: else pytest also prints the ConfigError it was raised from: the message twice
            raise pytest.fail.Exception(str(exc), pytrace=False) from None


@pytest.fixture
def perfgate(request: pytest.FixtureRequest) -> PerfgateFixture:
    """``perfgate.region(name)``: kernels launched inside are what ``pytest --perfgate`` profiles.

    A no-op context manager unless this process is the one Nsight Compute profiles.
    """
    recorder = request.config.stash.get(_CHILD_RECORDER, None)
    return PerfgateFixture(profiling=in_profiling_child(), recorder=recorder,
                           timeline=request.config.stash.get(_TIMELINE_RECORDER, None))
