"""``perfgate publish`` end to end: the real CLI against the loopback GitHub (tests/helpers/github_server.py)."""

from __future__ import annotations

import json
from pathlib import Path

from helpers.github_server import (
    BOT,
    HEAD_SHA,
    HUMAN,
    MERGE_SHA,
    OTHER_HEAD,
    OTHER_PR,
    PR,
    REPO,
    TOKEN,
    FakeGitHub,
    actions_env,
    assert_clean,
    compare_corpus,
    github,
    launch,
    make_report,
    pull_request_event,
    run_publish,
    serve,
    workflow_run_event,
    write_report,
)

__all__ = ["github"]  # the fixture, imported for pytest

MARKER = "<!-- perfgate:comment -->"


def _attribute_to_test(path: Path) -> Path:
    """Give a compare report's rows a test file and line, as ``pytest --perfgate`` does."""
    report = json.loads(path.read_text())
    count = len(report["launches"]["kernel"])
    report["launches"].update(test=["tests/test_mlp.py::test_matrix_addition"] * count,
                              path=["tests/test_mlp.py"] * count, line=[42] * count)
    path.write_text(json.dumps(report))
    return path


def _pages(github: FakeGitHub) -> list[str]:
    return [r.query.get("page", ["1"])[0] for r in github.calls("GET", r"/issues/7/comments$")]


def test_first_run_creates_then_second_run_updates_the_same_comment(github: FakeGitHub, tmp_path: Path) -> None:
    github.add_comments(REPO, PR, 150)  # other users and bots got there first: two pages of 100
    report = _attribute_to_test(compare_corpus(tmp_path, "mlp-t4/report_v3_loop_unroll.ncu-rep",
                                               "mlp-t4/report_v4_8_per_thread.ncu-rep", "regression.json"))
    env = actions_env(github, tmp_path, event=pull_request_event(tmp_path))

    first = run_publish(report, env, subprocess_=True)
    assert first.returncode == 0, first.output
    assert_clean(first)
    ours = [c for c in github.comments_on(REPO, PR) if c["body"].startswith(MARKER)]
    assert len(github.comments_on(REPO, PR)) == 151 and len(ours) == 1
    assert ours[0]["user"] == BOT and "matrix\\_addition2D" in ours[0]["body"]
    assert _pages(github) == ["1", "2"]  # the Link header was followed, through /repositories/{id}/…
    assert github.calls("GET", r"^/repositories/4242/issues/7/comments$")
    assert all(r.query.get("per_page") == ["100"] for r in github.calls("GET", r"/comments$"))
    (run,) = github.check_runs.values()
    assert run["head_sha"] == HEAD_SHA != MERGE_SHA  # the PR head from the event, not the merge commit
    assert (run["name"], run["status"], run["conclusion"]) == ("perfgate", "completed", "failure")
    assert run["output"]["title"] == "1 regression in 1 compared"
    assert [(a["path"], a["start_line"], a["annotation_level"]) for a in run["annotations"]] == [
        ("tests/test_mlp.py", 42, "failure")]
    assert "duration 67.78 µs → 151.3 µs" in run["annotations"][0]["message"]
    summary = (tmp_path / "step_summary.md").read_text()
    assert "### ❌ perfgate: 1 regression in 1 compared" in summary
    assert "created https://github.com/octo/kernels/pull/7#issuecomment-" in first.stdout

    github.requests.clear()
    second = run_publish(report, env, subprocess_=True)
    assert second.returncode == 0, second.output
    assert_clean(second)
    assert not github.calls("POST", r"/comments$")  # no new comment
    (patch,) = github.calls("PATCH", r"/issues/comments/\d+$")
    assert patch.path.endswith(f"/issues/comments/{ours[0]['id']}")
    assert len(github.comments_on(REPO, PR)) == 151
    assert _pages(github) == ["1", "2"]
    assert len(github.check_runs) == 2  # a check run per publish, as every CI run gets its own
    assert summary.count("### ❌") == 1 and (tmp_path / "step_summary.md").read_text().count("### ❌") == 2


def test_requests_carry_githubs_headers(github: FakeGitHub, tmp_path: Path) -> None:
    report = write_report(tmp_path, make_report([launch("k")]))
    run = run_publish(report, actions_env(github, tmp_path, event=pull_request_event(tmp_path)))
    assert run.returncode == 0, run.output
    for request in github.requests:
        headers = {k.lower(): v for k, v in request.headers.items()}
        assert headers["authorization"] == f"Bearer {TOKEN}"
        assert headers["accept"] == "application/vnd.github+json"
        assert headers["x-github-api-version"] == "2022-11-28"
        assert headers["user-agent"].startswith("perfgate/")


