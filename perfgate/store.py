"""What a baselines directory holds, and which baselines no test uses any more (``perfgate baselines list|stale``,
in ``perfgate.cli.baselines``).

A baselines directory has one folder per GPU (or CPU) model and one JSON file per test or report
(see perfgate.baseline). ``list_baselines`` reads them with how they were measured and when;
``stale_baselines`` finds the files of perf tests that no longer exist (renamed or deleted tests leave their
baselines behind), from the tests pytest collects (``collect_test_ids``).
"""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Sequence

from perfgate.errors import InputError


@dataclass(frozen=True)
class StoredBaseline:
    path: Path
    device: str  # the folder: a device slug
    name: str  # the file name without .json
    source: str  # what it was made from: a pytest node id (plugin) or a report file name (perfgate baseline)
    settings: dict[str, Any] = field(default_factory=dict)
    entries: int = 0
    metrics: int = 0
    committed: float | None = None  # last commit time (seconds since the epoch), else the file's mtime

    @property
    def from_test(self) -> bool:
        return "::" in self.source


def _commit_times(directory: Path) -> dict[Path, float]:
    """Each file's last commit time, from one ``git log`` call; {} outside a git checkout."""
    try:
        done = subprocess.run(["git", "log", "--format=@%ct", "--name-only", "--", "."], cwd=directory,
                              capture_output=True, text=True, timeout=60, check=False)
        top = subprocess.run(["git", "rev-parse", "--show-toplevel"], cwd=directory, capture_output=True,
                             text=True, timeout=60, check=False).stdout.strip()
    except (OSError, subprocess.TimeoutExpired):
        return {}
    if done.returncode != 0 or not top:
        return {}
    times: dict[Path, float] = {}
    when = 0.0
    for line in done.stdout.splitlines():
        if line.startswith("@"):
            when = float(line[1:])
        elif line.strip():
            times.setdefault((Path(top) / line.strip()).resolve(), when)  # newest first: keep the first seen
    return times


def list_baselines(directory: Path) -> list[StoredBaseline]:
    if not directory.is_dir():
        raise InputError(directory, "is not a baselines directory",
                         "pass the folder that holds one subfolder per GPU, e.g. baselines")
    times = _commit_times(directory)
    found: list[StoredBaseline] = []
    for path in sorted(directory.glob("*/*.json")):
        try:
            document = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            document = None
        if not isinstance(document, dict) or document.get("format") != "perfgate-baseline":
            continue  # not a baseline: say nothing, as readers ignore it
        raw_entries, raw_settings = document.get("entries"), document.get("settings")
        entries: list[Any] = raw_entries if isinstance(raw_entries, list) else []
        metrics = {m for e in entries if isinstance(e, dict) and isinstance(e.get("metrics"), dict)
                   for m in e["metrics"]}
        settings: dict[str, Any] = raw_settings if isinstance(raw_settings, dict) else {}
        found.append(StoredBaseline(path=path, device=path.parent.name, name=path.stem,
                                    source=str(document.get("source", "")), settings=dict(settings),
                                    entries=len(entries), metrics=len(metrics),
                                    committed=times.get(path.resolve(), path.stat().st_mtime)))
    return found


def collect_test_ids(pytest_args: Sequence[str], cwd: Path | None = None) -> list[str]:
    """The node ids pytest collects with ``pytest_args`` (``--collect-only -q``), in a child process."""
    command = [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider", *pytest_args]
    done = subprocess.run(command, capture_output=True, text=True, cwd=cwd, check=False, timeout=600)
    if done.returncode not in (0, 5):  # 5: no tests collected
        last = (done.stdout + done.stderr).strip().splitlines()[-1:] or ["(no output)"]
        raise InputError("pytest --collect-only", f"failed with status {done.returncode}: {last[0]}",
                         "fix the collection error, or pass the test paths to collect after --")
    return [line.strip() for line in done.stdout.splitlines() if "::" in line and not line.startswith(" ")]


def stale_baselines(stored: Iterable[StoredBaseline], test_ids: Iterable[str],
                    root: Path | None = None) -> tuple[list[StoredBaseline], list[StoredBaseline]]:
    """(stale, unchecked): baselines written for a perf test (their source is a node id) whose test is gone.

    Stale: the test's file no longer exists, or pytest collected that file and not the test. Unchecked: the
    file exists but nothing of it was collected (a module skipped for want of torch or a GPU, a collection
    error, a path not passed): its baselines are kept, never called stale on this machine's say-so.
    """
    ids = list(test_ids)
    live = set(ids)  # by the test each baseline records: two tests' names can share a stem (gate.own_name)
    collected_files = {test_id.split("::", 1)[0] for test_id in ids}
    root = root or Path.cwd()
    stale: list[StoredBaseline] = []
    unchecked: list[StoredBaseline] = []
    for b in stored:
        if not b.from_test or b.source in live:
            continue
        test_file = b.source.split("::", 1)[0]
        if test_file in collected_files or not (root / test_file).exists():
            stale.append(b)
        else:
            unchecked.append(b)
    return stale, unchecked
