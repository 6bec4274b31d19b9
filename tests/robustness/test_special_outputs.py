"""``-o`` and ``--perfgate-report`` naming something other than a file (issue 33, item 2): a character device, a
FIFO or ``/dev/stdout`` is written through, never replaced by a renamed temporary file (as root that turned
``/dev/null`` into a regular file and lost the output, exit 0); what cannot be written (``/dev/full``, a folder)
is one line and exit 2.

These tests run as root here, so a regression would damage the machine's own ``/dev/null``: each test that
writes to a real device first writes to a throwaway one of its own (a FIFO, or a ``mknod`` twin of
``/dev/null`` in tmp_path), and stops there if that one was replaced.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from helpers.common import REPO

pytest_plugins = ("pytester",)

H100 = REPO / "tests" / "data" / "h100"
BASE = H100 / "vector_add.rerun.raw-base.csv"
CURRENT = H100 / "vector_add.rerun.raw.csv"


def _perfgate(*args: object, stdout: int | object = subprocess.PIPE) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([sys.executable, "-m", "perfgate", *map(str, args)], stdout=stdout,  # type: ignore[call-overload]
                          stderr=subprocess.PIPE, cwd=REPO, timeout=120, check=False,
                          env={**os.environ, "PYTHONPATH": str(REPO), "PERFGATE_FIFO_WAIT": "20"})


class FifoReader:
    """A FIFO in ``folder`` and a thread reading it to its end, as a consumer of perfgate's output would."""

    def __init__(self, folder: Path) -> None:
        self.path = folder / "out.fifo"
        os.mkfifo(self.path)
        self.data = b""
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()

    def _read(self) -> None:
        with open(self.path, "rb") as pipe:
            self.data = pipe.read()

    def finish(self) -> bytes:
        self.thread.join(timeout=60)
        assert not self.thread.is_alive(), "nothing was written to the FIFO"
        assert stat.S_ISFIFO(os.lstat(self.path).st_mode), "the FIFO was replaced"
        return self.data


def _char_device(path: str | Path) -> tuple[int, int]:
    info = os.lstat(path)
    assert stat.S_ISCHR(info.st_mode), f"{path} is no longer a character device"
    return info.st_rdev, info.st_ino


def _own_null(folder: Path) -> Path:
    """A character device of this test's own, /dev/null's twin: replacing it harms nothing."""
    twin = folder / "null"
    try:
        os.mknod(twin, stat.S_IFCHR | 0o666, os.stat("/dev/null").st_rdev)
        with open(twin, "wb") as probe:  # a folder on a nodev mount has device nodes that cannot be opened
            probe.write(b"")
    except (PermissionError, OSError) as exc:
        pytest.skip(f"cannot make a device node here ({exc})")
    return twin


def test_compare_writes_through_a_fifo(tmp_path: Path) -> None:
    reader = FifoReader(tmp_path)
    done = _perfgate("compare", BASE, CURRENT, "--format", "json", "-o", reader.path)
    assert done.returncode in (0, 1), done.stderr
    assert json.loads(reader.finish())["format"] == "perfgate-report"
    assert not [p for p in tmp_path.iterdir() if p.name != "out.fifo"], "a temporary file was left"


def test_compare_writes_through_a_character_device_and_dev_null_stays_one(tmp_path: Path) -> None:
    twin = _own_null(tmp_path)
    before = _char_device(twin)
    done = _perfgate("compare", BASE, CURRENT, "-o", twin)
    assert done.returncode in (0, 1), done.stderr
    assert _char_device(twin) == before and list(tmp_path.iterdir()) == [twin]
    report = tmp_path / "made" / "report.json"
    assert _perfgate("compare", BASE, CURRENT, "-o", report).returncode in (0, 1)
    before = _char_device("/dev/null")  # only now the machine's own
    for args in (("compare", BASE, CURRENT, "-o", "/dev/null"), ("merge", report, "-o", "/dev/null")):
        done = _perfgate(*args)
        assert done.returncode in (0, 1), done.stderr
        assert _char_device("/dev/null") == before


def test_dev_full_is_refused_in_one_line_and_stays_a_device(tmp_path: Path) -> None:
    if not os.path.exists("/dev/full"):
        pytest.skip("no /dev/full here")
    twin = _own_null(tmp_path)
    _perfgate("compare", BASE, CURRENT, "-o", twin)
    _char_device(twin)
    before = _char_device("/dev/full")
    done = _perfgate("compare", BASE, CURRENT, "-o", "/dev/full")
    assert done.returncode == 2
    assert done.stderr.decode() == ("perfgate: error: /dev/full: cannot write report (No space left on device) "
                                    "(give a file in a writable folder with space left, or - for stdout)\n")
    assert _char_device("/dev/full") == before


