"""A loopback stand-in for GitHub's REST API, strict where GitHub is, for ``perfgate publish`` tests.

A real ``http.server.ThreadingHTTPServer`` on 127.0.0.1 (port 0) in a thread. It implements the
endpoints publish uses and rejects what GitHub rejects. Request shapes follow GitHub's published
REST reference (API version 2022-11-28):

- Issue comments (docs.github.com/rest/issues/comments): list ``GET /repos/{o}/{r}/issues/{n}/comments``
  (``per_page`` at most 100, default 30; ``page``; ascending ids; ``Link`` with rel next/last/prev/first,
  whose URLs name ``/repositories/{id}/…`` as GitHub's do); create ``POST …/issues/{n}/comments``
  with a required ``body``; update ``PATCH /repos/{o}/{r}/issues/comments/{id}``. A body holds at
  most 65,536 characters, else 422 "body is too long (maximum is 65536 characters)".
- Pull requests (docs.github.com/rest/pulls/pulls): ``GET /repos/{o}/{r}/pulls/{n}`` -> ``head.sha``.
- Check runs (docs.github.com/rest/checks/runs): create ``POST /repos/{o}/{r}/check-runs`` requires
  ``name`` and ``head_sha``; ``status`` one of queued/in_progress/completed (waiting, requested and
  pending are for GitHub Actions only); ``conclusion`` one of action_required, cancelled, failure,
  neutral, success, skipped, timed_out (only GitHub sets stale), required when status is completed;
  ``output`` requires ``title`` and ``summary``; summary and text at most 65,535 characters; at most
  50 ``annotations`` per request, each with ``path``, ``start_line``, ``end_line``,
  ``annotation_level`` (notice/warning/failure) and ``message`` (64 KB max), optional ``title``,
  ``raw_details``, and ``start_column``/``end_column`` only on one line. Update
  ``PATCH /repos/{o}/{r}/check-runs/{id}``: annotations are appended; ``output.summary`` required.
- Auth (docs.github.com/rest/authentication): ``Authorization: Bearer|token <t>``; missing -> 401
  "Requires authentication", wrong -> 401 "Bad credentials"; no User-Agent -> 403. A read-only
  token (a fork's GITHUB_TOKEN) gets 403 "Resource not accessible by integration" on writes.
- Rate limits: every answer carries ``x-ratelimit-*`` headers; scripted faults (a queue, or an
  outage answering every request) reproduce 5xx, 429 with ``Retry-After`` and 403 with
  ``x-ratelimit-remaining: 0``.

Every request is recorded (method, path, query, headers, JSON body, status, time) for assertions.
The second half of this module holds the shared helpers of the publish tests: report builders,
event payloads and ``run_publish`` (the real CLI in a subprocess).
"""

from __future__ import annotations

import io
import json
import os
import re
import subprocess
import sys
import threading
import time
from collections import deque
from collections.abc import Iterator
from contextlib import contextmanager, redirect_stderr, redirect_stdout
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest

BOT = {"login": "github-actions[bot]", "id": 41898282, "type": "Bot"}
HUMAN = {"login": "octocat", "id": 1, "type": "User"}
READ_ONLY_MESSAGE = "Resource not accessible by integration"
COMMENT_LIMIT = 65_536
CHECK_TEXT_LIMIT = 65_535
API_VERSIONS = {"2022-11-28", "2026-03-10"}
STATUSES = {"queued", "in_progress", "completed"}
ACTIONS_ONLY_STATUSES = {"waiting", "requested", "pending"}
CONCLUSIONS = {"action_required", "cancelled", "failure", "neutral", "success", "skipped", "timed_out"}
LEVELS = {"notice", "warning", "failure"}
ANNOTATION_REQUIRED = ("path", "start_line", "end_line", "annotation_level", "message")
ANNOTATION_KEYS = set(ANNOTATION_REQUIRED) | {"title", "raw_details", "start_column", "end_column"}
CREATE_KEYS = {"name", "head_sha", "details_url", "external_id", "status", "started_at", "conclusion",
               "completed_at", "output", "actions"}
