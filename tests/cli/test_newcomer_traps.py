"""The traps a new user fell into (issue 25, part 4), each on real reports: the H100 session reports of
``tests/data/h100/default-metrics/sessions`` (three perf tests, 36 launches, every gated metric unchanged)."""

from __future__ import annotations

import copy
import json
import lzma
from pathlib import Path
from typing import Any

import pytest
from helpers.common import REPO
from helpers.github_server import launch, make_report
from helpers.plugin import preload_heavy_modules

from perfgate.cli import main
from perfgate.render import render
from perfgate.render.common import HEADLINE_CAUSE_CHARS, headline, shorten_keeping_fix
from perfgate.report import validate_report

pytest_plugins = ("pytester",)
preload_heavy_modules()

SESSIONS = REPO / "tests" / "data" / "h100" / "default-metrics" / "sessions"
REPLAY_CAUSE = ("dram__bytes_write.sum not judged: ncu replayed the kernels differently than for the baseline "
                "(1 replay pass → 13), and this count depends on the replay; record the baseline again with these "
                "settings")


def session(name: str) -> dict[str, Any]:
    report: dict[str, Any] = json.loads(lzma.decompress((SESSIONS / f"{name}.json.xz").read_bytes()))
    return report


# ---------------------------------------------------------------- the headline keeps the fix


def test_a_long_cause_is_cut_at_a_word_and_keeps_its_fix() -> None:
    cause = "a cause " + "that goes on " * 40 + "; record the baseline again with --perfgate-update"
    short = shorten_keeping_fix(cause)
    assert len(short) <= HEADLINE_CAUSE_CHARS
    assert short.endswith("…; record the baseline again with --perfgate-update")
    head = short.split("…")[0]
    assert cause.startswith(head) and cause[len(head)] == " "  # cut between two words
    assert shorten_keeping_fix(REPLAY_CAUSE) == REPLAY_CAUSE  # perfgate's own causes fit whole


def test_the_headline_of_an_unmeasured_report_ends_with_the_fix() -> None:
    report = session("gate1")
    long_cause = "dram__bytes_write.sum not judged: " + "ncu replayed it differently " * 12 + "; record it again"
    report["unmeasured"] = [{"test": "", "launch": "every launch", "cause": long_cause}]
    line = headline(validate_report(report, "gate1.json"))
    assert line.startswith("1 gated value not measured: every launch: dram__bytes_write.sum not judged")
    assert line.endswith("…; record it again") and len(line) < 300
    report["unmeasured"][0]["cause"] = REPLAY_CAUSE
    assert headline(validate_report(report, "gate1.json")).endswith("record the baseline again with these settings")


def test_the_headline_of_a_first_run_says_the_tests_are_new_and_what_to_do() -> None:
    """Every launch new (a first pull request, nothing recorded): not "NOT MEASURED: 1 new", but which tests are new
    and what gives them something to compare with; by hand (no test names), the launches."""
    new = [launch(k, status="new", test=f"t.py::test_{k}") for k in ("a", "b", "c")]
    assert headline(make_report(new)) == ("3 new tests with no baseline yet, nothing to compare: record the base "
                                          "branch's runs, or update the baseline")
    updated = make_report(new, notes=("--perfgate-update: baselines written: 3 files under baselines",))
    assert headline(updated).startswith("nothing compared (3 launches")  # the update wrote them: nothing to do
    assert headline(make_report([launch("a", status="new")])).startswith("1 new launch with no baseline yet")
    some = make_report([launch("a", status="new", test="t.py::test_a"), launch("b", status="missing")])
    assert headline(some).startswith("nothing compared (2 launches")  # not every one new: not a first run


# ---------------------------------------------------------------- the comment of pytest-benchmark results


