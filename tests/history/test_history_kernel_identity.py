"""A history series is one kernel as the comparison knows it: its demangled name (template arguments) and its launch
configuration. Two instantiations of PyTorch's elementwise kernel, or one cuBLAS-like kernel launched at three grids,
in one region, are series apart, so ``perfgate compare --history`` judges each launch against its own kernel's runs
(folded into one series, an unchanged run read as "8 regressions, 8 improvements").

The runs are ncu raw CSV pages; main's runs are recorded as a user records them: ``perfgate compare first.csv
runN.csv --format json -o r.json`` then ``perfgate history record r.json``."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest
from helpers.csvgen import Launch, write_raw_launches
from helpers import history as history_helpers
from helpers.history import compare_json, record_reports

from perfgate.cli import main

history_url = history_helpers.history_url  # the fixture: a new history on SQLite and on PostgreSQL

TIME, READ, INST = "gpu__time_duration.sum", "dram__bytes_read.sum", "smsp__inst_executed.sum"
GEMM = "void cutlass::Kernel2<cutlass_80_tensorop_s1688gemm_128x128_32x3_nn_align4>(Params)"
ADD, GELU = (f"void at::native::vectorized_elementwise_kernel<4, at::native::{functor}<float>, std::array<char *, "
             f"2UL>>(int, at::native::{functor}<float>, std::array<char *, 2UL>)" for functor in ("AddFunctor",
                                                                                                  "GeluFunctor"))
NORM = "void layer_norm_kernel<float>(const float *, float *, int)"
# (demangled name, grid, time in µs): one step of the model, launched twice per run in region "step"
STEP = [(GEMM, "(60, 1, 1)", 60.0), (ADD, "(2048, 1, 1)", 6.0), (GEMM, "(150, 1, 1)", 150.0),
        (GELU, "(2048, 1, 1)", 22.0), (GEMM, "(240, 1, 1)", 240.0), (NORM, "(512, 1, 1)", 30.0)]
RUNS = 6


def run_csv(path: Path, seed: int, slower: str = "", grids: dict[str, str | tuple[str, str]] | None = None) -> Path:
    """One run: two steps, each launch's time within ±0.3% of its kernel's (``slower``: that kernel +20%);
    ``grids``: a kernel launched at another grid (a pair: another in each step)."""
    rng = random.Random(seed)
    launches = []
    for step in range(2):
        for name, grid, micros in STEP:
            time = micros * 1000 * (1.2 if name == slower else 1.0) * rng.uniform(0.997, 1.003)
            values = {TIME: time, READ: round(micros * 1.2e6 * rng.uniform(0.9995, 1.0005)), INST: round(micros * 2e4)}
            other = (grids or {}).get(name, grid)
            launches.append(Launch(name, other if isinstance(other, str) else other[step], "(256, 1, 1)", values,
                                   "step"))
    write_raw_launches(path, launches)
    return path


def record_main(tmp_path: Path, url: str, edit: Any = None) -> None:
    """Main's runs 1..RUNS, each compared with the first run and its report recorded; ``edit``: what is done to each
    report before it is recorded (a report of an older perfgate)."""
    first = run_csv(tmp_path / "first.csv", 0)
    for index in range(1, RUNS + 1):
        report = tmp_path / f"r{index}.json"
        assert main(["compare", str(first), str(run_csv(tmp_path / f"run{index}.csv", index)), "--format", "json",
                     "-o", str(report)]) == 0
        if edit is not None:
            document = json.loads(report.read_text(encoding="utf-8"))
            edit(document)
            report.write_text(json.dumps(document), encoding="utf-8")
        assert record_reports(url, report, index) == 0


def statuses(report: dict[str, Any]) -> dict[tuple[str, str], set[str]]:
    """Each kernel launch's (demangled name, grid) -> the statuses of its launches."""
    launches = report["launches"]
    found: dict[tuple[str, str], set[str]] = {}
    for kind, name, grid, status in zip(launches["kind"], launches["demangled"], launches["grid"],
                                        launches["status"]):
        if kind == "kernel":
            found.setdefault((name, grid), set()).add(status)
    return found


def test_an_unchanged_run_passes_against_a_history_of_kernels_apart(tmp_path: Path, history_url: str) -> None:
    record_main(tmp_path, history_url)
    status, report = compare_json(tmp_path, str(run_csv(tmp_path / "cur.csv", 99)), "--history", history_url)
    assert status == 0, report["notes"]
    assert all(found == {"unchanged"} for found in statuses(report).values()), statuses(report)
    assert report["summary"]["regression"] == report["summary"]["improvement"] == 0
    # each launch judged against its own kernel's median, not the median of its function's launches
    times = [metric == TIME for metric in report["metrics"]["metric"]]
    baseline = {(report["launches"]["demangled"][at], report["launches"]["grid"][at]): value for at, code, value in
                zip(report["results"]["launch"], report["results"]["metric"], report["results"]["baseline"])
                if times[code] and report["launches"]["kind"][at] == "kernel"}
    for name, grid, micros in STEP:
        assert baseline[name, grid] == pytest.approx(micros * 1000, rel=0.01)


