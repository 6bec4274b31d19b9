"""Helpers for the ``pytest --perfgate`` tests: the stub ncu, corpus files, report files."""

from __future__ import annotations

import json
import os
import stat
import sys
from pathlib import Path
from typing import Any

import pytest

TESTS = Path(__file__).resolve().parents[1]
REPO = TESTS.parent
CORPUS = Path(os.environ.get("PERFGATE_CORPUS", REPO.parent / "shared" / "corpus"))
MLP_T4 = CORPUS / "ncu-rep" / "mlp-t4"


def preload_heavy_modules() -> None:
    """Import what ``pytest --perfgate`` loads lazily, before any in-process pytester run.

    pytester restores ``sys.modules`` after each in-process run; numpy cannot be imported a second
    time in one process, so it (and pandas, ncu_report) must already be loaded outside.
    """
    import perfgate.collect.benchmark_json  # noqa: F401
    import perfgate.gate  # noqa: F401
    import perfgate.plugin.runner  # noqa: F401
    import perfgate.plugin.session  # noqa: F401
    import perfgate.publish.summary  # noqa: F401
    import perfgate.render.html  # noqa: F401
    from perfgate.collect.ncu_rep import find_ncu_report_module

    find_ncu_report_module()


def use_stub_ncu(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch,
                 also_clear: tuple[str, ...] = ()) -> tuple[Path, Path]:
    """The stub ncu for a pytester run, and the file its invocations are logged to: the environment cleared of
    what would steer it or the run (GitHub summary, GPU pinning, PYTEST_ADDOPTS), a GPU assumed."""
    ncu = install_stub_ncu(pytester.path.parent / f"{pytester.path.name}-bin")
    calls = pytester.path.parent / f"{pytester.path.name}-stub.jsonl"
    for name in ("GITHUB_STEP_SUMMARY", "CUDA_VISIBLE_DEVICES", "PERFGATE_STUB_MODE", "PYTEST_ADDOPTS", *also_clear):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("PERFGATE_ASSUME_GPU", "1")
    monkeypatch.setenv("PERFGATE_STUB_LOG", str(calls))
    return ncu, calls


# A perf test gating the mlp-t4 corpus reports' matrix_addition kernels in region "add", run with the stub ncu
# exporting a corpus_report.
MATRIX_ADDITION_TEST = """
import pytest

@pytest.mark.perfgate(kernels="regex:matrix_addition")
def test_add(perfgate):
    with perfgate.region("add"):
        pass
"""


def corpus_report(name: str) -> Path:
    """A real .ncu-rep from ../shared/corpus; skips the test where the corpus is absent."""
    path = MLP_T4 / f"{name}.ncu-rep"
    if not path.is_file():
        pytest.skip(f"corpus file {path} not available (set PERFGATE_CORPUS to ../shared/corpus)")
    return path


def install_stub_ncu(folder: Path) -> Path:
    """An executable ``ncu`` in ``folder`` that runs tests/helpers/stub_ncu.py with this Python."""
    folder.mkdir(parents=True, exist_ok=True)
    wrapper = folder / "ncu"
    wrapper.write_text(f"#!/bin/sh\nexec '{sys.executable}' '{TESTS / 'helpers' / 'stub_ncu.py'}' \"$@\"\n", encoding="utf-8")
    wrapper.chmod(wrapper.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return wrapper


def stub_calls(log: Path) -> list[dict[str, Any]]:
    if not log.is_file():
        return []
    return [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines() if line.strip()]


def read_json(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))
