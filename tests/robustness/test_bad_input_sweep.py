"""What a sweep of damaged inputs through every command found (docs/cli.md, "Exit status"): each case once ended in
the last-resort "please report it" line, a hang, a half-written file, a silent read of a truncated file or raw
control characters on the terminal. Each is now one line naming the file and the fix, exit 2, or the output it
should be. Real files from tests/data, real CLI runs (in this process, or as a process where the old code hung)."""

from __future__ import annotations

import gzip
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from helpers.common import REPO, run_cli
from helpers.hostile import hostile_report
from helpers.timeline import OURS

from perfgate.collect.cubin import find_nvdisasm

H100 = REPO / "tests" / "data" / "h100"
CUBIN = REPO / "tests" / "data" / "cubin" / "vector_add.sm_90.cubin"
TRITON_CACHE = REPO / "tests" / "data" / "triton-cache"
DEEP = b"[" * 100_000 + b"]" * 100_000  # past Python's recursion limit
HUGE = b"9" * 5000  # past Python's 4,300 digits of an int
needs_nvdisasm = pytest.mark.skipif(find_nvdisasm() is None, reason="no nvdisasm here")


def _perfgate(*args: object, cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """perfgate as a process, stopped after 60 s (the old code waited forever on each of these)."""
    return subprocess.run([sys.executable, "-m", "perfgate", *map(str, args)], capture_output=True, text=True,
                          cwd=cwd, timeout=60, check=False,
                          env={**os.environ, "PYTHONPATH": str(REPO), "PERFGATE_FIFO_WAIT": "0.5", **(env or {})})


def _one_line(status: int, err: str, start: str) -> None:
    assert status == 2, err
    assert err.count("\n") == 1 and err.startswith(f"perfgate: error: {start}"), err
    assert "please report it" not in err


def _kineto(tmp_path: Path) -> Path:
    trace = tmp_path / "good.pt.trace.json"
    trace.write_bytes(gzip.decompress((OURS / "vector_add.torch.pt.trace.json.gz").read_bytes()))
    return trace


def test_a_trace_cut_before_its_closing_brace_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The end of the file was taken for the "}" of the object around the events: a trace without its last bytes
    read as whole."""
    good = _kineto(tmp_path)
    cut = tmp_path / "cut.pt.trace.json"
    cut.write_bytes(good.read_bytes().rstrip()[:-1])
    status, _, err = run_cli(capsys, "compare", good, cut)
    _one_line(status, err, f"{cut}: broken JSON at line")
    assert "truncated" in err


def test_a_bare_event_list_may_still_leave_out_its_closing_bracket(tmp_path: Path,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    """The Trace Event Format makes the array format's "]" optional (a crashed process's trace)."""
    events = json.dumps(json.loads(_kineto(tmp_path).read_text())["traceEvents"])
    whole, bare = tmp_path / "whole.json", tmp_path / "bare.json"
    whole.write_text(events)
    bare.write_text(events[:-1])
    status, _, err = run_cli(capsys, "compare", whole, bare)
    assert status == 0, err


@pytest.mark.parametrize("command", ["compare", "merge"])
def test_a_number_of_thousands_of_digits_is_one_line(command: str, tmp_path: Path,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    if command == "compare":  # a trace, read a value at a time
        good = _kineto(tmp_path)
        bad = tmp_path / "bad.pt.trace.json"
        bad.write_bytes(good.read_bytes().replace(b'"dur": ', b'"dur": ' + HUGE + b", \"x\": ", 1))
        args: list[object] = ["compare", good, bad]
    else:  # a report, read whole
        bad = tmp_path / "bad.json"
        bad.write_bytes(json.dumps(hostile_report(False)).encode().replace(b'"line": [1', b'"line": [' + HUGE, 1))
        args = ["merge", bad]
    status, _, err = run_cli(capsys, *args)
    _one_line(status, err, f"{bad}: a number with more digits than Python reads")


@pytest.mark.parametrize("damage", ["cut", "string-table", "device"])
def test_a_damaged_cubin_is_one_line_naming_it(damage: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("elftools")
    data = CUBIN.read_bytes()
    cubin = tmp_path / "k.cubin"
    if damage == "cut":  # sound ELF header, sections past the end
        cubin.write_bytes(data[: len(data) // 2])
    elif damage == "string-table":  # e_shstrndx names no section
        cubin.write_bytes(data[:0x3E] + (0xFFF0).to_bytes(2, "little") + data[0x40:])
    else:  # read to its end, /dev/zero never ends: refused before reading
        cubin = Path("/dev/zero")
    trace = tmp_path / "t.cupti.json.gz"
    shutil.copyfile(OURS / "vector_add.cupti.a.cupti.json.gz", trace)
    status, _, err = run_cli(capsys, "codes", trace, "--cubin", cubin)
    _one_line(status, err, f"{cubin}: {'the cubin is not a regular file' if damage == 'device' else 'not a readable ELF image'}")


@needs_nvdisasm
def test_codes_replaces_its_file_whole_and_never_a_fifo(tmp_path: Path) -> None:
    pytest.importorskip("elftools")
    trace = tmp_path / "t.cupti.json.gz"
    shutil.copyfile(OURS / "vector_add.cupti.a.cupti.json.gz", trace)
    target = tmp_path / "t.cupti.json.gz.codes.json"
    target.write_text('{"codes": {}, "problems": []}')
    kept = tmp_path / "kept.json"
    os.link(target, kept)  # a reader holding the old file still sees it whole: the new one is renamed in
    done = _perfgate("codes", trace, "--cubin", CUBIN, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert kept.read_text() == '{"codes": {}, "problems": []}'
    assert "vector_add" in json.loads(target.read_text())["codes"]
    target.unlink()
    os.mkfifo(target)
    done = _perfgate("codes", trace, "--cubin", CUBIN, cwd=tmp_path)
    _one_line(done.returncode, done.stderr, f"{target}: cannot write (a named pipe (FIFO) that nothing read")
    assert target.is_fifo()


@needs_nvdisasm
@pytest.mark.parametrize("entry", ["deep", "fifo"])
def test_a_triton_cache_entry_that_is_no_metadata_is_passed_over(entry: str, tmp_path: Path) -> None:
    pytest.importorskip("elftools")
    cache = tmp_path / "cache"
    shutil.copytree(TRITON_CACHE, cache)
    odd = cache / "ODDENTRY" / "add_kernel.json"
    odd.parent.mkdir()
    if entry == "deep":
        odd.write_bytes(DEEP)
    else:
        os.mkfifo(odd)
    trace = tmp_path / "t.cupti.json.gz"
    shutil.copyfile(OURS / "vector_add.cupti.a.cupti.json.gz", trace)
    done = _perfgate("codes", trace, "--triton-cache", cache, cwd=tmp_path)
    assert (done.returncode, done.stderr) == (0, "")


@pytest.mark.parametrize("payload", ["deep", "fifo", "huge-number"])
def test_a_bad_event_payload_is_one_line(payload: str, tmp_path: Path) -> None:
    report = tmp_path / "report.json"
    report.write_text(json.dumps(hostile_report(False)))
    event = tmp_path / "event.json"
    if payload == "deep":
        event.write_bytes(DEEP)
    elif payload == "fifo":
        os.mkfifo(event)
    else:
        event.write_bytes(b'{"pull_request": {"number": ' + HUGE + b"}}")
    done = _perfgate("publish", report, "--no-comment", "--no-check", "--no-summary", cwd=tmp_path,
                     env={"GITHUB_EVENT_PATH": str(event)})
    _one_line(done.returncode, done.stderr, f"{event}: the event payload is not ")


def test_the_verdict_line_beside_a_written_report_is_inert(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A report's "not measured" cause (an artifact's text) and the -o name reach the terminal escaped."""
    report = tmp_path / "hostile.json"
    report.write_text(json.dumps(hostile_report(False)))
    status, out, _ = run_cli(capsys, "merge", report, "-o", tmp_path / "merged.json")
    assert status == 2 and out.count("\n") == 1 and "\x1b" not in out, out
    named = tmp_path / "r\x1b[2J\n.json"
    status, out, _ = run_cli(capsys, "compare", H100 / "vector_add.rerun.raw-base.csv",
                             H100 / "vector_add.rerun.raw.csv", "-o", named)
    assert status == 0 and named.is_file()
    assert out.count("\n") == 1 and "\x1b" not in out and "(report: " in out, out


