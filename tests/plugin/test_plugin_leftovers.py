"""Issue 23, class 7: bounded memory for a chatty test, nothing left behind by a killed or interrupted session,
one timeout for a hanging ncu, and the smaller faults of class 8 on the plugin's side."""

from __future__ import annotations

import os
import signal
import stat
import subprocess
import sys
import textwrap
import time
import tracemalloc
from pathlib import Path

import pytest
from helpers.plugin import install_stub_ncu, preload_heavy_modules, stub_calls, use_stub_ncu
from helpers.processes import RUN_NCU_TEST, alive, pytest_command, stop, wait_until

from perfgate.plugin.ncu_run import TAIL_BYTES, ncu_version, read_tail
from perfgate.gate import Where, gate
from perfgate.verdict import GateStatus
from perfgate.options import selection
from perfgate.table import Measurement, make_table

pytest_plugins = ("pytester",)
preload_heavy_modules()

PERF_SUITE = textwrap.dedent("""
    import pytest

    @pytest.mark.perfgate
    @pytest.mark.parametrize("name", ["a", "b", "c"])
    def test_kernel(perfgate, name):
        with perfgate.region("r"):
            pass
""")


def test_the_tail_of_a_huge_output_costs_no_more_than_its_tail(tmp_path: Path) -> None:
    output = tmp_path / "output.txt"
    with output.open("wb") as handle:
        handle.truncate(1_500_000_000)  # 1.5 GB, sparse: nothing written but the end
        handle.seek(0, os.SEEK_END)
        handle.write(b"".join(b"line %d\n" % n for n in range(100_000)))
    tracemalloc.start()
    try:
        tail = read_tail(output)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert tail.splitlines() == [f"line {n}" for n in range(99_960, 100_000)]
    assert peak < 8 * TAIL_BYTES  # the bytes read, their text and the lines: not the 1.5 GB
    assert read_tail(tmp_path / "missing.txt") == ""


def test_sigkill_to_pytest_leaves_no_ncu_running(tmp_path: Path) -> None:
    pids = tmp_path / "pids.txt"
    (tmp_path / "test_profiled.py").write_text(RUN_NCU_TEST.format(pids=str(pids)))
    session = subprocess.Popen(pytest_command("-q", "-p", "no:cacheprovider", "-p", "no:xdist", "test_profiled.py"),
                               cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                               env={**os.environ, "PYTEST_ADDOPTS": ""})
    child = grandchild = 0
    try:
        assert wait_until(lambda: pids.is_file() and len(pids.read_text().split()) == 2, 60), "the child never ran"
        child, grandchild = (int(p) for p in pids.read_text().split())
        session.kill()  # SIGKILL: no handler, no cleanup of pytest's own can run
        session.wait(timeout=30)
        assert wait_until(lambda: not alive(child) and not alive(grandchild), 30), "ncu's process tree survived"
    finally:
        if session.poll() is None:
            session.kill()
            session.wait()
        stop(*(pid for pid in (child, grandchild) if pid))


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_an_interrupted_session_leaves_no_run_folder(tmp_path: Path, sig: signal.Signals) -> None:
    ncu = install_stub_ncu(tmp_path / "bin")
    log, scratch, project = tmp_path / "stub.jsonl", tmp_path / "tmp", tmp_path / "project"
    scratch.mkdir()
    project.mkdir()
    (project / "test_perf.py").write_text(PERF_SUITE)
    env = {**os.environ, "PERFGATE_ASSUME_GPU": "1", "PERFGATE_STUB_MODE": "hang", "PERFGATE_STUB_LOG": str(log),
           "PYTEST_ADDOPTS": "", "TMPDIR": str(scratch)}
    env.pop("PERFGATE_STUB_REPORT", None)
    session = subprocess.Popen(pytest_command("-q", "-p", "no:cacheprovider", "-p", "no:xdist", "--perfgate",
                                              f"--perfgate-ncu={ncu}", "--perfgate-timeout=300"), cwd=project,
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
    stub = 0
    try:
        assert wait_until(lambda: bool(stub_calls(log)), 90), "the stub ncu never started"
        stub = int(stub_calls(log)[0]["pid"])
        assert [p.name for p in scratch.iterdir() if p.is_dir() and p.name.startswith("perfgate-")]
        time.sleep(0.3)
        session.send_signal(sig)
        output, _ = session.communicate(timeout=120)
    finally:
        if session.poll() is None:
            session.kill()
            session.wait()
        stop(*([stub] if stub else []))
    assert session.returncode == pytest.ExitCode.INTERRUPTED, output
    left = [p.name for p in scratch.iterdir() if p.name.startswith("perfgate-") and not p.name.endswith(".lock")]
    assert left == [], left


def test_a_hanging_ncu_costs_one_timeout_per_group(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    ncu, calls = use_stub_ncu(pytester, monkeypatch)
    monkeypatch.setenv("PERFGATE_STUB_MODE", "hang")
    pytester.makepyfile(test_perf=PERF_SUITE)
    started = time.monotonic()
    result = pytester.runpytest("--perfgate", f"--perfgate-ncu={ncu}", "--perfgate-timeout=2", "-p", "no:randomly")
    seconds = time.monotonic() - started
    result.assert_outcomes(failed=3)
    assert len(stub_calls(calls)) == 1, "each test was profiled again after the group hung"
    result.stdout.fnmatch_lines(["*was not profiled: ncu timed out with no test running (3 perf tests*"])
    assert seconds < 60  # one 2 s timeout and its kill; before, 1 + 3 of them


def _executable(path: Path, body: bytes) -> Path:
    path.write_bytes(b"#!" + sys.executable.encode() + b"\n" + body)
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


def test_ncu_version_that_is_not_utf8_is_read(tmp_path: Path) -> None:
    ncu = _executable(tmp_path / "ncu", b"import sys\nsys.stdout.buffer.write("
                                       b"b'NVIDIA (R) Nsight Compute \\xff\\xfe\\nVersion 2025.3.1.0 (build 1)\\n')\n")
    assert ncu_version(str(ncu)) == ("2025.3.1.0", "")


def test_an_update_replaces_a_corrupt_baseline(tmp_path: Path) -> None:
    options = selection(metrics=None, thresholds={}, significance=0.01, allow_device_mismatch=False)
    rows = [{"kind": "kernel", "kernel": "gemm", "demangled": "gemm", "region": "", "ordinal": 0, "launch": 0,
             "device": "NVIDIA H100", "cc": "9.0", "grid": "(1, 1, 1)", "block": "(1, 1, 1)",
             "metric": "gpu__time_duration.sum", "unit": "ns", "value": 100_000.0}]
    corrupt = tmp_path / "nvidia-h100-sm90" / "t.json"
    corrupt.parent.mkdir()
    corrupt.write_text('{"format": "perfgate-baseline", "entries": [')
    current = Measurement(make_table(rows))
    with pytest.raises(Exception, match="t.json"):
        gate(current, baselines=tmp_path, where=Where("t", "t.py::t"), options=options, settings={})
    result = gate(current, baselines=tmp_path, where=Where("t", "t.py::t"), options=options, settings={}, update=True)
    assert result.status == GateStatus.UPDATED and corrupt.read_text().startswith("{")
    assert any("could not be read" in note and "replaced" in note for note in result.report["notes"])
    assert gate(current, baselines=tmp_path, where=Where("t", "t.py::t"), options=options, settings={}).found == 1
