"""Issue 14, classes 3 and 4: settings that parse but would switch a guard off, or gate nothing, are refused
with one line that says what to write instead, wherever they come from (pyproject, command line, marker)."""

from __future__ import annotations

import math
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from helpers.common import REPO, run_cli

from perfgate.cli import main
from perfgate.plugin.ncu_run import run_ncu
from perfgate.config import load_settings, settings_from_table
from perfgate.errors import ConfigError
from perfgate.metrics import parse_threshold
from perfgate.plugin.marker import parse_marker

H100 = REPO / "tests" / "data" / "h100"
REP = H100 / "vector_add.ncu-rep"
RERUN = H100 / "vector_add.rerun.ncu-rep"


@pytest.mark.parametrize("spec", ["1e999", "1e999%", "5%+1e999", "1e400%+1000"])
def test_an_infinite_threshold_is_refused(spec: str) -> None:
    """1e999 reads as infinity: a +50% regression would pass under it."""
    with pytest.raises(ConfigError, match="is not a finite number; a limit that nothing exceeds gates nothing"):
        parse_threshold(spec)
    assert parse_threshold("1e300").absolute == 1e300  # huge but finite is a (strange) choice, not an accident


@pytest.mark.parametrize("args, words", [
    (["--threshold", "gpu__time_duration.sum=1e999"], "is not a finite number"),
    (["--threshold", "gpu__time_duration.sum=1e999%"], "is not a finite number"),
    (["--significance", "0"], "between 0 and 1"),
    (["--significance", "-0.5"], "between 0 and 1"),
    (["--significance", "1"], "between 0 and 1"),
    (["--significance", "nan"], "between 0 and 1"),
])
def test_absurd_command_line_settings_are_usage_errors(capsys: pytest.CaptureFixture[str], args: list[str],
                                                       words: str) -> None:
    with pytest.raises(SystemExit) as info:
        main(["compare", str(REP), str(RERUN), *args])
    err = capsys.readouterr().err
    assert info.value.code == 2 and words in err and "Traceback" not in err


@pytest.mark.parametrize(("toml", "words"), [
    ('[tool.perfgate.thresholds]\n"gpu__time_duration.sum" = "1e999"', "is not a finite number"),
    ('[tool.perfgate.thresholds]\n"gpu__time_duration.sum" = "1e999%"', "is not a finite number"),
    ('[tool.perfgate.thresholds]\n"gpu__time_duration.sum" = 0.05',
     'thresholds."gpu__time_duration.sum" = 0.05 must be a string such as "5%", "1000", "5%+1000" or "off": write '
     '"5%" for 5%, or "0.05" for an absolute limit of 0.05 in its base unit'),
    ('[tool.perfgate.thresholds]\n"gpu__time_duration.sum" = 2000',
     'must be a string such as "5%", "1000", "5%+1000" or "off": write "2000" for an absolute limit of 2000'),
    ('[tool.perfgate.thresholds]\n"gpu__time_duration.sum" = true', "must be a string"),
    ('[tool.perfgate.thresholds]\n"gpu__time_duration.sum" = inf', "must be a string"),
    ("[tool.perfgate]\nsignificance = 0", "significance must be a p-value between 0 and 1"),
    ("[tool.perfgate]\nsignificance = -0.01", "significance must be a p-value between 0 and 1"),
    ("[tool.perfgate]\nsignificance = 1.5", "significance must be a p-value between 0 and 1"),
    ("[tool.perfgate]\nsignificance = nan", "significance must be a p-value between 0 and 1"),
    ('[tool.perfgate]\nclock_control = "turbo"', "clock_control must be 'base'"),
    ('[tool.perfgate]\nclock_control = "reset"', "'reset' only resets the clocks and profiles nothing"),
    ('[tool.perfgate]\ncache_control = "some"', "cache_control must be 'all'"),
    ("[tool.perfgate]\nmetrics = []", "metrics must name at least one metric"),
    ('[tool.perfgate]\nmetrics = [""]', "metrics must name at least one metric, and no empty name"),
    ("[tool.perfgate]\ntimeout = nan", "timeout must be a positive, finite number of seconds"),
    ("[tool.perfgate]\ntimeout = inf", "timeout must be a positive, finite number of seconds"),
    ("[tool.perfgate]\ntimeout = 0", "timeout must be a positive, finite number of seconds"),
    ("[tool.perfgate]\ntimeout = -5", "timeout must be a positive, finite number of seconds"),
    ("[tool.perfgate]\nhistory_max_time = -1", "history_max_time must be 0 or more seconds"),
    ("[tool.perfgate]\nhistory_max_time = nan", "history_max_time must be 0 or more seconds"),
    ("[tool.perfgate]\nhistory_max_time = inf", "history_max_time must be 0 or more seconds"),
    ('[tool.perfgate]\nbaselines = ""', "baselines must not be empty"),
    ('[tool.perfgate]\nncu = " "', "ncu must not be empty"),
    # Shapes a hand-written (or hostile) pyproject can take, once behind the last-resort line.
    ('[tool.perfgate]\nbaselines = "a\\u0000b"', "baselines holds a NUL character"),
    ("tool = 'x'", "tool must be a table"),
    ("[tool.perfgate]\nmetrics = " + "[" * 5000 + "]" * 5000, "nested too deeply"),
])
def test_absurd_pyproject_settings_are_one_line(capsys: pytest.CaptureFixture[str], tmp_path: Path, toml: str,
                                                words: str) -> None:
    pyproject = tmp_path / "pyproject.toml"
    pyproject.write_text(toml + "\n")
    with pytest.raises(ConfigError) as info:
        load_settings(pyproject)
    assert words in str(info.value) and "\n" not in str(info.value)
    status, _, err = run_cli(capsys, "compare", REP, RERUN, "--config", pyproject)
    assert status == 2 and err.count("\n") == 1 and words in err


