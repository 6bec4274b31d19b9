"""``perfgate.verdict``: the verdict, gate-status and exit-status rules, each stated once."""

from __future__ import annotations

import json

import pytest

from perfgate.errors import EXIT_OK, EXIT_REGRESSION, EXIT_USAGE
from perfgate.report import empty_report, merge_reports
from perfgate.report import verdict_of as report_verdict_of
from perfgate.report import Report
from perfgate.verdict import (
    GateStatus,
    UngatedStatus,
    exit_status,
    gated_verdict,
    judged_verdict,
    merged_verdict,
    session_verdict,
    verdict_of,
    worst_gate_status,
)
from perfgate.vocabulary import Verdict


def test_the_report_package_states_the_verdict_module_s_rule() -> None:
    assert report_verdict_of is verdict_of


@pytest.mark.parametrize(("failed", "verdict", "status"), [
    (True, "fail", EXIT_REGRESSION), (True, "not measured", EXIT_REGRESSION), (False, "not measured", EXIT_USAGE),
    (False, "inconclusive", EXIT_OK), (False, "pass", EXIT_OK)])
def test_exit_status(failed: bool, verdict: str, status: int) -> None:
    assert exit_status(failed, verdict) == status


def test_gate_statuses_worst_first_and_as_the_plugin_stores_them() -> None:
    assert [s.value for s in GateStatus] == ["regression", "new", "updated", "compared"]
    assert worst_gate_status(["compared", "updated", "new"]) == "new"
    assert worst_gate_status([]) == "compared"
    assert type(worst_gate_status([GateStatus.NEW, GateStatus.REGRESSION])) is GateStatus


def test_the_plugin_s_ungated_statuses_as_its_reports_and_notes_say_them() -> None:
    assert [s.value for s in UngatedStatus] == ["failed", "skipped", "not gated"]
    assert [f"{s}" for s in UngatedStatus] == [str(s) for s in UngatedStatus] == ["failed", "skipped", "not gated"]
    assert f"{GateStatus.NEW}" == str(GateStatus.NEW) == "new" and json.dumps([GateStatus.NEW]) == '["new"]'


@pytest.mark.parametrize(("regressed", "unmeasured", "inconclusive", "verdict"), [
    (True, True, True, "fail"), (False, True, True, "not measured"), (False, False, True, "inconclusive"),
    (False, False, False, "pass")])
def test_what_was_judged_gives_the_worst_verdict_it_allows(regressed: bool, unmeasured: bool, inconclusive: bool,
                                                           verdict: str) -> None:
    assert judged_verdict(regressed=regressed, unmeasured=unmeasured, inconclusive=inconclusive) == verdict


def test_an_update_passes_and_a_problem_fails_otherwise() -> None:
    assert gated_verdict("fail", update=True, problems=True) == Verdict.PASS.value
    assert gated_verdict("pass", update=False, problems=True) == Verdict.FAIL.value
    assert gated_verdict("inconclusive", update=False, problems=False) == "inconclusive"


def test_merged_reports_keep_the_worst_and_nothing_merged_is_not_measured() -> None:
    nothing = empty_report()
    assert merged_verdict([], nothing) == merge_reports([])["verdict"] == Verdict.NOT_MEASURED.value
    failed = empty_report()
    failed["verdict"] = Verdict.FAIL.value
    assert merge_reports([failed, empty_report()])["verdict"] == Verdict.FAIL.value


def _merged(stated: str = "pass", unmeasured: bool = False, **counts: int) -> Report:
    """A merged session report stating ``stated``, with kernels counted by status (``no_data`` for "no data")."""
    report = empty_report()
    report["verdict"] = stated
    report["summary"].update({status.replace("_", " "): n for status, n in counts.items()})
    if unmeasured:
        report["unmeasured"].append({"test": "t.py::skipped", "cause": "no GPU"})
    return report


@pytest.mark.parametrize(("merged", "failed", "verdict"), [
    (_merged(unchanged=2), False, "pass"),
    (_merged(unchanged=2), True, "fail"),  # a perf test that could not be measured fails the session
    (_merged("fail", regression=1, unchanged=1), False, "fail"),
    (_merged(inconclusive=1), False, "inconclusive"),
    (_merged(unchanged=1, unmeasured=True), False, "not measured"),  # skipped is not passed
    (_merged(new=3), False, "not measured"),  # nothing compared: no pass
    (empty_report(), False, "not measured"),  # no perf test ran
], ids=["pass", "failed", "regression", "inconclusive", "unmeasured", "only-new", "nothing"])
def test_a_session_s_verdict_without_update(merged: Report, failed: bool, verdict: str) -> None:
    assert session_verdict(merged, [merged["verdict"]], update=False, failed=failed) == verdict


@pytest.mark.parametrize(("merged", "stated", "failed", "verdict"), [
    (_merged("fail", regression=1, unchanged=1), ["pass", "pass"], False, "pass"),  # its regressions accepted
    (_merged("fail", regression=1), ["pass"], True, "fail"),  # ... but not a test that failed
    (_merged("pass", new=2), ["pass"], False, "not measured"),  # a first recording compared nothing
    (_merged("pass", unchanged=1, unmeasured=True), ["pass"], False, "not measured"),  # skipped: nothing written
    (_merged("pass", unchanged=1), ["pass", "inconclusive"], False, "inconclusive"),  # as its reports state
    (empty_report(), [], False, "not measured"),  # no report at all
    (empty_report(), [], True, "fail"),
], ids=["accepted", "failed", "first-recording", "unmeasured", "stated", "no-report", "no-report-failed"])
def test_a_session_s_verdict_under_update(merged: Report, stated: list[str], failed: bool, verdict: str) -> None:
    assert session_verdict(merged, stated, update=True, failed=failed) == verdict
