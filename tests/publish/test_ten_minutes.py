"""docs/getting-started.md's ten minutes, end to end, against the loopback GitHub server: ``perfgate init`` in a
git repository, a first pull request with nothing recorded (a neutral check that says what to do), runs of main
recorded into the history, a pull request with a regression (judged against main's runs: a red check and a
comment that ends with its commands), the accept and the baseline update the comment names, and the green rerun.

pytest-benchmark tests on a virtual clock stand in for the GPU (``helpers.benchmark_suite``): real pytest runs
(pytester), real SQLite history, real ``perfgate publish`` requests."""

from __future__ import annotations

import json
import shlex
import shutil
import subprocess
from pathlib import Path

import pytest
from helpers.benchmark_suite import BENCH_OPTIONS, VIRTUAL_CLOCK
from helpers.common import run_cli
from helpers.github_server import (
    HEAD_SHA,
    PR,
    REPO,
    FakeGitHub,
    actions_env,
    github,
    pull_request_event,
    run_publish,
)
from helpers.next_steps import commands_of

import perfgate.cli.publish  # noqa: F401
import perfgate.publish.github  # noqa: F401
import perfgate.publish.publisher  # noqa: F401
import perfgate.publish.summary  # noqa: F401
from perfgate.history.reference import MIN_REFERENCE_RUNS

# The publishing modules (and requests) are imported here, before pytester snapshots sys.modules: imported
# first inside the test, pytester would drop them at its end and later tests would meet two copies of requests.

__all__ = ["github"]

PERF_TEST = """
import os
import virtual_clock

def parse(n):
    virtual_clock.spend(n * 1e-8)  # 3000 steps: 30 us of virtual time
    return n

def test_parse(benchmark):
    assert benchmark(parse, int(os.environ.get("PARSE_N", "3000"))) > 0
"""
NODE = "tests/perf/test_parse.py::test_parse"
MAIN_HISTORY = Path(".perfgate/history.sqlite")  # where perfgate-main.yml keeps it, and `perfgate accept`'s default


def _gh_env(monkeypatch: pytest.MonkeyPatch, **values: str) -> None:
    for name in ("GITHUB_HEAD_REF", "GITHUB_REF_NAME", "GITHUB_SHA", "GITHUB_EVENT_PATH", "GITHUB_STEP_SUMMARY",
                 "PARSE_N", "PYTEST_ADDOPTS", "PYTEST_XDIST_WORKER"):
        monkeypatch.delenv(name, raising=False)
    for name, value in values.items():
        monkeypatch.setenv(name, value)


def _pr_run(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, tmp: Path, parse_n: str) -> pytest.RunResult:
    """perfgate-pr.yml's job: main's history restored (a copy: a pull request never saves it), pytest --perfgate."""
    copy = tmp / "restored" / "history.sqlite"
    copy.parent.mkdir(exist_ok=True)
    copy.unlink(missing_ok=True)
    if (pytester.path / MAIN_HISTORY).exists():
        shutil.copy(pytester.path / MAIN_HISTORY, copy)
    _gh_env(monkeypatch, GITHUB_HEAD_REF="feature", GITHUB_REF_NAME=f"{PR}/merge",
            GITHUB_EVENT_PATH=str(pull_request_event(tmp)), PARSE_N=parse_n)
    return pytester.runpytest("tests/perf", "--perfgate", *BENCH_OPTIONS, f"--perfgate-history=sqlite:///{copy}")


def _publish(github: FakeGitHub, pytester: pytest.Pytester, tmp: Path) -> dict[str, object]:
    """perfgate-publish.yml's step (its flags); the check run it made."""
    env = actions_env(github, tmp, event=pull_request_event(tmp))
    done = run_publish(pytester.path / "perfgate-report.json", env, "--pr", str(PR), "--only-on-regression",
                       "--all-clear")
    assert done.returncode == 0, done.output
    return list(github.check_runs.values())[-1]