OUTPUT_KEYS = {"title", "summary", "text", "annotations", "images"}


@dataclass
class Fault:
    """A scripted answer that replaces the next request's real one."""

    status: int
    headers: dict[str, str] = field(default_factory=dict)
    body: Any = None  # dict -> JSON; str -> sent as text/html (as a proxy's 502 page is)


@dataclass
class Recorded:
    method: str
    path: str
    query: dict[str, list[str]]
    headers: dict[str, str]
    body: Any
    time: float
    status: int = 0


class Refusal(Exception):
    def __init__(self, status: int, message: str, errors: list[dict[str, Any]] | None = None) -> None:
        super().__init__(message)
        self.status, self.message, self.errors = status, message, errors


def _invalid(reason: str) -> Refusal:
    return Refusal(422, f"Invalid request.\n\n{reason}")


class FakeGitHub:
    """State and rules of the fake; ``serve()`` puts it on a loopback port."""

    def __init__(self, token: str, *, read_only_tokens: tuple[str, ...] = (), prefix: str = "") -> None:
        self.token = token
        self.prefix = prefix  # "/api/v3" on GitHub Enterprise Server
        self.read_only_tokens = set(read_only_tokens)
        self.repos: dict[str, dict[str, Any]] = {}
        self.comments: dict[int, dict[str, Any]] = {}
        self.check_runs: dict[int, dict[str, Any]] = {}
        self.faults: deque[Fault] = deque()
        self.outage: Fault | None = None
        self.requests: list[Recorded] = []
        self.url = ""
        self._ids = iter(range(10_001, 10**9))
        self._lock = threading.Lock()
        self._remaining = 5000

    # ---------------------------------------------------------- setup

    def add_repo(self, full_name: str, *, repo_id: int, pulls: dict[int, str], commits: tuple[str, ...] = ()) -> None:
        self.repos[full_name.lower()] = {"id": repo_id, "full_name": full_name, "pulls": dict(pulls),
                                         "commits": set(pulls.values()) | set(commits)}

    def add_comments(self, repo: str, number: int, count: int, user: dict[str, Any] | None = None,
                     body: str = "LGTM") -> list[int]:
        ids = []
        for i in range(count):
            ids.append(self._new_comment(repo, number, f"{body} {i}", user or (HUMAN if i % 3 else BOT)))
        return ids

    def _new_comment(self, repo: str, number: int, body: str, user: dict[str, Any]) -> int:
        comment_id = next(self._ids)
        now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        self.comments[comment_id] = {
            "id": comment_id, "node_id": f"IC_{comment_id}", "repo": repo.lower(), "issue": number,
            "url": f"{self.api}/repos/{repo}/issues/comments/{comment_id}",
            "html_url": f"https://github.com/{repo}/pull/{number}#issuecomment-{comment_id}",
            "body": body, "user": dict(user), "created_at": now, "updated_at": now, "author_association": "NONE",
        }
        return comment_id

    @property
    def api(self) -> str:
        """What GITHUB_API_URL is set to for this fake."""
        return self.url + self.prefix

    # ---------------------------------------------------------- queries for assertions

    def comments_on(self, repo: str, number: int) -> list[dict[str, Any]]:
        return sorted((c for c in self.comments.values() if c["repo"] == repo.lower() and c["issue"] == number),
                      key=lambda c: c["id"])

    def calls(self, method: str, pattern: str) -> list[Recorded]:
        return [r for r in self.requests if r.method == method and re.search(pattern, r.path)]

    # ---------------------------------------------------------- the HTTP side

    def answer(self, method: str, target: str, headers: dict[str, str], raw: bytes) -> tuple[int, dict[str, str], Any]:
        parts = urlsplit(target)
        body: Any = None
        if raw:
            try:
                body = json.loads(raw.decode("utf-8"))
            except (UnicodeDecodeError, ValueError):
                body = raw
        path = parts.path
        if self.prefix:
            path = path[len(self.prefix):] if path.startswith(self.prefix + "/") else "/__outside_the_api__"
        with self._lock:
            record = Recorded(method, path, parse_qs(parts.query), dict(headers), body, time.monotonic())
            self.requests.append(record)
            status, extra, payload = self._answer(method, path, record.query, headers, raw, body)
            record.status = status
            self._remaining = max(self._remaining - 1, 0)
            rate = {"x-ratelimit-limit": "5000", "x-ratelimit-remaining": str(self._remaining),
                    "x-ratelimit-reset": str(int(time.time()) + 3600), "x-ratelimit-used": str(5000 - self._remaining),
                    "x-ratelimit-resource": "core"}
            return status, {**rate, **extra}, payload

    def _answer(self, method: str, path: str, query: dict[str, list[str]], headers: dict[str, str], raw: bytes,
                body: Any) -> tuple[int, dict[str, str], Any]:
        fault = self.outage or (self.faults.popleft() if self.faults else None)
        if fault is not None:
            return fault.status, dict(fault.headers), fault.body if fault.body is not None else {
                "message": "Server Error"}
        lowered = {k.lower(): v for k, v in headers.items()}
        try:
            if not lowered.get("user-agent"):
                raise Refusal(403, "Request forbidden by administrative rules. Please make sure your request has "
                                   "a User-Agent header")
            version = lowered.get("x-github-api-version")
            if version is not None and version not in API_VERSIONS:
                raise Refusal(400, f"API version {version} is not supported.")
            token = self._token(lowered.get("authorization"))
            if method in ("POST", "PATCH"):
                if not isinstance(body, dict):
                    raise Refusal(400, "Problems parsing JSON")
                if token in self.read_only_tokens:
                    raise Refusal(403, READ_ONLY_MESSAGE)
            return self._route(method, path, query, body)
        except Refusal as refusal:
            payload: dict[str, Any] = {"message": refusal.message, "status": str(refusal.status),
                                       "documentation_url": "https://docs.github.com/rest"}
            if refusal.errors:
                payload["errors"] = refusal.errors
            return refusal.status, {}, payload

    def _token(self, authorization: str | None) -> str:
        if not authorization:
            raise Refusal(401, "Requires authentication")
        scheme, _, token = authorization.partition(" ")
        if scheme.lower() not in ("bearer", "token") or token not in {self.token, *self.read_only_tokens}:
            raise Refusal(401, "Bad credentials")
        return token

    def _repo(self, owner: str, name: str) -> dict[str, Any]:
        repo = self.repos.get(f"{owner}/{name}".lower())
        if repo is None:
            raise Refusal(404, "Not Found")
        return repo

    def _route(self, method: str, path: str, query: dict[str, list[str]], body: Any) -> tuple[int, dict[str, str], Any]:
        m = re.fullmatch(r"/repos/([^/]+)/([^/]+)/issues/(\d+)/comments", path)
        by_id = re.fullmatch(r"/repositories/(\d+)/issues/(\d+)/comments", path)
        if (m or by_id) and method == "GET":
            if by_id:
                repo = next((r for r in self.repos.values() if r["id"] == int(by_id.group(1))), None)
                if repo is None:
                    raise Refusal(404, "Not Found")
                number = int(by_id.group(2))
            else:
                assert m is not None
                repo, number = self._repo(m.group(1), m.group(2)), int(m.group(3))
            return self._list_comments(repo, number, query)
        if m and method == "POST":
            repo, number = self._repo(m.group(1), m.group(2)), int(m.group(3))
            if number not in repo["pulls"]:
                raise Refusal(404, "Not Found")
            text = self._comment_body(body)
            comment_id = self._new_comment(repo["full_name"], number, text, BOT)
            return 201, {"Location": self.comments[comment_id]["url"]}, self._public(self.comments[comment_id])
        m = re.fullmatch(r"/repos/([^/]+)/([^/]+)/issues/comments/(\d+)", path)
        if m and method == "PATCH":
            repo = self._repo(m.group(1), m.group(2))
            comment = self.comments.get(int(m.group(3)))
            if comment is None or comment["repo"] != repo["full_name"].lower():
                raise Refusal(404, "Not Found")
            comment["body"] = self._comment_body(body)
            comment["updated_at"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
            return 200, {}, self._public(comment)
        m = re.fullmatch(r"/repos/([^/]+)/([^/]+)/pulls/(\d+)", path)
        if m and method == "GET":
            repo, number = self._repo(m.group(1), m.group(2)), int(m.group(3))
            if number not in repo["pulls"]:
                raise Refusal(404, "Not Found")
            return 200, {}, {"number": number, "state": "open",
                             "head": {"sha": repo["pulls"][number], "ref": f"pr-{number}"},
                             "base": {"ref": "main", "repo": {"full_name": repo["full_name"]}}}
        m = re.fullmatch(r"/repos/([^/]+)/([^/]+)/check-runs", path)
        if m and method == "POST":
            repo = self._repo(m.group(1), m.group(2))
            return self._create_check_run(repo, body)
        m = re.fullmatch(r"/repos/([^/]+)/([^/]+)/check-runs/(\d+)", path)
        if m and method == "PATCH":
            repo = self._repo(m.group(1), m.group(2))
            run = self.check_runs.get(int(m.group(3)))
            if run is None or run["repo"] != repo["full_name"].lower():
                raise Refusal(404, "Not Found")
            return self._update_check_run(run, body)
        raise Refusal(404, "Not Found")

    # ---------------------------------------------------------- comments

    def _public(self, comment: dict[str, Any]) -> dict[str, Any]:
        return {k: v for k, v in comment.items() if k not in ("repo", "issue")}

    def _comment_body(self, body: dict[str, Any]) -> str:
        text = body.get("body")
        if not isinstance(text, str):
            raise _invalid('"body" wasn\'t supplied.' if text is None else 'For \'properties/body\', '
                                                                        f'{text!r} is not a string.')
        if not text.strip():
            raise Refusal(422, "Validation Failed", [{"resource": "IssueComment", "code": "missing_field",
                                                      "field": "body"}])
        if len(text) > COMMENT_LIMIT:
            raise Refusal(422, "Validation Failed", [{
                "resource": "IssueComment", "code": "custom", "field": "body",
                "message": f"body is too long (maximum is {COMMENT_LIMIT} characters)"}])
        return text

    def _list_comments(self, repo: dict[str, Any], number: int,
                       query: dict[str, list[str]]) -> tuple[int, dict[str, str], Any]:
        if number not in repo["pulls"]:
            raise Refusal(404, "Not Found")

        def integer(name: str, default: int) -> int:
            try:
                return int(query.get(name, [default])[0])
            except ValueError:
                return default

        per_page = min(max(integer("per_page", 30), 1), 100)  # GitHub caps per_page at 100
        page = max(integer("page", 1), 1)
        items = self.comments_on(repo["full_name"], number)
        last = max((len(items) + per_page - 1) // per_page, 1)
        chunk = items[(page - 1) * per_page: page * per_page]
        base = f"{self.api}/repositories/{repo['id']}/issues/{number}/comments?per_page={per_page}&page="
        links = []
        if page < last:
            links += [f'<{base}{page + 1}>; rel="next"', f'<{base}{last}>; rel="last"']
        if page > 1:
            links += [f'<{base}{page - 1}>; rel="prev"', f'<{base}1>; rel="first"']
        headers = {"Link": ", ".join(links)} if links else {}
        return 200, headers, [self._public(c) for c in chunk]

    # ---------------------------------------------------------- check runs

    def _check_output(self, output: Any, *, create: bool) -> list[dict[str, Any]]:
        if not isinstance(output, dict):
            raise _invalid("For 'properties/output', it is not an object.")
        unknown = set(output) - OUTPUT_KEYS
        if unknown:
            raise _invalid(f"{sorted(unknown)} are not permitted keys in 'output'.")
        required = ("title", "summary") if create else ("summary",)
        for key in required:
            if not isinstance(output.get(key), str):
                raise _invalid(f'"{key}" wasn\'t supplied.')
        for key in ("title", "text"):
            if key in output and output[key] is not None and not isinstance(output[key], str):
                raise _invalid(f"For 'properties/{key}', it is not a string.")
        for key in ("summary", "text"):
            if isinstance(output.get(key), str) and len(output[key]) > CHECK_TEXT_LIMIT:
                raise Refusal(422, "Validation Failed", [{
                    "resource": "CheckRun", "code": "custom", "field": key,
                    "message": f"output.{key} is too long (maximum is {CHECK_TEXT_LIMIT} characters)"}])
        annotations = output.get("annotations", [])
        if not isinstance(annotations, list):
            raise _invalid("For 'properties/annotations', it is not an array.")
        if len(annotations) > 50:
            raise Refusal(422, "Validation Failed", [{
                "resource": "CheckRun", "code": "custom", "field": "annotations",
                "message": "Only 50 annotations are allowed per request"}])
        for i, annotation in enumerate(annotations):
            if not isinstance(annotation, dict):
                raise _invalid(f"annotation {i} is not an object.")
            missing = [k for k in ANNOTATION_REQUIRED if k not in annotation]
            if missing:
                raise _invalid(f'"{missing[0]}" wasn\'t supplied (annotation {i}).')
            if set(annotation) - ANNOTATION_KEYS:
                raise _invalid(f"{sorted(set(annotation) - ANNOTATION_KEYS)} are not permitted keys (annotation {i}).")
            if not isinstance(annotation["path"], str) or not annotation["path"]:
                raise _invalid(f"annotation {i}: path must be a non-empty string.")
            for key in ("start_line", "end_line"):
                if not isinstance(annotation[key], int) or isinstance(annotation[key], bool) or annotation[key] < 1:
                    raise _invalid(f"annotation {i}: {key} must be a positive integer.")
            if annotation["end_line"] < annotation["start_line"]:
                raise _invalid(f"annotation {i}: end_line is before start_line.")
            if annotation["annotation_level"] not in LEVELS:
                raise _invalid(f"annotation {i}: annotation_level must be one of notice, warning, failure.")
            if not isinstance(annotation["message"], str) or len(annotation["message"].encode()) > 65_536:
                raise _invalid(f"annotation {i}: message must be a string of at most 64 KB.")
            if ("start_column" in annotation or "end_column" in annotation) and \
                    annotation["start_line"] != annotation["end_line"]:
                raise _invalid(f"annotation {i}: columns are only allowed on a single line.")
            if "title" in annotation and (not isinstance(annotation["title"], str) or len(annotation["title"]) > 255):
                raise _invalid(f"annotation {i}: title must be a string of at most 255 characters.")
        return annotations

    def _check_state(self, body: dict[str, Any], current_status: str | None) -> tuple[str, str | None]:
        status = body.get("status", current_status or "queued")
        if status in ACTIONS_ONLY_STATUSES:
            raise _invalid(f"Only GitHub Actions can set a status of {status}.")
        if status not in STATUSES:
            raise _invalid(f"For 'properties/status', {status!r} is not one of {sorted(STATUSES)}.")
        conclusion = body.get("conclusion")
        if conclusion is not None:
            if conclusion not in CONCLUSIONS:
                raise _invalid(f"For 'properties/conclusion', {conclusion!r} is not one of {sorted(CONCLUSIONS)}.")
            status = "completed"  # GitHub: providing a conclusion sets the status to completed
        elif status == "completed" or body.get("completed_at"):
            raise _invalid('"conclusion" wasn\'t supplied (required when status is completed).')
        return status, conclusion

    def _create_check_run(self, repo: dict[str, Any], body: dict[str, Any]) -> tuple[int, dict[str, str], Any]:
        unknown = set(body) - CREATE_KEYS
        if unknown:
            raise _invalid(f"{sorted(unknown)} are not permitted keys.")
        for key in ("name", "head_sha"):
            if not isinstance(body.get(key), str) or not body[key]:
                raise _invalid(f'"{key}" wasn\'t supplied.')
        if body["head_sha"] not in repo["commits"]:
            raise Refusal(422, f"No commit found for SHA: {body['head_sha']}")
        if "details_url" in body and not str(body["details_url"]).startswith(("http://", "https://")):
            raise _invalid("details_url must be an http(s) URL.")
        status, conclusion = self._check_state(body, None)
        annotations = self._check_output(body["output"], create=True) if "output" in body else []
        run_id = next(self._ids)
        output = body.get("output", {})
        self.check_runs[run_id] = run = {
            "id": run_id, "repo": repo["full_name"].lower(), "name": body["name"], "head_sha": body["head_sha"],
            "status": status, "conclusion": conclusion, "details_url": body.get("details_url"),
            "html_url": f"https://github.com/{repo['full_name']}/runs/{run_id}",
            "output": {"title": output.get("title"), "summary": output.get("summary"), "text": output.get("text")},
            "annotations": list(annotations), "requests": 1,
        }
        return 201, {}, self._public_run(run)

    def _update_check_run(self, run: dict[str, Any], body: dict[str, Any]) -> tuple[int, dict[str, str], Any]:
        unknown = set(body) - (CREATE_KEYS - {"head_sha"})
        if unknown:
            raise _invalid(f"{sorted(unknown)} are not permitted keys.")
        status, conclusion = run["status"], run["conclusion"]
        if "status" in body or "conclusion" in body:
            status, conclusion = self._check_state(body, run["status"])
        if "output" in body:
            run["annotations"] += self._check_output(body["output"], create=False)
            for key in ("title", "summary", "text"):
                if key in body["output"]:
                    run["output"][key] = body["output"][key]
        run.update(status=status, conclusion=conclusion, requests=run["requests"] + 1)
        return 200, {}, self._public_run(run)

    def _public_run(self, run: dict[str, Any]) -> dict[str, Any]:
        public = {k: v for k, v in run.items() if k not in ("repo", "annotations", "requests")}
        public["output"] = {**run["output"], "annotations_count": len(run["annotations"])}
        return public


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, as GitHub; every answer carries Content-Length
    server: _Server

    def _serve(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        status, headers, payload = self.server.fake.answer(self.command, self.path, dict(self.headers.items()), raw)
        if isinstance(payload, (dict, list)):
            data, kind = json.dumps(payload).encode(), "application/json; charset=utf-8"
        else:
            data, kind = str(payload).encode(), "text/html"
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(data)))
        for key, value in headers.items():
            self.send_header(key, value)
        self.end_headers()
        self.wfile.write(data)

    do_GET = do_POST = do_PATCH = do_PUT = do_DELETE = _serve

    def log_message(self, format: str, *args: Any) -> None:  # keep test output clean
        pass


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    fake: FakeGitHub


@contextmanager
def serve(fake: FakeGitHub) -> Iterator[FakeGitHub]:
    """Run ``fake`` on 127.0.0.1:<free port> until the block ends."""
    server = _Server(("127.0.0.1", 0), _Handler)
    server.fake = fake
    fake.url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.02}, name="fake-github",
                              daemon=True)
    thread.start()
    try:
        yield fake
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)


