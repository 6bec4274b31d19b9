"""A comparison that compared nothing is never a pass (issue 9): every shape of it ends in exit 2 with
one line naming the cause, and a verdict that rests on nothing reads as such in the report and the check."""

from __future__ import annotations

from pathlib import Path

import pytest

from helpers.common import run_cli

from perfgate.publish.body import conclusion
from perfgate.report import empty_report, verdict_of

H100 = Path(__file__).resolve().parents[1] / "data" / "h100"


def test_only_launch_facts_compared_with_itself_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    # Registers per thread is a launch fact: it never gates, so this comparison could not fail.
    report = H100 / "nested-regions.ncu-rep"
    status, out, err = run_cli(capsys, "compare", report, report, "--metrics", "launch__registers_per_thread")
    assert status == 2 and out == ""
    assert err.count("\n") == 1 and "nothing to compare" in err and "gates" in err


def test_no_launch_in_common_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    # Two real H100 profiles of different programs: every kernel missing on one side and new on the other.
    status, out, err = run_cli(capsys, "compare", H100 / "vector_add.ncu-rep", H100 / "softmax.ncu-rep.xz")
    assert status == 2 and out == ""
    assert err.count("\n") == 1 and "no launch matches" in err and "kernel_aliases" in err


def test_the_same_program_against_itself_still_passes(capsys: pytest.CaptureFixture[str]) -> None:
    status, out, _ = run_cli(capsys, "compare", H100 / "vector_add.ncu-rep", H100 / "vector_add.rerun.ncu-rep")
    assert status == 0 and "PASS" in out


def test_verdicts_of_reports_that_rest_on_nothing() -> None:
    assert empty_report()["verdict"] == "not measured"
    report = empty_report()
    report["summary"] = {"new": 3}
    assert verdict_of(report) == "not measured"  # only first runs: nothing compared
    report["summary"], report["verdict"] = {"unchanged": 3}, "pass"
    assert verdict_of(report) == "pass"
    report["verdict"] = "pass"
    report["unmeasured"] = [{"test": "t.py::test_gpu", "cause": "ncu not found"}]
    assert verdict_of(report) == "not measured"  # compared some, could not measure others
    report["summary"], report["verdict"] = {"unchanged": 2, "regression": 1}, "pass"
    assert verdict_of(report) == "fail"


@pytest.mark.parametrize(("verdict", "default", "strict"), [
    ("pass", "success", "success"),
    ("fail", "failure", "failure"),
    ("not measured", "neutral", "failure"),
    ("inconclusive", "neutral", "neutral"),
])
def test_check_run_conclusion(verdict: str, default: str, strict: str) -> None:
    report = empty_report()
    report["verdict"] = verdict
    assert conclusion(report) == default
    assert conclusion(report, strict=True) == strict
