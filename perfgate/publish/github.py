"""A small GitHub REST client over ``requests.Session``: auth, pagination, retries, clear errors.

Facts it relies on (GitHub REST docs, API version 2022-11-28):
- docs.github.com/rest/using-the-rest-api/rate-limits-for-the-rest-api: a rate-limited request gets
  403 or 429; honour ``retry-after`` when present, else wait until ``x-ratelimit-reset`` (UTC epoch
  seconds) when ``x-ratelimit-remaining`` is 0, else wait at least one minute, backing off.
- docs.github.com/rest/using-the-rest-api/using-pagination-in-the-rest-api: follow the ``Link``
  header's ``rel="next"`` URL as given (it may name ``/repositories/{id}/…`` rather than the path
  that was asked for); ``per_page`` is at most 100.

The retry decision is a pure function (:func:`perfgate.publish.retry.retry_delay`); the client takes
its clocks, ``sleep`` and jitter as arguments so tests can check the waits without sleeping. One
deadline bounds every request of a publish, waits included, so an outage costs at most ``max_time``
seconds. ``requests``' timeout bounds each read, not a whole request (a server that drips a byte a
second never trips it), so each request runs in a worker thread the client stops waiting for at the
deadline (:func:`send_within`).
"""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from typing import Any
from urllib.parse import unquote, urlsplit

import requests
import requests.auth

from perfgate.version import __version__
from perfgate.errors import PerfgateError
from perfgate.publish import DEFAULT_API_URL  # noqa: E402  (kept importable from here)
from perfgate.publish.retry import (  # noqa: F401  (kept importable from here)
    RETRY_STATUSES,
    RetryPolicy,
    is_rate_limited,
    parse_retry_after,
    retry_delay,
)

API_VERSION = "2022-11-28"
FORK_PUBLISH_WORKFLOW = ".github/workflows/perfgate-fork-publish.yml"
_READ_ONLY = "resource not accessible by integration"


class GitHubError(PerfgateError):
    """GitHub refused a request or could not be reached. ``str()`` is one line, token-free.

    ``fatal`` is False when only this request was refused (404, 422): other publications may still work.
    """

    def __init__(self, message: str, *, status: int | None = None, fatal: bool = True) -> None:
        super().__init__(message)
        self.status = status
        self.fatal = fatal


def parse_link_header(value: str | None) -> dict[str, str]:
    """``<url>; rel="next", <url>; rel="last"`` -> {"next": url, "last": url}."""
    links: dict[str, str] = {}
    for part in (value or "").split(","):
        pieces = part.strip().split(";")
        url = pieces[0].strip()
        if not (url.startswith("<") and url.endswith(">")):
            continue
        for param in pieces[1:]:
            key, _, rel = param.strip().partition("=")
            if key.strip().lower() == "rel":
                for name in rel.strip().strip('"').split():
                    links[name] = url[1:-1]
    return links


def _one_line(text: str, limit: int = 300) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _network_reason(exc: requests.RequestException) -> str:
    text = str(exc).lower()
    if isinstance(exc, requests.Timeout):
        return "timed out"
    if isinstance(exc, requests.exceptions.SSLError):
        return "TLS error"
    if isinstance(exc, requests.exceptions.ChunkedEncodingError):
        return "the answer was cut off"
    if "refused" in text:
        return "connection refused"
    if "resolve" in text or "name or service" in text:
        return "host name not found"
    if "reset" in text or "broken pipe" in text:
        return "the server closed the connection while the request was sent"
    if "remotedisconnected" in text or "aborted" in text:
        return "the server closed the connection without answering"
    return "connection failed"


def _without_password(url: str) -> tuple[str, str]:
    """(``url`` with the password of its ``user:password@`` written ``***``, that password; "" where none)."""
    try:
        parts = urlsplit(url)
        password = parts.password or ""
    except ValueError:  # not even urllib reads it: the whole text may hold anything
        return "***", ""
    if not password:
        return url, ""
    userinfo, _, host = parts.netloc.rpartition("@")
    return parts._replace(netloc=f"{userinfo.split(':', 1)[0]}:***@{host}").geturl(), password


