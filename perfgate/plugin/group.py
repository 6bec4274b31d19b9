"""Several perf tests in one profiled child: one ncu run, its report split back per test.

Perf tests that share ncu's options (the marker's kernels= and regions=, the metrics) run together in
``python -m pytest ID1 ID2 ...`` under one ncu. In that child each test's regions are nested in an NVTX
range naming the test (``t0``, ``t1``..., see perfgate.plugin.fixture), so every launch carries its test's
tag as the outermost range; ``split_by_test`` takes the report apart by that tag.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Mapping, Sequence, Union

from perfgate.columns import factorize, objects
from perfgate.plugin.fixture import group_tags
from perfgate.plugin.marker import PerfMarker
from perfgate.plugin.run_folders import Profiled, SharedRun, keep_artifacts
from perfgate.plugin.runner import (
    ChildSpec,
    NcuSpec,
    ProfileFailed,
    ProfileSkipped,
    Progress,
    _launch,
    _Launched,
    _read_report,
    _test_outcome,
    _unplaced_note,
    no_kernels_message,
)
from perfgate.prepare import prepare
from perfgate.table import Measurement
from perfgate.vocabulary import KIND_KERNEL, REGION_SEPARATOR, NcuOutcome


def split_by_test(measurement: Measurement, tags: Mapping[str, str]) -> dict[str, Measurement]:
    """One child profiled several tests: each launch's outermost range is its test's tag (``t3 > layer0``).

    Returns each tagged test's launches with the tag taken off their regions (untagged launches are in
    no test's table)."""
    table = measurement.table
    # Split each distinct region once (a region is shared by many rows).
    codes, regions = factorize(table["region"])
    heads = [region.split(REGION_SEPARATOR, 1) for region in regions.tolist()]
    first = objects([head[0] for head in heads])[codes]
    rest = objects([head[1] if len(head) > 1 else "" for head in heads])[codes]
    split: dict[str, Measurement] = {}
    for nodeid, tag in tags.items():
        mine = first == tag
        split[nodeid] = measurement.with_table(table[mine].assign(region=rest[mine]))
    return split


GroupOutcome = Union[Profiled, ProfileFailed, ProfileSkipped, None]  # None: profile that test on its own


