"""A profiled test's run folder: ncu's report and log, the command, the test's output and its outcome file, in a
temporary folder until the gate keeps it (moved beside the session report, where CI can upload it) or discards
it; folders left by an interrupted session are removed at its end and at exit. Stdlib only: the session imports
it when ``--perfgate`` is on, before any perf test runs."""

from __future__ import annotations

import atexit
import json
import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from perfgate.table import Measurement

ARTIFACTS = "perfgate-artifacts"  # beside the session report: what ncu left for a perf test


_LIVE_RUNS: set[Path] = set()  # this process's run folders: kept (moved away) or removed by the end


def new_run_dir() -> Path:
    """A new temporary run folder, removed at the session's end or at exit unless kept or discarded first."""
    if not _LIVE_RUNS:
        atexit.register(remove_live_runs)  # registering twice is harmless: the second call finds nothing
    run_dir = Path(tempfile.mkdtemp(prefix="perfgate-"))
    _LIVE_RUNS.add(run_dir)
    return run_dir


def remove_live_runs() -> None:
    """Remove the run folders not kept or discarded: those of an interrupted session (Ctrl-C, SIGTERM while
    ncu ran, ``-x``), of the tests of a shared run that never got to their gate. At session end and exit."""
    while _LIVE_RUNS:
        shutil.rmtree(_LIVE_RUNS.pop(), ignore_errors=True)


class SharedRun:
    """The folder of one ncu run profiled for several tests: removed when the last of them is done."""

    def __init__(self, run_dir: Path, members: int) -> None:
        self.run_dir = run_dir
        self.members = members

    def release(self) -> None:
        self.members -= 1
        if self.members <= 0:
            shutil.rmtree(self.run_dir, ignore_errors=True)


@dataclass(frozen=True)
class Profiled:
    """What profiling (or tracing) one perf test gave: its measurement, and the folder of the run until the gate
    keeps or discards it."""

    measurement: Measurement  # the launches in regions, with per-region totals
    notes: list[str]
    run_dir: Path  # ncu's report, log, command and the test's output, until kept or discarded
    artifacts: Path  # where they are kept
    shared: SharedRun | None = None  # set when the run profiled several tests

    @property
    def report_file(self) -> Path:
        return self.artifacts / "profile.ncu-rep"

    def keep(self) -> str:
        if self.shared is None:
            return keep_artifacts(self.run_dir, self.artifacts)
        said = keep_artifacts(self.run_dir, self.artifacts, copy=True)
        self.shared.release()
        return said

    def discard(self) -> None:
        if self.shared is None:
            shutil.rmtree(self.run_dir, ignore_errors=True)
        else:
            self.shared.release()


def child_result(path: Path) -> dict[str, Any] | None:
    """The outcome the test's child process wrote (a JSON object), or None when it wrote none that reads."""
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return document if isinstance(document, dict) else None


def keep_artifacts(run_dir: Path, artifacts: Path, copy: bool = False, kept: str = "ncu's report") -> str:
    """Move (or copy, when other tests share the run) ``kept`` (ncu's report, or the trace), the log and the
    test's output beside the session report (CI can upload them)."""
    for scratch in ("basetemp", "cache"):
        shutil.rmtree(run_dir / scratch, ignore_errors=True)
    try:
        if artifacts.exists():
            shutil.rmtree(artifacts)
        artifacts.parent.mkdir(parents=True, exist_ok=True)
        if copy:
            shutil.copytree(run_dir, artifacts)
        else:
            shutil.move(str(run_dir), str(artifacts))
    except OSError:
        artifacts = run_dir
        _LIVE_RUNS.discard(run_dir)  # kept where it is: not removed at exit
    return f"\n({kept}, log and the test's output are kept in {_relative(artifacts)})"


def _relative(path: Path) -> str:
    try:
        return os.path.relpath(path, Path.cwd())
    except ValueError:  # another drive (Windows)
        return str(path)