def test_ten_minutes_from_init_to_a_green_rerun(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch,
                                                github: FakeGitHub, tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    repo = pytester.path
    subprocess.run(["git", "init", "-q", str(repo)], check=True, timeout=60)
    monkeypatch.chdir(repo)
    status, out, _ = run_cli(capsys, "init", "--example", "cpu")
    assert status == 0 and "Next:" in out
    assert (repo / ".github/workflows/perfgate-main.yml").is_file()
    (repo / "tests/perf/test_perf_example.py").unlink()  # its real clock would make the walk's timings noisy
    (repo / "tests/perf/test_parse.py").write_text(PERF_TEST)
    (repo / "virtual_clock.py").write_text(VIRTUAL_CLOCK)
    pytester.syspathinsert()

    # 1. The first pull request, nothing recorded: not red, and the check says what to do.
    _pr_run(pytester, monkeypatch, tmp_path, "3000").assert_outcomes(passed=1)
    check = _publish(github, pytester, tmp_path)
    assert check["conclusion"] == "neutral" and github.comments_on(REPO, PR) == []
    text = json.dumps(check["output"])
    assert "not gated yet: main has 0 recorded runs" in text and "pytest --perfgate --perfgate-update" in text
    assert check["output"]["title"] == ("1 new test with no baseline yet, nothing to compare: record the base branch's "
                                        "runs, or update the baseline")
    assert check["output"]["title"] not in check["output"]["summary"] + check["output"]["text"]  # said once

    # 2. Pushes to main record their runs (perfgate-main.yml): one real run, then the same session at more commits.
    _gh_env(monkeypatch, GITHUB_REF_NAME="main", GITHUB_SHA="c" * 40)
    pytester.runpytest("tests/perf", "--perfgate", *BENCH_OPTIONS,
                       f"--perfgate-history=sqlite:///{MAIN_HISTORY}").assert_outcomes(passed=1)
    for index in range(1, MIN_REFERENCE_RUNS):
        assert run_cli(capsys, "history", "record", "perfgate-report.json", "--commit", f"{index:040x}",
                       "--branch", "main")[0] == 0

    # 3. A pull request that makes parse 60% slower: judged against main's runs, red, with its commands.
    _pr_run(pytester, monkeypatch, tmp_path, "4800").assert_outcomes(failed=1)
    report = json.loads((repo / "perfgate-report.json").read_text())
    assert report["verdict"] == "fail"
    assert all(c["baseline"].startswith("history: median of 5 runs of main") for c in report["comparisons"])
    assert _publish(github, pytester, tmp_path)["conclusion"] == "failure"
    (comment,) = github.comments_on(REPO, PR)
    accept, update = commands_of(comment["body"])
    assert accept == (f"perfgate accept --test {NODE} --kernel {NODE} --metric time.min "
                      "--reason 'why this change is intended'")
    assert update == f"pytest --perfgate --perfgate-update {NODE} # then commit baselines/"
    # main's median keeps no rounds: no advice to save them, where saving them would change nothing
    assert "--benchmark-save-data" not in comment["body"] and "median of recorded runs" in comment["body"]

    # 4. The author accepts it and makes it the baseline, at the pull request's head, as the comment says.
    _gh_env(monkeypatch, GITHUB_SHA=HEAD_SHA, GITHUB_REF_NAME="feature", PARSE_N="4800")
    argv = shlex.split(accept.replace("why this change is intended", "a wider parse, on purpose"))
    status, out, _ = run_cli(capsys, *argv[1:])
    assert status == 0 and "accepted the change at" in out
    pytester.runpytest(*shlex.split(update.split("#")[0])[1:], *BENCH_OPTIONS).assert_outcomes(passed=1)
    assert len(list((repo / "baselines").glob("*/*.json"))) == 1  # the file to commit

    # 5. The rerun: the committed baseline wins over main's history, the check is green, the comment all clear.
    _pr_run(pytester, monkeypatch, tmp_path, "4800").assert_outcomes(passed=1)
    assert json.loads((repo / "perfgate-report.json").read_text())["verdict"] == "pass"
    assert _publish(github, pytester, tmp_path)["conclusion"] == "success"
    (comment,) = github.comments_on(REPO, PR)
    assert ("All clear:** the regression this comment reported earlier no longer fails the check as of "
            f"{HEAD_SHA[:12]} (fixed, or accepted into the baseline)") in comment["body"]
