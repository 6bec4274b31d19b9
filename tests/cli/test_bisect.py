"""``perfgate bisect`` on generated git repositories (tests/helpers/bisect_repo.py): the planted commit found in
few runs, skips reported as skips, no culprit named under noise, a budget, ``git bisect run`` steps, --record.

The repositories are made once per module; a test that changes one (git bisect's refs) works on a local clone.
"""

from __future__ import annotations

import json
import math
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any, Sequence

import pytest

from perfgate.bisect.search import ALL_SKIPPED, BUDGET_SPENT, FOUND, Judged, bisect
from perfgate.cli import main
from tests.helpers.bisect_repo import (
    BUILD,
    COMMAND,
    COUNTERS,
    PYTEST_COMMAND,
    TEST,
    Repo,
    benchmark_json,
    clone,
    make_repo,
)
from tests.helpers.history import KERNEL_TIME, fresh_postgres_database, write_report

SLOW_FROM = 11


@pytest.fixture(scope="module")
def planted(tmp_path_factory: pytest.TempPathFactory) -> Repo:
    """16 commits, 1.5x slower from commit 11 on, 1% noise; commit 3 fails to build (never probed here)."""
    return make_repo(tmp_path_factory.mktemp("planted") / "repo", 16, SLOW_FROM, broken=(3,))


@pytest.fixture(scope="module")
def skipping(tmp_path_factory: pytest.TempPathFactory) -> Repo:
    """8 commits, slower from commit 4 on; commit 3, the first probed, fails to build."""
    return make_repo(tmp_path_factory.mktemp("skipping") / "repo", 8, 4, broken=(3,))


def bisect_json(repo: Repo, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
                *args: str) -> dict[str, Any]:
    monkeypatch.chdir(repo.path)
    capsys.readouterr()
    status = main(["bisect", "--test", TEST, "--command", COMMAND, "--format", "json", *args])
    out = capsys.readouterr().out
    assert status == 0, out
    found: dict[str, Any] = json.loads(out)
    return found


# ---------------------------------------------------------------- the pure search


def _judge_planted(first_bad: int, skipped: tuple[int, ...] = ()) -> Any:
    calls: list[int] = []

    def judge(commit: str) -> Judged:
        at = int(commit)
        calls.append(at)
        return Judged.SKIP if at in skipped else Judged.BAD if at >= first_bad else Judged.GOOD
    return judge, calls


@pytest.mark.parametrize("count", [2, 3, 5, 16, 33, 100])
def test_search_finds_every_planted_commit_in_log2_probes(count: int) -> None:
    commits = [str(i) for i in range(count)]
    for first_bad in range(1, count):
        judge, calls = _judge_planted(first_bad)
        outcome = bisect(commits, judge)
        assert outcome.culprit == str(first_bad) and outcome.reason == FOUND
        assert len(calls) <= math.ceil(math.log2(count - 1)) if count > 2 else not calls


def test_search_steps_around_skips_and_names_nobody_when_only_skips_are_left() -> None:
    commits = [str(i) for i in range(10)]
    judge, calls = _judge_planted(6, skipped=(4, 5))
    outcome = bisect(commits, judge)
    assert outcome.culprit is None and outcome.reason == ALL_SKIPPED
    assert (outcome.good, outcome.bad) == ("3", "6") and {4, 5} <= set(calls)
    judge, _ = _judge_planted(6, skipped=(4,))
    assert bisect(commits, judge).culprit == "6"


def test_search_stops_at_its_budget_with_the_range() -> None:
    commits = [str(i) for i in range(64)]
    judge, calls = _judge_planted(37)
    outcome = bisect(commits, judge, budget=3)
    assert outcome.culprit is None and outcome.reason == BUDGET_SPENT and len(calls) == 3
    assert int(outcome.good) < 37 <= int(outcome.bad) and int(outcome.bad) - int(outcome.good) <= 8


def test_search_budget_counts_the_runs_its_caller_counts() -> None:
    """``spent``: runs counted by the caller (ends run, a commit run twice): no judge call once they reach it."""
    commits = [str(i) for i in range(64)]
    judge, calls = _judge_planted(37)
    runs = [2]  # the two ends

    def counted(commit: str) -> Judged:
        runs[0] += 2  # each commit run twice
        return judge(commit)
    outcome = bisect(commits, counted, budget=7, spent=lambda: runs[0])
    assert outcome.reason == BUDGET_SPENT and len(calls) == 3 and runs[0] == 8


def test_search_uses_known_verdicts_before_any_run() -> None:
    commits = [str(i) for i in range(32)]
    judge, calls = _judge_planted(20)
    outcome = bisect(commits, judge, known={"16": Judged.GOOD, "24": Judged.BAD})
    assert outcome.culprit == "20" and len(calls) <= 3 and all(16 < c < 24 for c in calls)