def describe_refusal(method: str, path: str, status: int, message: str) -> str:
    """The one line to print for a request GitHub refused for good."""
    where = f"{method} {path}"
    if status == 401:
        return (f"GitHub rejected the token (HTTP 401: {message or 'Bad credentials'}) on {where}: "
                "check that GITHUB_TOKEN is set to a valid, unexpired token")
    if status == 403 and _READ_ONLY in message.lower():
        return (f"GitHub refused {where} (HTTP 403: Resource not accessible by integration): the token is "
                "read-only. Pull requests from forks always get a read-only GITHUB_TOKEN, so they cannot comment "
                "or create check runs: use the fork-safe pair (a pull_request workflow uploads the report and PR "
                f"number as an artifact, a workflow_run workflow publishes it; see {FORK_PUBLISH_WORKFLOW}). "
                "For a same-repository PR, grant 'permissions: pull-requests: write, checks: write'")
    if status == 403:
        return (f"GitHub refused {where} (HTTP 403: {message}): the token lacks permission "
                "(the job needs 'permissions: pull-requests: write, checks: write')")
    if status == 404:
        return (f"GitHub found nothing at {where} (HTTP 404): check the repository (--repo / GITHUB_REPOSITORY) "
                "and pull request number (--pr), and that the token can see the repository")
    if status == 422:
        return f"GitHub rejected {where} as invalid (HTTP 422: {message})"
    return f"GitHub answered HTTP {status} to {where}: {message}"


class DeadlinePassed(Exception):
    """A request still unanswered when the publish's time was spent."""


def send_within(session: requests.Session, seconds: float, method: str, url: str,
                **kwargs: Any) -> requests.Response:
    """``session.request`` with its body read, bounded by ``seconds`` in all (connect, headers and body).

    requests' timeout bounds each read, so a server that drips one byte at a time holds it forever; a
    daemon worker thread makes the request and this stops waiting for it at the deadline. The worker is
    left to end with its connection: publish gives up after it (the deadline is the whole publish's).
    """
    outcome: list[requests.Response | BaseException] = []
    done = threading.Event()

    def work() -> None:
        try:
            response = session.request(method, url, **kwargs)
            response.content  # noqa: B018  (the body, read here under the deadline)
            outcome.append(response)
        except BaseException as exc:  # handed to the waiting thread, raised there
            outcome.append(exc)
        finally:
            done.set()

    threading.Thread(target=work, name="perfgate-github-request", daemon=True).start()
    if not done.wait(max(seconds, 0.0)):
        raise DeadlinePassed
    result = outcome[0]
    if isinstance(result, BaseException):
        raise result
    return result


class _BearerAuth(requests.auth.AuthBase):
    """The token as session auth, not a default header: requests then never swaps in ~/.netrc
    credentials, and drops the header on a redirect to another host."""

    def __init__(self, token: str) -> None:
        self._token = token

    def __call__(self, request: requests.PreparedRequest) -> requests.PreparedRequest:
        request.headers["Authorization"] = f"Bearer {self._token}"
        return request


