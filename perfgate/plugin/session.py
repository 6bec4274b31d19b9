"""What ``pytest --perfgate`` does; registered by ``perfgate.plugin`` only when the option is on.

Per GPU perf test (``@pytest.mark.perfgate`` or the ``perfgate`` fixture):

1. preflight (once per session): ncu, a GPU, counter permission -> else skip (``--perfgate-strict``: fail)
2. ``pytest_pyfunc_call``: instead of calling the test here, run ``ncu ... python -m pytest NODEID``
   (``perfgate.plugin.runner``), serialized per GPU with a file lock
3. read the child's outcome and ncu's log: a failing test, a crash, a timeout or an ncu error
   fails the test with that message; an empty profile fails with what the filter saw
4. read the ``.ncu-rep``, add per-region totals, and gate it (``perfgate.gate``) against
   ``<baselines>/<gpu-slug>/<baseline name>.json``: fail on a regression with the text diff

``--perfgate-source`` (``perfgate.plugin.sources``) picks who measures: ncu as above, a CUPTI trace of the test
(``perfgate.plugin.timeline_run``), both, or ncu with the trace where counters are refused (``auto``).

Per pytest-benchmark test: after it passes, its stats are gated the same way against
``<baselines>/<cpu-slug>/...``. Every per-test report rides on the TestReport (so it crosses
pytest-xdist's process boundary as plain data) and the controller writes one session report
(``perfgate.plugin.session_report``).
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any, Generator, NoReturn, Sequence

import pytest

from perfgate.errors import ConfigError, PerfgateError
from perfgate.plugin.marker import MARKER_NAME, PerfMarker, parse_marker
from perfgate.plugin.options import (
    PluginOptions,
    compare_options_for,
    resolve_options,
)
from perfgate.plugin.preflight import PreflightFacts, check_preflight, gather_facts
from perfgate.plugin.run_folders import ARTIFACTS, Profiled, remove_live_runs
from perfgate.plugin.session_report import SessionReport, shown_path
# the names, not ``from perfgate.plugin import sources``: that reads the package's attribute, which an
# in-process pytest run (pytester) leaves on the module it imported and then dropped
from perfgate.plugin.sources import (GatePart, chosen_sources, fail_on, gate_parts, preflight_for, settle,
                                     timeline_part, traced_instead_note, unusable_ncu, why_traced_instead, with_history)
from perfgate.text import inert
from perfgate.verdict import PerTestStatus, UngatedStatus

if TYPE_CHECKING:
    # The machinery (numpy, ncu_report) is imported where a perf test or a benchmark
    # first needs it, not when --perfgate registers this session: collecting stays as cheap as without.
    from perfgate.compare import CompareOptions
    from perfgate.plugin.group import GroupOutcome
    from perfgate.plugin.runner import ChildSpec, NcuSpec
    from perfgate.report import Report
    from perfgate.table import Measurement

REPORT_ATTR = "perfgate"  # attribute on pytest's TestReport carrying this test's perfgate payload
_PAYLOAD = pytest.StashKey[dict[str, Any]]()
_MARKER = pytest.StashKey[PerfMarker]()


def _worker_index(config: pytest.Config) -> int | None:
    workerinput = getattr(config, "workerinput", None)
    if not workerinput:
        return None
    digits = re.sub(r"\D", "", str(workerinput.get("workerid", "")))
    return int(digits) if digits else 0


def _skip(reason: str) -> NoReturn:
    """Skip the running test, reported at the test's own location (as a skip marker is), not at this line."""
    raise pytest.skip.Exception(reason, _use_item_location=True)


