"""``publish`` is bounded: ``--max-time`` cuts a request a server drips byte by byte, and no answer GitHub
(or a proxy, or a skewed clock) sends makes it retry back to back, forever, or with a traceback."""

from __future__ import annotations

import math
import socket
import threading
import time
from collections.abc import Iterator
from email.utils import formatdate
from pathlib import Path

import pytest
from helpers.github_server import (
    PR,
    REPO,
    TOKEN,
    Fault,
    FakeGitHub,
    actions_env,
    assert_clean,
    github,
    launch,
    make_report,
    pull_request_event,
    run_publish,
    write_report,
)

from perfgate.publish.github import GitHubClient, GitHubError
from perfgate.publish.retry import LONGEST_WAIT, MIN_BACKOFF, RATE_LIMIT_FLOOR, RetryPolicy, backoff, retry_delay

__all__ = ["github"]

DRIP_SECONDS = 2.0
HEAD = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"


class DripServer:
    """Answers every request one byte every ``DRIP_SECONDS``: in the headers, or (``body``) after them."""

    def __init__(self, body: bool) -> None:
        self.body = body
        self.stop = threading.Event()
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.listener.getsockname()[1]}"
        self.bytes_sent = 0
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while not self.stop.is_set():
            try:
                connection, _ = self.listener.accept()
            except OSError:
                return
            threading.Thread(target=self._drip, args=(connection,), daemon=True).start()

    def _drip(self, connection: socket.socket) -> None:
        with connection:
            connection.recv(65536)
            if self.body:  # the headers at once, then a 500-byte body a byte at a time
                connection.sendall(HEAD + b"Content-Length: 500\r\n\r\n")
                data = b" " * 500
            else:
                data = HEAD + b"Content-Length: 2\r\nX-Padding: " + b"." * 500 + b"\r\n\r\n[]"
            try:
                for byte in data:
                    if self.stop.wait(DRIP_SECONDS):
                        return
                    connection.sendall(bytes([byte]))
                    self.bytes_sent += 1
            except OSError:
                return


@pytest.fixture(params=["headers", "body"])
def drip(request: pytest.FixtureRequest) -> Iterator[DripServer]:
    server = DripServer(body=request.param == "body")
    try:
        yield server
    finally:
        server.stop.set()
        server.listener.close()


