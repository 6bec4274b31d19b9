"""Trace one perf test for the timeline source: its body in a child pytest under a CUPTI activity trace.

The parent's side of ``perfgate.plugin.tracer``: start ``python -m pytest NODEID`` (the same child command
the ncu source runs, without ncu) with ``PERFGATE_TIMELINE`` naming the trace file, serialized per GPU; read
the child's outcome and its trace (``perfgate.collect.timeline``) into the table the gate compares: the
kernels launched inside regions, and one row per region with its wall time, GPU idle and launch overhead.
"""

from __future__ import annotations

import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any, Mapping

from perfgate.collect import read_table
from perfgate.collect.timeline.codes_file import codes_file, read_codes, with_codes
from perfgate.plugin.ncu_run import build_child_command, run_ncu
from perfgate.errors import InputError, PerfgateError
from perfgate.plugin.fixture import ENV_CHILD, ENV_CHILD_RESULT
from perfgate.plugin.clock_events import watched_clocks
from perfgate.plugin.gpu_lock import LOCK_WAIT, GpuBusy, gpu_locks
from perfgate.plugin.run_folders import Profiled, child_result, keep_artifacts
from perfgate.plugin.runner import (
    ChildSpec,
    ProfileFailed,
    ProfileSkipped,
    Progress,
    child_outcome,
)
from perfgate.plugin.tracer import ENV_CODE_IDENTITY, ENV_TIMELINE
from perfgate.prepare import prepare
from perfgate.table import Measurement
from perfgate.vocabulary import KIND_KERNEL

TRACE_FILE = "trace.cupti.json"


def _outcome(document: dict[str, Any], nodeid: str, output: str, returncode: int | None) -> Exception | None:
    reports = [r for r in document.get("reports", []) or [] if isinstance(r, dict) and r.get("nodeid") == nodeid]
    return child_outcome(reports, how="traced", child="traced",
                         never="the traced test never reported a result: the child crashed or was not collected "
                               f"(exit status {returncode}):\n{output or '(no output)'}")


def trace(child: ChildSpec, *, timeout: float, gpu: str | None, lock_ids: tuple[str, ...], artifacts: Path,
          environ: Mapping[str, str], progress: Progress | None = None, code: bool = False) -> Profiled:
    """Run ``child.nodeid`` traced and read its trace; raise ProfileFailed / ProfileSkipped. ``code``: each kernel
    launch's machine code too (``Measurement.code``, from the cubins the child saw loaded)."""
    run_dir = Path(tempfile.mkdtemp(prefix="perfgate-timeline-"))
    target, result, output = run_dir / TRACE_FILE, run_dir / "child.json", run_dir / "output.txt"
    command = build_child_command(
        python=sys.executable, nodeid=child.nodeid, rootdir=child.rootdir, basetemp=run_dir / "basetemp",
        cache_dir=run_dir / "cache", inifile=child.inifile, import_mode=child.import_mode,
        xdist_loaded=child.xdist_loaded, load_plugin=child.load_plugin)
    env = {**environ, ENV_CHILD: "1", ENV_CHILD_RESULT: str(result), ENV_TIMELINE: str(target)}
    if code:
        env[ENV_CODE_IDENTITY] = "1"
    if gpu is not None:
        env["CUDA_VISIBLE_DEVICES"] = gpu
    if progress is not None:
        progress(f"perfgate: tracing {child.nodeid} (timeline source, limit {timeout:g} s) ...")
    try:
        with gpu_locks(lock_ids, max(timeout, LOCK_WAIT)), watched_clocks(gpu, "the traced run") as clocks:
            run = run_ncu(command, timeout=timeout, output_file=output, env=env, cwd=child.rootdir)
    except GpuBusy as exc:
        raise ProfileFailed(str(exc)) from None

    def fail(message: str) -> ProfileFailed:
        return ProfileFailed(message + keep_artifacts(run_dir, artifacts, kept="the trace"))

    if run.timed_out:
        raise fail(f"{child.nodeid} timed out while traced (after {timeout:g} s)")
    outcome = _outcome(child_result(result) or {}, child.nodeid, run.output, run.returncode)
    if isinstance(outcome, ProfileSkipped):
        shutil.rmtree(run_dir, ignore_errors=True)
        raise outcome
    if outcome is not None:
        raise fail(str(outcome))
    if not target.is_file():
        raise fail(f"the traced child wrote no trace (exit status {run.returncode}):\n{run.output}")
    try:
        measurement = prepare(read_table(target), scoped=True, totals=False).measurement  # a trace has its regions
    except PerfgateError as exc:
        raise fail(f"cannot read the trace: {exc}") from None
    table = measurement.table
    if not (table.equals("kind", KIND_KERNEL) & ~table.equals("region", "")).any():
        raise fail("the trace holds no kernel launched inside a perfgate.region(...): wrap the GPU work to "
                   "measure in `with perfgate.region(\"name\"):`")
    notes = clocks.notes()
    if code:
        measurement, code_notes = _with_codes(measurement, target)
        notes += code_notes
    return Profiled(measurement=measurement, notes=notes, run_dir=run_dir, artifacts=artifacts)


def _with_codes(measurement: Measurement, trace: Path) -> tuple[Measurement, list[str]]:
    """``measurement`` with the codes the child wrote beside ``trace``, and a note per problem it met; a file
    that cannot be read costs the codes (a note), never the test's result."""
    found = codes_file(trace)
    if not found.is_file():  # none written (a replayed trace without one, a folder it could not be written to)
        return measurement, []
    try:
        codes, problems = read_codes(found)
    except InputError as exc:
        return measurement, [f"machine code of the traced kernels: {exc}"]
    return with_codes(measurement, codes), [f"machine code of the traced kernels: {problem}" for problem in problems]
