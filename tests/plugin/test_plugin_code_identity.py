"""``pytest --perfgate --perfgate-code-identity`` end to end, with no GPU: a stub ``ncu`` exports real Tesla T4
reports of the corpus (mlp-t4: v2 and v3 are the same machine code, v4 other code); the update keeps the code in
the baseline and the gate applies the same-code rule against it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers.plugin import MATRIX_ADDITION_TEST, corpus_report, preload_heavy_modules, read_json, use_stub_ncu

pytest_plugins = ("pytester",)
preload_heavy_modules()

BASELINE = Path("baselines") / "tesla-t4-sm75" / "test_perf__test_add.json"


def test_the_update_keeps_the_code_and_the_gate_judges_same_code(pytester: pytest.Pytester,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    pytester.makepyfile(test_perf=MATRIX_ADDITION_TEST)
    ncu, _ = use_stub_ncu(pytester, monkeypatch)

    def run(report: str, *args: str) -> pytest.RunResult:
        monkeypatch.setenv("PERFGATE_STUB_REPORT", str(corpus_report(report)))
        return pytester.runpytest("--perfgate", f"--perfgate-ncu={ncu}", "--perfgate-code-identity", *args)

    run("report_v2", "--perfgate-update").assert_outcomes(passed=1)
    entries = json.loads((pytester.path / BASELINE).read_text(encoding="utf-8"))["entries"]
    [kernel] = [entry for entry in entries if entry["kind"] == "kernel"]
    assert kernel["code"]["id"] and kernel["code"]["opcodes"]["LDG"] == 4

    run("report_v3_loop_unroll").assert_outcomes(passed=1)
    launches = read_json(pytester.path / "perfgate-report.json")["launches"]
    at = launches["kind"].index("kernel")
    assert launches["code_id"][at] == launches["baseline_code_id"][at] == kernel["code"]["id"]
    assert str(launches["code_why"][at]).startswith("same code")

    run("report_v4_8_per_thread").assert_outcomes(failed=1)
    launches = read_json(pytester.path / "perfgate-report.json")["launches"]
    at = launches["kind"].index("kernel")
    assert launches["code_id"][at] != launches["baseline_code_id"][at]
    assert "32 → 56 instructions in its code: LDG +12" in str(launches["code_why"][at])
