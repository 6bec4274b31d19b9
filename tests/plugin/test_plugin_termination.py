"""Issue 14, class 3: SIGTERM to ``pytest --perfgate`` stops ncu and what it profiles, as Ctrl-C does.

ncu runs in a session of its own (so that a timeout can kill the whole tree), so a signal sent to pytest's
process group never reaches it. CI cancels a job with SIGTERM, whose default action ended pytest at once and
left ncu and the test running on the GPU. While ncu runs, SIGTERM and SIGHUP now unwind like Ctrl-C.
"""

from __future__ import annotations

import os
import signal
import subprocess
import textwrap
import time
from pathlib import Path

import pytest
from helpers.plugin import install_stub_ncu, stub_calls
from helpers.processes import RUN_NCU_TEST, alive, pytest_command, stop, wait_until

from perfgate.plugin.ncu_run import _terminating_like_interrupt
from perfgate.process import Terminated


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP, signal.SIGINT])
def test_a_signal_to_pytest_stops_ncu_and_everything_it_started(tmp_path: Path, sig: signal.Signals) -> None:
    pids = tmp_path / "pids.txt"
    (tmp_path / "test_profiled.py").write_text(RUN_NCU_TEST.format(pids=str(pids)))
    session = subprocess.Popen(pytest_command("-q", "-p", "no:cacheprovider", "-p", "no:xdist", "test_profiled.py"),
                               cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                               env={**os.environ, "PYTEST_ADDOPTS": ""})
    child = grandchild = 0
    try:
        assert wait_until(lambda: pids.is_file() and len(pids.read_text().split()) == 2, 60), "the child never ran"
        child, grandchild = (int(p) for p in pids.read_text().split())
        session.send_signal(sig)
        output, _ = session.communicate(timeout=120)
    finally:
        if session.poll() is None:
            session.kill()
            session.wait()
            stop(*(pid for pid in (child, grandchild) if pid))
    assert session.returncode == pytest.ExitCode.INTERRUPTED, output
    assert wait_until(lambda: not alive(child) and not alive(grandchild), 15), "ncu's process tree survived"
    if sig != signal.SIGINT:
        assert f"terminated by {sig.name}" in output


def test_pytest_perfgate_sigterm_leaves_no_ncu_behind(tmp_path: Path) -> None:
    """End to end: the plugin's own child runs under the stub ncu, which hangs; SIGTERM ends all of it."""
    ncu = install_stub_ncu(tmp_path / "bin")
    log = tmp_path / "stub.jsonl"
    project = tmp_path / "project"
    project.mkdir()
    (project / "test_perf.py").write_text(textwrap.dedent("""
        import pytest

        @pytest.mark.perfgate
        def test_kernel(perfgate):
            with perfgate.region("r"):
                pass
    """))
    env = {**os.environ, "PERFGATE_ASSUME_GPU": "1", "PERFGATE_STUB_MODE": "hang", "PERFGATE_STUB_LOG": str(log),
           "PYTEST_ADDOPTS": ""}
    env.pop("PERFGATE_STUB_REPORT", None)
    session = subprocess.Popen(pytest_command("-q", "-p", "no:cacheprovider", "--perfgate", f"--perfgate-ncu={ncu}",
                                              "--perfgate-timeout=300"), cwd=project,
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
    stub = 0
    try:
        assert wait_until(lambda: bool(stub_calls(log)), 90), "the stub ncu never started"
        (call,) = stub_calls(log)
        stub = int(call["pid"])
        assert alive(stub)
        time.sleep(0.3)  # the stub is in its sleep, pytest in run_ncu's wait
        session.send_signal(signal.SIGTERM)
        output, _ = session.communicate(timeout=120)
    finally:
        if session.poll() is None:
            session.kill()
            session.wait()
            stop(*([stub] if stub else []))
    assert wait_until(lambda: not alive(stub), 15), "SIGTERM left ncu running"
    assert session.returncode == pytest.ExitCode.INTERRUPTED, output
    assert "terminated by SIGTERM" in output


def test_the_handler_is_installed_only_while_ncu_runs_and_respects_others() -> None:
    original = signal.signal(signal.SIGTERM, signal.SIG_DFL)  # as a process normally starts
    try:
        _installed_while_ncu_runs()
    finally:
        signal.signal(signal.SIGTERM, original)


def _installed_while_ncu_runs() -> None:
    before = signal.getsignal(signal.SIGTERM)
    with _terminating_like_interrupt():
        handler = signal.getsignal(signal.SIGTERM)
        assert callable(handler) and handler is not before
        with pytest.raises(Terminated, match="terminated by SIGTERM"):
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(5)  # the handler raises in this thread at the next bytecode
    assert signal.getsignal(signal.SIGTERM) is before
    assert issubclass(Terminated, KeyboardInterrupt)  # pytest ends the session as interrupted

    seen: list[int] = []
    previous = signal.signal(signal.SIGTERM, lambda signum, frame: seen.append(signum))
    try:
        with _terminating_like_interrupt():  # someone else's handler: left in charge
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(0.1)
        assert seen == [signal.SIGTERM]
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        with _terminating_like_interrupt():  # ignored (nohup): stays ignored
            assert signal.getsignal(signal.SIGTERM) is signal.SIG_IGN
    finally:
        signal.signal(signal.SIGTERM, previous)
