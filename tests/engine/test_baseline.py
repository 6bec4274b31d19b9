"""`perfgate baseline`: per-GPU files, schema, stable pretty output, atomic and all-or-nothing writes."""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path

import pytest
from helpers.common import REPO, corpus_file

from perfgate.baseline import device_slug, write_atomically
from perfgate.collect.baseline_json import read_baseline
from perfgate.cli import main

V3 = "mlp-t4/report_v3_loop_unroll.ncu-rep"
V4 = "mlp-t4/report_v4_8_per_thread.ncu-rep"
SCHEMA = json.loads(resources.files("perfgate").joinpath("schemas/baseline-v1.schema.json").read_text())  # package data


def make_baseline(capsys: pytest.CaptureFixture[str], report: Path, directory: Path, *extra: str) -> list[Path]:
    status = main(["baseline", str(report), "-d", str(directory), *extra])
    out, err = capsys.readouterr()
    assert status == 0, err
    return [Path(line.removeprefix("wrote ")) for line in out.splitlines()]


def test_baseline_goes_to_the_gpu_folder(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    [path] = make_baseline(capsys, corpus_file(V3), tmp_path / "baselines")
    assert path == tmp_path / "baselines" / "tesla-t4-sm75" / "report_v3_loop_unroll.json"
    document = json.loads(path.read_text())
    assert document["format"] == "perfgate-baseline" and document["version"] == 1
    assert document["device"] == {"name": "Tesla T4", "cc": "7.5"}
    [entry] = document["entries"]
    assert entry["name"] == "matrix_addition2D" and entry["grid"] == "(32, 63, 1)"
    assert entry["metrics"]["gpu__time_duration.sum"] == {"unit": "ns", "value": 67776}
    # only the compared metrics and launch facts, not all 1,131 of the report
    assert len(entry["metrics"]) < 15


def test_baseline_matches_the_published_schema(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    jsonschema = pytest.importorskip("jsonschema")
    for report in (V3, "esmm-a10g/e22c00d.ncu-rep", "kernelAC-2080ti/profile.ncu-rep"):
        for path in make_baseline(capsys, corpus_file(report), tmp_path):
            jsonschema.validate(json.loads(path.read_text()), SCHEMA)


def test_schema_rejects_what_the_reader_rejects() -> None:
    jsonschema = pytest.importorskip("jsonschema")
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"format": "perfgate-baseline", "version": 1, "device": {"name": "T4"}, "entries": []},
                            SCHEMA)


