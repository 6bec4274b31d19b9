"""Retries, time bounds and one-line errors of ``perfgate publish``, against the loopback GitHub."""

from __future__ import annotations

import socket
import time
from email.utils import formatdate
from pathlib import Path

import pytest
from helpers.github_server import (
    PR,
    READ_ONLY_TOKEN,
    REPO,
    TOKEN,
    FakeGitHub,
    Fault,
    actions_env,
    assert_clean,
    github,
    launch,
    make_report,
    pull_request_event,
    run_publish,
    write_report,
)

from perfgate.publish.github import (
    GitHubClient,
    GitHubError,
    RetryPolicy,
    parse_link_header,
    retry_delay,
)

__all__ = ["github"]


@pytest.fixture
def setup(github: FakeGitHub, tmp_path: Path) -> tuple[Path, dict[str, str]]:
    report = write_report(tmp_path, make_report([launch("k", path="tests/test_k.py", line=3)]))
    return report, actions_env(github, tmp_path, event=pull_request_event(tmp_path))


def _error_lines(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.strip()]


# ---------------------------------------------------------------- retries through the CLI

def test_publishes_through_two_502s_and_a_429_with_retry_after(github: FakeGitHub, setup: tuple[Path, dict]) -> None:
    report, env = setup
    github.faults.extend([Fault(502, body="<html><h1>502 Bad Gateway</h1></html>"), Fault(502),
                          Fault(429, {"Retry-After": "1"}, {"message": "You have exceeded a secondary rate limit."})])
    run = run_publish(report, env, "--retry-backoff", "0.05", subprocess_=True)
    assert run.returncode == 0, run.output
    assert_clean(run)
    assert len(github.comments_on(REPO, PR)) == 1 and len(github.check_runs) == 1
    statuses = [r.status for r in github.requests]
    assert statuses[:4] == [502, 502, 429, 200]
    waited = github.requests[3].time - github.requests[2].time
    assert 1.0 <= waited < 2.0  # Retry-After honoured, and not much more
    assert run.seconds < 10


def test_an_outage_gives_up_within_the_time_limit(github: FakeGitHub, setup: tuple[Path, dict]) -> None:
    report, env = setup
    github.outage = Fault(503, body={"message": "Service Unavailable"})
    run = run_publish(report, env, "--max-time", "2", "--retry-backoff", "0.2", subprocess_=True)
    assert run.returncode == 3
    assert_clean(run)
    (line,) = _error_lines(run.stderr)
    assert line.startswith("perfgate: error: GitHub is unavailable (HTTP 503 on GET /repos/octo/kernels/issues/7/")
    assert "gave up after" in line and "--max-time" in line
    assert len(github.requests) >= 3 and not github.calls("POST", "check-runs")  # stops: the rest would fail too
    # No request starts after the 2 s budget (a little slack for a loaded CI machine between the
    # client's deadline check and the server's clock), and the whole run stays bounded.
    assert github.requests[-1].time - github.requests[0].time < 2.5
    assert run.seconds < 15  # 2 s of retries plus the interpreter's start, on a loaded 2-core machine


def test_an_unreachable_api_gives_up_with_one_line(setup: tuple[Path, dict]) -> None:
    report, env = setup
    with socket.socket() as probe:  # a port nobody listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    env = {**env, "GITHUB_API_URL": f"http://127.0.0.1:{port}"}
    run = run_publish(report, env, "--max-time", "1", "--retry-backoff", "0.1")
    assert run.returncode == 3
    (line,) = _error_lines(run.stderr)
    assert f"cannot reach GitHub at http://127.0.0.1:{port} (connection refused)" in line
    assert_clean(run)


def test_a_password_in_the_api_url_is_never_printed(github: FakeGitHub, setup: tuple[Path, dict]) -> None:
    # GITHUB_API_URL through a proxy that wants user:password@: every line names the URL without the password.
    report, env = setup
    password = "hunter2-proxy"
    with socket.socket() as probe:  # a port nobody listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    unreachable = run_publish(report, {**env, "GITHUB_API_URL": f"http://proxy:{password}@127.0.0.1:{port}"},
                              "--max-time", "1", "--retry-backoff", "0.1", subprocess_=True)
    assert unreachable.returncode == 3
    (line,) = _error_lines(unreachable.stderr)
    assert f"cannot reach GitHub at http://proxy:***@127.0.0.1:{port} (connection refused)" in line
    not_http = run_publish(report, {**env, "GITHUB_API_URL": f"ftp://proxy:{password}@127.0.0.1:{port}"},
                           subprocess_=True)
    assert not_http.returncode == 2
    assert _error_lines(not_http.stderr) == [
        f"perfgate: error: GITHUB_API_URL 'ftp://proxy:***@127.0.0.1:{port}' is not an http(s) URL"]
    # A proxy that quotes the URL it was given back in its answer (percent-encoded, as a URL holds it).
    api = env["GITHUB_API_URL"].replace("://", "://proxy:hunter2%2Dproxy@")
    github.faults.append(Fault(422, body={"message": f"no route for {api} as proxy:{password}"}))
    echoed = run_publish(report, {**env, "GITHUB_API_URL": api})
    assert echoed.returncode == 3 and "proxy:***" in echoed.stderr
    for run in (unreachable, not_http, echoed):
        assert_clean(run, password, "hunter2%2Dproxy")