# =============================================================== shared helpers of the publish tests

TOKEN = "ghs_perfgateTESTtoken_4f1b9c2d7e"  # distinctive: tests assert it never shows up
READ_ONLY_TOKEN = "ghs_forkREADONLYtoken_8a7b6c5d4e"
REPO = "octo/kernels"
PR = 7
HEAD_SHA = "1f0e5c3a9b8d7e6f5a4b3c2d1e0f9a8b7c6d5e4f"
MERGE_SHA = "9e8d7c6b5a4f3e2d1c0b9a8f7e6d5c4b3a2f1e0d"  # what GITHUB_SHA is on pull_request
OTHER_PR = 8
OTHER_HEAD = "aaaabbbbccccddddeeeeffff0000111122223333"
REPO_ROOT = Path(__file__).resolve().parents[2]
CORPUS = Path(os.environ.get("PERFGATE_CORPUS", Path(__file__).resolve().parents[3] / "shared" / "corpus")) / "ncu-rep"


@pytest.fixture
def github() -> Iterator[FakeGitHub]:
    fake = FakeGitHub(TOKEN, read_only_tokens=(READ_ONLY_TOKEN,))
    fake.add_repo(REPO, repo_id=4242, pulls={PR: HEAD_SHA, OTHER_PR: OTHER_HEAD}, commits=(MERGE_SHA,))
    with serve(fake):
        yield fake


