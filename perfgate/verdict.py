"""The rules that turn what was compared into a verdict, a gate status and an exit status, in one place.

The words themselves (``Status``, ``Verdict`` and their order) are ``perfgate.vocabulary``'s. Here: which
verdict a report's contents allow (``verdict_of``), the verdict of merged reports and of a gated device, the
plugin's per-test gate status (``GateStatus``), and the command line's exit status for a report.
"""

from __future__ import annotations

import enum
from typing import Any, Iterable, Mapping

from perfgate.errors import EXIT_OK, EXIT_REGRESSION, EXIT_USAGE
from perfgate.vocabulary import Status, Verdict, worst_verdict

# Launch statuses of a launch compared with its baseline (new, missing and no-data ones were not).
COMPARED_STATUSES = (Status.REGRESSION, Status.INCONCLUSIVE, Status.IMPROVEMENT, Status.UNCHANGED)


def compared_launches(summary: Mapping[str, int]) -> int:
    """How many launches of a report's ``summary`` were compared with their baseline."""
    return sum(summary.get(s.value, 0) for s in COMPARED_STATUSES)


def derived_verdict(report: Mapping[str, Any]) -> str:
    """The verdict a report's contents allow: a regression fails; perf tests that could not be measured, or
    nothing compared at all, are "not measured"; a kernel whose change straddles its threshold is
    "inconclusive"; only then "pass"."""
    counts = report["summary"]
    if counts.get(Status.REGRESSION.value):
        return Verdict.FAIL.value
    if report.get("unmeasured") or not compared_launches(counts):
        return Verdict.NOT_MEASURED.value
    if counts.get(Status.INCONCLUSIVE.value):
        return Verdict.INCONCLUSIVE.value
    return Verdict.PASS.value


def verdict_of(report: Mapping[str, Any]) -> str:
    """The verdict the report's own contents allow, never better than the one it states."""
    return worst_verdict(report["verdict"], derived_verdict(report))


def merged_verdict(verdicts: Iterable[str], merged: Mapping[str, Any]) -> str:
    """Of reports merged into ``merged``: the worst of theirs and of what the merged contents allow; no
    report at all is "not measured"."""
    return worst_verdict(*(list(verdicts) or [Verdict.NOT_MEASURED.value]), derived_verdict(merged))


def gated_verdict(verdict: str, *, update: bool, problems: bool) -> str:
    """A gated device's report verdict: an update passes (the new baseline is this run; changes are shown, not
    failed); otherwise a problem (strict: a baseline missing, a gated value not judged) fails."""
    if update:
        return Verdict.PASS.value
    return Verdict.FAIL.value if problems else verdict


class GateStatus(str, enum.Enum):
    """What one gate run of a perf test came to, worst first: the plugin's per-test status."""

    REGRESSION = "regression"
    NEW = "new"  # no baseline for a device: reported as new
    UPDATED = "updated"  # --perfgate-update: the baseline was written
    COMPARED = "compared"


_GATE_RANK = {status.value: rank for rank, status in enumerate(GateStatus)}


def worst_gate_status(statuses: Iterable[str]) -> str:
    """The worst of a test's gate statuses (over its devices or parts); "compared" when there are none."""
    return min(statuses, key=_GATE_RANK.__getitem__, default=GateStatus.COMPARED.value)


def exit_status(failed: bool, verdict: str) -> int:
    """The command line's exit status for a written report: 1 when the gate failed, 2 when the report could
    not vouch for what it was asked ("not measured": unmeasured is not passed), 0 otherwise."""
    if failed:
        return EXIT_REGRESSION
    return EXIT_USAGE if verdict == Verdict.NOT_MEASURED.value else EXIT_OK
