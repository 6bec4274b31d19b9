"""What a person reads in the reports of real third-party files: a kernel row's figures agree with its status, a
note gives a limit in the metric's unit, a fact is said once, and a headline cut to fit keeps what to do. The
corpus pairs (docs/reports.md) skip where ../shared/corpus is absent; the hand-made reports run everywhere."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers.common import corpus_file, run_cli
from helpers.reports import hand_made
from helpers.timeline import corpus_trace

from perfgate.render import render_html, render_markdown, render_text
from perfgate.render.common import shorten_keeping_fix
from perfgate.quantities import format_change
from perfgate.render.kernels import KernelRows


def _compare(capsys: pytest.CaptureFixture[str], tmp_path: Path, base: Path, cur: Path, *options: str) -> dict:
    out = tmp_path / "report.json"
    status, _, err = run_cli(capsys, "compare", base, cur, "--format", "json", "-o", out, *options)
    assert status in (0, 1, 2), err
    report: dict = json.loads(out.read_text(encoding="utf-8"))
    return report


def test_a_kernel_that_lost_launches_is_summarized_by_the_launches_compared() -> None:
    # Five launches of one kernel: two compared (unchanged, 100 -> 101 ns), three missing (900 ns in the baseline).
    statuses = ("unchanged", "unchanged", "missing", "missing", "missing")
    report = hand_made([{"kernel": "k", "demangled": "k", "ordinal": i, "status": s} for i, s in enumerate(statuses)],
                       [(0, 0, 100.0, 101.0, 0.01, "unchanged", True), (1, 0, 100.0, 101.0, 0.01, "unchanged", True),
                        *((i, 0, 900.0, None, None, "missing", True) for i in (2, 3, 4))])
    rows = KernelRows(report)
    [row] = [rows.row(k) for k in rows.kernels]
    [duration] = [m for m in row.metrics if m.metric == "gpu__time_duration.sum"]
    assert (duration.before, duration.after) == (100.0, 101.0)  # not 900 (the median of 100, 100, 900, 900, 900) against 101
    assert duration.change == pytest.approx(0.01)


def test_a_corpus_kernel_with_missing_launches_shows_the_change_of_those_compared(
        capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    # sevit (RTX A4000): an elementwise kernel of 4 launches, unchanged where compared (31 -> 30 µs), whose other
    # launches are missing. Its row showed 9 µs -> 30 µs (+233.3%) under ✅: the median of every baseline launch
    # against those of the current run.
    report = _compare(capsys, tmp_path, corpus_trace("sevit-a4000/trace.json"), corpus_trace("sevit-a4000/trace1.json"))
    markdown = render_markdown(report).replace("\u00a0", " ")
    assert "| ×4 (3 missing) | GPU time (median) | 31 µs | 30 µs | -3.2%" in markdown
    assert "+233.3%" not in markdown and "-70.0%" not in markdown


def test_a_row_judged_fine_among_those_that_need_attention_says_why(capsys: pytest.CaptureFixture[str],
                                                                     tmp_path: Path) -> None:
    # sevit: kernels whose compared launches are unchanged (✅) are listed with those that need attention, for their
    # launches missing in the current run; the row said only "×17".
    report = _compare(capsys, tmp_path, corpus_trace("sevit-a4000/trace.json"), corpus_trace("sevit-a4000/trace1.json"))
    attention = render_markdown(report).split("<details>")[0]
    fine = [line for line in attention.splitlines() if line.startswith("| ✅ |")]
    assert fine and all(" missing) |" in line for line in fine), fine


def test_notes_give_a_limit_in_the_metrics_unit(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    # The rows say "limit 10% + 2 µs"; the notes of the same kernels said "limit 10%+2000" (ns, unnamed).
    report = _compare(capsys, tmp_path, corpus_trace("sevit-a4000/trace.json"), corpus_trace("sevit-a4000/trace1.json"))
    limits = [n for n in report["notes"] if "its limit" in n]
    assert len(limits) >= 3
    assert all("its limit 10% + 2 µs" in n for n in limits), limits
    assert not any("10%+2000" in n for n in report["notes"])


def test_a_total_without_values_on_either_side_says_both_runs(capsys: pytest.CaptureFixture[str],
                                                               tmp_path: Path) -> None:
    # esmm A10G e22c00d -> 5c6231e: one launch a side has no values, so neither total has a time. The text said
    # "in the either run", the Markdown "no values in the baseline".
    report = _compare(capsys, tmp_path, corpus_file("esmm-a10g/e22c00d.ncu-rep"),
                      corpus_file("esmm-a10g/5c6231e.ncu-rep"))
    assert "    no values of the gated metrics in both runs" in render_text(report).splitlines()
    assert "| ⚠️ | total | 1 | no values in both runs |" in render_markdown(report)


def test_a_side_without_values_is_named(capsys: pytest.CaptureFixture[str]) -> None:
    report = hand_made([{"kernel": "k", "demangled": "k", "status": "no data"}],
                       [(0, 0, None, 100.0, None, "no data", True)])
    assert "    no values of the gated metrics in the baseline" in render_text(report).splitlines()
    assert "no values in the baseline |" in render_markdown(report)


def test_metrics_neither_input_holds_are_one_note(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    # esmm A10G, the same four kernels twice: profiled without the memory and instruction sections.
    report = _compare(capsys, tmp_path, corpus_file("esmm-a10g/b644635.ncu-rep"),
                      corpus_file("esmm-a10g/a62323b_output.ncu-rep"))
    assert report["notes"] == ["gated metrics dram__bytes_read.sum, dram__bytes_write.sum and "
                               "smsp__inst_executed.sum are in neither input: not compared"]


def test_a_launch_without_values_is_one_note_naming_its_metrics(capsys: pytest.CaptureFixture[str],
                                                                tmp_path: Path) -> None:
    report = _compare(capsys, tmp_path, corpus_file("esmm-a10g/e22c00d.ncu-rep"),
                      corpus_file("esmm-a10g/5c6231e.ncu-rep"))
    [about] = [n for n in report["notes"] if "vectorized_blocktiling #0" in n]
    assert about.endswith("e22c00d.ncu-rep: vectorized_blocktiling #0: "
                          "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed, gpu__time_duration.sum, "
                          "sm__throughput.avg.pct_of_peak_sustained_elapsed and "
                          "sm__warps_active.avg.pct_of_peak_sustained_active have no usable value "
                          "('nan': no value was recorded)")


def test_a_headline_on_unpaired_kernels_keeps_the_cause_and_the_fix(capsys: pytest.CaptureFixture[str],
                                                                    tmp_path: Path) -> None:
    # esmm A10G e22c00d -> 5c6231e: four kernels gone, six new, no rule pairs them. The headline cut the fix in
    # the middle of its parenthesis ("or pair them…; the total holding them ...").
    report = _compare(capsys, tmp_path, corpus_file("esmm-a10g/e22c00d.ncu-rep"),
                      corpus_file("esmm-a10g/5c6231e.ncu-rep"))
    first = render_markdown(report).splitlines()[0]
    assert first.startswith("### ⚠️ perfgate: 1 gated value not measured: launches outside any region: kernels no "
                            "rule paired (perhaps one renamed), their total has no time on both sides")
    assert first.endswith("(after review accept them with --accept-unpaired-kernels or accept\\_unpaired\\_kernels, "
                          "or pair them with kernel\\_aliases)")
    assert len(shorten_keeping_fix(report["unmeasured"][0]["launch"] + ": " + report["unmeasured"][0]["cause"])) \
        <= 240


def _loading_notes(report: dict) -> list[str]:
    return [n for n in report["notes"] if "lazy module loading" in n]


def test_first_launch_calls_in_nested_ranges_are_one_note(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    # nvFuser H200 report2 -> report3: the first launch call sits in allocateTensor, inside allocateOutputs, inside
    # runFusion; each range had its own note, 3.36 -> 3.72, 3.35 -> 3.71 and 3.35 -> 3.71 ms.
    report = _compare(capsys, tmp_path, corpus_trace("nvfuser-h200/report2_ce15be9.sqlite"),
                      corpus_trace("nvfuser-h200/report3_f6ab0c3.sqlite"))
    assert _loading_notes(report) == [
        "region `KernelExecutor::runFusion > fusion_executor::allocations::allocateOutputs > "
        "fusion_executor::allocations::allocateTensor` and the 2 ranges around it: 3.35 ms → 3.71 ms of kernels' first "
        "launch calls (CUDA's lazy module loading) left out of their wall time and GPU idle; warm the kernels up "
        "before the region, or set CUDA_MODULE_LOADING=EAGER"]


def test_a_range_one_run_holds_gets_no_first_launch_note(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    # nvFuser H100 report1 -> report2: allocateTensor was renamed allocateOutput. The notes said "4.04 ms → 0 ns" and
    # "0 ns → 4.01 ms" for the two names, whose kernels are compared under allocateOutputs.
    report = _compare(capsys, tmp_path, corpus_trace("nvfuser-h100/report1_8fa9ec2.sqlite"),
                      corpus_trace("nvfuser-h100/report2_df8f397.sqlite"))
    notes = _loading_notes(report)
    assert not any("0 ns" in n for n in notes), notes
    assert notes == [
        "region `KernelExecutor::runFusion > fusion_executor::allocations::allocateOutputs` and the range around it: "
        "4.04 ms → 4.01 ms of kernels' first launch calls (CUDA's lazy module loading) left out of their wall time and "
        "GPU idle; warm the kernels up before the region, or set CUDA_MODULE_LOADING=EAGER"]


def test_a_tenfold_change_reads_as_a_ratio() -> None:
    assert [format_change(c) for c in (0.123, 8.99, 9.0, 17.03, 225.311, -0.996)] == \
        ["+12.3%", "+899.0%", "10×", "18×", "226×", "-99.6%"]


def test_the_idle_time_of_an_amp_switch_reads_as_a_ratio_in_every_format(capsys: pytest.CaptureFixture[str],
                                                                         tmp_path: Path) -> None:
    # amp-lab T4, FP32 -> AMP: the optimizer step's GPU idle went 9.184 µs -> 2.078 ms, "+22531.1%".
    report = _compare(capsys, tmp_path, corpus_trace("amp-lab-t4/fp32.pt.trace.json"),
                      corpus_trace("amp-lab-t4/amp.pt.trace.json"))
    text, markdown, page = render_text(report), render_markdown(report), render_html(report)
    assert "    regression  GPU idle 9.184 µs → 2.078 ms (226×)  [limit 50% + 300 µs]" in text.splitlines()
    assert "**226×**" in markdown and "226×" in page
    assert not any("22531" in output for output in (text, markdown, page))


def test_kernels_of_one_name_with_the_same_figures_are_one_note(capsys: pytest.CaptureFixture[str],
                                                                tmp_path: Path) -> None:
    # sevit: two index_elementwise_kernel (grids 15 and 29), two launches each, both +18.2% [+0.0%, +36.4%].
    report = _compare(capsys, tmp_path, corpus_trace("sevit-a4000/trace.json"), corpus_trace("sevit-a4000/trace1.json"))
    about = [n for n in report["notes"] if "index_elementwise_kernel ×2" in n]
    assert len(about) == 1 and about[0].startswith("2 kernels of this name, each: index_elementwise_kernel ×2: GPU "
                                                   "time +18.2% [+0.0%, +36.4%]"), about
    assert len(report["notes"]) == len(set(report["notes"]))


def test_a_regions_row_names_it_once(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    # amp-lab T4: the optimizer step's range read "Optimizer.step#Adam.step [Optimizer.step#Adam.step]" in the text,
    # the same name under itself in the Markdown and "region Optimizer.step#Adam.step" beside it in the HTML.
    report = _compare(capsys, tmp_path, corpus_trace("amp-lab-t4/fp32.pt.trace.json"),
                      corpus_trace("amp-lab-t4/amp.pt.trace.json"))
    text, markdown, page = render_text(report), render_markdown(report).replace("\u00a0", " "), render_html(report)
    assert "REGRESSION  Optimizer.step#Adam.step" in text.splitlines()
    assert "| ❌ | Optimizer.step\\#Adam.step | 1 | wall time<br>GPU idle |" in markdown
    # its one GPU is named once, in the page's header, not again in every row of the kernel table
    assert '<span class="kernel">Optimizer.step#Adam.step</span></td><td class="where"></td>' in page
    assert "GPU: Tesla T4 (CC 7.5)" in page and '<td class="where">Tesla T4' not in page
    # a kernel in that range still says where it ran
    assert "multi\\_tensor\\_apply\\_kernel (1)<br><sub>Optimizer.step\\#Adam.step</sub>" in markdown


def test_a_trace_kernels_unknown_shared_memory_is_not_shown_as_a_slash(capsys: pytest.CaptureFixture[str],
                                                                        tmp_path: Path) -> None:
    # amp-lab T4, FP32 -> AMP: traces give no shared memory per block; the ambiguous-rename note told launches of
    # one name apart by "grid (16, 1, 1) block (32, 4, 1) shared memory /".
    report = _compare(capsys, tmp_path, corpus_trace("amp-lab-t4/fp32.pt.trace.json"),
                      corpus_trace("amp-lab-t4/amp.pt.trace.json"))
    unpaired = [note for note in report["notes"] if note.startswith("renamed kernels not paired")]
    assert any("grid (" in note for note in unpaired)
    assert not any("shared memory /" in note or "shared memory" in note for note in unpaired)


def test_the_headline_counts_only_what_was_compared(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    # amp-lab T4, FP32 -> AMP: most kernels are missing or new; the headline counted them, "in 182 compared".
    status, out, _ = run_cli(capsys, "compare", corpus_trace("amp-lab-t4/fp32.pt.trace.json"),
                             corpus_trace("amp-lab-t4/amp.pt.trace.json"))
    assert status == 1
    assert out.rstrip().splitlines()[-1].startswith("FAIL: 2 regressions in 19 compared (launches: 2 regressions, "
                                                    "51 missing, 115 new, 1 improvement, 44 unchanged)")
