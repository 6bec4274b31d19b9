"""What measures a perf test (``--perfgate-source``): the pieces of the timeline source the session uses.

Import-light (stdlib, pytest, perfgate's preflight): the session imports ``GatePart`` when ``--perfgate`` is on,
before any perf test runs, and ``--perfgate --collect-only`` costs at most 1.10x the plugin-free collection
(tests/benchmarks/test_bench_plugin_startup.py). So the gate, the history and the tracing machinery
(``perfgate.plugin.timeline_run``) are imported by the functions that gate or trace a test.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, NamedTuple, Sequence

import pytest

from perfgate.limits import HISTORY_WAIT_SECONDS
from perfgate.plugin.preflight import PreflightFacts, check_preflight
from perfgate.verdict import GateStatus, worst_gate_status

if TYPE_CHECKING:
    from perfgate.carried_item import AcceptanceCheck
    from perfgate.compare import CompareOptions
    from perfgate.gate import Reference
    from perfgate.history.reference import Reference as HistoryReference
    from perfgate.plugin.run_folders import Profiled
    from perfgate.plugin.runner import ChildSpec
    from perfgate.report import Report
    from perfgate.table import Measurement

TIMELINE_SUFFIX = ".timeline"  # the timeline source's baseline: <name>.timeline.json beside ncu's <name>.json


class GatePart(NamedTuple):
    """One measurement of a test and how to gate it; ``suffix`` names its baseline file apart (the timeline's)."""

    current: Measurement
    options: CompareOptions
    settings: dict[str, Any]
    footer: str = ""
    notes: Sequence[str] = ()
    suffix: str = ""
    reference: Reference | None = None  # the side compared with, from the history (``with_history``)


def timeline_instead(facts: PreflightFacts | None) -> bool:
    """``auto``: Nsight Compute cannot run here (no counter permission, no ncu, or one that does not answer
    ``ncu --version``), so the test is traced."""
    return facts is not None and (facts.ncu_path is None or bool(facts.ncu_unusable) or bool(
        facts.profiling_admin_only and not facts.is_admin))


def unusable_ncu(problem: str) -> str:
    """The preflight problem of an ncu that is there but failed ``ncu --version``."""
    return f"ncu is not usable: {problem}"


def chosen_sources(source: str, facts: PreflightFacts | None) -> tuple[bool, bool]:
    """(run ncu, trace) for ``--perfgate-source``; ``auto`` traces where ncu cannot run, and falls back to the
    trace when ncu's run says its counters are refused (``perfgate.plugin.session``)."""
    instead = source == "auto" and timeline_instead(facts)
    return source in ("ncu", "both") or (source == "auto" and not instead), source in ("timeline", "both") or instead


def why_traced_instead(source: str, facts: PreflightFacts | None) -> str:
    """Why ``auto`` traces a test without trying ncu (no ncu, one that fails ``ncu --version``, counters refused
    by the driver); "" otherwise."""
    if source != "auto" or facts is None or not timeline_instead(facts):
        return ""
    return check_preflight(facts) or unusable_ncu(facts.ncu_unusable)


def traced_instead_note(test: str, why: str) -> str:
    """The line (terminal and report) saying that ``auto`` measured ``test`` with the timeline, and why."""
    return f"{test}: measured by the timeline instead of Nsight Compute: {why} (--perfgate-source=auto)"


def settle(done: Sequence[Profiled], keep: bool) -> None:
    """Keep (beside the session report) or discard what each measurement of a test left."""
    for profiled in done:
        if keep:
            profiled.keep()
        else:
            profiled.discard()


def preflight_for(source: str, ncu_problem: str | None, facts: PreflightFacts | None) -> str | None:
    """Why perf tests cannot be measured here with ``source``: ncu's preflight problem, except where the test is
    traced instead, which needs only a GPU (neither ncu nor counter permission)."""
    if ncu_problem is None or facts is None or not (source == "timeline" or (source == "auto" and
                                                                             timeline_instead(facts))):
        return ncu_problem
    return check_preflight(facts._replace(ncu_path=facts.ncu_path or "ncu", profiling_admin_only=False))


def timeline_part(child: ChildSpec, options: CompareOptions, *, timeout: float, gpu: str | None,
                  lock_ids: tuple[str, ...], artifacts: Path, done: list[Profiled],
                  progress: Callable[[str], None], instead: str = "", code: bool = False) -> GatePart:
    """The test traced (``perfgate.plugin.timeline_run``), to be gated against ``<name>.timeline.json``;
    ``instead``: why ``auto`` traced it in place of ncu, noted in the report."""
    from perfgate.compare.sources import for_measurement
    from perfgate.plugin.timeline_run import TRACE_FILE, trace

    profiled = trace(child, timeout=timeout, gpu=gpu, lock_ids=lock_ids,
                     artifacts=artifacts.with_name(artifacts.name + TIMELINE_SUFFIX), environ=os.environ,
                     progress=progress, code=code)
    done.append(profiled)
    measured = profiled.measurement._replace(source=f"{child.nodeid} (timeline)")
    footer = f"\nthe trace of this run: {profiled.artifacts / TRACE_FILE}"
    notes = [*profiled.notes, traced_instead_note(child.nodeid, instead)] if instead else profiled.notes
    return GatePart(measured, for_measurement(options, measured), dict(measured.settings), footer, notes,
                    suffix=TIMELINE_SUFFIX)


class Gated(NamedTuple):
    """The gate's results for every measurement of one test, combined."""

    report: Report
    status: GateStatus
    written: list[Path]
    regressions: list[str]
    problems: list[str]
    footer: str  # the footers of the measurements that regressed


def with_history(parts: Sequence[GatePart], test: str, reference: HistoryReference | None,
                 update_history: str, fallback: bool = False,
                 max_time: float = HISTORY_WAIT_SECONDS) -> tuple[list[GatePart], AcceptanceCheck | None]:
    """Each part judged against the base branch's recent runs in ``reference`` (with its series' learned
    thresholds), where one is given (``fallback``: only where no baseline is committed; a committed one wins);
    and, for an update recorded in the history ``update_history`` ("" otherwise), what says whether the
    regressions it carries are accepted (docs/history.md); ``max_time``: seconds that history may keep it waiting."""
    judged = list(parts)
    if reference is not None:
        from perfgate.history.reference import judging_for

        judged = [part._replace(options=options, reference=_unless_committed(referred) if fallback else referred)
                  for part in judged for options, referred in [judging_for(reference, part.options, test=test)]]
    if not update_history:
        return judged, None
    from perfgate.history.accept import update_check

    acceptances, problem = update_check(update_history, test, os.environ, max_time)
    if problem and judged:  # said once: the parts' reports are merged into one
        judged[0] = judged[0]._replace(notes=[*judged[0].notes, f"{test}: {problem}"])
    return judged, acceptances


def _unless_committed(referred: Reference) -> Reference:
    """The history's reference for a device without a committed baseline; a committed one is kept as it is."""
    def build(baseline: Measurement, current: Measurement) -> tuple[Measurement, list[str]]:
        return (baseline, []) if not baseline.table.empty else referred(baseline, current)
    return build


def gate_parts(parts: Sequence[GatePart], *, test: str, path: str, line: int | None, baselines: Path, update: bool,
               strict: bool, shown: Callable[[Path], str], acceptances: AcceptanceCheck | None = None) -> Gated:
    """Each measurement gated against its own baseline (``perfgate.gate``), or the reference its part names;
    ``acceptances``: what marks the regressions an update carries accepted. PerfgateError as the gate raises it."""
    from perfgate.gate import Where, baseline_name, gate
    from perfgate.report.merge import merge_reports

    results = [gate(part.current, baselines=baselines, options=part.options, settings=part.settings, update=update,
                    where=Where(name=baseline_name(test) + part.suffix, test=test, path=path, line=line),
                    strict=strict, notes=part.notes, shown=shown, update_hint="pytest --perfgate --perfgate-update",
                    strict_flag="--perfgate-strict", reference=part.reference, acceptances=acceptances)
               for part in parts]
    report = results[0].report if len(results) == 1 else merge_reports(r.report for r in results)
    return Gated(report, worst_gate_status(r.status for r in results),
                 [p for r in results for p in r.written], [x for r in results for x in r.regressions],
                 [x for r in results for x in r.problems],
                 "".join(part.footer for part, r in zip(parts, results, strict=True) if r.regressions))


def fail_on(gated: Gated, test: str) -> None:
    """Fail the running test on a regression (naming every one) or on a problem (a baseline missing, strict)."""
    if gated.regressions:
        hint = f"\nIf this change is intended, update the baseline: pytest --perfgate --perfgate-update '{test}'"
        pytest.fail("perfgate: performance regression\n" + "\n".join([*gated.regressions, *gated.problems])
                    + hint + gated.footer, pytrace=False)
    if gated.problems:
        pytest.fail("perfgate: " + "\n".join(gated.problems), pytrace=False)
