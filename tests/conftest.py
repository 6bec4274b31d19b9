"""Shared test helpers. The corpus of real third-party .ncu-rep files lives in ../shared/corpus
(never copied into this repo); tests that need it skip cleanly where it is absent."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import jinja2  # noqa: F401  (imported once, before any in-process pytester run: see below)
import pandas  # noqa: F401  (the same)
import pytest

try:
    import psycopg  # noqa: F401  (the same, where the postgres extra is installed)
except ImportError:
    pass

# pytester's in-process runs remove the modules they imported from sys.modules afterwards. A library first
# imported inside such a run comes back half new in the next test: pandas' C extensions cannot be imported
# twice ("the dtype category is not supported for parsing"), and jinja2's Namespace class is no longer
# the one its runtime checks ("cannot assign attribute on non-namespace object"). Importing both here
# keeps one of each for the whole session. psycopg likewise: a second copy's
# ``psycopg.Error`` does not catch the first copy's ``OperationalError``.

REPO = Path(__file__).resolve().parents[1]
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


@pytest.fixture
def corpus() -> Path:
    if not NCU_REP.is_dir():
        pytest.skip(f"corpus {NCU_REP} not available (set PERFGATE_CORPUS to ../shared/corpus)")
    return NCU_REP


@pytest.fixture(autouse=True)
def _inner_runs_are_not_xdist_workers(monkeypatch: pytest.MonkeyPatch) -> None:
    """pytest-benchmark disables itself when PYTEST_XDIST_WORKER is set; the suite runs under
    xdist, but the pytest sessions our tests start (pytester) are not workers of it."""
    monkeypatch.delenv("PYTEST_XDIST_WORKER", raising=False)


@pytest.fixture(scope="session")
def scale_data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Where the benchmarks' ``csv_pair`` writes generated CSV files: one folder per session, shared by them."""
    folder = tmp_path_factory.getbasetemp() / "scale"
    folder.mkdir(exist_ok=True)
    return folder
