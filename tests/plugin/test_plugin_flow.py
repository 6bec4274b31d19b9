"""``pytest --perfgate`` end to end, with no GPU: real pytest runs (pytester), a stub ``ncu`` that
runs the real child ``python -m pytest NODEID`` and exports a real Tesla T4 ``.ncu-rep`` from the
corpus, real baselines on disk, real session reports."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from helpers.plugin import (
    corpus_report,
    preload_heavy_modules,
    read_json,
    stub_calls,
    use_stub_ncu,
)

from perfgate.report import launch_rows, validate_report

pytest_plugins = ("pytester",)
preload_heavy_modules()

PERF_TEST = """
import os, pathlib, pytest

@pytest.mark.perfgate(kernels="regex:matrix_addition", metrics=["lts__t_sectors.sum"])
def test_add(perfgate):
    with pathlib.Path("ran.txt").open("a") as fh:
        fh.write(f"{os.getpid()} profiling={perfgate.profiling}\\n")
    if perfgate.profiling and os.environ.get("CRASH_IN_CHILD"):
        os.kill(os.getpid(), 11)
    if perfgate.profiling and os.environ.get("FAIL_IN_CHILD"):
        assert 1 + 1 == 3, "the kernel gave a wrong answer"
    if perfgate.profiling and os.environ.get("SKIP_IN_CHILD"):
        pytest.skip("needs a CUDA build of torch")
    with perfgate.region("add"):
        pass

def test_plain():
    pass
