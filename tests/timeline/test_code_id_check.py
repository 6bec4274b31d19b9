"""tests/gpu/code_id_check.py, the GPU check of the timeline source's code identity, in its dry-run mode: our
committed cubins stand in for the modules CUDA loads and our H100 report for ncu's run. It runs the script as the
next GPU session will (a child Python, results under --out), so that what it writes and how it judges is known
to work before device time is spent on it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from perfgate.collect.cubin import find_nvdisasm
from tests.helpers.common import REPO

SCRIPT = REPO / "tests" / "gpu" / "code_id_check.py"


@pytest.mark.skipif(find_nvdisasm() is None, reason="no nvdisasm here (it comes with the CUDA toolkit or PyPI's "
                                                    "nvidia-cuda-nvdisasm; CI has no CUDA)")
def test_dry_run_checks_all_three_and_writes_its_results(tmp_path: Path) -> None:
    pytest.importorskip("elftools", reason="reading a cubin needs pyelftools (perfgate[timeline])")
    done = subprocess.run([sys.executable, str(SCRIPT), "--dry-run", "--out", str(tmp_path)], capture_output=True,
                          text=True, timeout=300, env=os.environ.copy(), check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    results = json.loads((tmp_path / "results.json").read_text(encoding="utf-8"))
    assert results["checks"] == {"cupti_equals_ncu": True, "two_processes_same": True, "rename_keeps_code": True,
                                 "plugin_equals_ncu": None, "torch_triton_equals_ncu": None}  # pytest runs need the GPU
    assert results["ncu_code_id"] == "d0771fb02e697a94"
    assert [set(p["codes"]) for p in results["processes"]] == [{"vector_add"}, {"vector_add"}, {"vector_add_renamed"}]
    assert "ok   cupti_equals_ncu" in done.stdout


def test_help_says_what_it_checks() -> None:
    done = subprocess.run([sys.executable, str(SCRIPT), "--help"], capture_output=True, text=True, timeout=120,
                          check=False)
    assert done.returncode == 0
    assert "--dry-run" in done.stdout