def test_a_folder_is_refused_in_one_line(tmp_path: Path) -> None:
    done = _perfgate("compare", BASE, CURRENT, "-o", tmp_path)
    assert done.returncode == 2 and done.stderr.decode().count("\n") == 1
    assert "cannot write report (Is a directory)" in done.stderr.decode()


def test_dev_stdout_is_this_process_stdout_not_a_file_put_in_dev(tmp_path: Path) -> None:
    """To a pipe, and to a file the shell redirected stdout to (written after what was printed, not over it)."""
    own = tmp_path / "stdout"  # a link of this test's own to the same place: replaced, it stops the test here
    own.symlink_to("/proc/self/fd/1")
    done = _perfgate("compare", BASE, CURRENT, "--format", "json", "-o", own)
    assert done.returncode in (0, 1) and own.is_symlink() and list(tmp_path.iterdir()) == [own], done.stderr
    assert b'"perfgate-report"' in done.stdout
    link = os.readlink("/dev/stdout") if os.path.islink("/dev/stdout") else None
    done = _perfgate("compare", BASE, CURRENT, "--format", "json", "-o", "/dev/stdout")
    assert done.returncode in (0, 1), done.stderr
    text = done.stdout.decode()
    assert json.loads(text[text.index("{"):text.rindex("}") + 1])["format"] == "perfgate-report"
    out = tmp_path / "out.txt"
    with out.open("wb") as redirected:
        done = _perfgate("compare", BASE, CURRENT, "--format", "json", "-o", "/dev/stdout", stdout=redirected)
    assert done.returncode in (0, 1), done.stderr
    written = out.read_text()  # the report, then the verdict line after it (not over it)
    assert json.loads(written[:written.rindex("}") + 1])["format"] == "perfgate-report"
    assert written.endswith("(report: /dev/stdout)\n")
    assert (os.readlink("/dev/stdout") if os.path.islink("/dev/stdout") else None) == link


def test_history_changes_writes_through_a_fifo(tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path / 'h.sqlite'}"
    recorded = _perfgate("history", "record", H100 / "sessions" / "gate1.json.xz", "--db", db,
                         "--commit", "a" * 40, "--branch", "main")
    assert recorded.returncode == 0, recorded.stderr
    reader = FifoReader(tmp_path)
    done = _perfgate("history", "changes", "--db", db, "--format", "json", "-o", reader.path)
    assert done.returncode == 0, done.stderr
    assert isinstance(json.loads(reader.finish()), list)


def test_the_plugin_writes_only_the_json_through_a_fifo(pytester: pytest.Pytester) -> None:
    pytester.makepyfile("def test_nothing():\n    pass\n")
    reader = FifoReader(pytester.path)
    result = pytester.runpytest_subprocess("--perfgate", "-p", "no:cacheprovider", f"--perfgate-report={reader.path}")
    assert "Traceback" not in result.stdout.str() + result.stderr.str()
    assert json.loads(reader.finish())["format"] == "perfgate-report"
    assert sorted(p.name for p in pytester.path.iterdir() if p.name.startswith("out")) == ["out.fifo"]


def test_write_file_follows_a_link_to_a_file_and_keeps_the_link(tmp_path: Path) -> None:
    from perfgate.files import write_file

    (tmp_path / "real.json").write_text("old")
    (tmp_path / "link.json").symlink_to("real.json")
    write_file(tmp_path / "link.json", "new")
    assert (tmp_path / "link.json").is_symlink() and (tmp_path / "real.json").read_text() == "new"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["link.json", "real.json"]


def test_a_fifo_nobody_reads_is_refused_after_the_wait(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from perfgate.files import write_file

    monkeypatch.setenv("PERFGATE_FIFO_WAIT", "0.2")
    fifo = tmp_path / "nobody.fifo"
    os.mkfifo(fifo)
    with pytest.raises(OSError, match="nothing read within 0.2 s"):
        write_file(fifo, "x")
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)


def test_the_plugin_writes_the_json_to_its_stdout_and_nothing_beside_it(pytester: pytest.Pytester) -> None:
    pytester.makepyfile("def test_nothing():\n    pass\n")
    own = pytester.path / "stdout"  # this test's own link first: replaced, it stops here
    own.symlink_to("/proc/self/fd/1")
    for target in (own, Path("/dev/stdout")):
        result = pytester.runpytest_subprocess("--perfgate", "-p", "no:cacheprovider", f"--perfgate-report={target}")
        assert '"format": "perfgate-report"' in result.stdout.str() and "Traceback" not in result.stderr.str()
        assert own.is_symlink() and not (pytester.path / "stdout.md").exists()
    assert not os.path.exists("/dev/stdout.md") and not os.path.exists("/dev/stdout.html")
