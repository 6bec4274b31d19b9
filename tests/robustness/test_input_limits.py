"""Issue 14, classes 2 and 3: every input ends in one line (exit 2) within seconds, with bounded resources.

No traceback on any shape of JSON (10,000 levels deep, ``machine_info`` that is not an object), no disk
filled by an endless pipe, no hang on a FIFO nobody writes, no ``ncu_report`` run on a report whose
framing is zeros, no 45 s spent on a 50 MB kernel name, and no temporary file left behind by any of them.
The limits are those of ``perfgate.limits`` (README, "Input limits").
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from helpers.common import REPO, run_cli

from perfgate.cli import main
from perfgate.collect import read_table
from perfgate.collect.json_input import load_json
from perfgate.limits import MAX_JSON_DEPTH, MAX_NAME_CHARS, json_depth_exceeds, size_text
from perfgate.errors import InputError

H100 = REPO / "tests" / "data" / "h100"
REP = H100 / "vector_add.ncu-rep"
DETAILS = H100 / "vector_add.rerun.details-base.csv"


def one_line(err: str) -> bool:
    return err.count("\n") == 1 and err.startswith("perfgate: error: ") and "Traceback" not in err


@pytest.fixture
def spool_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """perfgate's temporary files go here (and must be gone after every command)."""
    import tempfile

    folder = tmp_path / "tmp"
    folder.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(folder))
    return folder


# ---------------------------------------------------------------- class 2: JSON of any shape

def deep(levels: int, inner: object = 1) -> str:
    return "[" * levels + json.dumps(inner) + "]" * levels


