"""``pytest --perfgate --perfgate-source=timeline --perfgate-code-identity`` end to end with no GPU: the traced child
replays a trace recorded on an H200 (tests/data/h200/timeline) and, beside it, the kernel codes its CUPTI side
writes (``<trace>.codes.json``, perfgate.plugin.kernel_codes). The codes are real: our vector_add cubin's, from
nvdisasm's committed text (tests/data/cubin), given here to the recorded trace's cutlass ``Kernel2``. What a GPU
alone proves (the cubin CUDA loads gives ncu's code_id) is tests/gpu/code_id_check.py's. The torch.profiler tracer's
codes file comes from Triton's compile cache alone (tests/data/triton-cache, read with nvdisasm where one is found),
and its note on the kernels without code reaches the report."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from helpers.common import REPO
from helpers.kernel_code import kineto_trace, vector_add_code, write_codes_beside
from helpers.plugin import preload_heavy_modules, read_json, use_stub_ncu

from helpers.timeline import MLP_REGIONS_TEST as PERF_TEST
from helpers.timeline import MLP_TIMELINE_BASELINE as BASELINE
from helpers.timeline import OURS
from perfgate.collect.cubin import find_nvdisasm
from perfgate.collect.timeline.codes_file import codes_file
from perfgate.plugin.kernel_codes import write_cache_codes
from perfgate.table import KernelCode

pytest_plugins = ("pytester",)
preload_heavy_modules()

KERNEL2 = "void cutlass::Kernel2<cutlass_80_simt_sgemm_128x256_8x4_nt_align1>(cutlass_80_simt_sgemm_128x256_8x4_nt_align1::Params)"


def _recorded(folder: Path, trace: str, code: KernelCode, problems: list[str]) -> Path:
    """A recorded trace, and the codes file the child's CUPTI side would have written beside it."""
    folder.mkdir(exist_ok=True)
    copy = folder / trace
    shutil.copyfile(OURS / trace, copy)
    write_codes_beside(copy, {KERNEL2: code}, problems)
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
    code = vector_add_code()
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
    recorded = _recorded(tmp_path, "mlp.torch.a.pt.trace.json.gz", vector_add_code(), [])
    _run(pytester, monkeypatch, recorded, "--perfgate-update").assert_outcomes(passed=1)
    assert not [entry for entry in read_json(pytester.path / BASELINE)["entries"] if "code" in entry]


def test_a_codes_file_that_cannot_be_read_costs_the_codes_never_the_test(
        pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    pytester.makepyfile(test_perf=PERF_TEST)
    recorded = _recorded(tmp_path, "mlp.torch.a.pt.trace.json.gz", vector_add_code(), [])
    codes_file(recorded).write_text('{"codes": {"Kernel2": {"id": "not hex"}}}', encoding="utf-8")
    _run(pytester, monkeypatch, recorded, "--perfgate-update", "--perfgate-code-identity").assert_outcomes(passed=1)
    assert not [entry for entry in read_json(pytester.path / BASELINE)["entries"] if "code" in entry]
    report = json.dumps(read_json(pytester.path / "perfgate-report.json"))
    assert "machine code of the traced kernels: " in report and "the code of 'Kernel2' must be" in report


@pytest.mark.skipif(find_nvdisasm() is None, reason="no nvdisasm here (the CUDA toolkit, PyPI's nvidia-cuda-nvdisasm "
                                                    "or Triton's wheel)")
def test_the_torch_tracers_codes_from_tritons_cache_reach_the_baseline_and_its_note_the_report(
        pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    pytest.importorskip("elftools", reason="reading a cubin needs pyelftools (perfgate[timeline])")
    pytester.makepyfile(test_perf=PERF_TEST)
    monkeypatch.setenv("TRITON_CACHE_DIR", str(REPO / "tests" / "data" / "triton-cache"))
    # Our torch.profiler trace of the MLP on the H200, its GELU launches named as a Triton kernel the cache holds.
    recorded = kineto_trace(OURS / "mlp.torch.a.pt.trace.json.gz", tmp_path / "trace.cupti.json",
                            lambda _, name: "scale_kernel" if "GeluCUDAKernelImpl" in name else name)
    write_cache_codes(recorded)  # what the torch tracer writes beside its export
    _run(pytester, monkeypatch, recorded, "--perfgate-update", "--perfgate-code-identity").assert_outcomes(passed=1)
    entries = read_json(pytester.path / BASELINE)["entries"]
    assert {entry["name"]: entry["code"]["id"] for entry in entries if "code" in entry} == \
        {"scale_kernel": "baa37a8bd723c344"}
    report = json.dumps(read_json(pytester.path / "perfgate-report.json"))
    assert "machine code of the traced kernels: 8 of 9 traced kernels have no machine code (Kernel2, " \
           "elementwise_kernel, reduce_kernel and 3 more): torch.profiler gives no loaded modules" in report