def test_output_is_stable_and_pretty(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    [first] = make_baseline(capsys, corpus_file("esmm-a10g/b644635.ncu-rep"), tmp_path / "a")
    [second] = make_baseline(capsys, corpus_file("esmm-a10g/b644635.ncu-rep"), tmp_path / "b")
    text = first.read_text()
    assert text == second.read_text()
    assert text.endswith("\n") and '\n  "entries": [\n' in text
    names = [e["name"] for e in json.loads(text)["entries"]]
    assert names == sorted(names)
    metrics = list(json.loads(text)["entries"][0]["metrics"])
    assert metrics == sorted(metrics)


def test_compare_against_own_baseline_is_unchanged(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    [path] = make_baseline(capsys, corpus_file(V3), tmp_path)
    assert main(["compare", str(path), str(corpus_file(V3))]) == 0
    assert "1 unchanged" in capsys.readouterr().out
    assert main(["compare", str(path), str(corpus_file(V4))]) == 1
    assert "REGRESSION  matrix_addition2D" in capsys.readouterr().out


def test_update_rewrites_and_failed_update_loses_nothing(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    directory = tmp_path / "baselines"
    [path] = make_baseline(capsys, corpus_file(V3), directory, "--name", "mlp")
    before = path.read_bytes()
    [same] = make_baseline(capsys, corpus_file(V4), directory, "--name", "mlp")
    assert same == path and path.read_bytes() != before  # updated in place
    updated = path.read_bytes()

    truncated = tmp_path / "cut.ncu-rep"
    truncated.write_bytes(corpus_file(V3).read_bytes()[:60_000])
    status = main(["baseline", str(truncated), "-d", str(directory), "--name", "mlp"])
    err = capsys.readouterr().err
    assert status == 2 and "truncated" in err and err.count("\n") == 1
    assert path.read_bytes() == updated  # byte for byte
    assert sorted(p.name for p in path.parent.iterdir()) == ["mlp.json"]  # no temp files left behind


def test_atomic_write_keeps_old_file_on_failure(tmp_path: Path) -> None:
    target = tmp_path / "b.json"
    target.write_text("old\n")

    with pytest.raises(TypeError):
        write_atomically(target, 12345)  # type: ignore[arg-type]  # fails mid-write
    assert target.read_text() == "old\n"
    assert [p.name for p in tmp_path.iterdir()] == ["b.json"]


def test_baseline_dir_that_is_a_file(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    blocker = tmp_path / "baselines"
    blocker.write_text("not a dir")
    status = main(["baseline", str(corpus_file(V3)), "-d", str(blocker)])
    assert status == 2 and "baselines" in capsys.readouterr().err
    assert blocker.read_text() == "not a dir"


@pytest.mark.parametrize(("mutate", "fragment"), [
    (lambda d: d.update(version=2), "version"),
    (lambda d: d.update(format="something"), "neither a perfgate baseline"),
    (lambda d: d["entries"][0].update(metrics=[1]), "metrics"),
    (lambda d: d["entries"][0].update(kind="warp"), "kind"),
    (lambda d: d["entries"][0].update(ordinal=-1), "ordinal"),
    (lambda d: d["entries"][0]["metrics"]["gpu__time_duration.sum"].update(value="fast"), "value"),
    (lambda d: d.update(extra=1), "unknown key"),
    (lambda d: d.pop("device"), "device"),
])
def test_malformed_baseline_is_one_clear_line(capsys: pytest.CaptureFixture[str], tmp_path: Path, mutate,
                                              fragment: str) -> None:
    [path] = make_baseline(capsys, corpus_file(V3), tmp_path)
    document = json.loads(path.read_text())
    mutate(document)
    path.write_text(json.dumps(document))
    status = main(["compare", str(path), str(corpus_file(V3))])
    err = capsys.readouterr().err
    assert status == 2 and fragment in err and str(path) in err and err.count("\n") == 1


def test_broken_json_names_line_and_column(tmp_path: Path) -> None:
    path = tmp_path / "b.json"
    path.write_text('{"format": "perfgate-baseline",\n "version": 1,\n "entries": [}')
    with pytest.raises(Exception) as info:
        read_baseline(path)
    assert "line 3" in str(info.value)


def test_device_slug() -> None:
    assert device_slug("Tesla T4", "7.5") == "tesla-t4-sm75"
    assert device_slug("NVIDIA H100 80GB HBM3", "9.0") == "nvidia-h100-80gb-hbm3-sm90"
    assert device_slug("CPU: AMD EPYC 7763 64-Core Processor", "") == "cpu-amd-epyc-7763-64-core-processor"


def test_name_keeps_dots_of_the_stem(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    for name in ("resnet.fp16.ncu-rep", "resnet.fp32.ncu-rep"):
        (tmp_path / name).write_bytes(corpus_file(V3).read_bytes())
        make_baseline(capsys, tmp_path / name, tmp_path / "b")
    assert sorted(p.name for p in (tmp_path / "b" / "tesla-t4-sm75").iterdir()) == ["resnet.fp16.json",
                                                                                     "resnet.fp32.json"]


def test_configured_dir_is_relative_to_pyproject(capsys: pytest.CaptureFixture[str], tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "pyproject.toml").write_text('[tool.perfgate]\nbaselines = "perf/baselines"\n')
    sub = tmp_path / "sub"
    sub.mkdir()
    monkeypatch.chdir(sub)
    assert main(["baseline", str(corpus_file(V3))]) == 0
    capsys.readouterr()
    assert (tmp_path / "perf" / "baselines" / "tesla-t4-sm75" / "report_v3_loop_unroll.json").is_file()


def test_files_get_the_usual_permissions(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    import os

    old = os.umask(0o022)
    try:
        [path] = make_baseline(capsys, corpus_file(V3), tmp_path)
    finally:
        os.umask(old)
    assert path.stat().st_mode & 0o777 == 0o644


def test_unnamed_gpu_csv_cannot_become_a_baseline(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    details = REPO / "tests" / "data" / "ncu-csv" / "details_nvtx.csv"  # names no GPU, only its index
    status = main(["baseline", str(details), "-d", str(tmp_path)])
    err = capsys.readouterr().err
    assert status == 2 and "names no GPU" in err and not any(tmp_path.iterdir())