def pull_request_event(tmp: Path, number: int = PR, head: str = HEAD_SHA) -> Path:
    path = tmp / "event-pull_request.json"
    path.write_text(json.dumps({
        "action": "synchronize", "number": number,
        "pull_request": {"number": number, "head": {"sha": head, "ref": "feature", "repo": {"full_name": REPO}},
                         "base": {"ref": "main", "repo": {"full_name": REPO}}, "merge_commit_sha": MERGE_SHA},
        "repository": {"full_name": REPO},
    }))
    return path


def workflow_run_event(tmp: Path, *, pulls: list[int], head: str = HEAD_SHA) -> Path:
    path = tmp / "event-workflow_run.json"
    path.write_text(json.dumps({
        "action": "completed",
        "workflow_run": {"id": 555, "name": "perfgate (fork PRs): test", "event": "pull_request",
                         "head_sha": head, "conclusion": "failure",
                         "html_url": f"https://github.com/{REPO}/actions/runs/555",
                         "pull_requests": [{"number": n, "head": {"sha": head}} for n in pulls]},
        "repository": {"full_name": REPO},
    }))
    return path


def actions_env(github: FakeGitHub, tmp: Path, *, event: Path | None, event_name: str = "pull_request",
                token: str | None = TOKEN, summary: bool = True) -> dict[str, str]:
    """The environment of a GitHub Actions step, pointed at the fake."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GITHUB_", "RUNNER_", "ACTIONS_"))}
    env.update({
        "GITHUB_ACTIONS": "true", "GITHUB_API_URL": github.api, "GITHUB_SERVER_URL": "https://github.com",
        "GITHUB_REPOSITORY": REPO, "GITHUB_SHA": MERGE_SHA, "GITHUB_RUN_ID": "9001",
        "GITHUB_EVENT_NAME": event_name, "GITHUB_WORKSPACE": str(tmp / "workspace"),
    })
    if event is not None:
        env["GITHUB_EVENT_PATH"] = str(event)
    if token is not None:
        env["GITHUB_TOKEN"] = token
    if summary:
        env["GITHUB_STEP_SUMMARY"] = str(tmp / "step_summary.md")
    return env


@dataclass
class Run:
    returncode: int
    stdout: str
    stderr: str
    seconds: float

    @property
    def output(self) -> str:
        return self.stdout + self.stderr


def run_publish(report: Path, env: dict[str, str], *args: str, subprocess_: bool = False, timeout: float = 60) -> Run:
    """The real CLI as a workflow step runs it: in a subprocess, or (faster) ``perfgate.cli.main`` here
    with ``env`` as the whole environment and stdout/stderr captured."""
    argv = ["publish", str(report), *args]
    started = time.monotonic()
    if subprocess_:
        done = subprocess.run([sys.executable, "-m", "perfgate", *argv], env=env, capture_output=True, text=True,
                              timeout=timeout, cwd=str(REPO_ROOT))
        return Run(done.returncode, done.stdout, done.stderr, time.monotonic() - started)
    from perfgate.cli import main

    out, err = io.StringIO(), io.StringIO()
    saved = dict(os.environ)
    os.environ.clear()
    os.environ.update(env)
    try:
        with redirect_stdout(out), redirect_stderr(err):
            try:
                code = main(argv)
            except SystemExit as exc:  # argparse usage errors
                code = int(exc.code or 0)
    finally:
        os.environ.clear()
        os.environ.update(saved)
    return Run(code, out.getvalue(), err.getvalue(), time.monotonic() - started)


def assert_clean(run: Run, *tokens: str) -> None:
    """No token and no traceback in anything the run printed."""
    for token in (TOKEN, READ_ONLY_TOKEN, *tokens):
        assert token not in run.output
    assert "Traceback" not in run.output


# ---------------------------------------------------------------- reports built in code

def launch(kernel: str, *, status: str = "regression", test: str | None = None, path: str | None = None,
           line: int | None = None, device: str = "Tesla T4", metric: str = "gpu__time_duration.sum",
           label: str = "duration", region: str = "") -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """One launch row and its metric rows, shaped like ``perfgate.report.build_report``'s."""
    where = {"test": test, "path": path, "line": line}
    row = {"kind": "kernel", "kernel": kernel, "demangled": f"{kernel}(float*, int)", "region": region,
           "ordinal": 0, "status": status, "device": device, "launch_change": None, **where}
    worse = status == "regression"
    gated = {"kind": "kernel", "kernel": kernel, "demangled": row["demangled"], "region": region, "ordinal": 0,
             "metric": metric, "label": label, "unit": "ns", "baseline": 100_000.0,
             "current": 150_000.0 if worse else 100_500.0, "change": 0.5 if worse else 0.005,
             "delta": 50_000.0 if worse else 500.0, "status": status if status != "new" else "new", "gated": True,
             "threshold": "5%+1000", "direction": "lower", "device": device, **where}
    info = {**gated, "metric": "sm__throughput.avg.pct_of_peak_sustained_elapsed", "label": f"{label} throughput",
            "unit": "%", "baseline": 40.0, "current": 20.0 if worse else 40.1, "change": -0.5 if worse else 0.0025,
            "delta": -20.0, "status": "info", "gated": False, "threshold": None, "direction": "higher"}
    return row, [gated, info]