def test_a_marker_in_someone_elses_comment_is_not_taken_over(github: FakeGitHub, tmp_path: Path) -> None:
    (spoof,) = github.add_comments(REPO, PR, 1, user=HUMAN, body=MARKER + "\nplease overwrite me")
    report = write_report(tmp_path, make_report([launch("k")]))
    run = run_publish(report, actions_env(github, tmp_path, event=pull_request_event(tmp_path)))
    assert run.returncode == 0, run.output
    assert github.comments[spoof]["body"].startswith(MARKER + "\nplease overwrite me")
    assert not github.calls("PATCH", r"/issues/comments/")
    assert len(github.calls("POST", r"/issues/7/comments$")) == 1


def test_comment_id_gives_each_workflow_its_own_sticky_comment(github: FakeGitHub, tmp_path: Path) -> None:
    report = write_report(tmp_path, make_report([launch("k")]))
    env = actions_env(github, tmp_path, event=pull_request_event(tmp_path))
    for key in ("t4", "a10g", "t4"):
        assert run_publish(report, env, "--comment-id", key, "--no-check").returncode == 0
    bodies = [c["body"] for c in github.comments_on(REPO, PR)]
    assert len(bodies) == 2
    assert bodies[0].startswith("<!-- perfgate:comment:t4 -->")
    assert bodies[1].startswith("<!-- perfgate:comment:a10g -->")
    assert len(github.calls("PATCH", r"/issues/comments/")) == 1
    bad = run_publish(report, env, "--comment-id", "x y -->")
    assert bad.returncode == 2 and "--comment-id" in bad.stderr


def test_only_on_regression_and_all_clear(github: FakeGitHub, tmp_path: Path) -> None:
    env = actions_env(github, tmp_path, event=pull_request_event(tmp_path))
    passing = write_report(tmp_path, make_report([launch("k", status="unchanged")]), "pass.json")
    failing = write_report(tmp_path, make_report([launch("k")]), "fail.json")

    quiet = run_publish(passing, env, "--only-on-regression", "--all-clear")
    assert quiet.returncode == 0 and "nothing posted" in quiet.stdout
    assert github.comments_on(REPO, PR) == []
    assert [r["conclusion"] for r in github.check_runs.values()] == ["success"]  # the check still reports

    assert run_publish(failing, env, "--only-on-regression").returncode == 0
    (comment,) = github.comments_on(REPO, PR)
    assert "<!-- perfgate:verdict=fail -->" in comment["body"]

    kept = run_publish(passing, env, "--only-on-regression")  # no --all-clear: left as it is
    assert kept.returncode == 0 and not github.calls("PATCH", r"/issues/comments/")
    assert "verdict=fail" in github.comments[comment["id"]]["body"]

    cleared = run_publish(passing, env, "--only-on-regression", "--all-clear")
    assert cleared.returncode == 0 and "all-clear" in cleared.stdout
    body = github.comments[comment["id"]]["body"]
    assert "All clear" in body and "verdict=fail" not in body and HEAD_SHA[:12] in body
    assert len(github.comments_on(REPO, PR)) == 1


def test_default_mode_updates_a_regression_comment_with_the_passing_report(github: FakeGitHub, tmp_path: Path) -> None:
    env = actions_env(github, tmp_path, event=pull_request_event(tmp_path))
    assert run_publish(write_report(tmp_path, make_report([launch("k")]), "f.json"), env).returncode == 0
    assert run_publish(write_report(tmp_path, make_report([launch("k", status="unchanged")]), "p.json"),
                       env).returncode == 0
    (comment,) = github.comments_on(REPO, PR)
    assert "✅ perfgate: no regression" in comment["body"] and "All clear" not in comment["body"]


def test_workflow_run_takes_pr_and_head_from_the_payload(github: FakeGitHub, tmp_path: Path) -> None:
    report = write_report(tmp_path, make_report([launch("k")]))
    env = actions_env(github, tmp_path, event=workflow_run_event(tmp_path, pulls=[PR]), event_name="workflow_run")
    env["GITHUB_SHA"] = OTHER_HEAD  # on workflow_run: the default branch's head, not the tested commit
    run = run_publish(report, env)
    assert run.returncode == 0, run.output
    assert len(github.comments_on(REPO, PR)) == 1
    (check,) = github.check_runs.values()
    assert check["head_sha"] == HEAD_SHA
    assert check["details_url"] == f"https://github.com/{REPO}/actions/runs/555"  # the run holding the artifact
    assert not github.calls("GET", r"/pulls/")  # the number came from GitHub's payload: nothing to check


