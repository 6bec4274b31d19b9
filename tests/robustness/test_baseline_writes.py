"""Issue 14, class 5: baseline writes under kill -9, failures and concurrent writers.

A write is a temporary file beside its target (``.perfgate-NAME.json.XXXXXXXX.tmp``, flocked while its writer
lives), flushed to disk, then renamed. ``save_baselines`` writes every changed file's temporary first and
renames them only then, so a multi-GPU update is all or nothing as far as a filesystem allows; the next
run removes what a killed writer left, and no reader ever opens a temporary file.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from helpers.baselines import GPUS, two_gpu_documents
from helpers.common import REPO

from perfgate.baseline import remove_leftovers, save_baselines, write_atomically
from perfgate.cli import main
from perfgate.errors import InputError

H100 = REPO / "tests" / "data" / "h100"
def files(directory: Path) -> dict[str, str]:
    """Every file under ``directory`` (hidden ones too) and what it holds."""
    return {str(p.relative_to(directory)): p.read_text() for p in sorted(directory.rglob("*")) if p.is_file()}


def durations(directory: Path) -> list[float]:
    return [json.loads((directory / f"nvidia-{gpu.split()[1].lower()}-sm90" / "t.json").read_text())["entries"][0]
            ["metrics"]["gpu__time_duration.sum"]["value"] for gpu in GPUS]


def test_a_failure_before_the_renames_changes_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    save_baselines(two_gpu_documents(100.0), tmp_path, "t")
    before = files(tmp_path)
    import perfgate.baseline as baseline

    real_fill = baseline._fill
    calls: list[str] = []

    def fill_then_disk_full(fd: int, name: str, content: str | bytes) -> None:
        calls.append(name)
        if len(calls) == 2:
            raise OSError(28, "No space left on device")
        real_fill(fd, name, content)

    monkeypatch.setattr(baseline, "_fill", fill_then_disk_full)
    with pytest.raises(InputError, match="No space left on device.*no baseline was changed"):
        save_baselines(two_gpu_documents(200.0), tmp_path, "t")
    assert files(tmp_path) == before  # the first GPU's file too, and no temporary file left


def _fail_the_second_rename(monkeypatch: pytest.MonkeyPatch) -> None:
    """os.replace refuses its second call (the second GPU's file), as a read-only file or folder would."""
    real_replace = os.replace
    calls: list[str] = []

    def second_rename_fails(src: str, dst: str) -> None:
        calls.append(str(dst))
        if len(calls) == 2:
            raise OSError(13, "Permission denied", str(dst))
        real_replace(src, dst)

    monkeypatch.setattr(os, "replace", second_rename_fails)


def test_a_failed_rename_puts_back_the_files_already_renamed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    save_baselines(two_gpu_documents(100.0), tmp_path, "t")
    before = files(tmp_path)
    _fail_the_second_rename(monkeypatch)
    with pytest.raises(InputError, match="Permission denied"):
        save_baselines(two_gpu_documents(200.0), tmp_path, "t")
    monkeypatch.undo()  # os.replace as it was, for the checks
    assert files(tmp_path) == before and durations(tmp_path) == [100, 100]


def test_a_new_gpu_file_is_removed_again_when_a_later_rename_fails(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    _fail_the_second_rename(monkeypatch)
    with pytest.raises(InputError):
        save_baselines(two_gpu_documents(200.0), tmp_path, "t")
    assert files(tmp_path) == {}


def test_leftovers_of_a_killed_writer_are_removed_by_the_next_run(capsys: pytest.CaptureFixture[str],
                                                                  tmp_path: Path) -> None:
    folder = tmp_path / "b" / "nvidia-h100-80gb-hbm3-sm90"
    folder.mkdir(parents=True)
    leftovers = [folder / ".perfgate-vector_add.json.k2j4h1x9.tmp", folder / ".perfgate-other.json.a_b_c_d_.tmp",
                 tmp_path / "b" / ".perfgate-x.json.zzzzzzzz.tmp"]
    for path in leftovers:
        path.write_text('{"half": ')
    # Not perfgate's temporary names (the last: a user's file that looks like one, but for the prefix).
    keep = [folder / "notes.tmp", folder / ".gitkeep", folder / "x.json.tmp", folder / ".vector_add.json.k2j4h1x9.tmp"]
    for path in keep:
        path.write_text("mine")
    assert main(["baseline", str(H100 / "vector_add.ncu-rep"), "-d", str(tmp_path / "b")]) == 0
    capsys.readouterr()
    assert not any(p.exists() for p in leftovers)
    assert all(p.read_text() == "mine" for p in keep)
    assert (folder / "vector_add.json").is_file()


def test_a_live_writers_temporary_file_is_left_alone(tmp_path: Path) -> None:
    """Cleaning must not break a concurrent writer: its temporary file is flocked, a dead one's is not."""
    fcntl = pytest.importorskip("fcntl")
    live = tmp_path / ".perfgate-a.json.livelive.tmp"
    dead = tmp_path / ".perfgate-b.json.deaddead.tmp"
    live.write_text("{")
    dead.write_text("{")
    holder = subprocess.Popen([sys.executable, "-c", textwrap.dedent(f"""
        import fcntl, sys, time
        fh = open({str(live)!r}, "r+")
        fcntl.flock(fh, fcntl.LOCK_EX)
        print("locked", flush=True)
        time.sleep(60)
    """)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "locked"
        assert remove_leftovers(tmp_path) == [dead]
        assert live.exists() and not dead.exists()
    finally:
        holder.kill()
        holder.wait()
    assert remove_leftovers(tmp_path) == [live]  # its writer is gone now
    assert fcntl is not None


def test_readers_never_open_a_temporary_file(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    directory = tmp_path / "b"
    assert main(["baseline", str(H100 / "vector_add.ncu-rep"), "-d", str(directory), "--name", "v"]) == 0
    [path] = directory.glob("*/v.json")
    (path.parent / ".perfgate-v.json.abcdefgh.tmp").write_text("{ broken")
    (path.parent / "v.json.tmp").write_text("{ broken")
    capsys.readouterr()
    assert main(["compare", str(directory), str(H100 / "vector_add.rerun.ncu-rep"), "--name", "v"]) == 0
    assert "PASS" in capsys.readouterr().out


def test_write_atomically_leaves_no_temporary_file(tmp_path: Path) -> None:
    write_atomically(tmp_path / "r.json", "{}\n")
    write_atomically(tmp_path / "r.json", b"{}\n")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r.json"]


KILLED_WRITER = """
import os, sys, time
sys.path.insert(0, {tests!r})
from helpers.baselines import two_gpu_documents
from perfgate.baseline import save_baselines

stage = sys.argv[1]
real_replace = os.replace
calls = []

def pausing_replace(src, dst):
    calls.append(dst)
    if stage == "before-renames" and len(calls) == 1:
        print("ready", flush=True)
        time.sleep(60)
    real_replace(src, dst)
    if stage == "between-renames" and len(calls) == 1:
        print("ready", flush=True)
        time.sleep(60)

os.replace = pausing_replace
save_baselines(two_gpu_documents(200.0), sys.argv[2], "t")
"""


@pytest.mark.parametrize("stage", ["before-renames", "between-renames"])
def test_kill_9_during_a_multi_gpu_write_leaves_what_the_readme_says(tmp_path: Path, stage: str) -> None:
    """README, "Baselines": killed before the renames, every baseline is the old one (plus temporary files);
    killed between two renames (a window of microseconds, widened here), some GPUs have the new one. Either
    way the next run removes the temporary files and, run again, completes the update."""
    save_baselines(two_gpu_documents(100.0), tmp_path, "t")
    script = KILLED_WRITER.format(tests=str(REPO / "tests"))
    writer = subprocess.Popen([sys.executable, "-c", script, stage, str(tmp_path)], stdout=subprocess.PIPE, text=True)
    assert writer.stdout is not None and writer.stdout.readline().strip() == "ready"
    os.kill(writer.pid, signal.SIGKILL)
    writer.wait()
    temps = sorted(p.name for p in tmp_path.rglob(".*.tmp"))
    if stage == "before-renames":
        assert durations(tmp_path) == [100, 100] and len(temps) == 2
    else:
        assert durations(tmp_path) == [200, 100] and len(temps) == 1
    save_baselines(two_gpu_documents(200.0), tmp_path, "t")
    assert durations(tmp_path) == [200, 200]
    assert not list(tmp_path.rglob("*.tmp"))


@pytest.mark.parametrize("source", ["", "\x00entries\x00"])
def test_a_baseline_encoded_entry_by_entry_is_the_whole_documents_json(source: str) -> None:
    """``dumps_baseline`` encodes entries one at a time (memory); its text is json.dumps(indent=2) of the whole,
    byte for byte, whatever the strings hold (newlines, workflow commands, its own marker)."""
    import json

    from perfgate.baseline import dumps_baseline
    from perfgate.text import inert_json

    document = {"format": "perfgate-baseline", "version": 1, "source": source, "entries": [
        {"kind": "kernel", "name": "a\nb ##[stop-commands] \x00entries\x00 é \"q\"", "metrics": {
            "gpu__time_duration.sum": {"unit": "ns", "value": 1.5}}, "findings": []},
        {}, {"nested": [1, {"deeper": [None, True]}], "empty": {}}]}
    expected = inert_json(json.dumps(document, indent=2, ensure_ascii=False, allow_nan=False)) + "\n"
    assert dumps_baseline(document) == expected
    assert dumps_baseline({**document, "entries": []}) == inert_json(json.dumps(
        {**document, "entries": []}, indent=2, ensure_ascii=False, allow_nan=False)) + "\n"
