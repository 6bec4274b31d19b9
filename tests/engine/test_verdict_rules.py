"""``perfgate.verdict``: the verdict, gate-status and exit-status rules, each stated once."""

from __future__ import annotations

import pytest

from perfgate.errors import EXIT_OK, EXIT_REGRESSION, EXIT_USAGE
from perfgate.report import empty_report, merge_reports
from perfgate.report import verdict_of as report_verdict_of
from perfgate.verdict import (
    GateStatus,
    exit_status,
    gated_verdict,
    merged_verdict,
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