class PerfgateSession:
    """Registered as a pytest plugin when ``--perfgate`` is on."""

    def __init__(self, config: pytest.Config, options: PluginOptions) -> None:
        self.config = config
        self.options = options
        self.results = SessionReport(options, config.invocation_params.dir)
        self._facts: PreflightFacts | None = None
        self._problem: str | None = None
        self._ncu_version: str | None = None
        self._machine_info: dict[str, Any] | None = None
        self._profiled: set[str] = set()  # perf tests already profiled (alone or in a group)
        self._group_outcomes: dict[str, GroupOutcome] = {}  # a group run's results for its tests still to come

    @classmethod
    def from_config(cls, config: pytest.Config) -> PerfgateSession:
        return cls(config, resolve_options(config))

    # ------------------------------------------------------------ what is a GPU perf test

    def is_gpu_test(self, item: pytest.Item) -> bool:
        return isinstance(item, pytest.Function) and (
            item.get_closest_marker(MARKER_NAME) is not None or "perfgate" in item.fixturenames)

    def marker_of(self, item: pytest.Item) -> PerfMarker:
        if _MARKER not in item.stash:
            marker = item.get_closest_marker(MARKER_NAME)
            item.stash[_MARKER] = parse_marker(marker.args, marker.kwargs, item.nodeid) if marker else PerfMarker()
        return item.stash[_MARKER]

    # ------------------------------------------------------------ preflight

    def preflight_problem(self) -> str | None:
        if self._facts is None:
            self._facts = gather_facts(self.options.ncu)
            self._problem = check_preflight(self._facts)
            if self._problem is None and self._facts.ncu_path is not None:
                from perfgate.plugin.ncu_run import ncu_version

                version, problem = ncu_version(self._facts.ncu_path)
                self._ncu_version = version
                if problem:
                    self._problem = unusable_ncu(problem)
                    self._facts = self._facts._replace(ncu_unusable=problem)  # ``auto`` traces instead
        return self._problem

    def _unavailable(self, item: pytest.Item, reason: str) -> NoReturn:
        """Skip (or, strict, fail) a perf test that cannot be profiled here; noted in the report."""
        outcome = UngatedStatus.FAILED if self.options.strict else UngatedStatus.SKIPPED
        self._stash_payload(item, notes=[f"{item.nodeid}: {outcome.value}: {reason}"], status=outcome, cause=reason)
        if self.options.strict:
            raise pytest.fail.Exception(f"perfgate: {reason} (--perfgate-strict)", pytrace=False) from None
        _skip(f"perfgate: {reason} (--perfgate-strict makes this a failure)")

    # ------------------------------------------------------------ hooks

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_setup(self, item: pytest.Item) -> None:
        if not self.is_gpu_test(item):
            return
        try:
            self.marker_of(item)
        except ConfigError as exc:
            # from None: the ConfigError would otherwise be shown too ("During handling of ...")
            raise pytest.fail.Exception(str(exc), pytrace=False) from None
        problem = preflight_for(self.options.source, self.preflight_problem(), self._facts)
        if problem:  # before fixtures: a skipped perf test costs nothing
            self._unavailable(item, problem)

    @pytest.hookimpl(tryfirst=True)
    def pytest_pyfunc_call(self, pyfuncitem: pytest.Function) -> bool | None:
        if not self.is_gpu_test(pyfuncitem):
            return None
        self._profile_and_gate(pyfuncitem)
        return True  # the body ran in the profiled child, not here

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_call(self, item: pytest.Item) -> Generator[None, Any, Any]:
        result = yield  # a failing test raises here and is not gated
        if not self.is_gpu_test(item) and "benchmark" in getattr(item, "fixturenames", ()):
            self._gate_benchmark(item)
        return result

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(self, item: pytest.Item,
                                  call: pytest.CallInfo[None]) -> Generator[None, pytest.TestReport, pytest.TestReport]:
        report = yield
        payload = item.stash.get(_PAYLOAD, None)
        if payload is not None:
            del item.stash[_PAYLOAD]
            setattr(report, REPORT_ATTR, payload)
        return report

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        payload = getattr(report, REPORT_ATTR, None)
        if isinstance(payload, dict):
            self.results.payloads.append(payload)

    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        remove_live_runs()  # an interrupted or -x session leaves run folders no gate kept or discarded
        if hasattr(self.config, "workerinput") or self.config.option.collectonly:
            return  # xdist workers hand their payloads to the controller, which writes one report
        self.results.write()

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if hasattr(self.config, "workerinput") or self.config.option.collectonly:
            return
        terminalreporter.write_sep("-", "perfgate")
        for line in self.results.summary_lines():
            # Kernel and region names come from the code under test: nothing in them may act on the terminal.
            terminalreporter.write_line(inert(line), red=line.startswith("perfgate: cannot"))

    # ------------------------------------------------------------ GPU tests

    def _compare_options(self, marker: PerfMarker | None = None, collecting: bool = True) -> CompareOptions:
        return compare_options_for(self.options, marker, collecting=collecting)

    def _gpu_assignment(self) -> tuple[str | None, tuple[str, ...]]:
        """(CUDA_VISIBLE_DEVICES for the child or None to leave it, GPUs to lock)."""
        gpu_ids = tuple(self._facts.gpu_ids) if self._facts else ()
        index = _worker_index(self.config)
        if index is not None and len(gpu_ids) > 1:
            gpu = gpu_ids[index % len(gpu_ids)]
            return gpu, (gpu,)
        return None, gpu_ids

    def _settings(self) -> dict[str, Any]:
        return {"clock_control": self.options.clock_control, "cache_control": self.options.cache_control,
                "sections": ",".join(self.options.sections), "ncu_version": self._ncu_version or "unknown"}

    def _child_spec(self, nodeid: str) -> ChildSpec:
        from perfgate.plugin.runner import ChildSpec

        config = self.config
        return ChildSpec(nodeid=nodeid, rootdir=config.rootpath, inifile=config.inipath,
                         import_mode=config.getoption("importmode", None),
                         xdist_loaded=config.pluginmanager.hasplugin("xdist"),
                         load_plugin=bool(os.environ.get("PYTEST_DISABLE_PLUGIN_AUTOLOAD")))

    def _ncu_spec(self, marker: PerfMarker, timeout: float | None = None) -> NcuSpec:
        from perfgate.plugin.ncu_run import profiling_metrics
        from perfgate.plugin.runner import NcuSpec

        assert self._facts is not None and self._facts.ncu_path is not None  # preflight passed in setup
        gpu, lock_ids = self._gpu_assignment()
        metrics = tuple(profiling_metrics(self._compare_options(marker).wanted_metrics()))
        return NcuSpec(ncu=self._facts.ncu_path, clock_control=self.options.clock_control,
                       cache_control=self.options.cache_control, metrics=metrics,
                       timeout=timeout or marker.timeout or self.options.timeout, gpu=gpu, lock_ids=lock_ids,
                       sections=self.options.sections, code=self.options.code_identity)

    def _artifacts(self, nodeid: str) -> Path:
        from perfgate.gate import baseline_name

        return self.options.report.parent / ARTIFACTS / baseline_name(nodeid)

    def _group_key(self, item: pytest.Item) -> tuple[Any, ...] | None:
        """Perf tests with equal keys can share one profiled child: the same ncu command but for the tests."""
        try:
            marker = self.marker_of(item)
        except ConfigError:
            return None
        return (marker.kernels, marker.regions, self._ncu_spec(marker).metrics)

    def _group_of(self, item: pytest.Function) -> list[pytest.Function]:
        """The perf tests still to run in this session that share ``item``'s ncu options, ``item`` first.

        Under pytest-xdist a worker does not know which tests it will get: one child per test there."""
        if self.options.isolate or hasattr(self.config, "workerinput"):
            return [item]
        key = self._group_key(item)
        members = [item]
        for other in item.session.items:
            if (other is not item and other.nodeid not in self._profiled and isinstance(other, pytest.Function)
                    and self.is_gpu_test(other) and self._group_key(other) == key):
                members.append(other)
        return members

    def _say(self, line: str) -> None:
        """A progress line in the terminal, on a line of its own (pytest's progress dots continue after)."""
        reporter = self.config.pluginmanager.get_plugin("terminalreporter")
        if reporter is not None and not hasattr(self.config, "workerinput"):
            reporter.ensure_newline()
            reporter.write_line(line)

    def _profile(self, item: pytest.Function, marker: PerfMarker) -> Profiled:
        """This test's profile: from the group run that included it, or from a run of its own."""
        from perfgate.plugin.group import profile_group
        from perfgate.plugin.runner import profile

        if item.nodeid not in self._group_outcomes:
            group = self._group_of(item)
            if len(group) > 1:
                nodeids = [member.nodeid for member in group]
                timeout = sum(self.marker_of(member).timeout or self.options.timeout for member in group)
                self._profiled.update(nodeids)
                self._group_outcomes.update(profile_group(
                    nodeids, self._child_spec(item.nodeid), self._ncu_spec(marker, timeout), marker,
                    artifacts={n: self._artifacts(n) for n in nodeids}, environ=os.environ, progress=self._say))
        self._profiled.add(item.nodeid)
        outcome = self._group_outcomes.pop(item.nodeid, None)
        if outcome is None:
            return profile(self._child_spec(item.nodeid), self._ncu_spec(marker), marker,
                           artifacts=self._artifacts(item.nodeid), environ=os.environ, progress=self._say)
        if isinstance(outcome, Exception):
            raise outcome
        return outcome

    def _profile_and_gate(self, item: pytest.Function) -> None:
        """Measure the test with the chosen source(s) (``--perfgate-source``) and gate each measurement."""
        from perfgate.plugin.runner import ProfileFailed, ProfileSkipped
        marker = self.marker_of(item)
        use_ncu, use_timeline = chosen_sources(self.options.source, self._facts)
        instead = why_traced_instead(self.options.source, self._facts)  # auto: why ncu is not tried
        done: list[Profiled] = []
        parts: list[GatePart] = []
        try:
            if use_ncu:
                try:
                    profiled = self._profile(item, marker)
                    done.append(profiled)
                    # The report's own facts (the replay passes ncu took: DRAM writes depend on them) beside the
                    # session's.
                    settings = {**self._settings(), **profiled.measurement.settings}
                    parts.append(GatePart(
                        profiled.measurement._replace(source=f"{item.nodeid} (ncu)", settings=settings),
                        self._compare_options(marker), settings, notes=profiled.notes,
                        footer=f"\nncu's report of this run (open it in Nsight Compute): {profiled.report_file}"))
                except ProfileSkipped as exc:
                    if not (exc.unavailable and self.options.source == "auto"):
                        raise
                    instead, use_timeline = str(exc), True
            if use_timeline:
                gpu, lock_ids = self._gpu_assignment()
                if instead:
                    self._say(f"perfgate: {traced_instead_note(item.nodeid, instead)}")
                parts.append(timeline_part(
                    self._child_spec(item.nodeid), self._compare_options(marker, collecting=False), gpu=gpu,
                    timeout=marker.timeout or self.options.timeout, lock_ids=lock_ids,
                    artifacts=self._artifacts(item.nodeid), done=done, progress=self._say, instead=instead,
                    code=self.options.code_identity))
        except ProfileSkipped as exc:
            if exc.unavailable:
                self._unavailable(item, str(exc))
            self._stash_payload(item, notes=[f"{item.nodeid}: skipped while measured: {exc}"],
                                status=UngatedStatus.SKIPPED, cause=f"skipped while measured: {exc}")
            _skip(str(exc))
        except ProfileFailed as exc:
            settle(done, keep=True)
            self._fail(item, str(exc))
        try:
            self._gate_parts(item, parts)
        except pytest.fail.Exception:
            settle(done, keep=True)
            raise
        settle(done, keep=self.options.keep_artifacts)

    # ------------------------------------------------------------ benchmarks

    def _gate_benchmark(self, item: pytest.Item) -> None:
        fixture = getattr(item, "funcargs", {}).get("benchmark")
        if fixture is None or not type(fixture).__module__.startswith("pytest_benchmark"):
            return  # another plugin's "benchmark" fixture (pytest-codspeed...): not ours to read
        from perfgate.plugin.benchmarks import benchmark_measurement, machine_info, ungated_reason

        reason = ungated_reason(fixture)
        if reason is not None:
            self._stash_payload(item, notes=[f"{item.nodeid}: {reason}"], status=UngatedStatus.NOT_GATED,
                                cause=reason)
            return
        if self._machine_info is None:
            self._machine_info = machine_info(self.config)
        measured, settings = benchmark_measurement(item.nodeid, fixture, self._machine_info)
        self._gate(item, measured, self._compare_options(), settings=settings)

    # ------------------------------------------------------------ compare / update

    def _location(self, item: pytest.Item) -> tuple[str, int | None]:
        path, lineno, _ = item.location
        return path, (lineno + 1 if lineno is not None else None)

    def _gate(self, item: pytest.Item, current: Measurement, options: CompareOptions,
              settings: dict[str, Any], footer: str = "", notes: Sequence[str] = ()) -> None:
        """Compare ``current`` with this test's baseline(s); fail the test on a regression."""
        self._gate_parts(item, [GatePart(current, options, settings, footer, notes)])

    def _gate_parts(self, item: pytest.Item, parts: Sequence[GatePart]) -> None:
        """Gate each measurement (ncu's, the timeline's) against its own baseline: one payload, one failure."""
        path, line = self._location(item)
        root = self.config.rootpath
        try:
            judged, acceptances = with_history(parts, item.nodeid, self.options.history_reference,
                                                       self.options.history if self.options.update else "",
                                                       self.options.history_fallback,
                                                       self.options.history_max_time)
            gated = gate_parts(judged, test=item.nodeid, path=path, line=line, baselines=self.options.baselines,
                                       update=self.options.update, strict=self.options.strict,
                                       shown=lambda p: shown_path(p, root), acceptances=acceptances)
        except PerfgateError as exc:
            self._fail(item, str(exc))
        self._stash_payload(item, report=gated.report, status=gated.status,
                            written=[shown_path(p, root) for p in gated.written])
        fail_on(gated, item.nodeid)

    # ------------------------------------------------------------ payloads

    def _stash_payload(self, item: pytest.Item, *, report: Report | None = None, notes: Sequence[str] = (),
                       status: PerTestStatus, written: Sequence[str] = (), cause: str = "") -> None:
        """``cause``: why the test was not measured (skipped, benchmark not gated), for the report's
        ``unmeasured`` list: unmeasured is not passed. The status is stored as its value: a payload crosses
        xdist's channel, which carries plain types only."""
        item.stash[_PAYLOAD] = {"test": item.nodeid, "status": status.value, "report": report, "notes": list(notes),
                                "written": list(written), "cause": cause}

    def _fail(self, item: pytest.Item, message: str) -> NoReturn:
        self._stash_payload(item, notes=[f"{item.nodeid}: failed: {message.splitlines()[0]}"], status=UngatedStatus.FAILED)
        # from None: called while handling the PerfgateError whose words are already in the message
        raise pytest.fail.Exception(f"perfgate: {message}", pytrace=False) from None
