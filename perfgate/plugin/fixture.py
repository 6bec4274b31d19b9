"""The ``perfgate`` fixture and the profiled child's side of ``pytest --perfgate``.

Stdlib and pytest only: this module is imported whenever the plugin is installed, so it must
stay cheap (see ``tests/benchmarks/test_bench_plugin_startup.py``).

How a perf test runs under ``pytest --perfgate``: the parent starts
``ncu ... python -m pytest NODEID`` with ``PERFGATE_CHILD=1`` in the environment. In that child,
``perfgate.region(name)`` pushes an NVTX push/pop range named ``name`` in the ``perfgate``
domain, and ncu profiles only kernels launched inside such ranges. Everywhere else (plain
``pytest``, the parent process) ``region`` does nothing.
"""

from __future__ import annotations

import contextlib
import json
import os
import threading
from pathlib import Path
from types import ModuleType
from typing import Any, Generator, Iterator, Mapping, Sequence

import pytest

from perfgate.plugin.tracer import TimelineRecorder
from perfgate.vocabulary import NVTX_DOMAIN

ENV_CHILD = "PERFGATE_CHILD"  # "1" in the process that ncu profiles
ENV_CHILD_RESULT = "PERFGATE_CHILD_RESULT"  # path where the child writes its test outcome (JSON)
# JSON list of the node ids one child profiles together: each test's regions are nested in an NVTX range
# naming the test (its tag, "t<index>"), so the parent can split ncu's one report back per test.
ENV_CHILD_GROUP = "PERFGATE_CHILD_GROUP"


def group_tags(nodeids: Sequence[str]) -> dict[str, str]:
    """The NVTX range name of each test profiled in one child: short, and valid in ncu's NVTX filter."""
    return {nodeid: f"t{index}" for index, nodeid in enumerate(nodeids)}

NVTX_MISSING = ("perfgate: the 'nvtx' package is missing in the profiled process, so perfgate.region() cannot "
                "mark what to profile: pip install nvtx (or perfgate[nvtx])")


def child_group(environ: Mapping[str, str] | None = None) -> list[str]:
    """The node ids this child profiles together (empty: one test, no tags)."""
    text = (os.environ if environ is None else environ).get(ENV_CHILD_GROUP, "")
    try:
        group = json.loads(text) if text else []
    except ValueError:
        return []
    return [str(n) for n in group] if isinstance(group, list) and len(group) > 1 else []


def in_profiling_child(environ: Mapping[str, str] | None = None) -> bool:
    return (os.environ if environ is None else environ).get(ENV_CHILD) == "1"


_FILTER_SYNTAX = ("/", "@", ",", "[", "]", "*")  # ncu --nvtx-include syntax: nesting, domain, AND, outermost...


def check_region_name(name: object) -> str:
    """Region names become NVTX filter expressions and the table's ``" > "``-joined stack."""
    if not isinstance(name, str) or not name.strip():
        raise ValueError(f"perfgate.region() needs a non-empty name, got {name!r}")
    if " > " in name or any(c in name for c in _FILTER_SYNTAX) or name.startswith("regex:"):
        raise ValueError(f"perfgate.region({name!r}): a region name may not contain ' > ' or any of "
                         f"{' '.join(_FILTER_SYNTAX)} (they separate nested regions or mean something in ncu's NVTX "
                         "filter, which selects launches by region name)")
    return name


def _import_nvtx() -> ModuleType:
    try:
        import nvtx
    except ImportError:
        # from None: the ImportError would be printed too, before the same advice
        raise pytest.fail.Exception(NVTX_MISSING, pytrace=False) from None
    module: ModuleType = nvtx
    return module


