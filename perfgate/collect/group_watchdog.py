"""A watchdog that ends ncu's process group when the process that started it dies, SIGKILL included.

ncu runs in a session of its own (so a timeout can kill everything it started), so nothing the kernel does
when pytest dies reaches it: SIGKILL to pytest (an OOM kill, a CI runner's hard cancel) left ncu and the
profiled test on the GPU. ``PR_SET_PDEATHSIG`` would reach ncu alone, not the test ncu starts (the setting
is cleared across fork), so a watchdog does it: a small process holding the read end of a pipe whose write
end only the parent holds. The kernel closes that end whatever way the parent dies; the watchdog reads EOF
and kills the group, unless the parent said "done" first. Stdlib only; POSIX only (ncu profiling is Linux).
"""

from __future__ import annotations

import os
import subprocess
import sys
from types import TracebackType

DONE = b"d"
GRACE_SECONDS = 5.0  # between SIGTERM and SIGKILL, as run_ncu's own timeout handling

# ``python -S -c``: the stdlib only, without site-packages: nothing installed in the test's environment runs in
# the watchdog.
_WATCHDOG = """\
import os, signal, sys, time
fd, group, grace = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3])
said = b""
while True:
    try:
        chunk = os.read(fd, 1)
    except InterruptedError:
        continue
    except OSError:
        break
    if not chunk:
        break
    said += chunk
if not said:
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(group, sig)
        except OSError:
            break
        time.sleep(grace)
"""


class GroupWatchdog:
    """``with GroupWatchdog(pgid):`` around the wait for a process group: if this process dies inside the
    block, the group is killed; leaving the block (normally or by an exception, which has its own cleanup)
    tells the watchdog to exit without killing."""

    def __init__(self, group: int, grace: float = GRACE_SECONDS) -> None:
        self.group, self.grace = group, grace
        self._write: int | None = None
        self._process: subprocess.Popen[bytes] | None = None

    def __enter__(self) -> GroupWatchdog:
        if os.name != "posix":  # pragma: no cover - ncu profiling is Linux-only here
            return self
        read, self._write = os.pipe()
        try:
            self._process = subprocess.Popen(
                [sys.executable, "-S", "-c", _WATCHDOG, str(read), str(self.group), str(self.grace)],
                pass_fds=(read,), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                start_new_session=True)  # a Ctrl-C to pytest's group must not end the watchdog first
        except OSError:  # no watchdog is no reason not to profile; the group is still killed on the usual paths
            os.close(self._write)
            self._write = None
        finally:
            os.close(read)
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 trace: TracebackType | None) -> None:
        if self._write is not None:
            try:
                os.write(self._write, DONE)
            except OSError:
                pass
            os.close(self._write)
            self._write = None
        if self._process is not None:
            try:
                self._process.wait(timeout=10)
            except subprocess.TimeoutExpired:  # pragma: no cover - it exits on the byte it just read
                self._process.kill()
                self._process.wait()


__all__ = ["GroupWatchdog"]