def test_one_kernel_twenty_percent_slower_fails_on_that_kernel_only(tmp_path: Path, history_url: str) -> None:
    record_main(tmp_path, history_url)
    status, report = compare_json(tmp_path, str(run_csv(tmp_path / "cur.csv", 99, slower=GELU)), "--history",
                                  history_url)
    assert status == 1 and report["summary"]["improvement"] == 0, report["summary"]
    assert report["summary"]["regression"] == 3  # gelu's two launches and the region's total
    found = statuses(report)
    assert found.pop((GELU, "(2048, 1, 1)")) == {"regression"}
    assert all(status == {"unchanged"} for status in found.values()), found


def test_a_new_launch_configuration_is_judged_against_its_kernels_history(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'h.sqlite'}"
    record_main(tmp_path, url)
    # the norm's grid changed (a retuned launch): judged against the one series of its name
    status, report = compare_json(tmp_path, str(run_csv(tmp_path / "cur.csv", 99, grids={NORM: "(1024, 1, 1)"})),
                                  "--history", url)
    assert status == 0, report["notes"]
    assert statuses(report)[NORM, "(1024, 1, 1)"] == {"unchanged"}
    status, report = compare_json(tmp_path, str(run_csv(tmp_path / "slow.csv", 99, slower=NORM,
                                                        grids={NORM: "(1024, 1, 1)"})), "--history", url)
    assert status == 1 and statuses(report)[NORM, "(1024, 1, 1)"] == {"regression"}

    # the norm at two new grids: its one series would be both's, so neither's
    status, report = compare_json(tmp_path, str(run_csv(tmp_path / "two.csv", 99, grids={
        NORM: ("(1024, 1, 1)", "(2048, 1, 1)")})), "--history", url)
    assert statuses(report)[NORM, "(1024, 1, 1)"] == statuses(report)[NORM, "(2048, 1, 1)"] == {"new"}
    assert any("(0 of the last runs, 5 needed; the series of its name in another launch configuration is shared by 2 "
               "kernels of this run: none chosen)" in note for note in report["notes"]), report["notes"]

    # the gemm at a new grid: three series of its name fit, none is guessed
    status, report = compare_json(tmp_path, str(run_csv(tmp_path / "gemm.csv", 99, grids={GEMM: "(90, 1, 1)"})),
                                  "--history", url)
    assert statuses(report)[GEMM, "(90, 1, 1)"] == {"new"}
    # the note names the launch as the history shows it: the kernels of one name told apart by their grid
    assert (f"history: Kernel2<cutlass_80_tensorop_s1688gemm_128x128_32x3_nn_align4> grid (90, 1, 1) block (256, 1, "
            f"1) [step] {TIME}: insufficient data (0 of the last runs, 5 needed; 3 series of its name in other launch "
            "configurations: none chosen): no reference") in report["notes"]


def _as_an_older_perfgate_wrote_it(document: dict[str, Any]) -> None:
    """A report without the launch configuration columns, recorded by a perfgate that keyed series by function name:
    its ``demangled`` column holds the function names."""
    launches = document["launches"]
    launches.pop("grid", None), launches.pop("block", None)
    launches["demangled"] = list(launches["kernel"])


def test_a_history_keyed_by_function_names_still_serves_as_a_reference(tmp_path: Path, history_url: str) -> None:
    record_main(tmp_path, history_url, _as_an_older_perfgate_wrote_it)
    status, report = compare_json(tmp_path, str(run_csv(tmp_path / "cur.csv", 99, slower=NORM)), "--history",
                                  history_url)
    # the norm, one kernel of its function, is judged against its function's series; the gemm and the elementwise
    # kernels were folded into one series each: no median of theirs is any kernel's, so none is guessed
    assert report["summary"]["improvement"] == 0 and report["summary"]["regression"] == 3, report["summary"]  # and total
    found = statuses(report)
    assert status == 1 and found.pop((NORM, "(512, 1, 1)")) == {"regression"}
    assert all(status == {"new"} for status in found.values()), found
    assert any("its function's series is shared by 3 kernels of this run: none chosen" in note
               for note in report["notes"]), report["notes"]

    # new runs begin the kernels' own series; the function-name series serve until then
    for index in range(RUNS + 1, RUNS + 6):
        out = tmp_path / f"new{index}.json"
        assert main(["compare", str(tmp_path / "first.csv"), str(run_csv(tmp_path / f"run{index}.csv", index)),
                     "--format", "json", "-o", str(out)]) == 0
        assert record_reports(history_url, out, index) == 0
    status, report = compare_json(tmp_path, str(run_csv(tmp_path / "cur.csv", 99)), "--history", history_url)
    assert status == 0 and all(found == {"unchanged"} for found in statuses(report).values()), statuses(report)