class ChildRecorder:
    """Pytest plugin active only in the profiled child: writes what happened to a JSON file.

    The parent reads it to tell "the test itself failed" (show the test's own failure) from
    "ncu failed" (show ncu's message), and to explain an empty profile (which regions ran).
    """

    def __init__(self, path: Path, group: Sequence[str] = ()) -> None:
        self.path = path
        self.tags = group_tags(group)
        self.reports: list[dict[str, Any]] = []
        self.regions: list[str] = []
        self.regions_by_test: dict[str, list[str]] = {}
        self.started: list[str] = []  # node ids whose body began, in order: a crash or timeout names the last
        self.finished: list[str] = []
        self.exitstatus: int | None = None
        self.current: str | None = None
        self._lock = threading.Lock()

    @property
    def tag(self) -> str | None:
        """The running test's NVTX tag when several tests share this child, else None."""
        return self.tags.get(self.current) if self.current is not None else None

    def note_region(self, name: str) -> None:
        with self._lock:
            self.regions.append(name)
            if self.current is not None:
                self.regions_by_test.setdefault(self.current, []).append(name)

    def write(self) -> None:
        document = {"reports": self.reports, "regions": self.regions, "regions_by_test": self.regions_by_test,
                    "started": self.started, "finished": self.finished, "exitstatus": self.exitstatus}
        tmp = self.path.with_name(self.path.name + ".tmp")
        tmp.write_text(json.dumps(document), encoding="utf-8")
        os.replace(tmp, self.path)  # the parent never reads half a file, even after a crash

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_call(self, item: pytest.Item) -> Generator[None, Any, Any]:
        self.current = item.nodeid
        self.started.append(item.nodeid)
        self.write()
        try:
            return (yield)
        finally:
            self.finished.append(item.nodeid)
            self.current = None
            self.write()

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        reason = ""
        if report.skipped and isinstance(report.longrepr, tuple) and len(report.longrepr) == 3:
            reason = str(report.longrepr[2]).removeprefix("Skipped: ")
        self.reports.append({"nodeid": report.nodeid, "when": report.when, "outcome": report.outcome,
                             "longrepr": "" if report.passed else report.longreprtext, "skip_reason": reason})
        self.write()

    def pytest_collectreport(self, report: pytest.CollectReport) -> None:
        if report.failed:
            self.reports.append({"nodeid": report.nodeid, "when": "collect", "outcome": "failed",
                                 "longrepr": report.longreprtext, "skip_reason": ""})
            self.write()

    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        self.exitstatus = int(exitstatus)
        self.write()


class PerfgateFixture:
    """What the ``perfgate`` fixture gives a test.

    ``region(name)`` marks the code whose kernels are profiled; regions may nest and may be
    entered several times. ``profiling`` is True only inside the profiled child process.
    """

    def __init__(self, *, profiling: bool = False, recorder: ChildRecorder | None = None,
                 timeline: TimelineRecorder | None = None) -> None:
        self._profiling = profiling
        self._recorder = recorder
        self._timeline = timeline  # the traced child of the timeline source: regions go to its tracer, not NVTX
        self._nvtx: ModuleType | None = None
        self._depth = 0  # regions open: the test's tag goes around the outermost only

    @property
    def profiling(self) -> bool:
        return self._profiling

    def region(self, name: str) -> contextlib.AbstractContextManager[None]:
        check_region_name(name)
        if not self._profiling:
            return contextlib.nullcontext()  # plain pytest: free
        return self._profiled_region(name)

    def step(self) -> contextlib.AbstractContextManager[None]:
        """One iteration of the test's loop, for the timeline source: region ``step``, measured from its start on
        the host (a data loader's wait before the first launch included), in no other region's path. Nothing
        elsewhere: ncu profiles the regions inside it, as without it."""
        tracer = self._timeline.tracer if self._timeline is not None else None
        return tracer.step() if tracer is not None else contextlib.nullcontext()

    @contextlib.contextmanager
    def _profiled_region(self, name: str) -> Iterator[None]:
        if self._timeline is not None:
            if self._recorder is not None:
                self._recorder.note_region(name)
            tracer = self._timeline.tracer
            with tracer.region(name) if tracer is not None else contextlib.nullcontext():
                yield
            return
        if self._nvtx is None:
            self._nvtx = _import_nvtx()
        tag = None
        if self._recorder is not None:
            self._recorder.note_region(name)
            tag = self._recorder.tag if self._depth == 0 else None
        # Several tests in one child: the test's tag is the outermost range, pushed only around its
        # regions, so ncu still profiles nothing outside them (see perfgate.plugin.runner.split_by_test).
        if tag is not None:
            self._nvtx.push_range(message=tag, domain=NVTX_DOMAIN)
        self._nvtx.push_range(message=name, domain=NVTX_DOMAIN)
        self._depth += 1
        try:
            yield
        finally:
            self._depth -= 1
            self._nvtx.pop_range(domain=NVTX_DOMAIN)
            if tag is not None:
                self._nvtx.pop_range(domain=NVTX_DOMAIN)

    def __repr__(self) -> str:
        return f"<perfgate fixture profiling={self._profiling}>"
