"""pytest plugin entry point (``pytest11: perfgate``): hooks only; the options come from ``perfgate.option_table``.

Free when off: at import this module uses only the stdlib, pytest and perfgate's stdlib-only modules
(the option table, config, metrics, errors, and this package's marker, fixture and tracer). With
``--perfgate`` the session object (``perfgate.plugin.session``) is registered; the machinery that runs
ncu, reads reports and gates (numpy, ncu_report: ``.runner``, ``perfgate.gate``) is imported when the
first perf test or benchmark runs.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from perfgate.errors import ConfigError
from perfgate.option_table import add_plugin_options
from perfgate.plugin.fixture import (
    ENV_CHILD_RESULT,
    ChildRecorder,
    PerfgateFixture,
    child_group,
    in_profiling_child,
)
from perfgate.plugin.marker import MARKER_HELP, MARKER_NAME, parse_marker
from perfgate.plugin.tracer import ENV_TIMELINE, TimelineRecorder

_CHILD_RECORDER = pytest.StashKey[ChildRecorder]()
_TIMELINE_RECORDER = pytest.StashKey[TimelineRecorder]()
SESSION_PLUGIN_NAME = "perfgate-session"


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("perfgate", "perfgate: performance-regression gate (Nsight Compute, pytest-benchmark)")
    add_plugin_options(group)


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
