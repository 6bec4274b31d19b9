"""Processes the signal and leftover tests start, wait for and end: whether one runs, pytest started with the default
signal dispositions, a test that runs a process tree under ``run_ncu``, and the clean-up after a failed test."""

from __future__ import annotations

import os
import signal
import sys
import time
from pathlib import Path
from typing import Callable


def alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie, waiting for a parent that is gone, does not)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return False
    except OSError:  # no /proc: ask the kernel
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        return True
    return state not in ("Z", "X")


# pytest started with the default signal dispositions: a shell's background job (`cmd &`) inherits SIGINT
# ignored and `nohup` SIGHUP ignored, and an ignored signal stays ignored across exec. perfgate rightly leaves
# an ignored signal alone, so the session under test must not inherit that from whoever runs this suite.
PYTEST_WITH_DEFAULT_SIGNALS = (
    "import runpy, signal, sys\n"
    "for name in ('SIGTERM', 'SIGHUP'):\n"
    "    signal.signal(getattr(signal, name), signal.SIG_DFL)\n"
    "signal.signal(signal.SIGINT, signal.default_int_handler)\n"
    "sys.argv = ['pytest', *sys.argv[1:]]\n"
    "runpy.run_module('pytest', run_name='__main__', alter_sys=True)\n"
)


def pytest_command(*args: str) -> list[str]:
    """pytest ARGS as a command line, started with the default signal dispositions."""
    return [sys.executable, "-c", PYTEST_WITH_DEFAULT_SIGNALS, *args]


def stop(*pids: int) -> None:
    """Clean up after a failed test: end what it started, by process id."""
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def wait_until(condition: Callable[[], bool], seconds: float = 20.0) -> bool:
    """Whether ``condition`` holds within ``seconds``, asked every 50 ms."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.05)
    return condition()


# A test that runs a process tree under run_ncu: a child and its own child, their ids written to {pids}.
RUN_NCU_TEST = """
import sys
from pathlib import Path
from perfgate.plugin.ncu_run import run_ncu

def test_profiled(tmp_path):
    script = ("import subprocess, sys, time\\n"
              "p = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(300)'])\\n"
              "open({pids!r}, 'w').write(f'{{__import__(\\"os\\").getpid()}} {{p.pid}}')\\n"
              "time.sleep(300)\\n")
    run_ncu([sys.executable, "-c", script], timeout=300, output_file=tmp_path / "out.txt")
"""