def test_rate_limit_reset_is_waited_for(github: FakeGitHub, setup: tuple[Path, dict]) -> None:
    report, env = setup
    reset = int(time.time()) + 1
    github.faults.append(Fault(403, {"x-ratelimit-remaining": "0", "x-ratelimit-reset": str(reset)},
                               {"message": "API rate limit exceeded for installation ID 1."}))
    run = run_publish(report, env)
    assert run.returncode == 0, run.output
    assert github.requests[1].time - github.requests[0].time >= 0.0
    assert time.time() >= reset - 0.01  # the retry waited for the reset


def test_a_rate_limit_beyond_the_time_limit_gives_up_at_once(github: FakeGitHub, setup: tuple[Path, dict]) -> None:
    report, env = setup
    github.faults.append(Fault(429, {"Retry-After": "3600"}, {"message": "secondary rate limit"}))
    run = run_publish(report, env)
    assert run.returncode == 3 and run.seconds < 2
    (line,) = _error_lines(run.stderr)
    assert "rate limit" in line and "3600 s" in line and "--max-time" in line
    assert len(github.requests) == 1


# ---------------------------------------------------------------- refusals: one clear line each

def test_bad_token_401(github: FakeGitHub, setup: tuple[Path, dict]) -> None:
    report, env = setup
    wrong = "ghp_WRONGtoken_0123456789abcdef"
    run = run_publish(report, {**env, "GITHUB_TOKEN": wrong}, subprocess_=True)
    assert run.returncode == 3
    (line,) = _error_lines(run.stderr)
    assert "GitHub rejected the token (HTTP 401: Bad credentials)" in line and "GITHUB_TOKEN" in line
    assert_clean(run, wrong)


def test_unknown_pr_and_repo_404(github: FakeGitHub, setup: tuple[Path, dict]) -> None:
    report, env = setup
    run = run_publish(report, env, "--pr", "99")
    assert run.returncode == 3
    (line,) = _error_lines(run.stderr)
    assert "GitHub found nothing at GET /repos/octo/kernels/issues/99/comments (HTTP 404)" in line
    assert "--repo" in line and "--pr" in line
    assert len(github.check_runs) == 1  # the check run on the commit does not need the PR
    run = run_publish(report, env, "--repo", "octo/missing")
    assert run.returncode == 3
    assert [line.split(" (HTTP")[0] for line in _error_lines(run.stderr)] == [
        "perfgate: error: GitHub found nothing at GET /repos/octo/missing/issues/7/comments",
        "perfgate: error: GitHub found nothing at POST /repos/octo/missing/check-runs"]
    assert_clean(run)


def test_422_is_one_line_and_does_not_stop_the_rest(github: FakeGitHub, setup: tuple[Path, dict]) -> None:
    report, env = setup
    run = run_publish(report, env, "--sha", "0" * 40)  # a commit GitHub does not know
    assert run.returncode == 3
    (line,) = _error_lines(run.stderr)
    assert "GitHub rejected POST /repos/octo/kernels/check-runs as invalid (HTTP 422: No commit found for SHA" in line
    assert len(github.comments_on(REPO, PR)) == 1  # the comment went out before


def test_read_only_token_of_a_fork_gets_the_fork_explanation(github: FakeGitHub, setup: tuple[Path, dict]) -> None:
    report, env = setup
    run = run_publish(report, {**env, "GITHUB_TOKEN": READ_ONLY_TOKEN}, subprocess_=True)
    assert run.returncode == 3
    assert_clean(run)
    (line,) = _error_lines(run.stderr)
    assert "Resource not accessible by integration" in line and "read-only" in line
    assert "forks" in line and "workflow_run" in line and ".github/workflows/perfgate-fork-publish.yml" in line
    assert (Path(env["GITHUB_STEP_SUMMARY"])).read_text().startswith("\n### ❌ perfgate")  # the summary still went out


