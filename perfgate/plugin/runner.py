"""Profile one perf test: its body in a child pytest under ncu, serialized per GPU; then read what ncu left.

The command lines are built by pure functions (``perfgate.plugin.ncu_run``); this module runs them,
classifies the outcome and turns ncu's report into the table the gate compares. Failures come back as
``ProfileFailed`` (the test fails with that message) or ``ProfileSkipped`` (the test is skipped, or,
strict, failed); ncu's report, log, command and the test's output are moved beside the session report
for every failure, and for every test with ``keep_artifacts``.
"""

from __future__ import annotations

import json
import re
import shlex
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from perfgate.collect.ncu_csv import read_ncu_csv
from perfgate.collect.ncu_rep import read_ncu_rep
from perfgate.collect.ncu_rep_framing import MAGIC
from perfgate.derived import read_forms
from perfgate.plugin.ncu_run import (
    NcuDiagnosis,
    NcuRun,
    build_child_command,
    build_ncu_command,
    diagnose_ncu_run,
    run_ncu,
)
from perfgate.errors import PerfgateError
from perfgate.plugin.clock_events import watched_clocks
from perfgate.plugin.gpu_lock import LOCK_WAIT, GpuBusy, gpu_locks
from perfgate.plugin.fixture import ENV_CHILD, ENV_CHILD_GROUP, ENV_CHILD_RESULT
from perfgate.plugin.marker import PerfMarker
from perfgate.plugin.run_folders import Profiled, child_result, keep_artifacts, new_run_dir
from perfgate.prepare import prepare
from perfgate.table import Measurement, restrict_metrics
from perfgate.vocabulary import KIND_KERNEL, NcuOutcome

class ProfileFailed(Exception):
    """The perf test fails with this message (ncu's words, the test's own failure...)."""


class ProfileSkipped(Exception):
    """The perf test is skipped with this reason; ``unavailable``: the machine cannot profile (strict fails)."""

    def __init__(self, reason: str, *, unavailable: bool) -> None:
        super().__init__(reason)
        self.unavailable = unavailable


@dataclass(frozen=True)
class ChildSpec:
    """How to start the profiled child: the parent pytest's own settings, so the child collects alike."""

    nodeid: str
    rootdir: Path
    inifile: Path | None
    import_mode: str | None
    xdist_loaded: bool
    load_plugin: bool  # PYTEST_DISABLE_PLUGIN_AUTOLOAD is set: name the plugin explicitly


@dataclass(frozen=True)
class NcuSpec:
    ncu: str
    clock_control: str
    cache_control: str
    metrics: tuple[str, ...]
    timeout: float
    gpu: str | None  # CUDA_VISIBLE_DEVICES for the child, None to leave it
    lock_ids: tuple[str, ...]
    sections: tuple[str, ...] = ()  # ncu --section IDs collected besides the metrics
    code: bool = False  # read each kernel's machine code from the report (--perfgate-code-identity)


def _read_report(export: Path, metrics: Sequence[str], regions: Sequence[str], code: bool = False) -> Measurement:
    metrics = read_forms(list(metrics))  # the roofline sections' forms of the FLOP counters, where held
    with export.open("rb") as fh:
        is_ncu_rep = fh.read(len(MAGIC)) == MAGIC
    if is_ncu_rep:
        return read_ncu_rep(export, metrics, region_names=regions, code=code)
    # ncu's CSV in the export's place: what the stand-in ncu of perfgate's own tests writes.
    return restrict_metrics(read_ncu_csv(export, metrics), metrics)


def profiled_table(export: Path, metrics: Sequence[str], regions: Sequence[str] = (),
                   code: bool = False) -> tuple[Measurement, int]:
    """(the launches of ncu's report of one perf test with per-region totals, launches left unplaced).

    ``regions`` are the region names the test entered (its child process records them); ``code``: read the
    kernels' machine code too."""
    return prepare(_read_report(export, metrics, regions, code), scoped=True)


def no_kernels_message(marker: PerfMarker, regions: Sequence[str], ncu_said: bool) -> str:
    head = "ncu profiled no kernel" + (" ('No kernels were profiled')" if ncu_said else "")
    if not regions:
        return (f"{head}: the test never entered perfgate.region(...). Only kernels launched inside a region "
                "are profiled: wrap the GPU work to measure in `with perfgate.region(\"name\"):`")
    entered = ", ".join(dict.fromkeys(regions))
    filters = []
    if marker.regions:
        filters.append(f"regions={list(marker.regions)!r}")
    if marker.kernels:
        filters.append(f"kernels={marker.kernels!r}")
    where = f" matching {' and '.join(filters)}" if filters else ""
    return (f"{head}{where} inside the region(s) the test entered ({entered}): check the marker's filters and "
            "that the code inside the region launches GPU kernels")


