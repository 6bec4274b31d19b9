"""``perfgate codes TRACE``: a saved trace's kernel codes written beside it, from the cubins and the Triton compile
cache its user names, for ``perfgate compare --code-identity``. On our own H200 traces of the CuPy vector add
(tests/data/h200/timeline: torch.profiler's and perfgate's CUPTI trace) with our sm_90 build of that kernel
(tests/data/cubin), and our Triton 3.9 cache (tests/data/triton-cache). Disassembling needs nvdisasm: those tests
skip where none is found."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from helpers.common import REPO, run_cli
from helpers.timeline import OURS

from perfgate.collect.cubin import find_nvdisasm

CUBINS = REPO / "tests" / "data" / "cubin"
TRITON_CACHE = REPO / "tests" / "data" / "triton-cache"
VECTOR_ADD_ID = "d0771fb02e697a94"  # ncu's code_id of vector_add on our H100, and its cubin's
needs_nvdisasm = pytest.mark.skipif(find_nvdisasm() is None, reason="no nvdisasm here (the CUDA toolkit, PyPI's "
                                                                    "nvidia-cuda-nvdisasm or Triton's wheel)")


def _copy(folder: Path, name: str) -> Path:
    copy = folder / name
    shutil.copyfile(OURS / name, copy)
    return copy


def _written(trace: Path) -> dict[str, str]:
    document = json.loads(trace.with_name(trace.name + ".codes.json").read_text(encoding="utf-8"))
    return {name: code["id"] for name, code in document["codes"].items()}


@pytest.fixture(autouse=True)
def _elf_reader() -> None:
    pytest.importorskip("elftools", reason="reading a cubin needs pyelftools (perfgate[timeline])")


@needs_nvdisasm
def test_a_torch_profiler_trace_gets_its_kernels_code_from_a_cubin(capsys: pytest.CaptureFixture[str],
                                                                   tmp_path: Path) -> None:
    trace = _copy(tmp_path, "vector_add.torch.pt.trace.json.gz")
    status, out, err = run_cli(capsys, "codes", trace, "--cubin", CUBINS / "vector_add.sm_90.cubin",
                               "--triton-cache", TRITON_CACHE)
    assert (status, err) == (0, "")
    assert out == f"perfgate: {trace}.codes.json: the code of 1 of the trace's 1 kernel\n"
    assert _written(trace) == {"vector_add": VECTOR_ADD_ID}


@needs_nvdisasm
def test_two_traces_given_their_codes_are_judged_by_the_same_code_rule(capsys: pytest.CaptureFixture[str],
                                                                       tmp_path: Path) -> None:
    base, cur = (_copy(tmp_path, f"vector_add.cupti.{side}.cupti.json.gz") for side in "ab")
    for trace in (base, cur):
        assert run_cli(capsys, "codes", trace, "--cubin", CUBINS / "vector_add.sm_90.cubin")[0] == 0
    status, out, _ = run_cli(capsys, "compare", "--code-identity", "--threshold", "timeline.kernel_duration=0%",
                             base, cur)
    assert status == 0 and "judged unchanged (same code)" in out
    assert "note: machine code: 1 kernel the same on both sides in the same launch configuration" in out


@needs_nvdisasm
def test_a_name_the_cache_lacks_gets_no_code(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    trace = _copy(tmp_path, "vector_add.cupti.a.cupti.json.gz")
    status, out, _ = run_cli(capsys, "codes", trace, "--triton-cache", TRITON_CACHE)
    assert status == 0 and "the code of 0 of the trace's 1 kernel" in out
    assert _written(trace) == {}


def test_what_is_no_trace_or_no_cubin_is_one_line_and_exit_2(capsys: pytest.CaptureFixture[str],
                                                             tmp_path: Path) -> None:
    report = REPO / "tests" / "data" / "h100" / "vector_add.ncu-rep"
    status, out, err = run_cli(capsys, "codes", report)
    assert (status, out) == (2, "")
    assert err == f"perfgate: error: {report}: is not a trace (an .ncu-rep holds its kernels' code already: " \
                  "compare it with --code-identity; give this command a trace)\n"
    trace = _copy(tmp_path, "vector_add.cupti.a.cupti.json.gz")
    status, _, err = run_cli(capsys, "codes", trace, "--cubin", CUBINS / "vector_add.cu")
    assert status == 2 and len(err.splitlines()) == 1
    assert err.startswith(f"perfgate: error: {CUBINS / 'vector_add.cu'}: not a cubin: no ELF header")
    assert not trace.with_name(trace.name + ".codes.json").exists()
