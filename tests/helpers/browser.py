"""Drive Debian's headless Chromium for HTML report tests (no browser downloads, no network)."""

from __future__ import annotations

import http.server
import os
import re
import shutil
import subprocess
import tempfile
import threading
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

import pytest

CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update", "--disable-sync",
                  "--disable-dev-shm-usage"]


def chromium() -> str:
    """The chromium binary; skip where it is absent, but fail under CI where .ci/run installs it."""
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found:
        return found
    if os.environ.get("CI"):
        pytest.fail("chromium not found: .ci/run installs Debian's chromium package for the HTML report tests")
    pytest.skip("chromium not installed (apt-get install chromium)")


class _Recorder(http.server.BaseHTTPRequestHandler):
    requests: list[str] = []

    def _record(self) -> None:
        type(self).requests.append(f"{self.command} {self.path}")
        self.send_response(404)
        self.end_headers()

    do_GET = do_POST = do_CONNECT = do_HEAD = _record  # noqa: N815

    def log_message(self, *args: object) -> None:
        pass


# Chromium's own housekeeping traffic (component updates, safe browsing) is not the page's.
_BROWSER_HOSTS = re.compile(r"(^|\.)(googleapis\.com|google\.com|gvt1\.com|gstatic\.com)(:\d+)?$")


def page_requests(requests: list[str]) -> list[str]:
    """The recorded requests that the page made (browser housekeeping filtered out)."""
    kept = []
    for line in requests:
        target = line.split(" ", 1)[1]
        host = target.split("://", 1)[-1].split("/", 1)[0]
        if not _BROWSER_HOSTS.search(host):
            kept.append(line)
    return kept


@contextmanager
def recording_proxy() -> Iterator[list[str]]:
    """A loopback HTTP proxy that records every request the browser tries to make."""
    handler = type("Recorder", (_Recorder,), {"requests": []})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield handler.requests, f"127.0.0.1:{server.server_address[1]}"  # type: ignore[misc]
    finally:
        server.shutdown()
        server.server_close()


def run_chromium(page: Path, *extra: str, proxy: str | None = None, timeout: float = 60) -> str:
    with tempfile.TemporaryDirectory() as profile:
        args = [chromium(), *CHROMIUM_FLAGS, f"--user-data-dir={profile}", *extra]
        if proxy:
            # Send everything, loopback included, to the recorder.
            args += [f"--proxy-server=http://{proxy}", "--proxy-bypass-list=<-loopback>"]
        done = subprocess.run([*args, page.as_uri()], capture_output=True, text=True, timeout=timeout)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


def dump_dom(page: Path, proxy: str | None = None) -> str:
    """The DOM after the page loaded, as Chromium serializes it."""
    return run_chromium(page, "--dump-dom", "--virtual-time-budget=2000", proxy=proxy)


def screenshot(page: Path, png: Path, size: str = "1400,1000") -> None:
    run_chromium(page, f"--screenshot={png}", f"--window-size={size}", "--hide-scrollbars")
    assert png.is_file() and png.stat().st_size > 1000
