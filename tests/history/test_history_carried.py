"""A baseline update that carries a regression says so: on the terminal and in the file (its diff), with whether
an acceptance in the history covers it; ``perfgate baseline`` and ``pytest --perfgate --perfgate-update``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers.history import KERNEL_TIME, write_report
from helpers.history import baseline_file
from helpers.benchmark_suite import BENCH_OPTIONS

from perfgate.collect.baseline_json import read_baseline
from perfgate.cli import main

pytest_plugins = ("pytester",)
SHA = "ab" * 20


@pytest.fixture
def at_commit(monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv("GITHUB_SHA", SHA)
    for name in ("GITHUB_EVENT_PATH", "GITHUB_HEAD_REF"):
        monkeypatch.delenv(name, raising=False)
    return SHA


def _update(tmp_path: Path, values: dict[str, float], *extra: str) -> tuple[list[str], dict[str, object]]:
    report = baseline_file(tmp_path / "run.json", values)
    assert main(["baseline", str(report), "-d", str(tmp_path / "baselines"), "--name", "k", *extra]) == 0
    (path,) = (tmp_path / "baselines").glob("*/k.json")
    read_baseline(path)  # still a valid baseline
    return [], json.loads(path.read_text(encoding="utf-8"))


def test_an_update_that_carries_a_regression_says_so(tmp_path: Path, at_commit: str,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    _update(tmp_path, {"gemm": 100_000.0, "scan": 50_000.0})
    capsys.readouterr()
    _, document = _update(tmp_path, {"gemm": 108_000.0, "scan": 50_500.0})  # gemm +8%, scan +1%: within 5%
    out = capsys.readouterr().err
    assert f"the new baseline carries a regression: gemm {KERNEL_TIME} 100000 → 108000 (+8.0%), beyond 5%+2000" \
        in out
    assert "scan" not in out.split("carries", 1)[1]
    assert document["regressions"] == [{"kind": "kernel", "kernel": "gemm", "region": "", "metric": KERNEL_TIME,
                                        "before": 100000.0, "after": 108000.0, "change": 0.08,
                                        "threshold": "5%+2000", "accepted": None}]
    _, document = _update(tmp_path, {"gemm": 108_000.0, "scan": 50_500.0})  # nothing worse: the list goes
    assert "regressions" not in document and "carries a regression" not in capsys.readouterr().err


def test_with_a_history_the_acceptance_is_named(tmp_path: Path, at_commit: str,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    url = f"sqlite:///{tmp_path / 'h.sqlite'}"
    write_report(tmp_path / "r.json", {("gemm", KERNEL_TIME): [100_000.0]})
    assert main(["history", "record", str(tmp_path / "r.json"), "--db", url, "--branch", "main"]) == 0
    _update(tmp_path, {"gemm": 100_000.0})
    _update(tmp_path, {"gemm": 108_000.0}, "--history", url)
    assert f"no acceptance in the history (perfgate accept --kernel gemm --metric {KERNEL_TIME} --reason ...)" in \
        capsys.readouterr().err

    _update(tmp_path, {"gemm": 100_000.0})
    assert main(["accept", "--db", url, "--kernel", "gemm", "--by", "ada", "--reason", "wider tiles"]) == 0
    capsys.readouterr()
    _, document = _update(tmp_path, {"gemm": 108_000.0}, "--history", url)
    assert f"; accepted by ada at {SHA[:12]}: wider tiles" in capsys.readouterr().err
    (carried,) = document["regressions"]  # type: ignore[misc]
    assert carried["accepted"] == {"by": "ada", "reason": "wider tiles", "commit": SHA}


def test_the_plugin_s_update_says_so_too(suite: pytest.Pytester, at_commit: str,  # noqa: F811
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    url = f"sqlite:///{suite.path / 'h.sqlite'}"
    suite.runpytest("--perfgate", "--perfgate-update", *BENCH_OPTIONS).assert_outcomes(passed=2)
    monkeypatch.setenv("PARSE_N", "4800")  # test_parse 60% slower
    result = suite.runpytest("--perfgate", "--perfgate-update", *BENCH_OPTIONS, "--perfgate-history", url)
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(["*test_bench.py::test_parse: the new baseline carries a regression: "
                                 "test_bench.py::test_parse time.min * → * (+6*%), beyond *; no acceptance in the "
                                 "history*"])
    (path,) = (suite.path / "baselines").glob("*/test_bench__test_parse.json")
    document = json.loads(path.read_text(encoding="utf-8"))
    assert {item["metric"] for item in document["regressions"]} >= {"time.min"}
    (other,) = (suite.path / "baselines").glob("*/test_bench__test_render.json")
    assert "regressions" not in json.loads(other.read_text(encoding="utf-8"))


def test_the_regressions_list_is_in_the_schema(tmp_path: Path, at_commit: str) -> None:
    import jsonschema

    schema = json.loads((Path(__file__).resolve().parents[2] / "perfgate" / "schemas" /
                         "baseline-v1.schema.json").read_text(encoding="utf-8"))
    _update(tmp_path, {"gemm": 100_000.0})
    _, document = _update(tmp_path, {"gemm": 108_000.0})
    assert document["regressions"]
    jsonschema.validate(document, schema)
