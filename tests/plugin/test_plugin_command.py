"""The ncu command perfgate builds for a perf test, the child command, and reading ncu's log.

The command is built by a pure function, so it is checked here exactly, with no GPU and no ncu.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import pytest

from perfgate.plugin.ncu_run import (
    APP_ERROR,
    ERROR,
    NO_KERNELS,
    NO_PERMISSION,
    OK,
    TIMEOUT,
    NcuRun,
    build_child_command,
    build_ncu_command,
    diagnose_ncu_run,
    ncu_version,
    parse_ncu_version,
    profiling_metrics,
    run_ncu,
)
from perfgate.compare import CompareOptions
from perfgate.errors import ConfigError
from perfgate.gate import baseline_name
from perfgate.metrics import parse_threshold
from perfgate.plugin.fixture import PerfgateFixture, check_region_name
from perfgate.plugin.marker import PerfMarker, parse_marker
from perfgate.vocabulary import IDENTITY_METRICS

DEFAULT_NCU_METRICS = [
    "device__attribute_compute_capability_major",
    "device__attribute_compute_capability_minor",
    "device__attribute_display_name",
    "dram__bytes_read.sum",
    "dram__bytes_write.sum",
    "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed",
    "gpu__time_duration.sum",
    "launch__block_dim_x",
    "launch__block_dim_y",
    "launch__block_dim_z",
    "launch__grid_dim_x",
    "launch__grid_dim_y",
    "launch__grid_dim_z",
    "launch__registers_per_thread",
    "launch__shared_mem_per_block_dynamic",
    "launch__shared_mem_per_block_static",
    "sm__throughput.avg.pct_of_peak_sustained_elapsed",
    "sm__warps_active.avg.pct_of_peak_sustained_active",
    "smsp__inst_executed.sum",
]


def test_default_metrics_are_the_compared_ones_plus_identity_without_host_timings() -> None:
    metrics = profiling_metrics(CompareOptions().wanted_metrics())
    assert metrics == DEFAULT_NCU_METRICS
    assert not any(m.startswith("time.") for m in metrics)
    assert set(IDENTITY_METRICS) <= set(metrics)


def test_exact_ncu_command_for_the_issue_marker(tmp_path: Path) -> None:
    marker = parse_marker((), {"kernels": "regex:softmax",
                               "metrics": ["gpu__time_duration.sum", "dram__bytes_read.sum", "lts__t_sectors.sum"]},
                          "t::x")
    metrics = profiling_metrics([*CompareOptions().wanted_metrics(), *marker.metrics])
    program = ["python", "-m", "pytest", "tests/test_softmax.py::test_softmax"]
    command = build_ncu_command(ncu="/opt/nsight/ncu", program=program, export=tmp_path / "p.ncu-rep",
                                log_file=tmp_path / "ncu.log", metrics=metrics, clock_control="base",
                                cache_control="all", kernels=marker.kernels, regions=marker.regions)
    expected_metrics = sorted([*DEFAULT_NCU_METRICS, "lts__t_sectors.sum"])
    assert command == [
        "/opt/nsight/ncu",
        "--config-file", "off",
        "--target-processes", "all",
        "--clock-control", "base",
        "--cache-control", "all",
        "--nvtx",
        "--nvtx-push-pop-scope", "process",
        "--nvtx-include", "regex:perfgate@.+/",
        "--metrics", ",".join(expected_metrics),
        "--kernel-name-base", "function",
        "--kernel-name", "regex:softmax",
        "--export", str(tmp_path / "p.ncu-rep"),
        "--force-overwrite",
        "--log-file", str(tmp_path / "ncu.log"),
        "python", "-m", "pytest", "tests/test_softmax.py::test_softmax",
    ]


def test_named_regions_become_one_include_each_and_no_kernel_filter_by_default(tmp_path: Path) -> None:
    command = build_ncu_command(ncu="ncu", program=["prog"], export=tmp_path / "r.ncu-rep",
                                metrics=["gpu__time_duration.sum"], clock_control="none", cache_control="none",
                                regions=("layer1", "layer 2"))
    assert command == ["ncu", "--config-file", "off", "--target-processes", "all", "--clock-control", "none",
                       "--cache-control", "none", "--nvtx", "--nvtx-push-pop-scope", "process",
                       "--nvtx-include", "perfgate@layer1/", "--nvtx-include", "perfgate@layer 2/",
                       "--metrics", "gpu__time_duration.sum", "--export", str(tmp_path / "r.ncu-rep"),
                       "--force-overwrite", "prog"]


@pytest.mark.parametrize("clock, cache", [("reset", "all"), ("", "all"), ("turbo", "all"), ("base", "some")])
def test_settings_that_would_not_profile_are_refused(tmp_path: Path, clock: str, cache: str) -> None:
    with pytest.raises(ConfigError):
        build_ncu_command(ncu="ncu", program=["p"], export=tmp_path / "x", metrics=["m"], clock_control=clock,
                          cache_control=cache)


def test_child_command(tmp_path: Path) -> None:
    command = build_child_command(python="/usr/bin/python3", nodeid="tests/test_a.py::test_b[x-1]",
                                  rootdir=Path("/repo"), basetemp=tmp_path / "bt", cache_dir=tmp_path / "c",
                                  inifile=Path("/repo/pyproject.toml"), import_mode="importlib", xdist_loaded=True,
                                  load_plugin=True)
    assert command == ["/usr/bin/python3", "-m", "pytest", "tests/test_a.py::test_b[x-1]", "--rootdir", "/repo",
                       "-c", "/repo/pyproject.toml", "-o", f"cache_dir={tmp_path / 'c'}", "--basetemp",
                       str(tmp_path / "bt"), "--runxfail", "-q", "--no-header", "-p", "no:randomly",
                       "--import-mode=importlib", "-n", "0", "-p", "perfgate.plugin"]


def _run(log: str = "", output: str = "", returncode: int | None = 0, timed_out: bool = False) -> NcuRun:
    return NcuRun(("ncu",), returncode=returncode, timed_out=timed_out, seconds=1.0, output=output, log=log)


PERM_LINE = ("==ERROR== ERR_NVGPUCTRPERM - The user does not have permission to access NVIDIA GPU Performance "
             "Counters on the target device 0.")


@pytest.mark.parametrize("run, outcome, words", [
    (_run("==PROF== Connected to process 1 (python3)\n==PROF== Report: /tmp/x.ncu-rep\n"), OK, ""),
    (_run("==PROF== Connected\n" + PERM_LINE + "\n", returncode=1), NO_PERMISSION, "CAP_SYS_ADMIN"),
    (_run("==PROF== Disconnected from process 1\n==WARNING== No kernels were profiled.\n"), NO_KERNELS, "No kernels"),
    (_run("==ERROR== Failed to find metric lts__nosuch.sum\n", returncode=1), ERROR, "lts__nosuch"),
    (_run("==ERROR== The application returned an error code (11).\n", returncode=11), APP_ERROR, "error code (11)"),
    (_run("", output="Segmentation fault", returncode=139), ERROR, "status 139"),
    (_run("==PROF== Connected to process 7 (python3)\n", returncode=None, timed_out=True), TIMEOUT, "Connected"),
])
def test_diagnosis_of_ncu_logs(run: NcuRun, outcome: str, words: str) -> None:
    diagnosis = diagnose_ncu_run(run, timeout=5)
    assert diagnosis.outcome == outcome
    assert words in diagnosis.message


def test_permission_message_carries_every_fix() -> None:
    message = diagnose_ncu_run(_run(PERM_LINE, returncode=1)).message
    for fix in ("root", "CAP_SYS_ADMIN", "CAP_PERFMON", "--cap-add=SYS_ADMIN", "NVreg_RestrictProfilingToAdminUsers=0"):
        assert fix in message


def test_run_ncu_kills_the_whole_process_group_on_timeout(tmp_path: Path) -> None:
    """A hung profiled program (and anything it started) is killed: never a hang."""
    pid_file = tmp_path / "grandchild.pid"
    script = ("import subprocess, sys, time\n"
              f"p = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'])\n"
              f"open({str(pid_file)!r}, 'w').write(str(p.pid))\n"
              "print('started', flush=True)\n"
              "time.sleep(60)\n")
    started = time.monotonic()
    run = run_ncu([sys.executable, "-c", script], timeout=1.5, output_file=tmp_path / "out.txt")
    assert run.timed_out and run.returncode is None
    assert time.monotonic() - started < 15
    assert "started" in run.output
    grandchild = int(pid_file.read_text())
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        try:
            os.kill(grandchild, 0)
        except ProcessLookupError:
            break
        try:  # reap it if it became our zombie (it is not our child, but be tolerant)
            os.waitpid(grandchild, os.WNOHANG)
        except ChildProcessError:
            pass
        time.sleep(0.05)
    else:
        pytest.fail("the profiled program's own child survived the timeout")


def test_run_ncu_reports_a_missing_executable(tmp_path: Path) -> None:
    run = run_ncu([str(tmp_path / "no-such-ncu")], timeout=5, output_file=tmp_path / "o.txt")
    assert run.returncode == 127 and "cannot start" in run.output


def test_ncu_version(tmp_path: Path) -> None:
    assert parse_ncu_version("NVIDIA (R) Nsight Compute Command Line Profiler\nVersion 2025.3.1.0 (build 1)") \
        == "2025.3.1.0"
    assert parse_ncu_version("garbage") is None
    fake = tmp_path / "ncu"
    fake.write_text("#!/bin/sh\necho 'Version 2024.1.0.0 (build 5)'\n")
    fake.chmod(0o755)
    assert ncu_version(str(fake)) == ("2024.1.0.0", "")
    broken = tmp_path / "broken"
    broken.write_text("#!/bin/sh\necho nope >&2\nexit 3\n")
    broken.chmod(0o755)
    version, problem = ncu_version(str(broken))
    assert version is None and "status 3" in problem and "nope" in problem


def test_marker_parsing_and_validation() -> None:
    marker = parse_marker((), {"kernels": "regex:softmax", "metrics": "a.sum, b.sum",
                               "thresholds": {"a.sum": "3%"}, "regions": ["l1", "l2"], "timeout": 30}, "t")
    assert marker == PerfMarker(kernels="regex:softmax", metrics=("a.sum", "b.sum"),
                                thresholds={"a.sum": parse_threshold("3%")}, regions=("l1", "l2"), timeout=30.0)
    assert parse_marker((), {}, "t") == PerfMarker()
    bad = [((), {"kernel": "x"}, "unknown perfgate marker argument(s) kernel"),
           (("x",), {}, "keyword arguments only"),
           ((), {"metrics": [1]}, "list of names"),
           ((), {"thresholds": {"a": "fast"}}, "bad threshold"),
           ((), {"thresholds": ["a"]}, "must be a dict"),
           ((), {"regions": ["a/b"]}, "may not contain"),
           ((), {"timeout": 0}, "positive number"),
           ((), {"kernels": ""}, "kernel name")]
    for args, kwargs, words in bad:
        with pytest.raises(ConfigError, match="^tests/x.py::t: ") as info:
            parse_marker(args, kwargs, "tests/x.py::t")
        assert words in str(info.value)


def test_fixture_region_is_a_free_no_op_outside_the_child() -> None:
    fixture = PerfgateFixture(profiling=False)
    assert not fixture.profiling
    with fixture.region("anything"):
        pass
    for name in ("a/b", "a > b", "dom@a", "a,b", "[a", "a]", "a*", "regex:a"):  # nesting or ncu filter syntax
        with pytest.raises(ValueError, match="may not contain"):
            fixture.region(name)
    assert check_region_name("layer 0.attention-fwd_1") == "layer 0.attention-fwd_1"
    with pytest.raises(ValueError, match="non-empty"):
        check_region_name("  ")


def test_fixture_step_is_the_timeline_sources_alone() -> None:
    """Plain pytest and ncu's child: nothing (ncu profiles the regions inside the step), not even NVTX's import."""
    for profiling in (False, True):
        fixture = PerfgateFixture(profiling=profiling)
        with fixture.step():
            pass
        assert fixture._nvtx is None


def test_fixture_region_pushes_and_pops_nvtx_in_the_child() -> None:
    pytest.importorskip("nvtx", reason="pip install perfgate[nvtx]")
    fixture = PerfgateFixture(profiling=True)
    with fixture.region("outer"), fixture.region("inner"):
        pass


@pytest.mark.parametrize("nodeid, name", [
    ("test_softmax.py::test_softmax", "test_softmax__test_softmax"),
    ("tests/gpu/test_x.py::TestA::test_b[cuda-1]", "tests.gpu.test_x__TestA.test_b_cuda-1"),
])
def test_baseline_names(nodeid: str, name: str) -> None:
    assert baseline_name(nodeid) == name


def test_parameter_ids_a_file_name_cannot_keep_stay_distinct() -> None:
    first, second = baseline_name("test_a.py::test_b[α]"), baseline_name("test_a.py::test_b[β]")
    assert first.startswith("test_a__test_b-") and second.startswith("test_a__test_b-") and first != second


def test_long_baseline_names_stay_short_and_distinct() -> None:
    first = baseline_name("tests/test_x.py::test_y[" + "a" * 300 + "]")
    second = baseline_name("tests/test_x.py::test_y[" + "a" * 299 + "b]")
    assert len(first) <= 150 and len(second) <= 150 and first != second


def test_multi_pass_why_metrics_are_collected_only_when_asked_for(tmp_path: Path) -> None:
    """On an H100 the default set fits in 1 replay pass; the two speed-of-light percentages make it 10."""
    from perfgate.plugin.ncu_run import profiling_metrics
    from perfgate.metrics import MULTI_PASS_METRICS, parse_threshold
    from perfgate.plugin.options import PluginOptions, compare_options_for

    sol = "sm__throughput.avg.pct_of_peak_sustained_elapsed"
    options = PluginOptions(update=False, strict=False, baselines=tmp_path, report=tmp_path / "r.json", ncu="ncu",
                            clock_control="base", cache_control="all", timeout=60.0)
    collected = profiling_metrics(compare_options_for(options).wanted_metrics())
    assert not set(MULTI_PASS_METRICS) & set(collected) and "gpu__time_duration.sum" in collected
    by_marker = compare_options_for(options, parse_marker((), {"metrics": [sol]}, "t"))
    assert sol in profiling_metrics(by_marker.wanted_metrics())
    by_config = compare_options_for(options._replace(metrics=("gpu__time_duration.sum", sol)))
    assert sol in profiling_metrics(by_config.wanted_metrics())
    by_threshold = compare_options_for(options._replace(thresholds={sol: parse_threshold("off")}))
    assert sol in profiling_metrics(by_threshold.wanted_metrics())