"""

BASELINE = Path("baselines") / "tesla-t4-sm75" / "test_perf__test_add.json"


class Env:
    """The stub ncu and the environment variables that steer it."""

    def __init__(self, pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
        self.pytester = pytester
        self.monkeypatch = monkeypatch
        self.ncu, self.calls_file = use_stub_ncu(pytester, monkeypatch)
        self.profile("report_v3_loop_unroll")

    def profile(self, corpus_name: str) -> None:
        self.monkeypatch.setenv("PERFGATE_STUB_REPORT", str(corpus_report(corpus_name)))

    def mode(self, mode: str) -> None:
        self.monkeypatch.setenv("PERFGATE_STUB_MODE", mode)

    def run(self, *args: str) -> pytest.RunResult:
        # "--opt=PATH" in one word: pytest takes a separate path-like word for a test path while it
        # picks the rootdir (plugin options are not known yet at that point).
        return self.pytester.runpytest("--perfgate", f"--perfgate-ncu={self.ncu}", "-rsx", *args)

    def calls(self) -> list[dict[str, Any]]:
        return stub_calls(self.calls_file)

    def report(self, name: str = "perfgate-report.json") -> dict[str, Any]:
        return read_json(self.pytester.path / name)


@pytest.fixture
def env(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> Env:
    pytester.makepyfile(test_perf=PERF_TEST)
    return Env(pytester, monkeypatch)


def _perfgate_section(result: pytest.RunResult) -> str:
    """The ``perfgate`` section of the terminal summary."""
    text = result.stdout.str()
    start = text.index("- perfgate -")
    end = text.find("\n=", start)
    return text[start:end if end >= 0 else None]


def _litter(*folders: Path) -> list[Path]:
    """Temporary files a writer left behind."""
    return [p for folder in folders for p in folder.rglob("*") if p.name.endswith(".tmp")]


def _ran(pytester: pytest.Pytester) -> list[str]:
    path = pytester.path / "ran.txt"
    return path.read_text().splitlines() if path.exists() else []


def test_plain_pytest_runs_the_body_here_with_region_a_no_op(env: Env) -> None:
    result = env.pytester.runpytest()
    result.assert_outcomes(passed=2)
    assert _ran(env.pytester) == [f"{os.getpid()} profiling=False"]
    assert env.calls() == []
    assert not (env.pytester.path / "perfgate-report.json").exists()


def test_update_writes_the_baseline_then_the_same_profile_passes(env: Env) -> None:
    result = env.run("--perfgate-update")
    result.assert_outcomes(passed=2)
    baseline = read_json(env.pytester.path / BASELINE)
    assert baseline["device"] == {"name": "Tesla T4", "cc": "7.5"}
    assert baseline["settings"] == {"cache_control": "all", "clock_control": "base", "ncu_version": "2025.3.1.0",
                                   "replay_passes": 30, "sections": ""}  # the report's
    assert [e["name"] for e in baseline["entries"]] == ["matrix_addition2D"]
    assert baseline["entries"][0]["metrics"]["gpu__time_duration.sum"] == {"unit": "ns", "value": 67776}
    # the summary says what was written, not that the test is "new"
    result.stdout.fnmatch_lines(["*-- perfgate --*",
                                 "perfgate UPDATED: 1 test measured; launches against the previous baselines: 1 had no baseline",
                                 "  baselines written: 1 file under baselines"])
    assert " new" not in _perfgate_section(result)
    assert "--perfgate-update: baselines written: 1 file under baselines" in env.report()["notes"]
    # a first recording compared nothing: its report says so, as reading it back would
    assert env.report()["verdict"] == "not measured"
    assert validate_report(env.report(), "perfgate-report.json")["verdict"] == "not measured"

    # the body ran once, in the profiled child, with the region live
    (line,) = _ran(env.pytester)
    pid, profiling = line.split()
    assert int(pid) != os.getpid() and profiling == "profiling=True"
    (call,) = env.calls()
    assert call["env"]["PERFGATE_CHILD"] == "1" and call["env"]["CUDA_VISIBLE_DEVICES"] is None
    assert call["cwd"] == str(env.pytester.path)
    argv = call["argv"]
    assert argv[:13] == ["--config-file", "off", "--target-processes", "all", "--clock-control", "base",
                         "--cache-control", "all", "--nvtx", "--nvtx-push-pop-scope", "process", "--nvtx-include",
                         "regex:perfgate@.+/"]
    assert "lts__t_sectors.sum" in argv[argv.index("--metrics") + 1].split(",")
    assert argv[argv.index("--kernel-name") + 1] == "regex:matrix_addition"
    assert argv[argv.index("-m") + 1:argv.index("-m") + 3] == ["pytest", "test_perf.py::test_add"]

    result = env.run()
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(["perfgate PASS: 1 unchanged"])
    assert "baselines written" not in result.stdout.str()
    report = env.report()
    assert report["verdict"] == "pass" and report["summary"]["unchanged"] == 1
    (launch,) = launch_rows(report)
    assert launch["test"] == "test_perf.py::test_add" and launch["path"] == "test_perf.py" and launch["line"] == 3


def test_a_regression_fails_the_test_with_a_per_kernel_diff(env: Env) -> None:
    env.run("--perfgate-update").assert_outcomes(passed=2)
    env.profile("report_v4_8_per_thread")  # the real 2.2x slower version of the same kernel
    result = env.run()
    result.assert_outcomes(passed=1, failed=1)
    assert result.ret == 1
    result.stdout.fnmatch_lines([
        "*perfgate: performance regression*",
        "REGRESSION  test_perf.py::test_add: matrix_addition2D",
        "*regression  duration 67.78 µs → 151.3 µs (+123.3%)*",
        "*launch config changed: grid (32, 63, 1) → (8, 63, 1); registers 16 → 18",
        "*pytest --perfgate --perfgate-update 'test_perf.py::test_add'",
    ])
    result.stdout.fnmatch_lines(["*-- perfgate --*", "perfgate FAIL: 1 regression",
                                 "  REGRESSION test_perf.py::test_add: matrix_addition2D"])
    report = env.report()
    assert report["verdict"] == "fail" and report["summary"]["regression"] == 1
    kept = env.pytester.path / "perfgate-artifacts" / "test_perf__test_add"
    assert sorted(p.name for p in kept.iterdir()) == ["child.json", "ncu-command.txt", "ncu.log", "output.txt", "profile.ncu-rep"]
    result.stdout.fnmatch_lines([f"*ncu's report of this run (open it in Nsight Compute): {kept / 'profile.ncu-rep'}"])
    # updating accepts the new numbers; the next run passes
    update = env.run("--perfgate-update")
    update.assert_outcomes(passed=2)
    update.stdout.fnmatch_lines([("perfgate UPDATED: 1 test measured; launches against the previous baselines: "
                                  "1 regression (accepted)"), "  baselines written: 1 file under baselines"])
    assert "REGRESSION" not in _perfgate_section(update)
    assert read_json(env.pytester.path / BASELINE)["entries"][0]["grid"] == "(8, 63, 1)"
    env.run().assert_outcomes(passed=2)


def test_a_marker_threshold_loosens_the_gate_for_its_test(env: Env) -> None:
    env.run("--perfgate-update").assert_outcomes(passed=2)
    env.pytester.makepyfile(test_perf=PERF_TEST.replace(
        'metrics=["lts__t_sectors.sum"]',
        'metrics=["lts__t_sectors.sum"], thresholds={"gpu__time_duration.sum": "off", "dram__bytes_read.sum": "off",'
        ' "dram__bytes_write.sum": "off"}'))
    env.profile("report_v4_8_per_thread")
    env.run().assert_outcomes(passed=2)


def test_a_missing_baseline_is_new_not_failed_unless_strict(env: Env) -> None:
    result = env.run()
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(["*1 test has no baseline yet (reported as new; create with --perfgate-update)*"])
    report = env.report()
    assert report["summary"]["new"] == 1 and report["verdict"] == "not measured"  # nothing compared: not a pass
    assert any("no baseline for Tesla T4 (CC 7.5) at baselines/tesla-t4-sm75/test_perf__test_add.json" in n
               for n in report["notes"])
    assert not (env.pytester.path / "baselines").exists()

    strict = env.run("--perfgate-strict")
    strict.assert_outcomes(passed=1, failed=1)
    strict.stdout.fnmatch_lines([("*no baseline for Tesla T4 (CC 7.5) at baselines/tesla-t4-sm75/"
                                  "test_perf__test_add.json (--perfgate-strict)*")])
    assert env.report()["verdict"] == "fail"


def test_clock_and_cache_control_are_explicit_and_recorded(env: Env) -> None:
    env.run("--perfgate-update", "--perfgate-clock-control", "none",
            "--perfgate-cache-control", "none").assert_outcomes(passed=2)
    argv = env.calls()[-1]["argv"]
    assert argv[argv.index("--clock-control") + 1] == "none" and argv[argv.index("--cache-control") + 1] == "none"
    settings = read_json(env.pytester.path / BASELINE)["settings"]
    assert settings["clock_control"] == "none" and settings["cache_control"] == "none"
    env.run().assert_outcomes(passed=2)
    assert any("different ncu settings than the baseline (clock_control 'none' → 'base'; cache_control 'none' → "
               "'all')" in note for note in env.report()["notes"])


def test_pyproject_settings_apply_and_flags_override_them(env: Env) -> None:
    env.pytester.makepyprojecttoml("""
        [tool.perfgate]
        baselines = "perf/baselines"
        report = "out/perf.json"
        clock_control = "none"
        """)
    env.run("--perfgate-update").assert_outcomes(passed=2)
    written = env.pytester.path / "perf" / BASELINE
    assert read_json(written)["settings"]["clock_control"] == "none"
    assert (env.pytester.path / "out" / "perf.json").is_file()
    env.run("--perfgate-update", "--perfgate-clock-control", "base").assert_outcomes(passed=2)
    assert read_json(written)["settings"]["clock_control"] == "base"


def test_a_bad_pyproject_key_is_one_clear_error(env: Env) -> None:
    env.pytester.makepyprojecttoml("[tool.perfgate]\ntreshold = 3\n")
    result = env.run()
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*perfgate:*unknown key(s) treshold*"])


def test_no_ncu_skips_with_the_fix_and_strict_fails(env: Env) -> None:
    missing = str(env.pytester.path / "nowhere" / "ncu")
    result = env.pytester.runpytest("--perfgate", f"--perfgate-ncu={missing}", "-rs")
    result.assert_outcomes(passed=1, skipped=1)
    # the skip points at the test (as a skip marker would), not at perfgate's own code
    result.stdout.fnmatch_lines([("SKIPPED [[]1] test_perf.py:3: perfgate: ncu not found*install Nsight Compute or "
                                  "pass --perfgate-ncu PATH*")])
    assert "session.py" not in result.stdout.str() and "runner.py" not in result.stdout.str()
    assert _ran(env.pytester) == []  # a skipped perf test does not run at all
    report = env.report()
    assert any("skipped: ncu not found" in n for n in report["notes"])
    # unmeasured is not passed: the session's verdict, its JSON and the terminal summary say so
    assert report["verdict"] == "not measured"
    assert [u["test"] for u in report["unmeasured"]] == ["test_perf.py::test_add"]
    assert "ncu not found" in report["unmeasured"][0]["cause"]
    assert "PASS" not in _perfgate_section(result)
    result.stdout.fnmatch_lines(["*perfgate NOT MEASURED*", "*1 perf test not measured*ncu not found*"])
    markdown = (env.pytester.path / "perfgate-report.md").read_text(encoding="utf-8")
    assert markdown.startswith("### ⚠️ perfgate: 1 perf test not measured: ncu not found")
    strict = env.pytester.runpytest("--perfgate", f"--perfgate-ncu={missing}", "--perfgate-strict")
    strict.assert_outcomes(passed=1, errors=1)  # failed in setup, before the test's fixtures
    strict.stdout.fnmatch_lines(["*perfgate: ncu not found*(--perfgate-strict)*"])
    assert env.report()["verdict"] == "fail"


def test_no_gpu_skips_with_the_cause(env: Env) -> None:
    env.monkeypatch.delenv("PERFGATE_ASSUME_GPU")
    env.monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "-1")  # hides every GPU, also on a machine that has one
    result = env.run()
    result.assert_outcomes(passed=1, skipped=1)
    result.stdout.fnmatch_lines(
        ["SKIPPED [[]1] test_perf.py:3: perfgate: no NVIDIA GPU visible*CUDA_VISIBLE_DEVICES='-1'*"])
    assert env.calls() == []


def test_an_ncu_that_does_not_start_skips(env: Env) -> None:
    env.mode("version-fails")
    result = env.run()
    result.assert_outcomes(passed=1, skipped=1)
    result.stdout.fnmatch_lines(["*perfgate: ncu is not usable:*--version' failed with status 1*"])


def test_no_counter_permission_skips_with_the_fix_and_strict_fails(env: Env) -> None:
    env.mode("noperm")
    result = env.run()
    result.assert_outcomes(passed=1, skipped=1)
    result.stdout.fnmatch_lines([("SKIPPED [[]1] test_perf.py:3: *ERR_NVGPUCTRPERM*CAP_SYS_ADMIN*--cap-add=SYS_ADMIN*"
                                  "NVreg_RestrictProfilingToAdminUsers=0*")])  # found while profiling
    assert "session.py" not in result.stdout.str() and "runner.py" not in result.stdout.str()
    strict = env.run("--perfgate-strict")
    strict.assert_outcomes(passed=1, failed=1)  # found while profiling: a failure of the call
    strict.stdout.fnmatch_lines(["*ERR_NVGPUCTRPERM*(--perfgate-strict)*"])


def test_a_crashing_child_fails_with_ncus_message(env: Env) -> None:
    env.monkeypatch.setenv("CRASH_IN_CHILD", "1")
    result = env.run()
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["*the profiled test never reported a result*",
                                 "*==ERROR== The application returned an error code (11).*",
                                 ("*(ncu's report, log and the test's output are kept in "
                                  "perfgate-artifacts/test_perf__test_add)")])
    kept = env.pytester.path / "perfgate-artifacts" / "test_perf__test_add"
    assert "==ERROR== The application returned an error code (11)." in (kept / "ncu.log").read_text()
    assert env.report()["verdict"] == "fail"


def test_a_hanging_profile_is_killed_and_fails(env: Env) -> None:
    env.mode("hang")
    result = env.run("--perfgate-timeout", "1")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["*test_perf.py::test_add timed out under ncu: ncu did not finish after 1 s*",
                                 "*==PROF== Connected to process 4242 (python3)*"])
    assert result.duration < 30


def test_an_ncu_error_fails_with_ncus_own_words(env: Env) -> None:
    env.mode("error")
    result = env.run()
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["*perfgate: ncu failed:*", "*==ERROR== Failed to find metric regex:^nosuch$*"])


def test_a_failing_test_fails_with_its_own_message(env: Env) -> None:
    env.monkeypatch.setenv("FAIL_IN_CHILD", "1")
    result = env.run()
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["*the test failed while profiled under ncu (call)*",
                                 "*AssertionError: the kernel gave a wrong answer*"])


def test_a_skip_inside_the_child_skips(env: Env) -> None:
    env.monkeypatch.setenv("SKIP_IN_CHILD", "1")
    result = env.run()
    result.assert_outcomes(passed=1, skipped=1)
    result.stdout.fnmatch_lines(["SKIPPED [[]1] test_perf.py:3: needs a CUDA build of torch"])


def test_an_empty_profile_says_what_the_filters_saw(env: Env) -> None:
    env.mode("nokernels")
    result = env.run()
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines([("*ncu profiled no kernel ('No kernels were profiled') matching "
                                  "kernels='regex:matrix_addition' inside the region(s) the test entered (add)*")])


def test_a_test_that_never_enters_a_region_is_told_how_to_mark_one(env: Env) -> None:
    env.pytester.makepyfile(test_perf="""
        def test_add(perfgate):
            pass
        """)
    env.mode("nokernels")
    result = env.run()
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*the test never entered perfgate.region(...)*with perfgate.region(\"name\")*"])


def test_a_marker_typo_is_an_error_even_without_perfgate(env: Env) -> None:
    env.pytester.makepyfile(test_perf="""
        import pytest

        @pytest.mark.perfgate(kernal="softmax")
        def test_add(perfgate):
            pass
        """)
    message = ("test_perf.py::test_add: unknown perfgate marker argument(s) kernal; known: kernels, metrics, "
               "thresholds, regions, timeout, accept_unpaired_kernels, flops")
    for result in (env.pytester.runpytest(), env.run()):
        result.assert_outcomes(errors=1)
        result.stdout.fnmatch_lines([message])
        text = result.stdout.str()
        assert "Traceback" not in text and "During handling" not in text
        # once, not once per exception in the chain (the short summary may repeat it: under CI=true
        # pytest does not cut that line to the terminal's width)
        errors_section = text.split("short test summary info")[0]
        assert errors_section.count(message) == 1
    assert env.calls() == []


def test_session_report_in_three_formats_and_the_github_step_summary(env: Env) -> None:
    env.run("--perfgate-update").assert_outcomes(passed=2)
    summary = env.pytester.path.parent / f"{env.pytester.path.name}-step-summary.md"
    summary.write_text("earlier step\n", encoding="utf-8")
    env.monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    env.profile("report_v4_8_per_thread")
    env.run("--perfgate-report=out/perf.json").assert_outcomes(passed=1, failed=1)
    out = env.pytester.path / "out"
    report = read_json(out / "perf.json")
    assert report["format"] == "perfgate-report" and report["verdict"] == "fail"
    assert [launch["kernel"] for launch in launch_rows(report)] == ["matrix_addition2D"]
    markdown = (out / "perf.md").read_text(encoding="utf-8")
    assert "matrix\\_addition2D" in markdown and "regression" in markdown
    assert (out / "perf.html").read_text(encoding="utf-8").lstrip().lower().startswith("<!doctype html")
    text = summary.read_text(encoding="utf-8")
    assert text.startswith("earlier step\n") and markdown.strip() in text


@pytest.mark.parametrize("how", ["existing directory", "trailing slash", "pyproject", "md beside it"])
def test_a_report_path_that_is_a_directory_is_one_usage_error(env: Env, how: str) -> None:
    reports = env.pytester.mkdir("reports")
    args: tuple[str, ...] = (f"--perfgate-report={reports}",)
    expected = f"ERROR: perfgate: cannot write the session report: --perfgate-report={reports} names a directory; *"
    if how == "trailing slash":
        args = ("--perfgate-report=new/",)
        expected = "ERROR: perfgate: cannot write the session report: --perfgate-report=new/ names a directory; *"
    elif how == "pyproject":
        env.pytester.makepyprojecttoml('[tool.perfgate]\nreport = "reports"\n')
        args = ()
        expected = "ERROR: perfgate: cannot write the session report: [[]tool.perfgate] report = 'reports' names a *"
    elif how == "md beside it":
        (reports / "perf.md").mkdir()
        args = (f"--perfgate-report={reports / 'perf.json'}",)
        expected = f"ERROR: perfgate: cannot write the session report: *{reports / 'perf.md'} is a directory*"
    result = env.run(*args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([expected])
    assert "Traceback" not in result.stderr.str() + result.stdout.str()
    assert env.calls() == [] and _ran(env.pytester) == []  # found before anything ran
    assert sorted(p.name for p in reports.rglob("*")) == (["perf.md"] if how == "md beside it" else [])
    assert not (env.pytester.path / "new").exists() and _litter(env.pytester.path) == []


def test_a_report_that_cannot_be_written_is_one_summary_line_and_leaves_no_temp_file(env: Env) -> None:
    # The report's .md path turns into a directory while the session runs: found only when writing.
    env.pytester.makepyfile(test_perf="""
        import os

        def test_takes_the_report_path():
            os.mkdir("out/perf.md")
        """)
    env.pytester.mkdir("out")
    result = env.run("--perfgate-report=out/perf.json")
    result.assert_outcomes(passed=1)
    assert result.ret == pytest.ExitCode.OK  # the tests passed; the report's problem is said, not hidden
    section = _perfgate_section(result)
    assert "report: out/perf.json\nperfgate: cannot write the session report out/perf.md: Is a directory" in section
    assert "Traceback" not in result.stdout.str() + result.stderr.str()
    out = env.pytester.path / "out"
    assert sorted(p.name for p in out.iterdir()) == ["perf.json", "perf.md"]  # nothing else, no temp file
    assert _litter(env.pytester.path) == []


def test_configured_paths_are_relative_to_the_pyprojects_folder(env: Env) -> None:
    # pyproject.toml above the rootdir (pytest.ini in sub/), pytest started from a third folder.
    project = env.pytester.path
    env.pytester.makepyprojecttoml('[tool.perfgate]\nbaselines = "perf/baselines"\n')
    sub = env.pytester.mkdir("sub")
    (sub / "pytest.ini").write_text("[pytest]\n", encoding="utf-8")
    (sub / "test_perf.py").write_text(PERF_TEST, encoding="utf-8")
    (project / "test_perf.py").unlink()
    elsewhere = env.pytester.mkdir("elsewhere")
    env.monkeypatch.chdir(elsewhere)
    result = env.run("--perfgate-update", str(sub))
    result.assert_outcomes(passed=2)
    assert "rootdir: " + str(sub) in result.stdout.str()
    assert (project / "perf" / "baselines" / "tesla-t4-sm75" / "test_perf__test_add.json").is_file()
    assert (project / "perfgate-report.json").is_file()  # the default report too: beside the pyproject.toml
    assert not (sub / "perf").exists() and not (elsewhere / "perf").exists()
    result.stdout.fnmatch_lines(["  baselines written: 1 file under ../perf/baselines"])


def test_help_lists_every_option_with_its_default(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest("--help")
    text = " ".join(result.stdout.str().split())
    for option in ("--perfgate ", "--perfgate-update", "--perfgate-baselines", "--perfgate-strict",
                   "--perfgate-report", "--perfgate-ncu", "--perfgate-clock-control", "--perfgate-cache-control",
                   "--perfgate-timeout", "--perfgate-threshold"):
        start = text.index(option)
        following = text[start:start + 600]
        assert "(default:" in following, option
    assert "(default: [tool.perfgate] timeout, else 600)" in text
    assert "(default: [tool.perfgate] clock_control, else 'base')" in text


def test_an_unknown_threshold_spec_on_the_command_line_is_a_usage_error(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest("--perfgate", "--perfgate-threshold", "gpu__time_duration.sum=fast")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*bad threshold 'fast'*"])


def test_a_command_line_threshold_is_applied(env: Env) -> None:
    env.profile("report_v2")
    env.run("--perfgate-update").assert_outcomes(passed=2)
    env.profile("report_v3_loop_unroll")  # the same work measured again: +0.4% duration, +0.03% DRAM
    env.run().assert_outcomes(passed=2)
    env.run("--perfgate-threshold", "gpu__time_duration.sum=0.1%").assert_outcomes(passed=1, failed=1)
    assert env.report()["metrics"]["threshold"].count("0.1%") == 1


XDIST_SUITE = """
import pytest

