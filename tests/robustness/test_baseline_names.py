"""Names stay inside the baselines folder, each name has its own file and finds it again, and the leftover
cleaner deletes only perfgate's own temporary files (issue 23, class 6)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers.common import run_cli

from perfgate.baseline import baseline_documents, device_slug, file_stem, save_baselines
from perfgate.gate import Where, baseline_name, gate
from perfgate.verdict import GateStatus
from perfgate.options import selection
from perfgate.table import Measurement, make_table

OPTIONS = selection(metrics=None, thresholds={}, significance=0.01, allow_device_mismatch=False)
NAMES = ["a b", "a_b", "a/b", "a:b", "a?b", "a*b", "a%20b", "a%2Fb", "a\\b", "a\nb", ".", "..", ".a", "a.", "A b",
         "../../outside/x", "/etc/passwd", "a" * 300, "a" * 299 + "b", "α", "a\x00b", "CON", "-rf"]


def _table(duration: float, device: str = "NVIDIA H100", cc: str = "9.0") -> Measurement:
    rows = [{"kind": "kernel", "kernel": "gemm", "demangled": "gemm", "region": "", "ordinal": 0, "launch": 0,
             "device": device, "cc": cc, "grid": "(1, 1, 1)", "block": "(1, 1, 1)",
             "metric": "gpu__time_duration.sum", "unit": "ns", "value": duration}]
    return Measurement(make_table(rows))


def test_every_name_has_its_own_single_component_file_name() -> None:
    stems = [file_stem(name) for name in NAMES]
    assert len(set(stems)) == len(NAMES)
    for stem in stems:
        assert "/" not in stem and "\\" not in stem and "\x00" not in stem and "\n" not in stem
        assert not stem.startswith(".") and len((stem + ".json").encode()) <= 255
    assert file_stem("tests.gpu.test_x__test_y_a") == "tests.gpu.test_x__test_y_a"  # perf tests' names as they were
    with pytest.raises(Exception, match="must not be empty"):
        file_stem("")


def test_a_compute_capability_is_one_folder_level() -> None:
    for cc in ("9.0/x", "../..", "9.0\\x", "/"):
        assert "/" not in device_slug("NVIDIA H100", cc) and "\\" not in device_slug("NVIDIA H100", cc)
    assert device_slug("NVIDIA H100 80GB HBM3", "9.0") == "nvidia-h100-80gb-hbm3-sm90"


def test_baseline_name_with_a_space_is_found_again(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    base, slow = tmp_path / "base.json", tmp_path / "slow.json"
    for path, factor in ((base, 1.0), (slow, 1.5)):
        data = [0.001 * factor * (1 + i / 100) for i in range(20)]
        path.write_text(json.dumps({"machine_info": {"cpu": {"brand_raw": "Test CPU"}}, "benchmarks": [
            {"name": "test_x", "fullname": "t.py::test_x", "stats": {"min": min(data), "median": data[10],
                                                                     "stddev": 1e-5, "rounds": 20, "data": data}}]}))
    status, _, err = run_cli(capsys, "baseline", base, "-d", tmp_path / "baselines", "--name", "my test")
    assert status == 0, err
    status, out, err = run_cli(capsys, "compare", tmp_path / "baselines", slow, "--name", "my test")
    assert status == 1 and "regression" in out, err
    status, _, err = run_cli(capsys, "compare", tmp_path / "baselines", slow, "--name", "my_test")
    assert status == 2 and "holds no baseline" in err  # another name, another file


def test_compare_name_cannot_read_outside_the_folder(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    documents = baseline_documents(_table(100_000.0, device="CPU: Test", cc=""), OPTIONS.wanted_metrics())
    outside = tmp_path / "outside"
    save_baselines(documents, outside, "x")  # a valid baseline, where --name ../../outside/... would point
    inside = tmp_path / "baselines" / "sub"
    inside.mkdir(parents=True)
    slug = device_slug("CPU: Test", "")
    result = gate(_table(150_000.0, device="CPU: Test", cc=""), baselines=inside,
                  where=Where(name=f"../../outside/{slug}/x"), options=OPTIONS, settings={})
    assert result.status == GateStatus.NEW and result.found == 0
    assert all(inside in path.parents for path in result.missing)


def test_pytest_ids_that_read_alike_keep_their_own_baselines(tmp_path: Path) -> None:
    ids = ["t.py::test_y", "t.py::test_y[.]", "t.py::test_y[..]", "t.py::test_y_a", "t.py::test_y[a]"]
    assert len({baseline_name(i) for i in ids[:3]}) == 1 and len({baseline_name(i) for i in ids[3:]}) == 1
    for number, test in enumerate(ids):
        result = gate(_table(100_000.0 * (number + 1)), baselines=tmp_path, where=Where(baseline_name(test), test),
                      options=OPTIONS, settings={}, update=True)
        assert result.status == GateStatus.UPDATED
    files = sorted(tmp_path.rglob("*.json"))
    assert len(files) == len(ids)
    assert sorted(json.loads(f.read_text())["source"] for f in files) == sorted(ids)
    for number, test in enumerate(ids):  # each finds its own: unchanged, and +50% is a regression
        same = gate(_table(100_000.0 * (number + 1)), baselines=tmp_path, where=Where(baseline_name(test), test),
                    options=OPTIONS, settings={})
        assert same.status == GateStatus.COMPARED, test
        slower = gate(_table(150_000.0 * (number + 1)), baselines=tmp_path, where=Where(baseline_name(test), test),
                      options=OPTIONS, settings={})
        assert slower.status == GateStatus.REGRESSION, test


def test_the_leftover_cleaner_keeps_a_users_own_tmp_files(tmp_path: Path) -> None:
    documents = baseline_documents(_table(100_000.0), OPTIONS.wanted_metrics())
    folder = tmp_path / device_slug("NVIDIA H100", "9.0")
    folder.mkdir()
    mine = folder / ".notes.abc123.tmp"
    mine.write_text("the user's")
    ours = folder / ".perfgate-t.json.k3j4h5.tmp"
    ours.write_text("a killed writer's")
    save_baselines(documents, tmp_path, "t")
    assert mine.read_text() == "the user's" and not ours.exists()
    assert sorted(p.name for p in folder.iterdir()) == [".notes.abc123.tmp", "t.json"]


def test_a_device_named_at_length_is_one_folder_it_finds_again(capsys: pytest.CaptureFixture[str],
                                                                tmp_path: Path) -> None:
    """A report names its device (a fork's artifact can name it anything): a folder name over the filesystem's
    255 bytes was an OSError ("File name too long") behind the last-resort line."""
    assert len(device_slug("x" * 300, "9.0")) <= 200 and device_slug("x" * 300, "9.0") != device_slug("x" * 301, "9.0")
    bench = tmp_path / "bench.json"
    data = [0.001 * (1 + i / 100) for i in range(20)]
    bench.write_text(json.dumps({"machine_info": {"cpu": {"brand_raw": "Very Long CPU " * 40}}, "benchmarks": [
        {"name": "test_x", "fullname": "t.py::test_x", "stats": {"min": min(data), "median": data[10],
                                                                 "stddev": 1e-5, "rounds": 20, "data": data}}]}))
    status, _, err = run_cli(capsys, "baseline", bench, "-d", tmp_path / "baselines", "--name", "b")
    assert status == 0, err
    [written] = (tmp_path / "baselines").rglob("*.json")
    assert len(written.parent.name) <= 200
    status, _, err = run_cli(capsys, "compare", tmp_path / "baselines", bench, "--name", "b")
    assert status == 0, err