def test_accept_and_history_changes_name_the_kernels(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    url = f"sqlite:///{tmp_path / 'h.sqlite'}"
    record_main(tmp_path, url)
    for index in range(RUNS + 1, RUNS + 7):  # the gelu 20% slower from run 7 on
        out = tmp_path / f"slow{index}.json"
        main(["compare", str(tmp_path / "first.csv"), str(run_csv(tmp_path / f"run{index}.csv", index, slower=GELU)),
              "--format", "json", "-o", str(out)])
        assert record_reports(url, out, index) == 0
    capsys.readouterr()
    assert main(["history", "changes", "--db", url, "--branch", "main", "--format", "json"]) == 0
    changes = json.loads(capsys.readouterr().out)
    assert {(c["kernel"], c["metric"]) for c in changes} >= {(f"{GELU} grid (2048, 1, 1) block (256, 1, 1)", TIME)}
    assert all("GeluFunctor" in c["kernel"] for c in changes if c["kind"] == "kernel")  # and the region total
    assert main(["history", "changes", "--db", url, "--branch", "main"]) == 0
    assert ("vectorized_elementwise_kernel<4, at::native::GeluFunctor<float>, std::array<char *, 2UL>> grid "
            "(2048, 1, 1) block (256, 1, 1) [step]") in capsys.readouterr().out
    commit = next(c["commit"] for c in changes if c["kind"] == "kernel" and not c["awaiting"])
    # the function's name still names its kernels: both instantiations
    assert main(["accept", "--db", url, "--commit", commit, "--kernel", "vectorized_elementwise_kernel", "--metric",
                 TIME, "--reason", "gelu in fp32 now"]) == 0
    assert "accepted the change at 0007cccccccc for 2 series" in capsys.readouterr().out
    assert main(["history", "changes", "--db", url, "--branch", "main", "--format", "json"]) == 0
    accepted = [c["accepted"] for c in json.loads(capsys.readouterr().out) if c["commit"] == commit
                and c["kind"] == "kernel"]
    assert accepted and all(found and found["reason"] == "gelu in fp32 now" for found in accepted)
    # and its series' text names one kernel
    assert main(["accept", "--db", url, "--commit", commit, "--kernel", f"{ADD} grid (2048, 1, 1) block (256, 1, 1)",
                 "--reason", "add"]) == 0
    assert "for 3 series" in capsys.readouterr().out  # its three metrics


def test_the_pr_trend_shows_the_regressed_kernels_own_series(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    url = f"sqlite:///{tmp_path / 'h.sqlite'}"
    record_main(tmp_path, url)
    pr = tmp_path / "pr.json"
    assert main(["compare", str(tmp_path / "first.csv"), str(run_csv(tmp_path / "pr.csv", 99, slower=GELU)),
                 "--format", "json", "-o", str(pr)]) == 1
    summary = tmp_path / "summary.md"
    for name in ("GITHUB_EVENT_PATH", "GITHUB_REPOSITORY", "GITHUB_SHA"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    assert main(["publish", str(pr), "--no-comment", "--no-check", "--history", url]) == 0  # publishes; gates not
    trend = summary.read_text(encoding="utf-8").split("#### Trend on `main`")[1]
    rows = [line for line in trend.splitlines() if line.startswith("| vectorized")]
    assert rows and all("GeluFunctor" in row and r" grid (2048, 1, 1) block (256, 1, 1) \[step\] |" in row
                        for row in rows), rows
    # the base branch's values are the gelu's own (22 µs), not its function's median (14 µs)
    assert len(rows) == 2 and all("| 2.201e+04 → 2.63" in row and "e+04 (+19." in row for row in rows), rows


def test_the_dashboard_has_a_page_per_kernel(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    url = f"sqlite:///{tmp_path / 'h.sqlite'}"
    record_main(tmp_path, url)
    assert main(["history", "dashboard", "--db", url, "-o", str(tmp_path / "site")]) == 0
    pages = sorted(path.name for path in (tmp_path / "site" / "kernels").glob("*.html"))
    # 3 gemm grids, add, gelu, norm, the region's total: each its page, named readably
    assert len(pages) == 7, pages
    assert sum(name.startswith("vectorized_elementwise_kernel-4-at-native-") for name in pages) == 2, pages
    assert sum(name.startswith("Kernel2-cutlass_80_tensorop_s1688gemm_128x128_32x3_nn_align4-") for name in
               pages) == 3, pages  # told apart by the digest of their key
    index = (tmp_path / "site" / "index.html").read_text(encoding="utf-8")
    assert "GeluFunctor&lt;float&gt;, std::array&lt;char *, 2UL&gt;&gt; grid (2048, 1, 1) block (256, 1, 1)" in index
