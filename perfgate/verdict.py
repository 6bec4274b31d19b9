"""The rules that turn what was compared into a verdict, a gate status and an exit status, in one place.

The words themselves (``Status``, ``Verdict`` and their order) are ``perfgate.vocabulary``'s. Here: which
verdict a report's contents allow (``verdict_of``), the verdict of merged reports, of a gated device and of a
pytest session's report, the plugin's per-test status (``GateStatus``, ``UngatedStatus``), and the command
line's exit status for a report.
"""

from __future__ import annotations

import enum
from typing import Any, Iterable, Mapping, Sequence, TypeAlias

from perfgate.errors import EXIT_OK, EXIT_REGRESSION, EXIT_USAGE
from perfgate.vocabulary import Status, Verdict, worst_verdict

# Launch statuses of a launch compared with its baseline (new, missing and no-data ones were not).
COMPARED_STATUSES = (Status.REGRESSION, Status.INCONCLUSIVE, Status.IMPROVEMENT, Status.UNCHANGED)


def compared_launches(summary: Mapping[str, int]) -> int:
    """How many launches of a report's ``summary`` were compared with their baseline."""
    return sum(summary.get(s.value, 0) for s in COMPARED_STATUSES)


def judged_verdict(*, regressed: bool, unmeasured: bool, inconclusive: bool) -> str:
    """The verdict of what was judged: a regression fails; something the gate could not judge makes it "not
    measured"; a kernel whose change straddles its threshold makes it "inconclusive"; only then "pass"."""
    if regressed:
        return Verdict.FAIL.value
    if unmeasured:
        return Verdict.NOT_MEASURED.value
    return Verdict.INCONCLUSIVE.value if inconclusive else Verdict.PASS.value


def derived_verdict(report: Mapping[str, Any]) -> str:
    """The verdict a report's contents allow: perf tests that could not be measured, or nothing compared at
    all, are "not measured" (``judged_verdict``)."""
    counts = report["summary"]
    return judged_verdict(regressed=bool(counts.get(Status.REGRESSION.value)),
                          unmeasured=bool(report.get("unmeasured")) or not compared_launches(counts),
                          inconclusive=bool(counts.get(Status.INCONCLUSIVE.value)))


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


def session_verdict(merged: Mapping[str, Any], stated: Sequence[str], *, update: bool, failed: bool) -> str:
    """A pytest session's report verdict, of its tests' reports merged into ``merged`` (``stated``: their own
    verdicts); ``failed``: a perf test could not be measured, which fails it. An update accepts the changes
    it counts (its regressions do not fail it), but one that compared nothing (a first recording) or left a
    test unmeasured is no pass: reading the report back (``validate_report``, publish) would say "not
    measured", and so does the file. Otherwise the verdict the merged contents allow."""
    if not update:
        return Verdict.FAIL.value if failed else verdict_of(merged)
    nothing = merged["unmeasured"] or not compared_launches(merged["summary"])
    return worst_verdict(*(stated or [Verdict.NOT_MEASURED.value]),
                         Verdict.FAIL.value if failed else Verdict.PASS.value,
                         Verdict.NOT_MEASURED.value if nothing else Verdict.PASS.value)


class _StatusWord(str, enum.Enum):
    """A status that reads as its value (``str()``, f-strings), as the reports and notes write it."""

    def __str__(self) -> str:
        return str(self.value)


class GateStatus(_StatusWord):
    """What one gate run of a perf test came to, worst first: the plugin's per-test status."""

    REGRESSION = "regression"
    NEW = "new"  # no baseline for a device: reported as new
    UPDATED = "updated"  # --perfgate-update: the baseline was written
    COMPARED = "compared"


class UngatedStatus(_StatusWord):
    """A perf test or benchmark that no gate judged: the plugin's per-test status in place of a ``GateStatus``."""

    FAILED = "failed"  # could not be measured, and that fails the session (a profiling error; strict)
    SKIPPED = "skipped"  # could not be measured here (no GPU, no ncu...): listed as unmeasured
    NOT_GATED = "not gated"  # a benchmark the gate cannot judge: listed as unmeasured


# The plugin's per-test status, as a test's payload carries it (its value: payloads cross xdist's channel).
PerTestStatus: TypeAlias = "GateStatus | UngatedStatus"

_GATE_RANK = {status: rank for rank, status in enumerate(GateStatus)}


def worst_gate_status(statuses: Iterable[GateStatus]) -> GateStatus:
    """The worst of a test's gate statuses (over its devices or parts); "compared" when there are none."""
    return GateStatus(min(statuses, key=_GATE_RANK.__getitem__, default=GateStatus.COMPARED))


def exit_status(failed: bool, verdict: str) -> int:
    """The command line's exit status for a written report: 1 when the gate failed, 2 when the report could
    not vouch for what it was asked ("not measured": unmeasured is not passed), 0 otherwise."""
    if failed:
        return EXIT_REGRESSION
    return EXIT_USAGE if verdict == Verdict.NOT_MEASURED.value else EXIT_OK