def test_token_echoed_by_github_is_scrubbed(github: FakeGitHub, setup: tuple[Path, dict]) -> None:
    report, env = setup
    github.faults.append(Fault(422, body={"message": f"Validation Failed for {TOKEN}",
                                          "errors": [{"message": f"token {TOKEN} rejected"}]}))
    run = run_publish(report, env)
    assert run.returncode == 3 and "***" in run.stderr
    assert_clean(run)


def test_a_token_with_whitespace_is_refused_before_any_request(github: FakeGitHub, setup: tuple[Path, dict]) -> None:
    report, env = setup
    run = run_publish(report, {**env, "GITHUB_TOKEN": TOKEN[:8] + "\n" + TOKEN[8:]})
    assert run.returncode == 2 and github.requests == []
    assert TOKEN[:8] not in run.output and TOKEN[8:] not in run.output


# ---------------------------------------------------------------- the retry policy, without sleeping

class FakeTime:
    def __init__(self) -> None:
        self.now = 1_000.0
        self.sleeps: list[float] = []

    def clock(self) -> float:
        return self.now

    def wall(self) -> float:
        return 1_700_000_000.0 + self.now

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds


def _client(github: FakeGitHub, fake: FakeTime, policy: RetryPolicy | None = None) -> GitHubClient:
    return GitHubClient(TOKEN, github.api, policy=policy or RetryPolicy(), clock=fake.clock, wall_clock=fake.wall,
                        sleep=fake.sleep, jitter=lambda: 0.0)


def test_default_policy_waits(github: FakeGitHub) -> None:
    fake = FakeTime()
    github.faults.extend([Fault(502), Fault(502), Fault(429, {"Retry-After": "7"}), Fault(500)])
    comments = list(_client(github, fake).iter_issue_comments(REPO, PR))
    assert comments == [] and fake.sleeps == [0.5, 1.0, 7.0, 4.0]  # backoff doubles per failed try


def test_default_policy_gives_up_on_an_outage_within_60_seconds(github: FakeGitHub) -> None:
    fake = FakeTime()
    github.outage = Fault(503)
    started = time.monotonic()
    with pytest.raises(GitHubError) as caught:
        _client(github, fake).create_issue_comment(REPO, PR, "x")
    assert time.monotonic() - started < 5  # real time: no real sleeping
    assert sum(fake.sleeps) <= 60 and fake.sleeps[-1] == 8.0
    assert len(github.requests) == len(fake.sleeps) + 1 == 11
    assert "HTTP 503" in str(caught.value) and "11 attempts in 55.5 s" in str(caught.value)


def test_rate_limit_reset_and_secondary_limit_waits(github: FakeGitHub) -> None:
    fake = FakeTime()
    reset = int(fake.wall()) + 30
    github.faults.extend([Fault(403, {"x-ratelimit-remaining": "0", "x-ratelimit-reset": str(reset)}),
                          Fault(403, {}, {"message": "You have exceeded a secondary rate limit"})])
    list(_client(github, fake, RetryPolicy(max_time=600)).iter_issue_comments(REPO, PR))
    assert fake.sleeps == [30.0, 60.0]


def test_retry_delay_is_a_pure_decision() -> None:
    policy = RetryPolicy(backoff=1.0, max_backoff=8.0, secondary_wait=60.0)
    now = 1_700_000_000.0
    assert [retry_delay(503, {}, n, now=now, policy=policy) for n in (1, 2, 3, 4, 5)] == [1, 2, 4, 8, 8]
    assert retry_delay(None, {}, 1, now=now, policy=policy) == 1  # connection error
    assert retry_delay(429, {"Retry-After": "3"}, 1, now=now, policy=policy) == 3
    assert retry_delay(429, {"retry-after": formatdate(now + 20, usegmt=True)}, 1, now=now, policy=policy) == 20
    assert retry_delay(403, {"X-RateLimit-Remaining": "0", "X-RateLimit-Reset": str(int(now) + 42)}, 1, now=now,
                       policy=policy) == 42
    assert retry_delay(429, {}, 1, now=now, policy=policy) == 60
    assert retry_delay(403, {}, 1, now=now, policy=policy, message="Resource not accessible by integration") is None
    for status in (400, 401, 404, 422):
        assert retry_delay(status, {}, 1, now=now, policy=policy) is None


def test_link_header_parsing_and_no_token_for_foreign_links(github: FakeGitHub) -> None:
    links = parse_link_header('<https://api.github.com/repositories/1/issues/7/comments?page=2>; rel="next", '
                              '<https://api.github.com/repositories/1/issues/7/comments?page=5>; rel="last"')
    assert links["next"].endswith("page=2") and links["last"].endswith("page=5")
    client = _client(github, FakeTime())
    with pytest.raises(GitHubError, match="refusing to follow a link"):
        client.request("GET", "http://evil.example.com/steal")
    assert github.requests == []