def test_search_under_noise_never_names_a_wrong_commit() -> None:
    """A judge that cannot tell (noise: skip) for every commit near the change keeps the range."""
    commits = [str(i) for i in range(16)]
    judge, _ = _judge_planted(9, skipped=(7, 8, 9, 10))
    outcome = bisect(commits, judge)
    assert outcome.culprit is None and int(outcome.good) < 9 <= int(outcome.bad)


# ---------------------------------------------------------------- the command on a generated repository


def test_finds_the_planted_commit_within_log2_plus_two_runs(planted: Repo, monkeypatch: pytest.MonkeyPatch,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    found = bisect_json(planted, monkeypatch, capsys, "--good", planted.commits[0], "--bad", "HEAD")
    assert found["culprit"] == planted.commits[SLOW_FROM]
    assert found["range"] == [planted.commits[SLOW_FROM - 1], planted.commits[SLOW_FROM]]
    assert len(found["runs"]) <= math.ceil(math.log2(len(planted.commits))) + 2  # 6 for 16 commits
    assert found["runs"][:2] == [planted.commits[0], planted.commits[-1]]  # the two ends first
    assert not subprocess.run(["git", "worktree", "list", "--porcelain"], cwd=planted.path, capture_output=True,
                              text=True, check=True).stdout.count("worktree ") - 1  # every worktree removed


def test_counters_are_judged_exactly_in_one_run_a_commit(planted: Repo, monkeypatch: pytest.MonkeyPatch,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    """A perf test's counters (a perfgate baseline file a commit): +50% instructions from commit 11."""
    found = bisect_json(planted, monkeypatch, capsys, "--good", planted.commits[0], "--bad", "HEAD", "--command",
                        COUNTERS, "--repeat", "3")
    assert found["culprit"] == planted.commits[SLOW_FROM] and len(found["runs"]) <= 6
    assert found["judged_on"] == "counters" and found["runs_per_commit"] == 1  # --repeat is for time only
    assert len(set(found["runs"])) == len(found["runs"])  # each commit run once


def test_repeat_pools_the_runs_of_each_commit(planted: Repo, monkeypatch: pytest.MonkeyPatch,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    found = bisect_json(planted, monkeypatch, capsys, "--good", planted.commits[9], "--bad", planted.commits[12],
                        "--repeat", "2")
    assert found["culprit"] == planted.commits[SLOW_FROM] and len(found["runs"]) <= 4
    assert found["judged_on"] == "time" and found["runs_per_commit"] == 2


def test_text_names_the_culprit_in_a_short_summary(planted: Repo, monkeypatch: pytest.MonkeyPatch,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(planted.path)
    assert main(["bisect", "--test", TEST, "--command", COMMAND, "--good", planted.commits[8], "--bad",
                 planted.commits[12]]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[0] == f"first bad commit: {planted.commits[SLOW_FROM]}"
    assert "runs of the test over 4 commits" in out


def test_a_commit_that_fails_to_build_is_reported_as_a_skip(skipping: Repo, monkeypatch: pytest.MonkeyPatch,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    found = bisect_json(skipping, monkeypatch, capsys, "--good", skipping.commits[0], "--bad", skipping.commits[-1],
                        "--build", BUILD)
    skipped = [v for v in found["verdicts"] if v["verdict"] == "skip"]
    assert [v["commit"] for v in skipped] == [skipping.commits[3]] and "build failed" in skipped[0]["note"]
    # 3 was skipped and 4 is the first bad one: either may have made the change, so nobody is named
    assert found["culprit"] is None and found["stopped"] == ALL_SKIPPED
    assert found["range"] == [skipping.commits[2], skipping.commits[4]]


def test_budget_stops_with_the_narrowed_range(planted: Repo, monkeypatch: pytest.MonkeyPatch,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    found = bisect_json(planted, monkeypatch, capsys, "--good", planted.commits[0], "--bad", "HEAD", "--budget", "4")
    assert found["culprit"] is None and found["stopped"] == BUDGET_SPENT and len(found["runs"]) == 4
    good, bad = (planted.commits.index(c) for c in found["range"])
    assert good < SLOW_FROM <= bad and bad - good < 15


@pytest.mark.parametrize("slow_from, seed, looked, ends_looked", [(None, 1, 0, 1), (4, 1, 3, 1), (4, 29, 4, 1),
                                                                  (4, 6, 3, 2)])
def test_noise_never_names_a_wrong_culprit(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                           capsys: pytest.CaptureFixture[str], slow_from: int | None,
                                           seed: int, looked: int, ends_looked: int) -> None:
    """Heavy noise (each round up to several times its time): with no real change nothing is named; with a 1.6x
    slowdown at commit 4, commit 4 or a range that holds it. A commit whose time neither end explains is run
    again, its rounds pooled (``looked``: the commit so judged, 0: none): seeds 1 and 29 gave a range after skips
    with one run a commit, and name commit 4 with it. Ends whose time is undecided (past its limit, not
    significant) are both run again (``ends_looked``: their runs): seed 6 said "no change" with one run of each,
    and names commit 4 with two. Seeds 1-30: 25 culprits (all commit 4), 3 ranges, 2 "no change", never a wrong
    commit (one run of each end: 19, 2, 9); 10 seeds without a slowdown: "no change" every time."""
    repo = make_repo(tmp_path / "noisy", 8, slow_from, noise=2.0, slowdown=1.6, seed=seed)
    found = bisect_json(repo, monkeypatch, capsys, "--good", repo.commits[0], "--bad", repo.commits[-1])
    if slow_from is None:
        assert found["culprit"] is None and found["stopped"] == "no change" and len(found["runs"]) == 2
        assert [v["verdict"] for v in found["verdicts"]] == ["good", "good"]
    else:
        assert found["culprit"] == repo.commits[slow_from]
        good, bad = (repo.commits.index(c) for c in found["range"])
        assert good < slow_from <= bad
    ends, between = found["verdicts"][:2], found["verdicts"][2:]
    assert [found["runs"].count(v["commit"]) for v in ends] == [ends_looked, ends_looked]
    assert all(("timings pooled" in v["note"]) == (ends_looked > 1) for v in ends)
    pooled = [v for v in between if "timings pooled" in v["note"]]
    assert [repo.commits.index(v["commit"]) for v in pooled] == ([looked] if looked else [])
    if pooled:  # each run of the commit is listed: the runs are counted as they were made
        assert found["runs"].count(pooled[0]["commit"]) == 2 and "after 2 runs" in pooled[0]["note"]


def test_git_bisect_run_steps(planted: Repo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                              capsys: pytest.CaptureFixture[str]) -> None:
    """A real ``git bisect run`` (exit 0 good, 1 bad): git names the planted commit; a commit that fails to build
    is 125 (skip), and bad input 128, which stops git's bisection (2 would read as "bad")."""
    repo = clone(planted, tmp_path / "clone")
    done = _git_bisect_run(repo, repo.commits[12], repo.commits[9], "--command", COMMAND, "--build", BUILD)
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"{repo.commits[SLOW_FROM]} is the first bad commit" in done.stdout
    log = subprocess.run(["git", "bisect", "log"], cwd=repo.path, capture_output=True, text=True, check=True).stdout
    assert f"git bisect good {repo.commits[10]}" in log and f"git bisect bad {repo.commits[SLOW_FROM]}" in log
    assert len(list((repo.path / ".git" / "perfgate-bisect").glob("*/*.json"))) == 2  # each end measured once
    monkeypatch.chdir(repo.path)
    step = ["bisect", "--step", "--test", TEST, "--command", COMMAND, "--build", BUILD]
    assert main([*step, "--good", repo.commits[0], "--bad", repo.commits[13], "--commit", repo.commits[3]]) == 125
    assert main([*step, "--good", "nosuchref", "--bad", "HEAD"]) == 128
    err = capsys.readouterr().err
    assert err.count("perfgate: error:") == 1 and "'nosuchref' is not a commit" in err


def _env() -> dict[str, str]:
    import os

    return {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}


def _git_bisect_run(repo: Repo, bad: str, good: str, *step: str) -> subprocess.CompletedProcess[str]:
    """A real ``git bisect start BAD GOOD`` then ``git bisect run`` of ``perfgate bisect --step --test TEST`` with
    ``step``'s options, in the clone."""
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@example.com"]
    subprocess.run([*git, "bisect", "start", bad, good], cwd=repo.path, check=True, capture_output=True)
    return subprocess.run([*git, "bisect", "run", sys.executable, "-m", "perfgate", "bisect", "--step", "--test", TEST,
                           *step], cwd=repo.path, capture_output=True, text=True, env=_env())


def test_real_pytest_benchmark_end_to_end(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    """The test run by pytest-benchmark itself (on perfgate's virtual clock): the ends of 2 commits, the second
    slower (the search itself is proven on the cheap script above)."""
    repo = make_repo(tmp_path / "pytest", 2, 1, noise=0.0)
    monkeypatch.chdir(repo.path)
    assert main(["bisect", "--test", TEST, "--command", PYTEST_COMMAND, "--good", repo.commits[0], "--bad",
                 repo.commits[-1], "--format", "json"]) == 0
    found = json.loads(capsys.readouterr().out)
    assert found["culprit"] == repo.commits[1] and found["runs"] == repo.commits


@pytest.mark.parametrize("args, says", [
    (["--good", "nosuchref", "--bad", "HEAD"], "'nosuchref' is not a commit"),
    (["--good", "HEAD", "--bad", "HEAD~3"], "is not an ancestor of --bad"),
    (["--good", "HEAD~2", "--bad", "HEAD", "--command", "exit 4"], "cannot be measured: test failed (exit 4)"),
    (["--good", "HEAD~2", "--bad", "HEAD", "--budget", "1"], "must be at least"),
    (["--good", "HEAD~2", "--bad", "HEAD", "--command", "echo '{\"version\": \"4\", \"benchmarks\": []}' > "
      "$PERFGATE_BISECT_OUTPUT"], "its result holds no measurement"),
    (["--bad", "HEAD"], "needs --good and --bad"),
])
def test_bad_input_is_one_line_and_exit_2(planted: Repo, monkeypatch: pytest.MonkeyPatch,
                                          capsys: pytest.CaptureFixture[str], args: list[str], says: str) -> None:
    monkeypatch.chdir(planted.path)
    assert main(["bisect", "--test", TEST, "--command", COMMAND, *args]) == 2
    err = capsys.readouterr().err
    assert says in err and err.count("\n") == 1 and "Traceback" not in err


def test_outside_a_repository_is_bad_input(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path.parent))
    assert main(["bisect", "--test", TEST, "--good", "HEAD~1", "--bad", "HEAD"]) == 2
    assert "is not inside a git repository" in capsys.readouterr().err


# ---------------------------------------------------------------- --record and history changes


def _record_history(url: str, repo: Repo, tmp_path: Path) -> None:
    """The history recorded commits 2-5 (fast) and 12-14 (slow), not those between: a change point at 12."""
    for at in (*range(2, 6), *range(12, 15)):
        value = (1500.0 if at >= SLOW_FROM else 1000.0) + at % 3
        report = write_report(tmp_path / f"run{at}.json", {("k", KERNEL_TIME): [value]}, test=TEST)
        assert main(["history", "record", str(report), "--db", url, "--commit", repo.commits[at], "--branch", "main",
                     "--when", f"2026-11-{at + 1:02d}T00:00:00Z"]) == 0


@pytest.fixture(scope="module")
def kernel_history(planted: Repo, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``_record_history``'s SQLite file, recorded once: a test that writes to it works on a copy."""
    folder = tmp_path_factory.mktemp("kernel-history")
    _record_history(f"sqlite:///{folder / 'history.sqlite'}", planted, folder)
    return folder / "history.sqlite"


def _record_then_changes(url: str, repo: Repo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                         capsys: pytest.CaptureFixture[str], recorded: bool = False) -> None:
    if not recorded:
        _record_history(url, repo, tmp_path)
    found = bisect_json(repo, monkeypatch, capsys, "--db", url, "--record")  # the range from the change point
    assert found["culprit"] == repo.commits[SLOW_FROM] and found["recorded"] == repo.commits[12]
    # the history's ends (5, 12) judged, then 8, 10, 11 run; the history holds kernel k's times, not the
    # benchmark's the runs give: both ends are measured as the references
    assert found["runs"][:2] == [repo.commits[5], repo.commits[12]] and len(found["runs"]) <= 5
    assert [v["by"] for v in found["verdicts"][:2]] == ["history", "history"]
    assert main(["history", "changes", "--db", url, "--format", "json"]) == 0
    changes = json.loads(capsys.readouterr().out)
    assert [c["culprit"]["commit"] for c in changes] == [repo.commits[SLOW_FROM]]
    assert main(["history", "changes", "--db", url]) == 0
    assert f"culprit: {repo.commits[SLOW_FROM]} (perfgate bisect" in capsys.readouterr().out
    assert main(["history", "changes", "--db", url, "--format", "md"]) == 0
    assert f"culprit {repo.commits[SLOW_FROM][:12]} (bisect)" in capsys.readouterr().out
    assert main(["history", "dashboard", "--db", url, "-o", str(tmp_path / "site")]) == 0
    (page,) = (tmp_path / "site" / "kernels").iterdir()
    assert f"culprit <code>{repo.commits[SLOW_FROM][:12]}</code> (bisect)" in page.read_text(encoding="utf-8")
    # the PR comment's trend: a regression that continues one whose culprit is known names it
    pr = write_report(tmp_path / "pr.json", {("k", KERNEL_TIME): [1700.0]}, test=TEST, status="regression")
    for name in ("GITHUB_EVENT_PATH", "GITHUB_REPOSITORY", "GITHUB_SHA"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(tmp_path / "summary.md"))
    assert main(["publish", str(pr), "--no-comment", "--no-check", "--history", url]) == 0
    assert f"(culprit {repo.commits[SLOW_FROM][:12]})" in (tmp_path / "summary.md").read_text(encoding="utf-8")


def test_given_ends_are_narrowed_by_the_history(planted: Repo, kernel_history: Path,
                                                monkeypatch: pytest.MonkeyPatch,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    """--good 0 --bad 15 with a history that recorded 5 (good) and 12 (bad): only 5..12 is searched (the history
    is read, never written: no culprit is recorded)."""
    url = f"sqlite:///{kernel_history}"
    found = bisect_json(planted, monkeypatch, capsys, "--db", url, "--good", planted.commits[0], "--bad", "HEAD")
    assert found["culprit"] == planted.commits[SLOW_FROM]
    assert found["runs"][:2] == [planted.commits[5], planted.commits[12]] and len(found["runs"]) == 5
    assert main(["bisect", "--test", TEST, "--command", COMMAND, "--db", url, "--change", "0" * 12]) == 2
    assert "holds no change point of" in capsys.readouterr().err
    # no culprit: nothing is recorded, and the run is no error
    assert main(["bisect", "--test", TEST, "--command", COMMAND, "--db", url, "--record", "--good",
                 planted.commits[12], "--bad", planted.commits[14]]) == 0
    captured = capsys.readouterr()
    assert "no culprit named: the bad end did not regress" in captured.out and "nothing recorded" in captured.err
    # a culprit of a test with no change point is not recorded, but what the runs found is shown
    assert main(["bisect", "--test", "test_other.py::test_x", "--command", COMMAND, "--db", url, "--record",
                 "--good", planted.commits[10], "--bad", planted.commits[11]]) == 2
    captured = capsys.readouterr()
    assert f"first bad commit: {planted.commits[SLOW_FROM]}" in captured.out and "--record" in captured.err


def test_record_shows_the_culprit_in_history_changes_sqlite(planted: Repo, kernel_history: Path, tmp_path: Path,
                                                            monkeypatch: pytest.MonkeyPatch,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    shutil.copyfile(kernel_history, tmp_path / "history.sqlite")
    _record_then_changes(f"sqlite:///{tmp_path / 'history.sqlite'}", planted, tmp_path, monkeypatch, capsys,
                         recorded=True)


def test_record_shows_the_culprit_in_history_changes_postgresql(planted: Repo, tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    for url in fresh_postgres_database():
        _record_then_changes(url, planted, tmp_path, monkeypatch, capsys)


# ---------------------------------------------------------------- commits the history holds cost nothing

HELD = (*range(2, 6), *range(12, 15))  # the commits CI recorded: a change point at 12, its previous commit 5


def _record_counters(url: str, repo: Repo, tmp_path: Path, commits: Sequence[int], branch: str,
                     scale: float = 1.0) -> None:
    """What CI recorded of the perf test at ``commits``: counters.py's kernel (instructions and time), the same GPU
    model; ``scale``: its times on CI's machine over this one's."""
    for at in commits:
        slow = at >= SLOW_FROM
        report = write_report(tmp_path / f"counters-{branch}-{at}.json", {
            ("gemm", "smsp__inst_executed.sum"): [6144.0 if slow else 4096.0],
            ("gemm", KERNEL_TIME): [scale * (1500.0 if slow else 1000.0)]}, test=TEST)
        assert main(["history", "record", str(report), "--db", url, "--commit", repo.commits[at], "--branch", branch,
                     "--when", f"2026-11-{at + 1:02d}T00:00:00Z"]) == 0


@pytest.fixture(scope="module")
def counters_history(planted: Repo, tmp_path_factory: pytest.TempPathFactory) -> str:
    """Branch main: CI's records at HELD (a change point at 12); "sparse": commits 2, 8 and 14, too few for a
    change point; "elsewhere": commits 5 and 12 with times 1000x this machine's (the same GPU model)."""
    folder = tmp_path_factory.mktemp("counters-history")
    url = f"sqlite:///{folder / 'history.sqlite'}"
    _record_counters(url, planted, folder, HELD, "main")
    _record_counters(url, planted, folder, (2, 8, 14), "sparse")
    _record_counters(url, planted, folder, (5, 12), "elsewhere", scale=1000.0)
    return url


def test_commits_the_history_holds_are_not_run(planted: Repo, counters_history: str,
                                               monkeypatch: pytest.MonkeyPatch,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    """The change point's two commits (5, 12) are the ends, from the history: only commits between run, at most
    ceil(log2 n) for the n = 8 commits 5..12 (the ends cost nothing); 5 runs when the ends must be run."""
    found = bisect_json(planted, monkeypatch, capsys, "--db", counters_history, "--command", COUNTERS)
    assert found["culprit"] == planted.commits[SLOW_FROM]
    assert found["from_history"] == [planted.commits[5], planted.commits[12]]
    assert planted.commits[5] not in found["runs"] and planted.commits[12] not in found["runs"]
    assert len(found["runs"]) <= math.ceil(math.log2(12 - 5 + 1)) and found["judged_on"] == "counters"
    assert [v["by"] for v in found["verdicts"][:2]] == ["history", "history"]
    assert all(v["by"] == "run" for v in found["verdicts"][2:])


def test_a_history_of_other_times_is_no_reference(planted: Repo, counters_history: str,
                                                  monkeypatch: pytest.MonkeyPatch,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    """Times 1000x this machine's on the same GPU model: the first run is like neither end, so the ends are run
    (the run made kept) and the culprit is still the planted one."""
    found = bisect_json(planted, monkeypatch, capsys, "--db", counters_history, "--command", COUNTERS, "--branch",
                        "elsewhere", "--good", planted.commits[5], "--bad", planted.commits[12])
    assert found["culprit"] == planted.commits[SLOW_FROM] and found["from_history"] == []
    assert {planted.commits[5], planted.commits[12]} <= set(found["runs"]) and len(found["runs"]) == 5


def test_commits_the_history_holds_between_the_ends_are_judged_from_it(
        planted: Repo, counters_history: str, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """A history too sparse for a change point (commits 2, 8 and 14): --good 2 --bad 14 are its, and 8, between,
    is judged good from it: only 9..13 are searched by runs."""
    found = bisect_json(planted, monkeypatch, capsys, "--db", counters_history, "--command", COUNTERS, "--branch",
                        "sparse", "--good", planted.commits[2], "--bad", planted.commits[14])
    assert found["culprit"] == planted.commits[SLOW_FROM]
    assert {"commit": planted.commits[8], "verdict": "good", "by": "history", "note": ""} in found["verdicts"]
    assert all(planted.commits.index(c) in range(9, 14) for c in found["runs"]) and len(found["runs"]) <= 3
    # one end the history's (2), the other run (15): the run end checks it, and only the held end costs nothing
    one = bisect_json(planted, monkeypatch, capsys, "--db", counters_history, "--command", COUNTERS, "--branch",
                      "sparse", "--good", planted.commits[2], "--bad", planted.commits[15])
    assert one["culprit"] == planted.commits[SLOW_FROM] and one["from_history"] == [planted.commits[2]]
    assert one["runs"][0] == planted.commits[15] and planted.commits[2] not in one["runs"]
    assert len(one["runs"]) <= math.ceil(math.log2(15 - 2 + 1)) + 1


def test_a_benchmark_the_history_holds_is_judged_on_its_recorded_median(
        planted: Repo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """CI recorded the pytest-benchmark (perfgate compare's report of its JSON) at commits 5 and 12: the ends are
    the history's medians, each run's rounds compared with them on the threshold; the text says which commits were
    not run (5 runs without the history)."""
    url = f"sqlite:///{tmp_path / 'history.sqlite'}"
    for at in (5, 12):
        measured = benchmark_json(tmp_path / f"bench{at}.json", 1.5e-3 if at >= SLOW_FROM else 1e-3, seed=at)
        report = tmp_path / f"report{at}.json"
        assert main(["compare", str(measured), str(measured), "-o", str(report), "--format", "json"]) == 0
        assert main(["history", "record", str(report), "--db", url, "--commit", planted.commits[at], "--branch",
                     "main", "--when", f"2026-11-{at + 1:02d}T00:00:00Z"]) == 0
    monkeypatch.chdir(planted.path)
    capsys.readouterr()
    assert main(["bisect", "--test", TEST, "--command", COMMAND, "--db", url, "--good", planted.commits[5], "--bad",
                 planted.commits[12]]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[0] == f"first bad commit: {planted.commits[SLOW_FROM]}"
    assert (f"3 runs of the test over 7 commits; the history's: {planted.commits[5][:12]}, "
            f"{planted.commits[12][:12]} (no run)") in out


def test_git_bisect_run_steps_judge_the_commits_the_history_holds_without_a_run(
        planted: Repo, counters_history: str, tmp_path: Path) -> None:
    """A real ``git bisect run`` from commit 2 (good) to 14 (bad), the history (branch "sparse") holding 2, 8 and
    14: the ends and commit 8, git's first probe, are judged from it; only the others run (each run logs its
    commit), and git names 11."""
    repo = clone(planted, tmp_path / "clone")
    log = tmp_path / "ran.jsonl"
    command = f"cat state.json >> {log} && echo >> {log} && {COUNTERS}"
    done = _git_bisect_run(repo, repo.commits[14], repo.commits[2],
                           "--command", command, "--db", counters_history, "--branch", "sparse")
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"{repo.commits[SLOW_FROM]} is the first bad commit" in done.stdout
    ran = [json.loads(line)["index"] for line in log.read_text(encoding="utf-8").splitlines() if line]
    assert ran == [11, 10]  # git probes 8 (the history's: good), 11 (bad), 10 (good); the ends are never run
    steps = done.stdout.count("perfgate bisect:") + done.stderr.count("perfgate bisect:")
    assert steps > len(ran)  # some steps were the history's
    assert not list((repo.path / ".git" / "perfgate-bisect").glob("*/*.json"))  # no end was measured



@pytest.mark.parametrize("good, bad", [(2, 15), (0, 14)])
def test_git_bisect_run_with_one_end_in_the_history_runs_only_the_other_once(
        planted: Repo, counters_history: str, tmp_path: Path, good: int, bad: int) -> None:
    """A real ``git bisect run`` whose history (branch "sparse": 2, 8, 14) holds one end only: that end is the
    history's (never run), the other end is run once, by the first step, and kept for the later ones; commit 8,
    the history's, costs no run; git names 11 in at most ceil(log2 n) + 1 runs (the run end included)."""
    repo = clone(planted, tmp_path / "clone")
    log = tmp_path / "ran.jsonl"
    command = f"cat state.json >> {log} && echo >> {log} && {COUNTERS}"
    done = _git_bisect_run(repo, repo.commits[bad], repo.commits[good],
                           "--command", command, "--db", counters_history, "--branch", "sparse")
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"{repo.commits[SLOW_FROM]} is the first bad commit" in done.stdout
    ran = [json.loads(line)["index"] for line in log.read_text(encoding="utf-8").splitlines() if line]
    held, run_end = (good, bad) if good == 2 else (bad, good)
    assert ran.count(run_end) == 1 and ran[0] == run_end  # the first step runs it, the later ones read it
    assert held not in ran and 8 not in ran
    assert len(ran) <= math.ceil(math.log2(bad - good + 1)) + 1
    (folder,) = (repo.path / ".git" / "perfgate-bisect").iterdir()
    assert sorted(p.name for p in folder.iterdir()) == sorted([f"{repo.commits[run_end]}-1.json", "history-checked"])
    log_text = subprocess.run(["git", "bisect", "log"], cwd=repo.path, capture_output=True, text=True,
                              check=True).stdout
    assert f"git bisect bad {repo.commits[SLOW_FROM]}" in log_text
    assert f"git bisect good {repo.commits[SLOW_FROM - 1]}" in log_text


@pytest.mark.parametrize("good, bad, why", [(4, 12, "like neither end"), (5, 13, "compared with the run end: pass")])
def test_one_end_from_a_history_of_other_times_is_no_reference(
        planted: Repo, counters_history: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str], good: int, bad: int, why: str) -> None:
    """One end the history's with times 1000x this machine's (branch "elsewhere": 5, 12), the other run. The held
    bad end 12 still differs from the good end run (it is slower still): commits run like the good end show
    nothing of the history, and 11, like neither end, shows it is no reference. The held good end 5 is slower than
    the bad end run: the ends do not differ. Either way the held end is run too, in the search (the runs made
    kept) and in the steps (kept for the later ones), and the planted commit is named all the same."""
    found = bisect_json(planted, monkeypatch, capsys, "--db", counters_history, "--command", COUNTERS, "--branch",
                        "elsewhere", "--good", planted.commits[good], "--bad", planted.commits[bad])
    assert found["culprit"] == planted.commits[SLOW_FROM] and found["from_history"] == []
    assert {planted.commits[good], planted.commits[bad]} <= set(found["runs"])
    assert len(found["runs"]) == len(set(found["runs"]))  # nothing run twice: the restart kept the runs
    assert all(v["by"] == "run" for v in found["verdicts"])
    repo = clone(planted, tmp_path / "clone")
    monkeypatch.chdir(repo.path)
    step = ["bisect", "--step", "--test", TEST, "--command", COUNTERS, "--db", counters_history, "--branch",
            "elsewhere", "--good", repo.commits[good], "--bad", repo.commits[bad]]
    assert main([*step, "--commit", repo.commits[SLOW_FROM]]) == 1
    (folder,) = (repo.path / ".git" / "perfgate-bisect").iterdir()
    assert why in (folder / "history-no-reference").read_text(encoding="utf-8")
    assert len(list(folder.glob("*.json"))) == 2  # both ends, run
    assert main([*step, "--commit", repo.commits[SLOW_FROM - 1]]) == 0
    assert main([*step, "--commit", repo.commits[8]]) == 0
    assert len(list(folder.glob("*.json"))) == 2


@pytest.mark.parametrize("seed", [4, 26])
def test_a_median_from_the_history_is_no_reference_for_rounds_too_noisy_for_the_threshold(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], seed: int) -> None:
    """The noisy repository (each round up to several times its time, 1.6x slower from commit 4), CI's
    pytest-benchmark result recorded at the good end only: its median, judged on the threshold alone, named commit
    2 (seed 4) or 3 (seed 26). This machine's rounds leave their median too uncertain for the threshold, so the
    history is no reference: the ends are run, and no wrong commit is named, by the search or by git bisect run."""
    repo = make_repo(tmp_path / "noisy", 8, 4, noise=2.0, slowdown=1.6, seed=seed)
    url = f"sqlite:///{tmp_path / 'history.sqlite'}"
    measured = benchmark_json(tmp_path / "ci.json", 1e-3, noise=2.0, seed=seed * 7 + 3)
    assert main(["compare", str(measured), str(measured), "-o", str(tmp_path / "ci-report.json"), "--format",
                 "json"]) == 0
    assert main(["history", "record", str(tmp_path / "ci-report.json"), "--db", url, "--commit", repo.commits[0],
                 "--branch", "main"]) == 0
    found = bisect_json(repo, monkeypatch, capsys, "--db", url, "--good", repo.commits[0], "--bad", repo.commits[7])
    assert found["from_history"] == [] and repo.commits[0] in found["runs"]
    good, bad = (repo.commits.index(c) for c in found["range"])
    assert good < 4 <= bad and found["culprit"] in (None, repo.commits[4])
    done = _git_bisect_run(repo, repo.commits[7], repo.commits[0], "--command", COMMAND, "--db", url)
    named = [line.split()[0] for line in done.stdout.splitlines() if line.endswith("is the first bad commit")]
    assert named in ([], [repo.commits[4]]), done.stdout
    assert "history-no-reference" in {p.name for p in (repo.path / ".git" / "perfgate-bisect").glob("*/*")}


PERF_TEST = """
def test_op(perfgate):
    with perfgate.region("op"):
        pass
"""


def test_perfgate_perf_test_through_the_stub_ncu(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    """``--perfgate``: each commit's perf test run under ``pytest --perfgate`` with perfgate's stand-in for ncu
    (tests/helpers/stub_ncu.py: a launch per region entered, the commit's kernel time set by its conftest.py):
    100 us at the good end, 150 us at the bad one; judged on time (the stand-in keeps the instruction count). Each
    run is two pytest processes and an ncu stand-in (seconds): two commits keep it to two runs, the search between
    is proven on the cheap script above."""
    from tests.helpers.bisect_repo import git as repo_git
    from tests.helpers.plugin import install_stub_ncu

    path = tmp_path / "perf"
    path.mkdir()
    repo_git(path, "init", "-q", "-b", "main")
    (path / "test_perf.py").write_text(PERF_TEST, encoding="utf-8")
    commits = []
    for at in range(2):
        nanoseconds = 150_000 if at >= 1 else 100_000
        (path / "conftest.py").write_text(f"# commit {at}\nimport os\nos.environ['PERFGATE_STUB_NS'] = 'test_op={nanoseconds}'\n",
                                          encoding="utf-8")
        repo_git(path, "add", "-A")
        repo_git(path, "commit", "-q", "-m", f"commit {at}")
        commits.append(repo_git(path, "rev-parse", "HEAD"))
    ncu = install_stub_ncu(tmp_path / "bin")
    for name in ("GITHUB_STEP_SUMMARY", "CUDA_VISIBLE_DEVICES", "PERFGATE_STUB_MODE", "PERFGATE_STUB_LOG"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("PERFGATE_ASSUME_GPU", "1")
    monkeypatch.setenv("PERFGATE_STUB_REPORT", "regions")
    monkeypatch.setenv("PYTEST_ADDOPTS", f"--perfgate-ncu={ncu}")
    monkeypatch.setenv("PYTHONPATH", str(Path(__file__).resolve().parents[2]))
    monkeypatch.chdir(path)
    capsys.readouterr()
    assert main(["bisect", "--perfgate", "--test", "test_perf.py::test_op", "--good", commits[0], "--bad",
                 commits[-1], "--format", "json"]) == 0
    found = json.loads(capsys.readouterr().out)
    assert found["culprit"] == commits[1] and found["runs"] == commits
    assert [v["verdict"] for v in found["verdicts"]] == ["good", "bad"]
    assert found["judged_on"] == "time" and found["runs_per_commit"] == 1


def test_a_step_runs_undecided_ends_again_and_keeps_each_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Seed 6 of the noisy repository: one run of each end cannot tell them apart; the step runs each again, keeps
    both runs, and the next step pools the kept runs without running an end."""
    repo = make_repo(tmp_path / "noisy", 8, 4, noise=2.0, slowdown=1.6, seed=6)
    monkeypatch.chdir(repo.path)
    step = ["bisect", "--step", "--test", TEST, "--command", COMMAND, "--good", repo.commits[0], "--bad",
            repo.commits[-1]]
    assert main([*step, "--commit", repo.commits[2]]) in (0, 125)  # before the slowdown: never "bad"
    kept = sorted(p.name for p in (repo.path / ".git" / "perfgate-bisect").glob("*/*.json"))
    assert kept == sorted(f"{repo.commits[at]}-{run}.json" for at in (0, 7) for run in (1, 2))
    assert main([*step, "--commit", repo.commits[6]]) in (1, 125)  # after it: never "good"
    assert len(list((repo.path / ".git" / "perfgate-bisect").glob("*/*.json"))) == 4


def test_a_step_whose_history_is_no_reference_runs_the_ends(planted: Repo, counters_history: str, tmp_path: Path,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """The history's times are 1000x this machine's: the step's first run is like neither of its ends, so the ends
    are run, and the later steps do not ask the history again."""
    repo = clone(planted, tmp_path / "clone")
    monkeypatch.chdir(repo.path)
    step = ["bisect", "--step", "--test", TEST, "--command", COUNTERS, "--db", counters_history, "--branch",
            "elsewhere", "--good", repo.commits[5], "--bad", repo.commits[12]]
    assert main([*step, "--commit", repo.commits[8]]) == 0
    (folder,) = (repo.path / ".git" / "perfgate-bisect").iterdir()
    assert "like neither end" in (folder / "history-no-reference").read_text(encoding="utf-8")
    assert len(list(folder.glob("*.json"))) == 2  # the ends, run
    assert main([*step, "--commit", repo.commits[11]]) == 1