def _child_env(result: Path, gpu: str | None, group: Sequence[str],
               environ: Mapping[str, str]) -> tuple[dict[str, str], dict[str, str]]:
    child = {ENV_CHILD: "1", ENV_CHILD_RESULT: str(result)}
    if gpu is not None:
        child["CUDA_VISIBLE_DEVICES"] = gpu
    if len(group) > 1:
        child[ENV_CHILD_GROUP] = json.dumps(list(group))
    return {**environ, **child}, child


@dataclass(frozen=True)
class _Launched:
    """What one ncu run of the child left behind."""

    run_dir: Path
    export: Path
    run: NcuRun
    diagnosis: NcuDiagnosis
    document: dict[str, Any]  # what the child recorded (perfgate.plugin.fixture.ChildRecorder)
    clock_notes: list[str]  # what NVML saw hold the GPU's clocks down during the run (clock_events)

    def reports(self, nodeid: str | None = None) -> list[dict[str, Any]]:
        return [r for r in self.document.get("reports", []) if isinstance(r, dict)
                and (nodeid is None or r.get("nodeid") == nodeid)]

    def regions(self, nodeid: str | None = None) -> list[str]:
        found = self.document.get("regions_by_test", {}).get(nodeid, []) if nodeid else self.document.get(
            "regions", [])
        return [r for r in found if isinstance(r, str)]


_PASSES = re.compile(r"==PROF== Profiling .* - (\d+) pass(?:es)?\b")


def replay_passes(log: str) -> list[int]:
    """The replay passes ncu needed for each launch, from its ``==PROF== Profiling "k": ... - 13 passes`` lines."""
    return [int(m.group(1)) for m in _PASSES.finditer(log)]


def run_summary(nodeids: Sequence[str], run: NcuRun) -> str:
    """One progress line after an ncu run: how long, how many launches, how many replay passes each."""
    passes = replay_passes(run.log)
    what = f"{len(nodeids)} perf tests" if len(nodeids) > 1 else nodeids[0]
    profiled = (f"{len(passes):,} launch{'es' if len(passes) != 1 else ''} profiled, "
                f"{max(passes)} replay pass{'es' if max(passes) != 1 else ''} each at most") if passes else \
        "no launch profiled"
    return f"perfgate: ncu ran {what} in {run.seconds:.1f} s: {profiled}"


Progress = Callable[[str], None]


def _launch(nodeids: Sequence[str], child: ChildSpec, ncu: NcuSpec, marker: PerfMarker,
            environ: Mapping[str, str], progress: Progress | None = None) -> _Launched:
    run_dir = new_run_dir()
    export, log, result, output = (run_dir / "profile.ncu-rep", run_dir / "ncu.log", run_dir / "child.json",
                                   run_dir / "output.txt")
    program = build_child_command(
        python=sys.executable, nodeid=nodeids, rootdir=child.rootdir, basetemp=run_dir / "basetemp",
        cache_dir=run_dir / "cache", inifile=child.inifile, import_mode=child.import_mode,
        xdist_loaded=child.xdist_loaded, load_plugin=child.load_plugin)
    command = build_ncu_command(
        ncu=ncu.ncu, program=program, export=export, log_file=log, metrics=ncu.metrics,
        clock_control=ncu.clock_control, cache_control=ncu.cache_control, kernels=marker.kernels,
        regions=marker.regions, sections=ncu.sections)
    env, child_env = _child_env(result, ncu.gpu, nodeids, environ)
    # The exact command, so a perf test can be re-run by hand (kept with the artifacts).
    (run_dir / "ncu-command.txt").write_text(
        shlex.join([f"{k}={v}" for k, v in child_env.items()] + command) + "\n", encoding="utf-8")
    if progress is not None:  # a long profile must not look like a hang
        what = f"{len(nodeids)} perf tests in one child" if len(nodeids) > 1 else nodeids[0]
        progress(f"perfgate: profiling {what} under ncu (limit {ncu.timeout:g} s) ...")
    try:
        # Wait for the GPU as long as a profiled test may take (at least 10 minutes): the holder
        # is bounded by its own session's timeout, which may be longer than ours.
        with (gpu_locks(ncu.lock_ids, max(ncu.timeout, LOCK_WAIT)),
              watched_clocks(ncu.gpu, "the profiled run") as clocks):
            run = run_ncu(command, timeout=ncu.timeout, output_file=output, log_file=log, env=env,
                          cwd=child.rootdir)
    except GpuBusy as exc:
        shutil.rmtree(run_dir, ignore_errors=True)
        raise ProfileFailed(str(exc)) from None
    except BaseException:  # Ctrl-C, SIGTERM (run_ncu stopped ncu): nothing of this run is wanted
        shutil.rmtree(run_dir, ignore_errors=True)
        raise
    if progress is not None:
        progress(run_summary(nodeids, run))
    return _Launched(run_dir=run_dir, export=export, run=run, diagnosis=diagnose_ncu_run(run, ncu.timeout),
                     document=child_result(result) or {}, clock_notes=clocks.notes())


