"""The history store: recording reports into SQLite and a real PostgreSQL, idempotent, all or nothing, safe
with concurrent writers, and one line for every bad input."""

from __future__ import annotations

import lzma
import os
import subprocess
import sys
from pathlib import Path

import pytest

from helpers import history as history_helpers
from helpers.history import INSTRUCTIONS, KERNEL_TIME, write_report
from perfgate.cli import main
from perfgate.history.db import SCHEMA_VERSION, open_history

history_url = history_helpers.history_url  # the fixture: a new history on SQLite and on PostgreSQL

REPO = Path(__file__).resolve().parents[2]
SESSIONS = REPO / "tests" / "data" / "h100" / "sessions"


def _counts(url: str) -> tuple[int, int, int]:
    with open_history(url, create=False) as history:
        return tuple(history.query(f"SELECT COUNT(*) FROM {table}")[0][0]  # type: ignore[return-value]
                     for table in ("perfgate_runs", "perfgate_series", "perfgate_points"))


def _one_report(tmp_path: Path, name: str = "r.json", scale: float = 1.0) -> Path:
    return write_report(tmp_path / name, {("gemm", KERNEL_TIME): [100.0 * scale, 102.0 * scale, 101.0 * scale],
                                          ("gemm", INSTRUCTIONS): [5000.0]})


def test_record_is_idempotent(history_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    report = _one_report(tmp_path)
    args = ["history", "record", str(report), "--db", history_url, "--commit", "abc123", "--branch", "main",
            "--when", "2026-11-01T10:00:00Z"]
    assert main(args) == 0
    assert main(args) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("recorded: r.json (2 series) at abc123 on main")
    assert out[1].startswith("already recorded: r.json")
    assert _counts(history_url) == (1, 2, 2)
    with open_history(history_url, create=False) as history:
        rows = history.query("SELECT n, value, low, high, samples FROM perfgate_points ORDER BY n DESC")
        settings = history.query("SELECT settings, recorded_at FROM perfgate_runs")[0]
    assert rows[0] == (3, 101.0, 100.0, 102.0, "[100.0, 102.0, 101.0]")
    assert rows[1][:4] == (1, 5000.0, 5000.0, 5000.0) and rows[1][4] is None
    assert '"replay_passes": 1' in settings[0] and '"clock_control": "base"' in settings[0]
    assert settings[1] == "2026-11-01T10:00:00.000000Z"


def test_a_rerun_of_the_same_commit_is_a_run_of_its_own(history_url: str, tmp_path: Path) -> None:
    for scale in (1.0, 1.01):
        assert main(["history", "record", str(_one_report(tmp_path, scale=scale)), "--db", history_url,
                     "--commit", "abc", "--branch", "main"]) == 0
    assert _counts(history_url) == (2, 2, 4)


def test_a_bad_report_records_nothing(history_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    good = _one_report(tmp_path)
    other_version = write_report(tmp_path / "v9.json", {("k", KERNEL_TIME): [1.0]}, version=9)
    assert main(["history", "record", str(good), str(other_version), "--db", history_url, "--commit", "a"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"perfgate: error: {other_version}: report version 9 is not supported (this perfgate reads "
                   "versions 1, 2)"]
    assert _counts(history_url) == (0, 0, 0)


def test_the_real_h100_session_reports(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'h.sqlite'}"
    files = []
    for name in ("update", "gate1", "gate2"):
        files.append(tmp_path / f"{name}.json")
        files[-1].write_bytes(lzma.decompress((SESSIONS / f"{name}.json.xz").read_bytes()))
    assert main(["history", "record", *map(str, files), "--db", url, "--commit", "c0", "--branch", "main"]) == 0
    runs, series, points = _counts(url)
    assert (runs, series, points) == (3, 130, 390)
    with open_history(url, create=False) as history:
        gpus = history.query("SELECT DISTINCT gpu FROM perfgate_series")
    assert gpus == [("NVIDIA H100 80GB HBM3",)]


def test_commit_and_branch_default_from_github_actions(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    url = f"sqlite:///{tmp_path / 'h.sqlite'}"
    monkeypatch.setenv("GITHUB_SHA", "0123456789abcdef0123456789abcdef01234567")
    monkeypatch.setenv("GITHUB_REF_NAME", "main")
    monkeypatch.delenv("GITHUB_HEAD_REF", raising=False)
    monkeypatch.delenv("GITHUB_EVENT_PATH", raising=False)
    assert main(["history", "record", str(_one_report(tmp_path)), "--db", url]) == 0
    with open_history(url, create=False) as history:
        assert history.query("SELECT commit_sha, branch FROM perfgate_runs") == [
            ("0123456789abcdef0123456789abcdef01234567", "main")]


def test_a_corrupt_database_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    corrupt = tmp_path / "corrupt.sqlite"
    corrupt.write_bytes(b"this is not SQLite, " * 100)
    before = corrupt.read_bytes()
    assert main(["history", "record", str(_one_report(tmp_path)), "--db", f"sqlite:///{corrupt}"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "file is not a database" in err and str(corrupt) in err
    assert corrupt.read_bytes() == before


@pytest.mark.parametrize("url, cause", [
    ("postgresql://nobody@127.0.0.1:1/none", "cannot connect to the history database"),
    ("mysql://x/y", "is not a history URL"),
])
def test_an_unusable_url_is_one_line(url: str, cause: str, tmp_path: Path,
                                     capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["history", "record", str(_one_report(tmp_path)), "--db", url]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and cause in err and "Traceback" not in err


def test_a_newer_schema_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    url = f"sqlite:///{tmp_path / 'h.sqlite'}"
    with open_history(url) as history:
        history.execute("UPDATE perfgate_meta SET value = '99' WHERE name = 'schema_version'")
    assert main(["history", "record", str(_one_report(tmp_path)), "--db", url]) == 2
    assert f"history schema version 99 is newer than this perfgate reads ({SCHEMA_VERSION})" in \
        capsys.readouterr().err


def test_concurrent_writers(history_url: str, tmp_path: Path) -> None:
    """Four processes record three runs each of the same series at once: every run lands, no series twice."""
    writers = []
    for writer in range(4):
        reports = [str(_one_report(tmp_path, f"w{writer}-{run}.json", 1 + writer / 10 + run / 100))
                   for run in range(3)]
        command = [sys.executable, "-m", "perfgate", "history", "record", *reports, "--db", history_url,
                   "--commit", f"c{writer}", "--branch", "main"]
        writers.append(subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                        env={**os.environ, "PYTHONPATH": str(REPO)}))
    for process in writers:
        out, err = process.communicate(timeout=120)
        assert process.returncode == 0, err
    assert _counts(history_url) == (12, 2, 24)