@pytest.mark.parametrize("command", ["compare-baseline", "compare-current", "baseline", "merge", "publish"])
def test_json_nested_10000_deep_is_one_line(capsys: pytest.CaptureFixture[str], tmp_path: Path, command: str,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """It used to end in RecursionError (a traceback, exit 1: "regression") in all five commands."""
    path = tmp_path / "deep.json"
    path.write_text('{"format": "perfgate-baseline", "entries": ' + deep(10_000) + "}")
    monkeypatch.delenv("GITHUB_TOKEN", raising=False)
    args = {"compare-baseline": ["compare", path, REP], "compare-current": ["compare", REP, path],
            "baseline": ["baseline", path, "-d", tmp_path / "b"], "merge": ["merge", path],
            "publish": ["publish", path, "--no-comment", "--no-check", "--no-summary"]}[command]
    status, out, err = run_cli(capsys, *args)
    assert status == 2 and one_line(err), err
    assert f"{path}: JSON nested more than {MAX_JSON_DEPTH} levels deep" in err
    assert not (tmp_path / "b").exists()


def test_depth_limit_is_exact_and_iterative() -> None:
    assert not json_depth_exceeds(json.loads(deep(MAX_JSON_DEPTH)))
    assert json_depth_exceeds(json.loads(deep(MAX_JSON_DEPTH + 1)))
    assert not json_depth_exceeds({"a": [{"b": 1}] * 100_000})
    many = [[[]]] * 1000  # wide is fine
    assert not json_depth_exceeds(many)


def test_deep_json_that_python_could_parse_is_refused_too(tmp_path: Path) -> None:
    """900 levels parse, but would exhaust the recursion limit later (str(), json.dumps)."""
    path = tmp_path / "b.json"
    path.write_text(json.dumps({"format": "perfgate-baseline", "version": 1, "device": {"name": "x", "cc": ""},
                                "entries": json.loads(deep(900))}))
    with pytest.raises(InputError, match="nested more than"):
        load_json(path)


BENCH = {"version": "5.1.0", "benchmarks": [{"name": "test_x", "fullname": "t.py::test_x", "group": None,
                                              "stats": {"min": 0.001, "max": 0.002, "mean": 0.0015, "median": 0.0015,
                                                        "stddev": 0.0001, "rounds": 10}}]}


@pytest.mark.parametrize("machine_info", [{"cpu": "AMD"}, {"cpu": [1]}, {"cpu": {"brand_raw": 7}},
                                          {"cpu": None, "processor": ["x"]}])
def test_benchmark_json_with_odd_machine_info_names_no_cpu(capsys: pytest.CaptureFixture[str], tmp_path: Path,
                                                           machine_info: object) -> None:
    path = tmp_path / "bench.json"
    path.write_text(json.dumps({**BENCH, "machine_info": machine_info}))
    status, out, err = run_cli(capsys, "compare", path, path)
    assert status == 0 and err == "", err
    assert set(read_table(path).table["device"]) == {"CPU: unknown"}


@pytest.mark.parametrize("machine_info", [[], ["x"], "x86", 5, None])
def test_benchmark_json_whose_machine_info_is_no_object_is_refused(capsys: pytest.CaptureFixture[str],
                                                                  tmp_path: Path, machine_info: object) -> None:
    path = tmp_path / "bench.json"
    path.write_text(json.dumps({**BENCH, "machine_info": machine_info}))
    for command in (["compare", path, path], ["baseline", path, "-d", tmp_path / "baselines"]):
        status, out, err = run_cli(capsys, *command)
        assert status == 2 and err.count("\n") == 1 and '"machine_info" is not an object' in err, err
    assert not (tmp_path / "baselines").exists()


@pytest.mark.parametrize("field, value", [("fullname", ["a"]), ("fullname", {"a": 1}), ("name", {"a": 1}),
                                          ("group", [1, 2])])
def test_benchmark_names_of_the_wrong_type_are_refused(capsys: pytest.CaptureFixture[str], tmp_path: Path,
                                                       field: str, value: object) -> None:
    bench = json.loads(json.dumps(BENCH))
    bench["benchmarks"][0][field] = value
    path = tmp_path / "bench.json"
    path.write_text(json.dumps(bench))
    status, out, err = run_cli(capsys, "baseline", path, "-d", tmp_path / "baselines")
    assert status == 2 and err.count("\n") == 1 and f"benchmarks[0].{field} is not a string" in err, err
    assert not (tmp_path / "baselines").exists()


def test_an_unforeseen_exception_is_still_one_line_exit_2(capsys: pytest.CaptureFixture[str],
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """The last line of defence: CI must never read a perfgate bug as exit 1, "regression"."""
    import perfgate.collect

    def boom(*args: object, **kwargs: object) -> None:
        raise AttributeError("'list' object has no attribute 'get'\n\x1b[2Jforged")

    monkeypatch.setattr(perfgate.collect, "read_table", boom)
    status, out, err = run_cli(capsys, "compare", REP, REP)
    assert status == 2 and one_line(err) and "AttributeError" in err and "\x1b" not in err
    monkeypatch.setenv("PERFGATE_DEBUG", "1")
    with pytest.raises(AttributeError):
        main(["compare", str(REP), str(REP)])


# ---------------------------------------------------------------- class 3: bounded resources

@pytest.mark.parametrize("device", ["/dev/zero", "/dev/null", "/dev/urandom"])
def test_character_devices_are_refused_at_once(capsys: pytest.CaptureFixture[str], device: str,
                                               spool_dir: Path) -> None:
    if not os.path.exists(device):
        pytest.skip(f"no {device}")
    started = time.monotonic()
    status, _, err = run_cli(capsys, "compare", REP, device)
    assert status == 2 and one_line(err) and "character device" in err
    assert time.monotonic() - started < 10
    assert not list(spool_dir.iterdir())


def test_endless_pipe_stops_at_the_size_limit_and_leaves_nothing(tmp_path: Path) -> None:
    """`compare BASE <(yes ...)` filled 53 GB of TMPDIR in 60 s; the copy now stops at the limit and is removed."""
    spool = tmp_path / "tmp"
    spool.mkdir()
    env = {**os.environ, "TMPDIR": str(spool), "PERFGATE_MAX_INPUT_BYTES": "5000000"}
    script = f'''exec "{sys.executable}" -m perfgate compare "{REP}" <(yes '"ID","Kernel Name"')'''
    done = subprocess.run(["bash", "-c", script], capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 2 and one_line(done.stderr), done.stderr
    assert "goes on beyond perfgate's input limit of 5,000,000 bytes" in done.stderr
    assert "PERFGATE_MAX_INPUT_BYTES" in done.stderr
    assert not list(spool.iterdir())


def test_a_pipe_of_no_known_format_is_refused_after_its_first_bytes(tmp_path: Path) -> None:
    """`compare BASE <(cat /dev/zero)`: the first 8 KiB say it is no report; nothing more is read or spooled."""
    spool = tmp_path / "tmp"
    spool.mkdir()
    script = f'exec "{sys.executable}" -m perfgate compare "{REP}" <(cat /dev/zero)'
    started = time.monotonic()
    done = subprocess.run(["bash", "-c", script], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "TMPDIR": str(spool)})
    assert done.returncode == 2 and one_line(done.stderr) and "unrecognized file format" in done.stderr
    assert time.monotonic() - started < 60
    assert not list(spool.iterdir())


def test_a_fifo_without_a_writer_is_refused_after_the_wait(capsys: pytest.CaptureFixture[str], tmp_path: Path,
                                                           monkeypatch: pytest.MonkeyPatch, spool_dir: Path) -> None:
    fifo = tmp_path / "current.csv"
    os.mkfifo(fifo)
    monkeypatch.setenv("PERFGATE_FIFO_WAIT", "0.5")
    started = time.monotonic()
    status, _, err = run_cli(capsys, "compare", REP, fifo)
    assert status == 2 and one_line(err), err
    assert "a named pipe (FIFO) that nothing wrote to within 0.5 s" in err and "PERFGATE_FIFO_WAIT" in err
    assert time.monotonic() - started < 10
    assert not list(spool_dir.iterdir())


def test_a_fifo_whose_writer_comes_late_is_read(capsys: pytest.CaptureFixture[str], tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch, spool_dir: Path) -> None:
    fifo = tmp_path / "current.ncu-rep"
    os.mkfifo(fifo)
    monkeypatch.setenv("PERFGATE_FIFO_WAIT", "20")
    data = REP.read_bytes()

    def feed() -> None:
        time.sleep(0.5)  # perfgate opens the FIFO first and waits for its writer
        with fifo.open("wb") as sink:
            sink.write(data)

    writer = threading.Thread(target=feed)
    writer.start()
    status, out, err = run_cli(capsys, "compare", REP, fifo)
    writer.join(timeout=20)
    assert status == 0, err
    assert "PASS" in out
    assert not list(spool_dir.iterdir())


def test_an_empty_anonymous_pipe_is_empty_at_once(tmp_path: Path) -> None:
    script = f'exec "{sys.executable}" -m perfgate compare "{REP}" <(true)'
    started = time.monotonic()
    done = subprocess.run(["bash", "-c", script], capture_output=True, text=True, timeout=60,
                          env={**os.environ, "PERFGATE_FIFO_WAIT": "30"})
    assert done.returncode == 2 and "empty file" in done.stderr and "/dev/fd/" in done.stderr
    assert time.monotonic() - started < 25  # no wait for a writer: an anonymous pipe always had one


def test_pipe_errors_name_the_pipe_and_the_spool_is_removed(capsys: pytest.CaptureFixture[str], tmp_path: Path,
                                                            spool_dir: Path) -> None:
    fifo = tmp_path / "cut.ncu-rep"
    os.mkfifo(fifo)
    data = REP.read_bytes()[:20_000]
    writer = threading.Thread(target=lambda: fifo.write_bytes(data))
    writer.start()
    status, _, err = run_cli(capsys, "compare", REP, fifo)
    writer.join(timeout=10)
    assert status == 2 and one_line(err) and f"{fifo}: truncated Nsight Compute report" in err
    assert not list(spool_dir.iterdir())  # removed at once, not at exit (try/finally, not atexit)


def test_a_regular_file_over_the_limit_is_refused_before_reading(capsys: pytest.CaptureFixture[str],
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PERFGATE_MAX_INPUT_BYTES", "10000")
    status, _, err = run_cli(capsys, "compare", REP, DETAILS)
    assert status == 2 and one_line(err)
    assert f"{REP}: 41,809 bytes, more than perfgate's input limit of 10,000 bytes" in err


def test_a_bad_limit_in_the_environment_keeps_the_default(monkeypatch: pytest.MonkeyPatch) -> None:
    from perfgate.limits import MAX_INPUT_BYTES, max_input_bytes

    for value in ("", "lots", "-5", "0", "nan", "inf"):
        monkeypatch.setenv("PERFGATE_MAX_INPUT_BYTES", value)
        assert max_input_bytes() == MAX_INPUT_BYTES
    assert size_text(4 << 30) == "4 GiB" and size_text(100_000) == "100,000 bytes"


def _header_then(tail: bytes) -> bytes:
    data = REP.read_bytes()
    header = int.from_bytes(data[10:14], "little")
    return data[: 14 + header] + tail


@pytest.mark.parametrize("tail", [bytes(1 << 20), b"\x08" + bytes(1 << 20), b"\x00\x00\x00\x00" * 1000,
                                  b"\x10\x00\x00\x00" + b"\xff" * 16])
def test_framing_refuses_a_header_followed_by_junk_at_once(capsys: pytest.CaptureFixture[str], tmp_path: Path,
                                                           tail: bytes) -> None:
    """A valid header then zeros walked as blocks of length 0 and passed, then cost ncu_report 0.9 s per MiB."""
    path = tmp_path / "zeros.ncu-rep"
    path.write_bytes(_header_then(tail))
    started = time.monotonic()
    status, _, err = run_cli(capsys, "compare", REP, path)
    assert status == 2 and one_line(err) and "damaged Nsight Compute report" in err
    assert time.monotonic() - started < 5


def test_framing_walks_a_large_report_without_reading_it(tmp_path: Path) -> None:
    """The walk seeks from block to block: a report of many blocks costs a few bytes read per block."""
    from perfgate.collect.ncu_rep_framing import check_framing

    block = (16).to_bytes(4, "little") + b"\x08" + bytes(15)
    path = tmp_path / "big.ncu-rep"
    path.write_bytes(_header_then(block * 200_000))  # 4 MB of small blocks
    started = time.monotonic()
    check_framing(path)
    assert time.monotonic() - started < 20  # about 0.5 s; generous for a loaded machine


def _long_named(tmp_path: Path, length: int) -> Path:
    """The launch's first row names the kernel (the reader takes each launch's attributes from its first row)."""
    text = DETAILS.read_text().replace('","vector_add","1","7"', '","void ' + "k" * length + '(int)","1","7"', 1)
    path = tmp_path / "long.csv"
    path.write_text(text)
    return path


def test_a_50_mb_kernel_name_is_refused_in_seconds(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = _long_named(tmp_path, 50_000_000)
    started = time.monotonic()
    status, _, err = run_cli(capsys, "compare", DETAILS, path)
    assert status == 2 and one_line(err)
    assert f"a kernel name of 50,000,010 characters (perfgate reads names up to {MAX_NAME_CHARS:,})" in err
    assert time.monotonic() - started < 30  # was 45 s in kernel_function_name alone; now the CSV parse


def test_a_long_but_plausible_kernel_name_is_read(tmp_path: Path) -> None:
    path = _long_named(tmp_path, 20_000)  # CUTLASS-sized templates are a few thousand characters
    table = read_table(path).table
    assert set(table["kernel"]) == {"k" * 20_000}


def test_a_long_benchmark_name_is_refused(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    bench = json.loads(json.dumps(BENCH))
    bench["benchmarks"][0]["fullname"] = "t.py::" + "x" * (MAX_NAME_CHARS + 1)
    path = tmp_path / "bench.json"
    path.write_text(json.dumps(bench))
    status, _, err = run_cli(capsys, "compare", path, path)
    assert status == 2 and one_line(err) and "a benchmark name of" in err


def test_a_compressed_input_is_bounded_and_its_folder_removed(capsys: pytest.CaptureFixture[str], tmp_path: Path,
                                                              monkeypatch: pytest.MonkeyPatch,
                                                              spool_dir: Path) -> None:
    import gzip

    bomb = tmp_path / "bomb.csv.gz"
    bomb.write_bytes(gzip.compress(b'"ID","Kernel Name"\n' + bytes(20_000_000)))
    monkeypatch.setenv("PERFGATE_MAX_INPUT_BYTES", "2000000")
    status, _, err = run_cli(capsys, "compare", REP, bomb)
    assert status == 2 and one_line(err) and "decompresses to more than perfgate's input limit" in err
    assert not list(spool_dir.iterdir())


def test_errors_inside_a_compressed_input_name_the_file_given(capsys: pytest.CaptureFixture[str],
                                                              tmp_path: Path) -> None:
    import lzma

    packed = tmp_path / "cut.ncu-rep.xz"
    packed.write_bytes(lzma.compress(REP.read_bytes()[:30_000]))
    status, _, err = run_cli(capsys, "compare", REP, packed)
    assert status == 2 and one_line(err) and err.startswith(f"perfgate: error: {packed}: truncated")
