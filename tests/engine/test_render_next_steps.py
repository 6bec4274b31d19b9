"""The comment says what to do: the Why opens with Nsight Compute's own finding (then the bound, then the counters),
and every report with a regression ends with the exact commands to accept it and to make it the baseline."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers.common import REPO
from helpers.github_server import launch, make_report
from helpers.hostile import hostile_report
from helpers.next_steps import commands_of

from perfgate.render import render_markdown, render_text

pytest.importorskip("markdown_it")

H100 = REPO / "tests" / "data" / "h100" / "default-metrics"
BEFORE, AFTER = H100 / "vector_add.rules.ncu-rep", H100 / "vector_add.rules.regressed.ncu-rep"


@pytest.fixture(scope="module")
def regressed(tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    out = tmp_path_factory.mktemp("report") / "r.json"
    from perfgate.cli import main

    assert main(["compare", str(BEFORE.relative_to(REPO)), str(AFTER.relative_to(REPO)), "--format", "json", "-o",
                 str(out)]) == 1
    return json.loads(out.read_text(encoding="utf-8"))  # type: ignore[no-any-return]


def test_the_why_opens_with_ncus_finding(regressed: dict[str, object]) -> None:
    why = [line.strip() for line in render_text(regressed).splitlines() if line.strip().startswith("why:")]
    assert why[0] == "why: ncu findings appeared: High Pipe Utilization: Low Utilization, Uncoalesced Global Accesses"
    assert why[1].startswith("why: bound: memory (unchanged)") and why[2].startswith("why: achieved occupancy")
    cell = render_markdown(regressed).split("| ❌ |", 1)[1].split("\n", 1)[0]
    assert cell.index("Uncoalesced Global Accesses") < cell.index("bound: memory") < cell.index("achieved occupancy")


def test_a_regression_ends_with_the_commands_to_accept_it(regressed: dict[str, object]) -> None:
    markdown = render_markdown(regressed)
    assert commands_of(markdown) == [
        "perfgate accept --kernel vector_add --metric gpu__time_duration.sum --reason 'why this change is intended'",
        f"perfgate baseline {AFTER.relative_to(REPO)} -d baselines # then commit baselines/"]


def test_a_test_gets_its_own_commands_and_a_pass_none() -> None:
    report = make_report([launch("gemm", test="tests/perf/test_k.py::test_k[64-fp16]"),
                          launch("scan", test="tests/perf/test_k.py::test_scan", metric="dram__bytes_read.sum")])
    assert commands_of(render_markdown(report)) == [
        "perfgate accept --test 'tests/perf/test_k.py::test_k[64-fp16]' --kernel gemm --metric gpu__time_duration.sum "
        "--reason 'why this change is intended'",
        "pytest --perfgate --perfgate-update 'tests/perf/test_k.py::test_k[64-fp16]' # then commit baselines/",
        "perfgate accept --test tests/perf/test_k.py::test_scan --kernel scan --metric dram__bytes_read.sum "
        "--reason 'why this change is intended'",
        "pytest --perfgate --perfgate-update tests/perf/test_k.py::test_scan # then commit baselines/"]
    assert "To accept" not in render_markdown(make_report([launch("gemm", status="unchanged")]))


def test_a_hostile_name_becomes_a_placeholder(tmp_path: Path) -> None:
    markdown = render_markdown(hostile_report(True))
    block = "\n".join(commands_of(markdown))
    assert "perfgate accept --test TEST --kernel KERNEL --metric gpu__time_duration.sum" in block
    assert "<img" not in markdown and "@octocat" not in block and "perfgate:comment" not in block
    assert "`" not in markdown