def test_max_time_cuts_a_dripping_server(drip: DripServer, tmp_path: Path) -> None:
    report = write_report(tmp_path, make_report([launch("k")]))
    env = {**actions_env_like(tmp_path), "GITHUB_API_URL": drip.url}
    run = run_publish(report, env, "--max-time", "3", "--no-check", subprocess_=True, timeout=60)
    assert run.returncode == 3, run.output
    lines = [line for line in run.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "--max-time" in lines[0] and "had not answered" in lines[0], run.stderr
    assert_clean(run)
    assert drip.bytes_sent >= 1  # it was answering, slowly: each read was quick, the whole was not
    assert run.seconds < 3 + 12  # the deadline plus the interpreter's start on a loaded 2-core machine


def actions_env_like(tmp_path: Path) -> dict[str, str]:
    """The Actions environment without the fake GitHub (the drip server stands in for it)."""

    class Nowhere:
        api = "http://127.0.0.1:9"

    return actions_env(Nowhere(), tmp_path, event=pull_request_event(tmp_path), summary=False)  # type: ignore[arg-type]


# ---------------------------------------------------------------- retry storms

NOW = 1_700_000_000.0
STORMY = {
    "retry-after 0": {"Retry-After": "0"},
    "retry-after negative": {"Retry-After": "-5"},
    "retry-after nan": {"Retry-After": "nan"},
    "retry-after -inf": {"Retry-After": "-inf"},
    "retry-after past date": {"Retry-After": formatdate(NOW - 3600, usegmt=True)},
    "reset in the past": {"x-ratelimit-remaining": "0", "x-ratelimit-reset": str(int(NOW) - 600)},
    "reset nan": {"x-ratelimit-remaining": "0", "x-ratelimit-reset": "nan"},
}


@pytest.mark.parametrize("headers", STORMY.values(), ids=STORMY.keys())
def test_no_answer_retries_back_to_back(headers: dict[str, str]) -> None:
    for attempt in range(1, 12):
        delay = retry_delay(429, headers, attempt, now=NOW, jitter=0.99)
        assert delay is not None and RATE_LIMIT_FLOOR <= delay <= 60
    assert retry_delay(429, headers, RetryPolicy().max_attempts, now=NOW) is None


@pytest.mark.parametrize("value", ["1e308", "inf", "99999999999"])
def test_huge_waits_are_bounded_and_give_up_at_once(value: str) -> None:
    assert retry_delay(429, {"Retry-After": value}, 1, now=NOW) == LONGEST_WAIT
    reset = {"x-ratelimit-remaining": "0", "x-ratelimit-reset": value}
    assert retry_delay(403, reset, 1, now=NOW) == LONGEST_WAIT


def test_backoff_is_capped_jittered_and_never_zero() -> None:
    policy = RetryPolicy(backoff=0.0, max_backoff=8.0)
    assert backoff(1, policy) == MIN_BACKOFF and backoff(10_000, RetryPolicy()) == 8.0  # no OverflowError
    spread = {round(backoff(3, RetryPolicy(), jitter=j / 10), 3) for j in range(10)}
    assert len(spread) == 10 and min(spread) >= 2.0 * (1 - RetryPolicy().jitter) and max(spread) <= 2.0
    assert all(math.isfinite(backoff(n, RetryPolicy(), 0.5)) for n in (1, 100, 10**6))


def test_attempts_are_bounded_and_the_message_names_githubs_answer(github: FakeGitHub) -> None:
    clock = [0.0]

    def sleep(seconds: float) -> None:
        clock[0] += seconds

    github.outage = Fault(429, {"Retry-After": "0"}, {"message": "You have exceeded a secondary rate limit."})
    client = GitHubClient(TOKEN, github.api, policy=RetryPolicy(max_time=10_000), clock=lambda: clock[0],
                          sleep=sleep, jitter=lambda: 0.0)
    with pytest.raises(GitHubError) as caught:
        client.create_issue_comment(REPO, PR, "x")
    assert len(github.requests) == RetryPolicy().max_attempts
    assert min(client.waits) >= RATE_LIMIT_FLOOR
    message = str(caught.value)
    assert "HTTP 429: You have exceeded a secondary rate limit." in message and "12 attempts" in message


@pytest.mark.parametrize("headers", [STORMY["retry-after 0"], STORMY["retry-after past date"]],
                         ids=["retry-after 0", "past date"])
def test_a_storm_through_the_cli_is_slow_and_exits_3(github: FakeGitHub, tmp_path: Path,
                                                    headers: dict[str, str]) -> None:
    github.outage = Fault(429, headers, {"message": "API rate limit exceeded"})
    report = write_report(tmp_path, make_report([launch("k")]))
    started = time.monotonic()
    run = run_publish(report, actions_env(github, tmp_path, event=pull_request_event(tmp_path)), "--max-time", "3")
    assert run.returncode == 3, run.output
    (line,) = [line for line in run.stderr.splitlines() if line.strip()]
    assert "HTTP 429: API rate limit exceeded" in line
    seconds = time.monotonic() - started
    assert len(github.requests) <= seconds / RATE_LIMIT_FLOOR + 1  # at most one a second, not ~22
    assert_clean(run)


def test_a_429_then_dropped_connections_is_named_as_the_429() -> None:
    """A server that answered 429 and then drops connections is not "connection failed" alone: the message
    says what GitHub answered."""
    listener = socket.create_server(("127.0.0.1", 0))
    answered = threading.Event()

    def serve() -> None:
        while True:
            try:
                connection, _ = listener.accept()
            except OSError:
                return
            with connection:
                connection.recv(65536)
                if not answered.is_set():
                    body = b'{"message": "You have exceeded a secondary rate limit."}'
                    connection.sendall(b"HTTP/1.1 429 Too Many Requests\r\nRetry-After: 0\r\nContent-Length: "
                                       + str(len(body)).encode() + b"\r\nConnection: close\r\n\r\n" + body)
                    answered.set()

    threading.Thread(target=serve, daemon=True).start()
    client = GitHubClient(TOKEN, f"http://127.0.0.1:{listener.getsockname()[1]}", policy=RetryPolicy(max_time=3))
    try:
        with pytest.raises(GitHubError) as caught:
            client.create_issue_comment(REPO, PR, "x")
    finally:
        listener.close()
    message = str(caught.value)
    assert "closed the connection" in message and "HTTP 429: You have exceeded a secondary rate limit." in message
