"""``perfgate baselines list|stale`` on real baseline files and a real pytest collection."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from helpers.common import REPO, run_perfgate

H100 = REPO / "baselines" / "nvidia-h100-80gb-hbm3-sm90"


def test_list_shows_each_baseline_with_how_it_was_measured(tmp_path: Path) -> None:
    # A copy of the committed GPU baselines: the checkout's baselines/ may also hold what a run left there
    # (the Quickstart records baselines/cpu-<your CPU>/).
    shutil.copytree(H100, tmp_path / "baselines" / H100.name)
    shutil.copytree(REPO / "baselines" / "nvidia-h200-sm90", tmp_path / "baselines" / "nvidia-h200-sm90")
    done = run_perfgate("baselines", "list", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "nvidia-h100-80gb-hbm3-sm90: 3 baselines"
    assert any("examples.test_torch_mlp_layers__test_mlp_layer_by_layer.json  32 entries" in line
               and "clock_control base, cache_control all, ncu_version 2025.3.1.0" in line
               and "from examples/test_torch_mlp_layers.py::test_mlp_layer_by_layer" in line for line in lines)
    # The H200's timeline baselines say what measured them (no ncu settings: a trace did).
    assert any("examples.test_torch_softmax__test_softmax.timeline.json  2 entries, 11 metrics; a timeline trace;"
               in line for line in lines), lines


def test_list_names_a_benchmark_baseline_and_counts_one_entry(tmp_path: Path) -> None:
    folder = tmp_path / "baselines" / "cpu-amd-epyc"
    folder.mkdir(parents=True)
    (folder / "examples.cpu.test_host_code__test_tokenize.json").write_text(
        '{"format": "perfgate-baseline", "version": 1, "device": {"name": "CPU: AMD EPYC", "cc": ""},'
        ' "settings": {"pytest_benchmark": "5.3.1", "timer": "perf_counter"},'
        ' "source": "examples/cpu/test_host_code.py::test_tokenize", "entries": [{"kind": "benchmark",'
        ' "name": "test_tokenize", "region": "", "ordinal": 0, "metrics": {"time.min": {"unit": "s", "value": 0.001}}}]}',
        encoding="utf-8")
    done = run_perfgate("baselines", "list", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[1].startswith(
        "  cpu-amd-epyc/examples.cpu.test_host_code__test_tokenize.json  1 entry, 1 metric; pytest-benchmark 5.3.1; ")


def test_stale_finds_baselines_of_tests_that_are_gone_and_keeps_the_unknown(tmp_path: Path) -> None:
    (tmp_path / "baselines").mkdir()
    shutil.copytree(H100, tmp_path / "baselines" / H100.name)
    tests = tmp_path / "examples"
    tests.mkdir()
    # test_vector_add is renamed; the softmax module exists but is skipped here; the MLP module is gone.
    (tests / "test_cupy_raw_kernel.py").write_text("def test_vector_add_v2():\n    pass\n", encoding="utf-8")
    (tests / "test_torch_softmax.py").write_text("import pytest\npytest.skip('no GPU', allow_module_level=True)\n",
                                                 encoding="utf-8")
    done = run_perfgate("baselines", "stale", "--", "examples", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "stale: baselines/nvidia-h100-80gb-hbm3-sm90/examples.test_cupy_raw_kernel__test_vector_add.json" in out
    assert "stale: baselines/nvidia-h100-80gb-hbm3-sm90/examples.test_torch_mlp_layers__test_mlp_layer_by_layer" in out
    assert "not checked: baselines/nvidia-h100-80gb-hbm3-sm90/examples.test_torch_softmax__test_softmax.json" in out
    assert out.rstrip().endswith("2 of 3 test baselines under baselines belong to tests that are gone; pass --delete "
                                 "to remove them")
    assert len(list((tmp_path / "baselines").rglob("*.json"))) == 3

    deleted = run_perfgate("baselines", "stale", "--delete", "--", "examples", cwd=tmp_path)
    assert deleted.returncode == 0 and deleted.stdout.count("deleted: ") == 2
    assert [p.name for p in (tmp_path / "baselines").rglob("*.json")] == ["examples.test_torch_softmax__test_softmax.json"]


def test_list_and_stale_read_the_baselines_folder_from_pyproject(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text('[tool.perfgate]\nbaselines = "perf/baselines"\n', encoding="utf-8")
    shutil.copytree(H100, tmp_path / "perf" / "baselines" / H100.name)
    (tmp_path / "examples").mkdir()
    (tmp_path / "examples" / "test_cupy_raw_kernel.py").write_text("def test_vector_add():\n    pass\n",
                                                                    encoding="utf-8")
    listed = run_perfgate("baselines", "list", cwd=tmp_path)
    assert listed.returncode == 0, listed.stderr
    assert listed.stdout.splitlines()[0] == "nvidia-h100-80gb-hbm3-sm90: 3 baselines"
    # From a folder below the project: the same folder, the one its pyproject.toml names.
    below = tmp_path / "examples"
    assert run_perfgate("baselines", "list", cwd=below).stdout == listed.stdout

    stale = run_perfgate("baselines", "stale", "--", "examples", cwd=tmp_path)
    assert stale.returncode == 0, stale.stderr
    assert "stale: perf/baselines/nvidia-h100-80gb-hbm3-sm90/examples.test_torch_mlp_layers__" in stale.stdout
    assert stale.stdout.rstrip().endswith("2 of 3 test baselines under perf/baselines belong to tests that are "
                                          "gone; pass --delete to remove them")

    # --dir still wins over the configuration, and --config names another pyproject.toml.
    assert run_perfgate("baselines", "list", "-d", "nowhere", cwd=tmp_path).returncode == 2
    other = tmp_path / "other.toml"
    other.write_text('[tool.perfgate]\nbaselines = "none-here"\n', encoding="utf-8")
    refused = run_perfgate("baselines", "list", "--config", other, cwd=tmp_path)
    assert refused.returncode == 2 and "none-here" in refused.stderr


def _copy_h100(tmp_path: Path) -> Path:
    folder = tmp_path / "baselines" / H100.name
    shutil.copytree(H100, folder)
    return folder


def test_list_and_stale_show_a_baselines_source_as_inert_text(tmp_path: Path) -> None:
    # A baseline is a file a pull request can change: its source must not move the cursor, set the terminal's
    # title or start a line the CI runner reads as a workflow command.
    folder = _copy_h100(tmp_path)
    path = folder / "examples.test_cupy_raw_kernel__test_vector_add.json"
    document = json.loads(path.read_text(encoding="utf-8"))
    document["source"] = "examples/gone.py::test_x\x1b]0;owned\x07\x1b[2J\r\n::error::forged"
    path.write_text(json.dumps(document), encoding="utf-8")
    shutil.copytree(folder, tmp_path / "baselines" / "::warning::forged")  # a folder name starts the line
    (tmp_path / "examples").mkdir()
    for done in (run_perfgate("baselines", "list", cwd=tmp_path),
                 run_perfgate("baselines", "stale", "--", "examples", cwd=tmp_path)):
        assert done.returncode == 0, done.stderr
        assert "\x1b" not in done.stdout and "\r" not in done.stdout and "\x07" not in done.stdout
        assert not any(line.startswith("::") for line in done.stdout.splitlines())
        assert "examples/gone.py::test_x\\x1b]0;owned\\x07\\x1b[2J\\r\\n::error::forged" in done.stdout


def test_list_and_stale_name_each_unreadable_baseline_and_exit_2(tmp_path: Path) -> None:
    # A baseline cut short by a bad merge or an interrupted copy is refused by compare and the plugin: the
    # listing says so instead of leaving the file out.
    folder = _copy_h100(tmp_path)
    (folder / "cut.json").write_text('{"format": "perfgate-baseline", "entries": [', encoding="utf-8")
    (folder / "empty.json").write_bytes(b"")
    listed = run_perfgate("baselines", "list", cwd=tmp_path)
    assert listed.returncode == 2
    lines = listed.stdout.splitlines()
    assert lines[0] == "nvidia-h100-80gb-hbm3-sm90: 3 baselines, 2 unreadable"
    assert "  nvidia-h100-80gb-hbm3-sm90/cut.json  unreadable: broken JSON at line 1 column 45: Expecting value" in lines
    assert any(line.startswith("  nvidia-h100-80gb-hbm3-sm90/empty.json  unreadable: broken JSON") for line in lines)
    assert listed.stderr == ("perfgate: error: baselines: 2 baseline files cannot be read (listed above) (restore "
                             "them from git, or record them again with pytest --perfgate --perfgate-update)\n")

    (tmp_path / "examples").mkdir()
    stale = run_perfgate("baselines", "stale", "--", "examples", cwd=tmp_path)
    assert stale.returncode == 2 and stale.stderr.startswith("perfgate: error: baselines: 2 baseline files")
    assert "not checked: baselines/nvidia-h100-80gb-hbm3-sm90/cut.json (unreadable: broken JSON" in stale.stdout
    assert (folder / "cut.json").exists() and (folder / "empty.json").exists()


def test_stale_says_why_pytest_could_not_collect(tmp_path: Path) -> None:
    _copy_h100(tmp_path)
    (tmp_path / "test_typo.py").write_text("def test_x(:\n    pass\n", encoding="utf-8")
    option = run_perfgate("baselines", "stale", "--", "--no-such-option", cwd=tmp_path)
    assert option.returncode == 2
    assert option.stderr.count("\n") == 1 and "unrecognized arguments: --no-such-option" in option.stderr
    syntax = run_perfgate("baselines", "stale", "--", "test_typo.py", cwd=tmp_path)
    assert syntax.returncode == 2
    assert "failed with status 2: test_typo.py: SyntaxError: " in syntax.stderr, syntax.stderr