def test_history_changes_dash_is_stdout(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """docs/cli.md: "-o - is stdout" for history changes too; it wrote a file named "-"."""
    monkeypatch.chdir(tmp_path)
    status, out, err = run_cli(capsys, "compare", H100 / "vector_add.rerun.raw-base.csv",
                               H100 / "vector_add.rerun.raw.csv", "--format", "json", "-o", tmp_path / "r.json")
    url = f"sqlite:///{tmp_path / 'h.sqlite'}"
    assert run_cli(capsys, "history", "record", tmp_path / "r.json", "--db", url, "--commit", "a" * 40,
                   "--branch", "main")[0] == 0
    status, out, err = run_cli(capsys, "history", "changes", "--db", url, "--format", "json", "-o", "-")
    assert (status, err) == (0, "") and json.loads(out) is not None
    assert not (tmp_path / "-").exists()


@pytest.mark.parametrize("damage", ["deep-pyproject", "pyproject-is-a-folder"])
def test_init_refuses_before_writing_anything(damage: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pyproject = tmp_path / "pyproject.toml"
    if damage == "deep-pyproject":
        pyproject.write_bytes(b"x = " + b"[" * 5000 + b"]" * 5000 + b"\n")
    else:
        pyproject.mkdir()
    status, _, err = run_cli(capsys, "init", "--dir", tmp_path, "--example", "cpu", "--perfgate-spec", "perfgate")
    _one_line(status, err, f"{pyproject}: ")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["pyproject.toml"]