def test_sensible_settings_still_load(tmp_path: Path) -> None:
    pyproject = tmp_path / "pyproject.toml"
    pyproject.write_text(textwrap.dedent("""
        [tool.perfgate]
        significance = 0.05
        clock_control = "none"
        timeout = 30
        metrics = ["gpu__time_duration.sum"]
        [tool.perfgate.thresholds]
        "gpu__time_duration.sum" = "3%+500"
    """))
    settings = load_settings(pyproject)
    assert settings.significance == 0.05 and settings.clock_control == "none" and settings.timeout == 30.0
    assert settings_from_table({"timeout": 1}).timeout == 1.0


@pytest.mark.parametrize("timeout", [math.nan, math.inf, -math.inf, 0, -5])
def test_run_ncu_refuses_a_timeout_that_disables_the_kill(tmp_path: Path, timeout: float) -> None:
    with pytest.raises(ConfigError, match="positive, finite number of seconds"):
        run_ncu([sys.executable, "-c", "pass"], timeout=timeout, output_file=tmp_path / "o.txt")


@pytest.mark.parametrize("timeout", [math.nan, math.inf, 0, -5, True, "10"])
def test_a_marker_timeout_that_disables_the_kill_is_refused(timeout: object) -> None:
    mark = pytest.mark.perfgate(timeout=timeout).mark
    with pytest.raises(ConfigError, match=r"timeout= must be a positive number of seconds \(finite"):
        parse_marker(mark.args, mark.kwargs, "t.py::test_x")


@pytest.mark.parametrize("flops", [math.nan, math.inf, 0, -5, True, "2e9"])
def test_a_marker_flops_that_is_no_positive_number_is_refused(flops: object) -> None:
    mark = pytest.mark.perfgate(flops=flops).mark
    with pytest.raises(ConfigError, match=r"flops= must be the test's useful work, a positive number of FLOP"):
        parse_marker(mark.args, mark.kwargs, "t.py::test_x")
    assert parse_marker((), {"flops": 2_000_000}, "t.py::test_x").flops == 2e6


SUITE = """
import pytest

@pytest.mark.perfgate
def test_kernel():
    pass
"""


@pytest.mark.parametrize(("args", "toml", "words"), [
    (["--perfgate-timeout=nan"], "", "expected a positive, finite number of seconds"),
    (["--perfgate-timeout=inf"], "", "expected a positive, finite number of seconds"),
    (["--perfgate-timeout=0"], "", "expected a positive, finite number of seconds"),
    ([], "timeout = nan", "timeout must be a positive, finite number of seconds"),
    ([], "timeout = -5", "timeout must be a positive, finite number of seconds"),
    ([], "timeout = 0", "timeout must be a positive, finite number of seconds"),
    (["--perfgate-clock-control=turbo"], "", "--perfgate-clock-control must be 'base'"),
    ([], 'clock_control = "turbo"', "clock_control must be 'base'"),
    (["--perfgate-significance=0"], "", "expected a p-value between 0 and 1"),
    ([], "significance = 0", "significance must be a p-value"),
    (["--perfgate-threshold=gpu__time_duration.sum=1e999"], "", "is not a finite number"),
])
def test_the_plugin_refuses_them_before_any_test_runs(pytester: pytest.Pytester, args: list[str], toml: str,
                                                      words: str) -> None:
    pytester.makepyfile(test_x=SUITE)
    pytester.makepyprojecttoml(f"[tool.perfgate]\n{toml}\n")
    result = pytester.runpytest_subprocess("--perfgate", *args)
    assert result.ret in (pytest.ExitCode.USAGE_ERROR, pytest.ExitCode.INTERNAL_ERROR, 4, 3)
    assert words in result.stderr.str() + result.stdout.str()
    assert "passed" not in result.stdout.str()


# ---------------------------------------------------------------- a baseline that would gate nothing

