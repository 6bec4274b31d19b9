"""JSON perfgate finds inside an input (a timeline setting holding a JSON document, a baseline file it only lists)
is read under the same depth and finiteness limits as an input file: a string of 100,000 '[' ran the stdlib's
decoder out of recursion behind the last-resort line."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from helpers.common import REPO, run_cli

from perfgate.gate import own_name

TIMELINE_BASELINE = (REPO / "baselines" / "nvidia-h200-sm90"
                     / "examples.test_cupy_raw_kernel__test_vector_add.timeline.json")
DEEP = "[" * 100_000 + "]" * 100_000


@pytest.mark.parametrize("setting", ["timeline_sketch", "timeline_module_loading"])
@pytest.mark.parametrize("output", ["text", "html"])
def test_a_deep_json_setting_is_not_read(setting: str, output: str, tmp_path: Path,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    document = json.loads(TIMELINE_BASELINE.read_text())
    document["settings"][setting] = DEEP
    edited = tmp_path / "edited.json"
    edited.write_text(json.dumps(document))
    status, out, err = run_cli(capsys, "compare", edited, TIMELINE_BASELINE, "--format", output)
    assert status == 0 and not err and out, err


def test_baselines_list_names_a_deep_file_unreadable(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # compare refuses it, so the listing says so (one line for it, exit 2), without running out of recursion.
    folder = tmp_path / "baselines" / "nvidia-h200-sm90"
    folder.mkdir(parents=True)
    shutil.copy(TIMELINE_BASELINE, folder / "good.json")
    (folder / "deep.json").write_text(DEEP)
    status, out, err = run_cli(capsys, "baselines", "list", "-d", tmp_path / "baselines")
    assert status == 2 and "good.json" in out, err
    assert "  nvidia-h200-sm90/deep.json  unreadable: JSON nested more than 64 levels deep" in out.splitlines()
    assert err.count("\n") == 1 and "1 baseline file cannot be read" in err


def test_a_deep_baseline_does_not_stop_naming_a_test(tmp_path: Path) -> None:
    (tmp_path / "gpu").mkdir()
    (tmp_path / "gpu" / "t.json").write_text(DEEP)
    assert own_name(tmp_path, "t", "tests/t.py::test_t") == "t"