def profile_group(nodeids: Sequence[str], child: ChildSpec, ncu: NcuSpec, marker: PerfMarker, *,
                  artifacts: Mapping[str, Path], environ: Mapping[str, str],
                  progress: Progress | None = None) -> dict[str, GroupOutcome]:
    """Profile several tests that share ncu's options in one child under one ncu, then split the report.

    Isolation is kept by falling back: when the run as a whole went wrong (a crash, a timeout, an exit
    hook failing), the test that was running then is failed with what happened (it was the one running)
    and every other test is profiled again on its own (outcome None). ``ncu.timeout`` is the group's.
    """
    launched = _launch(nodeids, child, ncu, marker, environ, progress)
    diagnosis, run_dir = launched.diagnosis, launched.run_dir
    if diagnosis.outcome == NcuOutcome.NO_PERMISSION:
        shutil.rmtree(run_dir, ignore_errors=True)
        return {n: ProfileSkipped(diagnosis.message, unavailable=True) for n in nodeids}
    session_ended = launched.document.get("exitstatus") is not None and diagnosis.outcome != NcuOutcome.TIMEOUT
    if session_ended and _none_passed(launched, nodeids, marker):  # the child's exit status is its tests' failures
        shared = SharedRun(run_dir, len(nodeids))
        return {n: _settled(launched, _test_outcome(launched, n, marker), artifacts[n], shared) for n in nodeids}
    started, finished = launched.document.get("started", []), launched.document.get("finished", [])
    running = started[-1] if started and started[-1] not in finished else None
    whole_run_failed = (diagnosis.outcome in (NcuOutcome.TIMEOUT, NcuOutcome.ERROR, NcuOutcome.APP_ERROR)
                        or launched.document.get("exitstatus") is None or not launched.export.is_file())
    if whole_run_failed and diagnosis.outcome == NcuOutcome.TIMEOUT and running is None:
        # ncu hung outside any test (before the child ran one, or after): alone, each would hang as long again.
        outcomes: dict[str, GroupOutcome] = {}
        for nodeid in nodeids:
            outcomes[nodeid] = ProfileFailed(f"{nodeid} was not profiled: ncu timed out with no test running "
                                             f"({len(nodeids)} perf tests profiled together):\n{diagnosis.message}"
                                             + keep_artifacts(run_dir, artifacts[nodeid], copy=True))
        shutil.rmtree(run_dir, ignore_errors=True)
        return outcomes
    if whole_run_failed:
        outcomes = {n: None for n in nodeids}
        if running in outcomes:
            what = diagnosis.message or launched.run.output or f"exit status {launched.run.returncode}"
            verb = "timed out" if diagnosis.outcome == NcuOutcome.TIMEOUT else "was running when the profiled child failed"
            outcomes[running] = ProfileFailed(f"{running} {verb} under ncu ({len(nodeids)} perf tests profiled "
                                              f"together; the others are profiled again one by one):\n{what}"
                                              + keep_artifacts(run_dir, artifacts[running]))
        else:
            shutil.rmtree(run_dir, ignore_errors=True)
        return outcomes
    try:
        measurement = _read_report(launched.export, ncu.metrics, [r for n in nodeids for r in launched.regions(n)])
    except Exception:  # read each test's run on its own: the single path explains a bad report properly
        shutil.rmtree(run_dir, ignore_errors=True)
        return {n: None for n in nodeids}
    tags = group_tags(nodeids)
    parts = split_by_test(measurement, tags)
    if not any(len(part.table) for part in parts.values()):  # no launch carries a test's tag: do not guess
        shutil.rmtree(run_dir, ignore_errors=True)
        return {n: None for n in nodeids}
    shared = SharedRun(run_dir, len(nodeids))
    outcomes = {}
    for nodeid in nodeids:
        outcomes[nodeid] = _group_member(launched, nodeid, parts[nodeid], marker, artifacts[nodeid], shared)
    return outcomes


def _none_passed(launched: _Launched, nodeids: Sequence[str], marker: PerfMarker) -> bool:
    """Every test of the group failed or was skipped in the child, before any launch (a package missing there, a
    fixture all of them use): their own outcomes stand, as a failing test's does in a group that launched
    kernels, and the cause is met once rather than again in a run of each test alone."""
    return all(_test_outcome(launched, nodeid, marker) is not None for nodeid in nodeids)


def _group_member(launched: _Launched, nodeid: str, part: Measurement, marker: PerfMarker, artifacts: Path,
                  shared: SharedRun) -> GroupOutcome:
    outcome = _test_outcome(launched, nodeid, marker)
    if outcome is None:
        kept, unplaced = prepare(part, scoped=True)
        if (kept.table["kind"] == KIND_KERNEL).any():
            return Profiled(measurement=kept, notes=_unplaced_note(nodeid, unplaced) + launched.clock_notes,
                            run_dir=launched.run_dir, artifacts=artifacts, shared=shared)
        outcome = ProfileFailed(no_kernels_message(marker, launched.regions(nodeid), False))
    return _settled(launched, outcome, artifacts, shared)


def _settled(launched: _Launched, outcome: ProfileFailed | ProfileSkipped | None, artifacts: Path,
             shared: SharedRun) -> GroupOutcome:
    """A test of the group that failed or was skipped (None: profiled again alone): a failure keeps the run's
    files in its artifacts."""
    if isinstance(outcome, ProfileFailed):
        said = keep_artifacts(launched.run_dir, artifacts, copy=True)
        shared.release()
        return ProfileFailed(str(outcome) + said)
    shared.release()
    return outcome
