"""How a command meets its process: a stdout whose reader may go away, and signals that end it.

Stdlib only: every command imports it.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
from collections.abc import Iterator


def stdout_gone() -> None:
    """The reader of stdout went away (``| head``): send what is left to /dev/null, so that neither a later
    write nor the flush at exit fails again (Python's advice, ``signal`` docs, "Note on SIGPIPE")."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError):  # stdout is not a file descriptor (captured by a caller)
        pass


def print_out(*parts: str | bytes) -> None:
    """Write to stdout (text, or UTF-8 bytes as they are), flushed. A reader that went away is no failure of the
    command: its exit status still follows the verdict (``compare ... | head`` under pipefail must not turn a
    regression into success)."""
    try:
        for part in parts:
            buffer = getattr(sys.stdout, "buffer", None)  # none where a caller captures stdout as text
            if isinstance(part, bytes) and buffer is not None:
                sys.stdout.flush()  # the text before it first
                buffer.write(part)
            else:
                sys.stdout.write(part.decode() if isinstance(part, bytes) else part)
        sys.stdout.flush()
    except BrokenPipeError:
        stdout_gone()


class Terminated(KeyboardInterrupt):
    """SIGTERM or SIGHUP during a command or while ncu runs: unwound like Ctrl-C, so temporary files (a pipe's
    spool, an .xz expansion) are removed by the code that made them, and pytest ends its session as
    interrupted."""

    def __init__(self, signum: int) -> None:
        super().__init__(f"terminated by {signal.Signals(signum).name}")
        self.signum = signum


_terminated_by: int | None = None  # the signal ``terminating_unwinds`` caught, while its command unwinds


def terminated_by() -> int | None:
    """The signal that ended the running command (None while none did): a loop in a worker thread, which the
    signal's exception does not reach, stops when this says so."""
    return _terminated_by


@contextlib.contextmanager
def terminating_unwinds() -> Iterator[None]:
    """While a command runs on the main thread, SIGTERM and SIGHUP raise ``Terminated``. A handler someone
    else installed (or SIG_IGN, as under nohup) is left alone."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def unwind(signum: int, frame: object) -> None:
        global _terminated_by
        _terminated_by = signum
        raise Terminated(signum)

    global _terminated_by
    installed = {}
    for name in ("SIGTERM", "SIGHUP"):
        sig = getattr(signal, name, None)
        if sig is not None and signal.getsignal(sig) is signal.SIG_DFL:
            installed[sig] = signal.signal(sig, unwind)
    try:
        yield
    finally:
        for sig, previous in installed.items():
            signal.signal(sig, previous)
        _terminated_by = None


__all__ = ["Terminated", "print_out", "stdout_gone", "terminated_by", "terminating_unwinds"]