def _as_benchmarks(report: dict[str, Any]) -> dict[str, Any]:
    """The session report with its launches relabelled as pytest-benchmark results of a CPU machine."""
    bench = copy.deepcopy(report)
    launches = bench["launches"]
    launches["kind"] = ["benchmark"] * len(launches["kind"])
    launches["kernel"] = [f"examples/cpu/test_host_code.py::test_{k}" for k in launches["kernel"]]
    launches["device"] = ["CPU: AMD EPYC"] * len(launches["device"])
    for comparison in bench["comparisons"]:
        comparison["baseline_devices"] = comparison["current_devices"] = ["CPU: AMD EPYC"]
    return bench


def test_a_cpu_run_is_labelled_machine_and_its_test_name_leads() -> None:
    report = validate_report(_as_benchmarks(session("gate1")), "bench.json")
    markdown = render(report, "md")
    assert "**machine:** CPU: AMD EPYC" in markdown and "GPU" not in markdown.split("\n\n", 3)[1]
    row = next(line for line in markdown.splitlines() if "examples/cpu/test\\_host\\_code.py" in line)
    kernel_cell = row.split(" | ")[1]
    assert kernel_cell.startswith("test\\_") and "<sub>examples/cpu/test\\_host\\_code.py" in kernel_cell
    assert "machine: CPU: AMD EPYC" in render(report, "html")


# ---------------------------------------------------------------- every gated metric in the comment


def test_the_comment_shows_every_default_gated_metric() -> None:
    markdown = render(validate_report(session("gate1"), "gate1.json"), "md").replace("\xa0", " ")  # kept on one line
    rows = [line for line in markdown.splitlines() if line.startswith("| ✅ |") and "duration" in line]
    assert rows
    for label in ("duration", "DRAM read", "DRAM write", "instructions"):
        assert all(label in row for row in rows), label


# ---------------------------------------------------------------- merging a job that ran twice


def test_merging_the_same_tests_on_the_same_gpu_keeps_the_later_report(tmp_path: Path,
                                                                       capsys: pytest.CaptureFixture[str]) -> None:
    first, second = session("gate1"), session("gate2")
    paths = []
    for name, report in (("first.json", first), ("second.json", second)):
        paths.append(tmp_path / name)
        paths[-1].write_text(json.dumps(report), encoding="utf-8")
    merged_path = tmp_path / "merged.json"
    main(["merge", *map(str, paths), "-o", str(merged_path)])
    capsys.readouterr()
    merged = json.loads(merged_path.read_text(encoding="utf-8"))
    assert len(merged["launches"]["status"]) == len(second["launches"]["status"])  # no doubled rows
    assert sorted(merged["results"]["current"], key=str) == sorted(second["results"]["current"], key=str)
    kept = [n for n in merged["notes"] if n.startswith("merge: ")]
    assert sorted(n.split(" on ")[0].removeprefix("merge: ") for n in kept) == sorted(
        {t for t in second["launches"]["test"] if t})
    assert all("is in report 1 and report 2: kept report 2, the later one" in n for n in kept)
    assert len(merged["comparisons"]) == len(second["comparisons"])


# ---------------------------------------------------------------- --perfgate-update without ncu


PERF_TEST = """
import pytest

@pytest.mark.perfgate(kernels="vector_add")
def test_add(perfgate):
    with perfgate.region("add"):
        pass
"""


def test_update_without_ncu_says_no_baseline_was_written_and_strict_fails(pytester: pytest.Pytester,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("GITHUB_STEP_SUMMARY", "PYTEST_ADDOPTS"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("PERFGATE_ASSUME_GPU", "1")
    pytester.makepyfile(test_perf=PERF_TEST)
    missing = str(pytester.path / "nowhere" / "ncu")
    result = pytester.runpytest("--perfgate-update", f"--perfgate-ncu={missing}")
    result.assert_outcomes(skipped=1)
    result.stdout.fnmatch_lines(["*no baseline written for what was not measured: 1 perf test not measured: "
                                 "ncu not found*"])
    assert not (pytester.path / "baselines").exists()
    strict = pytester.runpytest("--perfgate-update", f"--perfgate-ncu={missing}", "--perfgate-strict")
    assert strict.ret != 0
    strict.assert_outcomes(errors=1)