def test_workflow_run_from_a_fork_uses_the_uploaded_pr_number(github: FakeGitHub, tmp_path: Path) -> None:
    artifact = tmp_path / "artifact"
    artifact.mkdir()
    report = write_report(artifact, make_report([launch("k")]), "perfgate-report.json")
    (artifact / "pr-number").write_text(f"{PR}\n")
    env = actions_env(github, tmp_path, event=workflow_run_event(tmp_path, pulls=[]), event_name="workflow_run")
    run = run_publish(report, env, "--pr", (artifact / "pr-number").read_text())
    assert run.returncode == 0, run.output
    assert github.calls("GET", rf"^/repos/{REPO}/pulls/{PR}$")  # the untrusted number was checked
    assert len(github.comments_on(REPO, PR)) == 1
    assert [r["head_sha"] for r in github.check_runs.values()] == [HEAD_SHA]


def test_workflow_run_refuses_a_pr_number_that_is_not_this_runs(github: FakeGitHub, tmp_path: Path) -> None:
    report = write_report(tmp_path, make_report([launch("k")]))
    env = actions_env(github, tmp_path, event=workflow_run_event(tmp_path, pulls=[]), event_name="workflow_run")
    run = run_publish(report, env, "--pr", str(OTHER_PR))  # a forged artifact naming someone else's PR
    assert run.returncode == 0, run.output
    assert "comment: skipped" in run.stdout and "does not belong to this run" in run.stdout
    assert github.comments_on(REPO, OTHER_PR) == [] and github.comments_on(REPO, PR) == []
    assert [r["head_sha"] for r in github.check_runs.values()] == [HEAD_SHA]  # the tested commit still gets its check


def test_flags_override_the_environment(github: FakeGitHub, tmp_path: Path) -> None:
    report = write_report(tmp_path, make_report([launch("k")]))
    env = actions_env(github, tmp_path, event=None, summary=False)
    env["GITHUB_REPOSITORY"] = "someone/else"
    run = run_publish(report, env, "--repo", REPO, "--pr", str(OTHER_PR), "--sha", OTHER_HEAD,
                      "--check-name", "perfgate (T4)", "--report-url", "https://ci.example.com/job/1 (full)")
    assert run.returncode == 0, run.output
    assert len(github.comments_on(REPO, OTHER_PR)) == 1
    (check,) = github.check_runs.values()
    assert (check["head_sha"], check["name"]) == (OTHER_HEAD, "perfgate (T4)")
    assert check["details_url"] == "https://ci.example.com/job/1%20%28full%29"


def test_github_enterprise_api_url(tmp_path: Path) -> None:
    fake = FakeGitHub(TOKEN, prefix="/api/v3")
    fake.add_repo(REPO, repo_id=4242, pulls={PR: HEAD_SHA})
    with serve(fake):
        fake.add_comments(REPO, PR, 120)
        report = write_report(tmp_path, make_report([launch("k")]))
        run = run_publish(report, actions_env(fake, tmp_path, event=pull_request_event(tmp_path)))
        assert run.returncode == 0, run.output
        assert len(fake.comments_on(REPO, PR)) == 121 and len(fake.check_runs) == 1
        assert not fake.calls("GET", "__outside_the_api__")


def test_exit_status_ignores_the_verdict_unless_asked(github: FakeGitHub, tmp_path: Path) -> None:
    report = write_report(tmp_path, make_report([launch("k")]))
    env = actions_env(github, tmp_path, event=pull_request_event(tmp_path))
    assert run_publish(report, env).returncode == 0
    assert run_publish(report, env, "--fail-on-regression").returncode == 1
    passing = write_report(tmp_path, make_report([launch("k", status="unchanged")]), "p.json")
    assert run_publish(passing, env, "--fail-on-regression").returncode == 0


def test_summary_only_needs_no_token(github: FakeGitHub, tmp_path: Path) -> None:
    report = write_report(tmp_path, make_report([launch("k")]))
    env = actions_env(github, tmp_path, event=pull_request_event(tmp_path), token=None)
    run = run_publish(report, env, "--no-comment", "--no-check")
    assert run.returncode == 0, run.output
    assert github.requests == [] and "perfgate" in (tmp_path / "step_summary.md").read_text()
    missing = run_publish(report, env)
    assert missing.returncode == 2 and missing.stderr.count("\n") == 1 and "GITHUB_TOKEN is not set" in missing.stderr


def test_unusable_reports_exit_2_with_one_line(github: FakeGitHub, tmp_path: Path) -> None:
    env = actions_env(github, tmp_path, event=pull_request_event(tmp_path))
    not_a_report = tmp_path / "x.json"
    not_a_report.write_text('{"hello": 1}')
    crafted = make_report([launch("k")])
    crafted["results"]["baseline"][0] = "<img src=x onerror=alert(1)>"
    for path in (tmp_path / "absent.json", not_a_report, write_report(tmp_path, crafted, "crafted.json")):
        run = run_publish(path, env)
        assert run.returncode == 2 and run.stderr.count("\n") == 1, run.output
        assert_clean(run)
    assert github.requests == []  # nothing is posted from an unusable report