def test_baseline_with_a_misspelled_metric_gates_nothing_and_is_not_written(capsys: pytest.CaptureFixture[str],
                                                                            tmp_path: Path) -> None:
    pyproject = tmp_path / "pyproject.toml"
    pyproject.write_text('[tool.perfgate]\nmetrics = ["gpu__time_duraton.sum"]\n'
                         '[tool.perfgate.thresholds]\n"gpu__time_duraton.sum" = "5%"\n')
    status, out, err = run_cli(capsys, "baseline", REP, "-d", tmp_path / "b", "--name", "v", "--config", pyproject)
    assert status == 2 and err.count("\n") == 1, err
    assert f"{tmp_path / 'b' / 'nvidia-h100-80gb-hbm3-sm90' / 'v.json'}: would gate nothing: {REP} has no value " \
           f"for any gated metric (gpu__time_duraton.sum) (gpu__time_duraton.sum not in {REP}: check the spelling)" \
           in err
    assert "--metrics" in err
    assert not (tmp_path / "b").exists()


@pytest.mark.parametrize("metrics", ["gpu__time_duraton.sum", "lts__t_sectors.sum"])
def test_baseline_of_only_ungated_metrics_gates_nothing(capsys: pytest.CaptureFixture[str], tmp_path: Path,
                                                        metrics: str) -> None:
    """``--metrics NAME`` replaces the gated defaults; a metric without a threshold is shown, never gated."""
    status, _, err = run_cli(capsys, "baseline", REP, "-d", tmp_path / "b", "--metrics", metrics)
    assert status == 2 and err.count("\n") == 1
    assert f"would gate nothing: none of the compared metrics ({metrics}) has a gating threshold" in err
    assert ("check the spelling" in err) == (metrics == "gpu__time_duraton.sum")
    assert "--metrics +NAME" in err and not (tmp_path / "b").exists()


def test_baseline_with_empty_metrics_in_pyproject_is_refused(capsys: pytest.CaptureFixture[str],
                                                             tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text("[tool.perfgate]\nmetrics = []\n")
    status, _, err = run_cli(capsys, "baseline", REP, "-d", tmp_path / "b", "--config", tmp_path / "pyproject.toml")
    assert status == 2 and "metrics must name at least one metric" in err and not (tmp_path / "b").exists()


def test_a_gated_metric_added_to_the_defaults_still_makes_a_baseline(capsys: pytest.CaptureFixture[str],
                                                                     tmp_path: Path) -> None:
    status, out, err = run_cli(capsys, "baseline", REP, "-d", tmp_path / "b", "--metrics", "+lts__t_sectors.sum")
    assert status == 0 and out.startswith("wrote "), err


@pytest.mark.parametrize("key", ["baselines", "report", "ncu", "templates"])
def test_a_path_setting_with_a_nul_is_refused(key: str) -> None:
    """A NUL cannot be in a path: os.scandir raised ValueError ("embedded null byte") behind the last-resort line."""
    with pytest.raises(ConfigError, match=f"{key} holds a NUL character"):
        settings_from_table({key: "base\x00lines"}, "pyproject.toml [tool.perfgate]")


@pytest.mark.parametrize("command", [["baseline", REP, "-d", "{long}"], ["baselines", "list", "-d", "{long}"],
                                     ["compare", "{long}", REP],
                                     ["history", "record", REP, "--db", "sqlite:///{long}"]])
def test_a_path_the_system_refuses_is_named_in_one_line(command: list[object], capsys: pytest.CaptureFixture[str],
                                                         tmp_path: Path) -> None:
    """A path component over 255 bytes: Path.is_dir() and friends raise "File name too long" (no command foresaw
    it); the line names the path and the reason, not the last-resort "please report it"."""
    long = str(tmp_path / ("y" * 300))
    status, _, err = run_cli(capsys, *[str(part).replace("{long}", long) for part in command])
    assert status == 2 and err.count("\n") == 1, err
    assert "File name too long" in err and "please report it" not in err and "y" * 100 in err, err


@pytest.mark.parametrize(("config", "cause", "fix"), [
    ("missing.toml", "(No such file or directory)", "(give --config the path of a pyproject.toml file, or leave it out"),
    ("folder", "(Is a directory)", "(give --config the path of a pyproject.toml file, or leave it out"),
    ("latin1.toml", "(not UTF-8 text)", "(save it as UTF-8)"),
    ("broken.toml", "(Expected '=' after a key in a key/value pair (at line 1, column 8))", "(fix the TOML"),
])
def test_a_config_that_cannot_be_read_is_one_line_with_the_cause_and_the_fix(
        tmp_path: Path, config: str, cause: str, fix: str) -> None:
    (tmp_path / "folder").mkdir()
    (tmp_path / "latin1.toml").write_bytes('[tool.perfgate]\nbaselines = "b\xe4se"\n'.encode("latin-1"))
    (tmp_path / "broken.toml").write_text("garbage,,,\n", encoding="utf-8")
    done = subprocess.run([sys.executable, "-m", "perfgate", "compare", str(REP), str(RERUN), "--config", config],
                          capture_output=True, text=True, cwd=tmp_path, timeout=120, check=False)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.count("\n") == 1 and "Errno" not in done.stderr
    assert done.stderr.startswith(f"perfgate: error: {config}: cannot read [tool.perfgate] {cause} {fix}"), done.stderr
