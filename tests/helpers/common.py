"""Paths and runners every room of the suite uses: the repository, the shared corpus, perfgate as a function
and as a process."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
CORPUS = Path(os.environ.get("PERFGATE_CORPUS", REPO.parent / "shared" / "corpus"))
NCU_REP = CORPUS / "ncu-rep"


def run_cli(capsys: pytest.CaptureFixture[str], *args: object) -> tuple[int, str, str]:
    """``perfgate ARGS...`` in this process: (exit status, stdout, stderr)."""
    from perfgate.cli import main

    status = main([str(a) for a in args])
    out, err = capsys.readouterr()
    return status, out, err


def run_perfgate(*args: object, cwd: Path = REPO) -> subprocess.CompletedProcess[str]:
    """``perfgate ARGS...`` as its own process (``python -m perfgate``), in ``cwd``: its exit status and output."""
    return subprocess.run([sys.executable, "-m", "perfgate", *map(str, args)], capture_output=True, text=True,
                          cwd=cwd, timeout=300, check=False)


def corpus_file(relative: str) -> Path:
    path = NCU_REP / relative
    if not path.is_file():
        pytest.skip(f"corpus file {path} not available (set PERFGATE_CORPUS to ../shared/corpus)")
    return path