def child_outcome(reports: list[dict[str, Any]], *, how: str, child: str,
                  never: str) -> ProfileFailed | ProfileSkipped | None:
    """How the test itself went in a child (its ChildRecorder reports): failed, skipped, or None when it passed.

    ``how`` ends "the test failed while ...", ``child`` names the child in the default skip reason, and
    ``never`` is the message when the test reported no result at all (a crash, not collected).
    """
    failed = [r for r in reports if r.get("outcome") == "failed"]
    if failed:
        return ProfileFailed(f"the test failed while {how} ({failed[0].get('when')}):\n"
                             f"{failed[0].get('longrepr') or '(no details)'}")
    skipped = [r for r in reports if r.get("outcome") == "skipped"]
    if skipped:
        return ProfileSkipped(str(skipped[0].get("skip_reason") or f"skipped in the {child} child"), unavailable=False)
    if not any(r.get("when") == "call" and r.get("outcome") == "passed" for r in reports):
        return ProfileFailed(never)
    return None


def _test_outcome(launched: _Launched, nodeid: str, marker: PerfMarker) -> ProfileFailed | ProfileSkipped | None:
    """How the test itself went in the ncu child."""
    said = launched.diagnosis.message or launched.run.output or "(no output)"
    return child_outcome(launched.reports(nodeid), how="profiled under ncu", child="profiled",
                         never="the profiled test never reported a result: the child crashed, was not collected, "
                               f"or ncu could not start it (exit status {launched.run.returncode}):\n{said}")


def _unplaced_note(nodeid: str, unplaced: int) -> list[str]:
    if not unplaced:
        return []
    return [f"{nodeid}: {unplaced} profiled launch{'es' if unplaced != 1 else ''} could not be placed in a region "
            "(launched on another thread inside a region ncu's report does not name): not compared"]


def profile(child: ChildSpec, ncu: NcuSpec, marker: PerfMarker, *, artifacts: Path,
            environ: Mapping[str, str], progress: Progress | None = None) -> Profiled:
    """Run ``child.nodeid`` under ncu and read its report; raise ProfileFailed / ProfileSkipped.

    On success the caller keeps (a failed gate, ``keep_artifacts``) or discards what ncu left."""
    launched = _launch([child.nodeid], child, ncu, marker, environ, progress)
    run_dir, diagnosis = launched.run_dir, launched.diagnosis

    def fail(message: str) -> ProfileFailed:
        return ProfileFailed(message + keep_artifacts(run_dir, artifacts))

    if diagnosis.outcome == NcuOutcome.TIMEOUT:
        raise fail(f"{child.nodeid} timed out under ncu: {diagnosis.message}")
    if diagnosis.outcome in (NcuOutcome.NO_PERMISSION, NcuOutcome.ERROR):
        if diagnosis.outcome == NcuOutcome.NO_PERMISSION:
            shutil.rmtree(run_dir, ignore_errors=True)
            raise ProfileSkipped(diagnosis.message, unavailable=True)
        raise fail(diagnosis.message)
    outcome = _test_outcome(launched, child.nodeid, marker)
    if isinstance(outcome, ProfileSkipped):
        shutil.rmtree(run_dir, ignore_errors=True)
        raise outcome
    if outcome is not None:
        raise fail(str(outcome))
    if diagnosis.outcome == NcuOutcome.APP_ERROR:  # the test passed but the process failed afterwards
        raise fail(diagnosis.message)
    regions = launched.regions()
    if diagnosis.outcome == NcuOutcome.NO_KERNELS or not launched.export.is_file():
        raise fail(no_kernels_message(marker, regions, diagnosis.outcome == NcuOutcome.NO_KERNELS))
    try:
        measurement, unplaced = profiled_table(launched.export, ncu.metrics, regions, ncu.code)
    except PerfgateError as exc:
        raise fail(f"cannot read ncu's report: {exc}") from None
    except Exception as exc:  # a bug or an unforeseen ncu_report: keep the report, fail with one line
        raise fail(f"cannot read ncu's report ({type(exc).__name__}: {exc})") from None
    if not (measurement.table["kind"] == KIND_KERNEL).any():
        raise fail(no_kernels_message(marker, regions, True))
    return Profiled(measurement=measurement, notes=_unplaced_note(child.nodeid, unplaced) + launched.clock_notes,
                    run_dir=run_dir, artifacts=artifacts)


