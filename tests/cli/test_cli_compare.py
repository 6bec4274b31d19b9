"""`perfgate compare` on real reports: verdicts, exit statuses, formats, and unusable inputs."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from helpers.common import REPO, corpus_file, run_cli
from helpers.csvgen import write_raw_csv

from perfgate.cli import COMMANDS, main
from perfgate.render import render_markdown
from perfgate.report import launch_rows, load_report, result_rows

V2 = "mlp-t4/report_v2.ncu-rep"
V3 = "mlp-t4/report_v3_loop_unroll.ncu-rep"
V4 = "mlp-t4/report_v4_8_per_thread.ncu-rep"
V6 = "mlp-t4/report_v6_1d_1_per_thread.ncu-rep"
V7 = "mlp-t4/report_v7_1d_1_per_thread_blocked.ncu-rep"
V7_4 = "mlp-t4/report_v7_1d_4_per_thread_blocked.ncu-rep"
V8 = "mlp-t4/report_v8_1d_1_per_thread_stripped.ncu-rep"
ESMM_B = "esmm-a10g/b644635.ncu-rep"
ESMM_A = "esmm-a10g/a62323b_output.ncu-rep"
RTX = "kernelAC-2080ti/profile.ncu-rep"
OUR_REPORT = REPO / "tests" / "data" / "h100" / "default-metrics" / "vector_add.ncu-rep"  # in every checkout


def compare_json(capsys: pytest.CaptureFixture[str], base: str, cur: str, *extra: str) -> tuple[int, dict]:
    status, out, err = run_cli(capsys, "compare", corpus_file(base), corpus_file(cur), "--format", "json", *extra)
    assert err == ""
    return status, json.loads(out)


def result(report: dict, kernel: str, metric: str) -> dict:
    [row] = [r for r in result_rows(report) if r["kernel"] == kernel and r["metric"] == metric]
    return row


def test_t4_v3_to_v4_is_a_duration_regression(capsys: pytest.CaptureFixture[str]) -> None:
    status, report = compare_json(capsys, V3, V4)
    assert status == 1
    assert report["verdict"] == "fail"
    duration = result(report, "matrix_addition2D", "gpu__time_duration.sum")
    assert duration["status"] == "regression"
    assert duration["baseline"] == 67776 and duration["current"] == 151328
    assert duration["change"] == pytest.approx(1.2328, abs=1e-3)  # +123%
    [launch] = launch_rows(report)
    assert launch["status"] == "regression"
    assert "grid (32, 63, 1) → (8, 63, 1)" in launch["launch_change"]
    assert "registers 16 → 18" in launch["launch_change"]


def test_json_contract(capsys: pytest.CaptureFixture[str]) -> None:
    _, report = compare_json(capsys, V3, V4)
    assert {"verdict", "results", "launches", "metrics", "summary", "comparisons", "format", "version"} <= set(report)
    assert report["version"] == 2
    for table in ("launches", "metrics", "results"):  # column-oriented: equally long arrays
        assert len({len(column) for column in report[table].values()}) == 1
    for row in result_rows(report):
        assert {"kernel", "metric", "baseline", "current", "change", "status"} <= set(row)
    assert report["summary"]["regression"] == 1


def test_t4_v4_to_v3_is_an_improvement(capsys: pytest.CaptureFixture[str]) -> None:
    status, report = compare_json(capsys, V4, V3)
    assert status == 0
    assert report["verdict"] == "pass"
    assert launch_rows(report)[0]["status"] == "improvement"
    # More instructions for half the time is a trade-off: explained, not failed.
    instructions = result(report, "matrix_addition2D", "smsp__inst_executed.sum")
    assert instructions["status"] == "info" and instructions["change"] > 1.0


@pytest.mark.parametrize("relative", [V3, ESMM_A, RTX, "esmm-a10g/5c6231e.ncu-rep"])
def test_report_against_itself_changes_nothing(capsys: pytest.CaptureFixture[str], relative: str) -> None:
    status, report = compare_json(capsys, relative, relative)
    assert status == 0
    assert all(r["change"] in (0, None) for r in result_rows(report))
    assert {l["status"] for l in launch_rows(report)} <= {"unchanged", "no data"}


@pytest.mark.parametrize(("base", "cur"), [(V2, V3), (V3, V2), (V6, V7), (V7, V6), (ESMM_B, ESMM_A),
                                           (ESMM_A, ESMM_B)])
def test_same_code_measured_twice_is_not_a_regression(capsys: pytest.CaptureFixture[str], base: str,
                                                      cur: str) -> None:
    status, report = compare_json(capsys, base, cur)
    assert status == 0, [r for r in result_rows(report) if r["status"] == "regression"]
    assert report["summary"]["regression"] == 0


def test_different_gpus_are_refused(capsys: pytest.CaptureFixture[str]) -> None:
    status, out, err = run_cli(capsys, "compare", corpus_file(V3), corpus_file(RTX))
    assert status == 2 and out == ""
    assert err.count("\n") == 1
    assert "Tesla T4" in err and "RTX 2080 Ti" in err and "--allow-device-mismatch" in err


def test_device_mismatch_can_be_overridden(capsys: pytest.CaptureFixture[str]) -> None:
    # The device check is overridden, so the comparison runs; the kernels differ entirely (all missing, all new),
    # so they are judged as replaced through the whole report's total: 67.8 us -> 1.17 s.
    status, out, err = run_cli(capsys, "compare", corpus_file(V3), corpus_file(RTX), "--allow-device-mismatch")
    assert status == 1 and err == ""
    assert "Tesla T4 (CC 7.5) → NVIDIA GeForce RTX 2080 Ti (CC 7.5)" in out
    assert "note: kernels replaced outside any region: matrix_addition2D → kernel_A, kernel_C (no rule pairs them); " \
           "judged through the whole report's total" in out


def test_renamed_kernel_is_paired_and_compared(capsys: pytest.CaptureFixture[str]) -> None:
    # v7 -> v8 renames the kernel (and strips 13% of its instructions); same region, position and grid.
    status, report = compare_json(capsys, V7, V8)
    assert status == 0
    statuses = {l["kernel"]: l["status"] for l in launch_rows(report)}
    assert statuses == {"matrix_addition1D_stripped": "improvement"}
    assert result(report, "matrix_addition1D_stripped", "smsp__inst_executed.sum")["baseline"] == 468_786
    assert any("matrix_addition1D → matrix_addition1D_stripped" in note for note in report["notes"])


def test_renamed_kernel_with_another_launch_configuration_is_not_guessed(
        capsys: pytest.CaptureFixture[str]) -> None:
    # grid (977, 1, 1) -> (3907, 1, 1): not paired (missing and new), so the kernel counts as replaced and is judged
    # through the whole report's total, 66.4 -> 47.3 us
    status, report = compare_json(capsys, V7_4, V8)
    assert status == 0
    statuses = {l["kernel"]: l["status"] for l in launch_rows(report)}
    assert statuses == {"matrix_addition1D": "missing", "matrix_addition1D_stripped": "new", "total": "improvement"}
    assert not any("renamed kernel" in note for note in report["notes"])
    assert any(note.startswith("kernels replaced outside any region: matrix_addition1D → matrix_addition1D_stripped "
                               "(no rule pairs them); judged through the whole report's total") for note in report["notes"])


def test_launch_with_no_data_is_reported_not_crashed(capsys: pytest.CaptureFixture[str]) -> None:
    status, report = compare_json(capsys, "esmm-a10g/e22c00d.ncu-rep", "esmm-a10g/e22c00d.ncu-rep")
    assert status == 0
    statuses = {l["kernel"]: l["status"] for l in launch_rows(report)}
    assert statuses["vectorized_blocktiling"] == "no data"
    assert report["summary"]["no data"] == 1


def test_a_total_with_no_value_is_named_by_what_it_holds(capsys: pytest.CaptureFixture[str]) -> None:
    """esmm's 5c6231e → b644635 replaces kernels in a report without regions: the whole report's total, whose
    baseline has a launch with no time, is "the overall total" in every line (it read "region total total")."""
    status, out, err = run_cli(capsys, "compare", corpus_file("esmm-a10g/5c6231e.ncu-rep"),
                               corpus_file("esmm-a10g/b644635.ncu-rep"))
    assert status == 2
    assert "not measured: the overall total: gpu__time_duration.sum has no value in the baseline" in out
    assert "5c6231e.ncu-rep: the overall total: gpu__time_duration.sum has no usable value" in out
    assert "region total total" not in out + err


def test_threshold_override_and_off(capsys: pytest.CaptureFixture[str]) -> None:
    _, report = compare_json(capsys, V3, V4, "--threshold", "gpu__time_duration.sum=200%")
    assert result(report, "matrix_addition2D", "gpu__time_duration.sum")["status"] == "unchanged"
    assert result(report, "matrix_addition2D", "dram__bytes_read.sum")["status"] == "regression"
    status, report = compare_json(capsys, V3, V4, "--threshold", "gpu__time_duration.sum=off",
                                  "--threshold", "dram__bytes_read.sum=off", "--threshold",
                                  "dram__bytes_write.sum=off")
    assert status == 0
    assert result(report, "matrix_addition2D", "gpu__time_duration.sum")["status"] == "info"


def test_any_ncu_metric_can_be_gated_by_name(capsys: pytest.CaptureFixture[str]) -> None:
    # v6 -> v7_4: four elements per thread; L2 sectors grow.
    status, report = compare_json(capsys, V6, V7_4, "--metrics", "lts__t_sectors.sum", "--threshold",
                                  "lts__t_sectors.sum=1%")
    row = result(report, "matrix_addition1D", "lts__t_sectors.sum")
    assert row["gated"] is True and row["threshold"] == "1%"
    assert {r["metric"] for r in result_rows(report)} == {"lts__t_sectors.sum"}
    assert (status == 1) == (row["status"] == "regression")


def test_metrics_plus_adds_to_defaults(capsys: pytest.CaptureFixture[str]) -> None:
    _, report = compare_json(capsys, V3, V4, "--metrics", "+lts__t_sectors.sum")
    metrics = {r["metric"] for r in result_rows(report)}
    assert {"lts__t_sectors.sum", "gpu__time_duration.sum"} <= metrics


def test_pyproject_thresholds(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    config = tmp_path / "pyproject.toml"
    config.write_text('[tool.perfgate]\nthresholds = { "gpu__time_duration.sum" = "300%", '
                      '"dram__bytes_read.sum" = "off", "dram__bytes_write.sum" = "off" }\n')
    status, report = compare_json(capsys, V3, V4, "--config", str(config))
    assert status == 0
    # the command line wins over pyproject
    status, _ = compare_json(capsys, V3, V4, "--config", str(config), "--threshold", "gpu__time_duration.sum=5%")
    assert status == 1


def test_pyproject_unknown_key_is_a_clear_error(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    config = tmp_path / "pyproject.toml"
    config.write_text('[tool.perfgate]\ntreshold = 3\n')
    status, out, err = run_cli(capsys, "compare", corpus_file(V3), corpus_file(V4), "--config", config)
    assert status == 2 and "treshold" in err and err.count("\n") == 1


@pytest.mark.parametrize("fmt", ["text", "md", "html"])
def test_every_format_names_the_regression(capsys: pytest.CaptureFixture[str], fmt: str) -> None:
    status, out, _ = run_cli(capsys, "compare", corpus_file(V3), corpus_file(V4), "--format", fmt)
    assert status == 1
    assert "matrix_addition2D" in out.replace("\\_", "_")
    assert "+123.3%" in out


def test_output_file(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    target = tmp_path / "out" / "report.md"
    target.parent.mkdir()
    status, out, _ = run_cli(capsys, "compare", corpus_file(V3), corpus_file(V4), "--format", "md", "-o", target)
    assert status == 1
    assert target.read_text().startswith("### ❌ perfgate: 1 regression")
    assert out.startswith("FAIL: 1 regression") and str(target) in out


# ------------------------------------------------------------------------- unusable inputs

def _bad_inputs(tmp_path: Path) -> dict[str, Path]:
    good = corpus_file(V3).read_bytes()
    files = {
        "empty.ncu-rep": b"",
        "truncated.ncu-rep": good[: len(good) // 2],
        "random.ncu-rep": os.urandom(3000),
        "prof-only.csv": b"==PROF== Connected to process 4242 (/usr/bin/python3.11)\n"
                         b"==PROF== Disconnected from process 4242\n"
                         b"==WARNING== No kernels were profiled.\n",
        "error.csv": b"==PROF== Connected to process 77 (/usr/bin/python3.11)\n"
                     b"==ERROR== ERR_NVGPUCTRPERM - The user does not have permission to access NVIDIA GPU "
                     b"Performance Counters on the target device 0.\n",
        "wrong-schema.json": json.dumps({"format": "perfgate-baseline", "version": 1, "device": {"name": "T4"},
                                         "entries": [{"kind": "kernel", "name": "k", "metrics": [1, 2]}]}).encode(),
        "future.json": json.dumps({"format": "perfgate-baseline", "version": 99, "device": {}, "entries": []})
        .encode(),
        "broken.json": b'{"format": "perfgate-baseline", "version": 1, "entries": [',
        "other.json": b'{"hello": "world"}',
        "binary.bin": bytes(range(256)) * 4,
    }
    paths = {}
    for name, data in files.items():
        path = tmp_path / name
        path.write_bytes(data)
        paths[name] = path
    paths["missing"] = tmp_path / "does-not-exist.ncu-rep"
    paths["directory"] = tmp_path
    return paths


BAD = ["empty.ncu-rep", "truncated.ncu-rep", "random.ncu-rep", "prof-only.csv", "error.csv", "wrong-schema.json",
       "future.json", "broken.json", "other.json", "binary.bin", "missing", "directory"]


@pytest.mark.parametrize("name", BAD)
@pytest.mark.parametrize("side", ["baseline", "current"])
def test_unusable_input_exits_2_with_one_line(capsys: pytest.CaptureFixture[str], tmp_path: Path, name: str,
                                              side: str) -> None:
    bad = _bad_inputs(tmp_path)[name]
    good = corpus_file(V3)
    pair = (bad, good) if side == "baseline" else (good, bad)
    status, out, err = run_cli(capsys, "compare", *pair)
    assert status == 2
    assert out == ""
    assert err.startswith("perfgate: error: ") and err.count("\n") == 1, err
    assert str(bad) in err
    assert "Traceback" not in err


def test_permission_error_names_the_fix(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    status, _, err = run_cli(capsys, "compare", _bad_inputs(tmp_path)["error.csv"], corpus_file(V3))
    assert status == 2
    assert "ERR_NVGPUCTRPERM" in err and ("CAP_SYS_ADMIN" in err or "NVreg_RestrictProfilingToAdminUsers" in err)


def test_usage_error_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        main(["compare", "only-one-arg"])
    assert info.value.code == 2
    with pytest.raises(SystemExit) as info:
        main(["compare", "a", "b", "--threshold", "duration"])
    assert info.value.code == 2
    assert "METRIC=SPEC" in capsys.readouterr().err


def test_a_typo_in_the_command_names_the_commands(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        main(["compare", "--threshold", "duration", "a", "b"])
    error = capsys.readouterr().err  # one line, the cause first: no usage block above it to bury it in a CI log
    assert info.value.code == 2 and error.count("\n") == 1 and error.startswith("perfgate compare: error: argument ")
    assert error.endswith(" (usage: perfgate compare --help)\n")
    with pytest.raises(SystemExit) as info:  # not a command: the parser says which ones there are
        main(["compre", "a", "b"])
    error = capsys.readouterr().err
    assert info.value.code == 2 and "invalid choice: 'compre'" in error and all(c in error for c in COMMANDS)


def test_console_script_and_module_entry() -> None:
    """The installed `perfgate` script and `python -m perfgate` are the same CLI, with no traceback."""
    base, cur = corpus_file(V3), corpus_file(V4)
    exe = Path(sys.executable).with_name("perfgate")
    for command in ([str(exe)], [sys.executable, "-m", "perfgate"]):
        done = subprocess.run([*command, "compare", str(base), str(cur)], capture_output=True, text=True,
                              cwd=REPO, timeout=120)
        assert done.returncode == 1, done.stderr
        assert "REGRESSION  matrix_addition2D" in done.stdout
        bad = subprocess.run([*command, "compare", str(base), "/nonexistent.ncu-rep"], capture_output=True,
                             text=True, cwd=REPO, timeout=120)
        assert bad.returncode == 2 and bad.stderr.count("\n") == 1 and "Traceback" not in bad.stderr


# ------------------------------------------------------------------------- what was not compared

def test_metrics_that_exist_nowhere_are_refused(capsys: pytest.CaptureFixture[str]) -> None:
    status, out, err = run_cli(capsys, "compare", corpus_file(V3), corpus_file(V4), "--metrics", "foo__bar.sum")
    assert status == 2 and out == ""
    assert "nothing to compare" in err and "foo__bar.sum" in err and err.count("\n") == 1


def test_gated_metrics_missing_from_the_inputs_are_noted(capsys: pytest.CaptureFixture[str]) -> None:
    status, report = compare_json(capsys, ESMM_B, ESMM_A)
    assert status == 0
    assert "gated metrics dram__bytes_read.sum, dram__bytes_write.sum and smsp__inst_executed.sum are in neither " \
           "input: not compared" in report["notes"]


VECTOR_ADD = REPO / "tests" / "data" / "h100" / "vector_add.rerun.raw-base.csv", \
    REPO / "tests" / "data" / "h100" / "vector_add.rerun.raw.csv"


def test_a_misspelled_threshold_on_the_command_line_is_refused_not_noted(capsys: pytest.CaptureFixture[str],
                                                                          tmp_path: Path) -> None:
    """``--threshold gpu__time_duraton.sum=1%`` passed with a note, gated on the default threshold it meant to
    replace. Given for this comparison, a name neither the catalog nor CURRENT knows is a usage error; in
    ``[tool.perfgate]``, written for many tests, it stays a note."""
    base, cur = (str(path) for path in VECTOR_ADD)
    status, out, err = run_cli(capsys, "compare", base, cur, "--threshold", "gpu__time_duraton.sum=1%")
    assert status == 2 and out == "" and err.count("\n") == 1
    assert err == ("perfgate: error: --threshold gpu__time_duraton.sum=SPEC: no such metric in "
                   f"{cur} or perfgate's catalog: did you mean gpu__time_duration.sum?\n")
    status, out, _ = run_cli(capsys, "compare", base, cur, "--threshold", "derived.roofline_pct=5")  # known, absent
    assert status == 0 and "gated metric derived.roofline_pct is in neither input: not compared" in out
    config = tmp_path / "pyproject.toml"
    config.write_text('[tool.perfgate]\nthresholds = { "dram_bytes_read" = "1%" }\n')
    status, out, _ = run_cli(capsys, "compare", base, cur, "--config", str(config))
    assert status == 0 and "gated metric dram_bytes_read is in neither input: not compared (check its spelling)" in out


def test_format_follows_the_output_suffix(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    for name, start in (("r.json", "{"), ("r.md", "### "), ("r.html", "<!DOCTYPE html>"), ("r.txt", "perfgate: ")):
        run_cli(capsys, "compare", corpus_file(V3), corpus_file(V4), "-o", tmp_path / name)
        assert (tmp_path / name).read_text().startswith(start), name


@pytest.mark.parametrize("value", ["NaN", "Infinity", "1" + "0" * 400])
def test_non_finite_or_huge_baseline_values_are_refused(capsys: pytest.CaptureFixture[str], tmp_path: Path,
                                                        value: str) -> None:
    assert main(["baseline", str(corpus_file(V3)), "-d", str(tmp_path)]) == 0
    [path] = tmp_path.glob("*/*.json")
    text = path.read_text().replace('"value": 67776', f'"value": {value}')
    path.write_text(text)
    capsys.readouterr()
    status, _, err = run_cli(capsys, "compare", path, corpus_file(V4))
    assert status == 2 and err.count("\n") == 1 and "Traceback" not in err


def test_a_pipe_is_read_like_a_file(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    import threading

    fifo = tmp_path / "current.pipe"
    os.mkfifo(fifo)
    data = corpus_file(V4).read_bytes()

    def feed() -> None:
        with fifo.open("wb") as sink:
            sink.write(data)

    writer = threading.Thread(target=feed)
    writer.start()
    status, out, err = run_cli(capsys, "compare", corpus_file(V3), fifo)
    writer.join(timeout=10)
    assert status == 1, err
    assert "REGRESSION  matrix_addition2D" in out


def test_a_console_that_cannot_print_arrows_still_works() -> None:
    env = {**os.environ, "PYTHONIOENCODING": "cp1252"}
    done = subprocess.run([sys.executable, "-m", "perfgate", "compare", str(corpus_file(V3)), str(corpus_file(V4))],
                          capture_output=True, cwd=REPO, timeout=120, env=env)
    assert done.returncode == 1 and b"Traceback" not in done.stderr
    assert b"REGRESSION  matrix_addition2D" in done.stdout


def test_merge_recomputes_the_verdict_and_refuses_bad_fields(capsys: pytest.CaptureFixture[str],
                                                             tmp_path: Path) -> None:
    _, report = compare_json(capsys, V3, V4)
    report["verdict"] = "pass"  # a report that lies about its verdict
    lying = tmp_path / "lying.json"
    lying.write_text(json.dumps(report))
    status, out, _ = run_cli(capsys, "merge", lying)
    assert status == 1 and json.loads(out)["verdict"] == "fail"
    report["results"]["change"][0] = "a lot"
    broken = tmp_path / "broken.json"
    broken.write_text(json.dumps(report))
    status, out, err = run_cli(capsys, "merge", broken)
    assert status == 2 and out == "" and err.count("\n") == 1 and str(broken) in err


def test_output_dash_is_stdout_not_a_file_named_dash(capsys: pytest.CaptureFixture[str], tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    status, out, _ = run_cli(capsys, "compare", OUR_REPORT, OUR_REPORT, "--format", "json", "-o", "-")
    assert status == 0 and json.loads(out)["verdict"] == "pass"
    assert list(tmp_path.iterdir()) == []


def test_the_command_line_turns_numpy_huge_page_advice_off_unless_the_user_set_it() -> None:
    # Set before numpy is imported, as numpy reads it then (docs/performance.md: system time of large compares).
    script = ("import os, sys\nfrom perfgate.cli.shell import main\ntry:\n    main(['--version'])\nexcept SystemExit:\n"
              "    pass\nprint(os.environ['NUMPY_MADVISE_HUGEPAGE'], 'numpy' in sys.modules)")
    for given, expected in ((None, "0"), ("1", "1")):
        env = {k: v for k, v in os.environ.items() if k != "NUMPY_MADVISE_HUGEPAGE"}
        if given is not None:
            env["NUMPY_MADVISE_HUGEPAGE"] = given
        done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, check=True,
                              cwd=REPO, timeout=60)
        assert done.stdout.split()[-2:] == [expected, "False"]  # numpy not imported before it was set


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's malloc setting")
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's malloc setting: the command sets it on Linux only")
def test_the_command_line_keeps_a_freed_large_arrays_memory_for_the_next_one() -> None:
    # Without it every large array of a compare is mapped anew and faulted in page by page (docs/performance.md).
    script = ("import resource, sys\nfrom perfgate.cli.shell import entry\nsys.argv = ['perfgate', '--version']\n"
              "try:\n    entry()\nexcept SystemExit:\n    pass\nimport numpy as np\n"
              "def faults():\n    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt\n"
              "np.ones(50_000_000 // 8)\nbefore = faults()\nfor _ in range(4):\n    np.ones(50_000_000 // 8)\n"
              "print(faults() - before)")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True, cwd=REPO,
                          timeout=60)
    assert int(done.stdout.split()[-1]) < 2_000  # four arrays of 50 MB anew: 4 x 12,200 pages of 4 KiB


def test_the_comment_summarizes_every_launch_of_a_kernel_as_the_page_does(capsys: pytest.CaptureFixture[str],
                                                                         tmp_path: Path) -> None:
    """Kernels of a loop of 2,200 launches each, more than a comment could list: a row's medians (the "why"'s
    percentages) are over all of them, the same Markdown as its JSON report's and the same figures as the page."""
    base, cur = tmp_path / "base.csv", tmp_path / "cur.csv"
    write_raw_csv(base, 11_000, 20, seed=1, run=1)
    write_raw_csv(cur, 11_000, 20, seed=2)
    outputs = {fmt: tmp_path / f"report.{fmt}" for fmt in ("md", "json", "html")}
    for fmt, target in outputs.items():
        assert run_cli(capsys, "compare", base, cur, "--format", fmt, "-o", target)[0] == 1
    markdown = outputs["md"].read_text(encoding="utf-8")
    assert markdown == render_markdown(load_report(outputs["json"]))
    page = outputs["html"].read_text(encoding="utf-8")
    bounds = re.findall(r"compute [0-9.]+% → [0-9.]+%, memory [0-9.]+% → [0-9.]+%", markdown)
    assert bounds and all(bound in page for bound in bounds)
