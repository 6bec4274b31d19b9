"""``pytest --perfgate --perfgate-source=timeline --perfgate-code-identity`` end to end with no GPU: the traced child
replays a trace recorded on an H200 (tests/data/h200/timeline) and, beside it, the kernel codes its CUPTI side
writes (``<trace>.codes.json``, perfgate.plugin.kernel_codes). The codes are real: our vector_add cubin's, from
nvdisasm's committed text (tests/data/cubin), given here to the recorded trace's cutlass ``Kernel2``. What a GPU
alone proves (the cubin CUDA loads gives ncu's code_id) is tests/gpu/code_id_check.py's."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from helpers.common import REPO
from helpers.plugin import preload_heavy_modules, read_json, use_stub_ncu

from helpers.timeline import MLP_REGIONS_TEST as PERF_TEST
from helpers.timeline import MLP_TIMELINE_BASELINE as BASELINE
from helpers.timeline import OURS
from perfgate.collect.cubin import BASE_ADDRESS, disassembly_codes
from perfgate.table import KernelCode

pytest_plugins = ("pytester",)
preload_heavy_modules()

KERNEL2 = "void cutlass::Kernel2<cutlass_80_simt_sgemm_128x256_8x4_nt_align1>(cutlass_80_simt_sgemm_128x256_8x4_nt_align1::Params)"


def _vector_add() -> KernelCode:
    text = (REPO / "tests" / "data" / "cubin" / "vector_add.sm_90.nvdisasm.txt").read_text(encoding="utf-8")
    return disassembly_codes(text, {"vector_add": (BASE_ADDRESS, 72 * 16)})["vector_add"]


def _recorded(folder: Path, trace: str, code: KernelCode, problems: list[str]) -> Path:
    """A recorded trace, and the codes file the child's CUPTI side would have written beside it."""
    folder.mkdir(exist_ok=True)
    copy = folder / trace
    shutil.copyfile(OURS / trace, copy)
    codes = {"codes": {KERNEL2: {"id": code.code_id, "opcodes": dict(code.opcodes)}}, "problems": problems}
    (folder / (trace + ".codes.json")).write_text(json.dumps(codes), encoding="utf-8")
    return copy


def _run(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, recorded: Path, *args: str) -> pytest.RunResult:
    ncu, _ = use_stub_ncu(pytester, monkeypatch, also_clear=("PERFGATE_TIMELINE",))
    monkeypatch.setenv("PERFGATE_TIMELINE_REPLAY", str(recorded))
    return pytester.runpytest("--perfgate", f"--perfgate-ncu={ncu}", "--perfgate-source=timeline", "-rsx", *args)


def _launch_codes(pytester: pytest.Pytester) -> set[Any]:
    launches = read_json(pytester.path / "perfgate-report.json")["launches"]
    return {(code, base) for code, base in zip(launches["code_id"], launches["baseline_code_id"], strict=True)}


def test_traced_kernels_keep_their_code_in_the_baseline_and_the_same_code_rule_judges_them(
        pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    pytester.makepyfile(test_perf=PERF_TEST)
    code = _vector_add()
    first = _recorded(tmp_path / "a", "mlp.torch.a.pt.trace.json.gz", code, [])
    _run(pytester, monkeypatch, first, "--perfgate-update", "--perfgate-code-identity").assert_outcomes(passed=1)
    entries = read_json(pytester.path / BASELINE)["entries"]
    kept = {entry["name"]: entry["code"]["id"] for entry in entries if "code" in entry}
    assert kept == {"Kernel2": code.code_id}  # the one kernel whose code the child found; the others: none

    rerun = _recorded(tmp_path / "b", "mlp.torch.b.pt.trace.json.gz", code, ["not a cubin: no ELF header"])
    result = _run(pytester, monkeypatch, rerun, "--perfgate-code-identity")
    result.assert_outcomes(passed=1)
    assert (code.code_id, code.code_id) in _launch_codes(pytester)
    report = json.dumps(read_json(pytester.path / "perfgate-report.json"))
    assert "machine code of the traced kernels: not a cubin: no ELF header" in report


def test_without_the_option_the_child_is_not_asked_and_no_code_is_kept(
        pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    pytester.makepyfile(test_perf=PERF_TEST)
    recorded = _recorded(tmp_path, "mlp.torch.a.pt.trace.json.gz", _vector_add(), [])
    _run(pytester, monkeypatch, recorded, "--perfgate-update").assert_outcomes(passed=1)
    assert not [entry for entry in read_json(pytester.path / BASELINE)["entries"] if "code" in entry]
