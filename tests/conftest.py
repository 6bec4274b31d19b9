"""Shared test helpers. The corpus of real third-party .ncu-rep files lives in ../shared/corpus
(never copied into this repo); tests that need it skip cleanly where it is absent."""

from __future__ import annotations

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

from helpers.common import NCU_REP

pytest_plugins = ("helpers.benchmark_suite",)  # fixtures more than one room uses


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