class GitHubClient:
    """GitHub's REST API for one publish: every request shares one deadline (``policy.max_time``)."""

    def __init__(self, token: str, api_url: str = DEFAULT_API_URL, *, policy: RetryPolicy = RetryPolicy(),
                 session: requests.Session | None = None, clock: Callable[[], float] = time.monotonic,
                 wall_clock: Callable[[], float] = time.time, sleep: Callable[[float], None] = time.sleep,
                 jitter: Callable[[], float] = random.random) -> None:
        self._token = token
        self.api_url = api_url.rstrip("/")
        # A GITHUB_API_URL may carry a password (a proxy's user:password@): never printed, like the token.
        self.shown_url, password = _without_password(self.api_url)
        self._secrets = tuple(sorted({secret for secret in (token, password, unquote(password)) if secret},
                                     key=len, reverse=True))
        self.policy = policy
        self._clock, self._wall, self._sleep, self._jitter = clock, wall_clock, sleep, jitter
        self._last_answer = ""  # the last HTTP error GitHub answered, for a later network error's message
        self._started = clock()
        self.waits: list[float] = []  # each wait taken before a retry, for the caller's report
        self.session = session or requests.Session()
        self.session.auth = _BearerAuth(token)
        self.session.headers.update({
            "Accept": "application/vnd.github+json",
            "X-GitHub-Api-Version": API_VERSION,
            "User-Agent": f"perfgate/{__version__}",
        })
        origin = urlsplit(self.api_url)
        if origin.scheme not in ("http", "https") or not origin.netloc:
            raise GitHubError(f"GITHUB_API_URL {self.shown_url!r} is not an http(s) URL", status=None)
        self._origin = (origin.scheme, origin.netloc)

    # -------------------------------------------------------------- plumbing

    def scrub(self, text: str) -> str:
        """Never let the token (or the API URL's password) reach output, whatever text carries it."""
        for secret in self._secrets:
            text = text.replace(secret, "***")
        return text

    def _url(self, url_or_path: str) -> str:
        if url_or_path.startswith("/"):
            return self.api_url + url_or_path
        parts = urlsplit(url_or_path)
        if (parts.scheme, parts.netloc) != self._origin:
            # A Link header pointing elsewhere must not receive our token.
            raise GitHubError(f"refusing to follow a link to {parts.scheme}://{parts.netloc}: "
                              f"it is not the API at {self.shown_url}")
        return url_or_path

    def _error_text(self, response: requests.Response) -> str:
        try:
            data = response.json()
        except ValueError:
            return self.scrub(_one_line(response.reason or ""))
        if not isinstance(data, dict):
            return ""
        parts = [str(data.get("message", ""))]
        for error in data.get("errors", []) if isinstance(data.get("errors"), list) else []:
            if isinstance(error, dict):
                parts.append(str(error.get("message") or f"{error.get('field', '')} {error.get('code', '')}".strip()))
            else:
                parts.append(str(error))
        return self.scrub(_one_line("; ".join(p for p in parts if p)))

    def request(self, method: str, url_or_path: str, *, json: Any = None,
                params: Mapping[str, Any] | None = None) -> requests.Response:
        """One API call, retried per :func:`retry_delay` until it succeeds, the attempts run out or the
        deadline passes."""
        url = self._url(url_or_path)
        path = urlsplit(url).path
        deadline = self._started + self.policy.max_time
        attempt = 0
        while True:
            left = deadline - self._clock()
            if left <= 0:
                raise GitHubError(f"gave up on {method} {path}: the {self.policy.max_time:g} s limit for "
                                  "publishing (--max-time) is spent")
            attempt += 1
            status: int | None = None
            headers: Mapping[str, str] = {}
            message = ""
            try:
                response = send_within(self.session, left, method, url, json=json, params=params,
                                       timeout=(min(10.0, left), min(30.0, left)))
            except DeadlinePassed:
                raise GitHubError(f"gave up on {method} {path}: GitHub had not answered when the "
                                  f"{self.policy.max_time:g} s limit for publishing (--max-time) was spent "
                                  f"({self._tries(attempt)})") from None
            except requests.RequestException as exc:
                message = _network_reason(exc)
            else:
                if response.status_code < 400:
                    return response
                status, headers, message = response.status_code, response.headers, self._error_text(response)
                self._last_answer = f"HTTP {status}" + (f": {message}" if message else "")
            delay = retry_delay(status, headers, attempt, now=self._wall(), policy=self.policy, message=message,
                                jitter=self._jitter())
            if delay is None and attempt >= self.policy.max_attempts and (status is None or is_rate_limited(
                    status, headers, message) or status in RETRY_STATUSES):
                raise GitHubError(self._exhausted(method, path, status, message, attempt))
            if delay is None:
                assert status is not None  # network errors always get a delay
                # 404/422 concern this request; 401/403 would refuse every other one too.
                raise GitHubError(describe_refusal(method, path, status, message), status=status,
                                  fatal=status not in (404, 422))
            if self._clock() + delay > deadline:
                raise GitHubError(self._give_up(method, path, status, message, attempt, delay), status=status)
            self.waits.append(delay)
            self._sleep(delay)

    def _tries(self, attempts: int) -> str:
        elapsed = self._clock() - self._started
        return f"{attempts} attempt{'s' if attempts != 1 else ''} in {elapsed:.1f} s"

    def _answered(self, status: int | None, message: str) -> str:
        """What GitHub answered: ``HTTP 429: You have exceeded a secondary rate limit``."""
        if status is None:
            return message + (f"; before that GitHub answered {self._last_answer}" if self._last_answer else "")
        return f"HTTP {status}" + (f": {message}" if message else "")

    def _exhausted(self, method: str, path: str, status: int | None, message: str, attempts: int) -> str:
        if status is None:
            return (f"cannot reach GitHub at {self.shown_url} ({self._answered(status, message)}) for {method} "
                    f"{path}: gave up after {self._tries(attempts)}")
        return (f"GitHub kept refusing {method} {path} ({self._answered(status, message)}): gave up after "
                f"{self._tries(attempts)}; publish again later")

    def _give_up(self, method: str, path: str, status: int | None, message: str, attempts: int,
                 delay: float) -> str:
        limit = f"the {self.policy.max_time:g} s limit (--max-time)"
        tries = self._tries(attempts)
        answered = self._answered(status, message)
        if status is None:
            return (f"cannot reach GitHub at {self.shown_url} ({answered}) for {method} {path}: gave up after {tries}, "
                    f"within {limit}")
        if status in RETRY_STATUSES:
            said = f": {message}" if message else ""
            return (f"GitHub is unavailable (HTTP {status} on {method} {path}{said}): gave up after {tries}, within "
                    f"{limit}; publish again later")
        return (f"GitHub rate limit on {method} {path} ({answered}): it asks to wait {delay:.0f} s, beyond "
                f"{limit}; publish again later")

    def _json(self, response: requests.Response, what: str) -> Any:
        try:
            return response.json()
        except ValueError:
            raise GitHubError(f"GitHub answered {what} with something that is not JSON "
                              f"(HTTP {response.status_code})") from None

    def paginate(self, path: str, params: Mapping[str, Any] | None = None) -> Iterator[dict[str, Any]]:
        """Every item of a list endpoint, following ``Link: rel="next"`` as GitHub gives it."""
        url: str | None = path
        query: Mapping[str, Any] | None = {"per_page": 100, **(params or {})}
        while url:
            response = self.request("GET", url, params=query)
            items = self._json(response, f"GET {urlsplit(url).path}")
            if not isinstance(items, list):
                raise GitHubError(f"GitHub answered GET {urlsplit(url).path} with no list")
            yield from (item for item in items if isinstance(item, dict))
            url, query = parse_link_header(response.headers.get("Link")).get("next"), None

    # -------------------------------------------------------------- endpoints

    def iter_issue_comments(self, repo: str, number: int) -> Iterator[dict[str, Any]]:
        return self.paginate(f"/repos/{repo}/issues/{number}/comments")

    def _object(self, response: requests.Response, what: str) -> dict[str, Any]:
        data = self._json(response, what)
        if not isinstance(data, dict):
            raise GitHubError(f"GitHub answered {what} with no JSON object")
        return data

    def create_issue_comment(self, repo: str, number: int, body: str) -> dict[str, Any]:
        path = f"/repos/{repo}/issues/{number}/comments"
        return self._object(self.request("POST", path, json={"body": body}), f"POST {path}")

    def update_issue_comment(self, repo: str, comment_id: int, body: str) -> dict[str, Any]:
        path = f"/repos/{repo}/issues/comments/{comment_id}"
        return self._object(self.request("PATCH", path, json={"body": body}), f"PATCH {path}")

    def get_pull(self, repo: str, number: int) -> dict[str, Any]:
        path = f"/repos/{repo}/pulls/{number}"
        return self._object(self.request("GET", path), f"GET {path}")

    def create_check_run(self, repo: str, payload: Mapping[str, Any]) -> dict[str, Any]:
        path = f"/repos/{repo}/check-runs"
        return self._object(self.request("POST", path, json=dict(payload)), f"POST {path}")

    def update_check_run(self, repo: str, run_id: int, payload: Mapping[str, Any]) -> dict[str, Any]:
        path = f"/repos/{repo}/check-runs/{run_id}"
        return self._object(self.request("PATCH", path, json=dict(payload)), f"PATCH {path}")