def make_report(launches: list[tuple[dict[str, Any], list[dict[str, Any]]]], notes: tuple[str, ...] = (),
                device: str = "Tesla T4 (CC 7.5)") -> dict[str, Any]:
    """A report (contract version 2) made from version 1 rows: ``validate_report`` upgrades them."""
    from perfgate.report import summarize, validate_report

    rows = [row for row, _ in launches]
    failed = summarize(row["status"] for row in rows)["regression"]
    report = {"format": "perfgate-report", "version": 1, "generator": "perfgate (a test)",
              "verdict": "fail" if failed else "pass", "summary": {}, "launches": rows,
              "results": [r for _, rows in launches for r in rows], "notes": list(notes),
              "comparisons": [{"baseline": "baselines/t4/kernels.json", "current": "perfgate-report.json",
                               "baseline_devices": [device], "current_devices": [device], "settings": {},
                               "test": None}]}
    return dict(validate_report(json.loads(json.dumps(report)), "made in a test"))


def write_report(tmp: Path, report: dict[str, Any], name: str = "report.json") -> Path:
    path = tmp / name
    path.write_text(json.dumps(report))
    return path


def compare_corpus(tmp: Path, baseline: str, current: str, name: str) -> Path:
    """``perfgate compare`` on two corpus reports (skips where the corpus is absent)."""
    base, cur = CORPUS / baseline, CORPUS / current
    if not base.is_file() or not cur.is_file():
        pytest.skip(f"corpus file {base.parent} not available")
    out = tmp / name
    done = subprocess.run([sys.executable, "-m", "perfgate", "compare", str(base), str(cur), "--format", "json",
                           "-o", str(out)], capture_output=True, text=True, cwd=str(REPO_ROOT), timeout=120)
    assert done.returncode in (0, 1), done.stderr
    return out