@pytest.mark.perfgate
@pytest.mark.parametrize("size", [1, 2, 3])
def test_layer(perfgate, size):
    with perfgate.region(f"layer{size}"):
        pass
"""


def test_xdist_profiles_one_gpu_per_worker_and_writes_one_session_report(env: Env) -> None:
    env.pytester.makepyfile(test_perf=XDIST_SUITE)
    env.monkeypatch.setenv("PERFGATE_ASSUME_GPU", "2")
    args = ("-p", "xdist", "-n", "2", "--perfgate", f"--perfgate-ncu={env.ncu}")
    result = env.pytester.runpytest_subprocess(*args, "--perfgate-update")
    result.assert_outcomes(passed=3)
    calls = env.calls()
    assert len(calls) == 3
    assert {call["env"]["CUDA_VISIBLE_DEVICES"] for call in calls} <= {"0", "1"}  # gw0 -> GPU 0, gw1 -> GPU 1
    assert all(call["argv"][-2:] == ["-n", "0"] for call in calls)  # the child never fans out again
    report = env.report()
    assert sorted(launch["test"] for launch in launch_rows(report)) == [
        "test_perf.py::test_layer[1]", "test_perf.py::test_layer[2]", "test_perf.py::test_layer[3]"]
    assert len(report["comparisons"]) == 3
    assert len(list((env.pytester.path / "baselines" / "tesla-t4-sm75").iterdir())) == 3
    result.stdout.fnmatch_lines([
        "perfgate UPDATED: 3 tests measured; launches against the previous baselines: 3 had no baseline",
        "  baselines written: 3 files under baselines"])

    again = env.pytester.runpytest_subprocess(*args)
    again.assert_outcomes(passed=3)
    assert env.report()["summary"]["unchanged"] == 3


def test_without_nvtx_in_the_child_the_test_fails_with_the_install_line(env: Env) -> None:
    env.pytester.makeconftest("""
        import os, sys
        if os.environ.get("PERFGATE_CHILD") == "1":
            sys.modules["nvtx"] = None  # as if the package were not installed in the profiled environment
        """)
    result = env.run()
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["*the test failed while profiled under ncu (call)*",
                                 "*the 'nvtx' package is missing in the profiled process*pip install nvtx*"])
    assert "During handling" not in result.stdout.str() and "ImportError" not in result.stdout.str()


def test_an_expected_failure_stays_expected(env: Env) -> None:
    env.pytester.makepyfile(test_perf="""
        import pytest

        @pytest.mark.xfail(reason="known slow path", strict=True)
        @pytest.mark.perfgate
        def test_add(perfgate):
            with perfgate.region("add"):
                assert perfgate.profiling is False  # fails in the child only
        """)
    result = env.run()
    result.assert_outcomes(xfailed=1)


def test_metrics_option_and_multi_pass_metrics_reach_ncu(env: Env) -> None:
    """The command ncu gets: no multi-pass speed-of-light metric by default (10 replay passes instead of 1
    on an H100); ``--perfgate-metrics=+NAME`` (the CLI's ``--metrics`` syntax) adds one."""
    sol = "sm__throughput.avg.pct_of_peak_sustained_elapsed"
    env.run("--perfgate-update").assert_outcomes(passed=2)
    collected = env.calls()[-1]["argv"][env.calls()[-1]["argv"].index("--metrics") + 1].split(",")
    assert sol not in collected and "gpu__time_duration.sum" in collected and "lts__t_sectors.sum" in collected
    env.run(f"--perfgate-metrics=+{sol}").assert_outcomes(passed=2)
    argv = env.calls()[-1]["argv"]
    assert sol in argv[argv.index("--metrics") + 1].split(",")


def test_a_fixture_only_perf_test_is_selected_by_the_marker(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_fx="def test_uses_fixture(perfgate):\n    pass\n\ndef test_plain():\n    pass\n")
    result = pytester.runpytest("-m", "perfgate", "--collect-only", "-q")
    result.stdout.fnmatch_lines(["test_fx.py::test_uses_fixture", "1/2 tests collected (1 deselected)*"])
