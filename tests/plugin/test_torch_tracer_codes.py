"""The timeline source's torch.profiler tracer with ``--perfgate-code-identity``: Kineto holds CUPTI's one callback
subscriber, so no cubin can be kept; after its export the child writes beside the trace the code Triton's compile
cache holds for the traced kernels (perfgate.plugin.kernel_codes.write_cache_codes), and one problem naming those
that got none, which the parent says in a note.

The trace is our torch.profiler recording of the CuPy vector add on the H200 (tests/data/h200/timeline, CC 9.0) with
its kernel launches named as Triton's kernels are; the cache is one Triton 3.9 wrote (tests/data/triton-cache:
``scale_kernel`` and two ``add_kernel`` versions for sm_90, one for sm_80). Disassembling needs nvdisasm: the tests
that read code skip where none is found, as tests/engine/test_triton_cache.py does. Without torch here, the tracer's
``stop`` runs with a stand-in for the two torch calls it makes before the export (synchronize, the profiler's exit)
and an export that writes our recorded trace."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
from helpers.common import REPO
from helpers.kernel_code import kineto_trace
from helpers.timeline import OURS

from perfgate.collect.cubin import ELF_READER_MISSING, ENV_NVDISASM, find_nvdisasm
from perfgate.collect.timeline.codes_file import codes_file, read_codes
from perfgate.plugin.kernel_codes import write_cache_codes
from perfgate.plugin.tracer import ENV_CODE_IDENTITY, TorchTracer

CACHE = REPO / "tests" / "data" / "triton-cache"
ADD_1024 = "JA5RNINGGJAG7FQQ7NDMQQN4YITXS3C262MBJ7UW2YFK6BPL23NQ"  # add_kernel, BLOCK 1024, sm_90
ADD_1024_SM80 = "SN7TECGIGJ2IE3EMULQIO62PVAAG55ATIDUMBJIIDRZCNNBA63QA"
SCALE = "DRRFIQ46VZXZHTATXGNZUFXAVIZSNUQCUQGRU6VCE4FZG3ZLULYQ"  # scale_kernel, sm_90
ELF_READER = "reading a cubin needs pyelftools (perfgate[timeline])"
RECORDED = OURS / "vector_add.torch.pt.trace.json.gz"  # 10 launches of vector_add
needs_nvdisasm = pytest.mark.skipif(find_nvdisasm() is None, reason="no nvdisasm here (the CUDA toolkit, PyPI's "
                                                                    "nvidia-cuda-nvdisasm or Triton's wheel)")


def _triton_names(index: int, name: str) -> str:
    """Launches 0-2 scale_kernel, 3-5 add_kernel, the rest vector_add (CuPy's, in no Triton cache)."""
    return "scale_kernel" if index < 3 else "add_kernel" if index < 6 else name


def _exported(folder: Path) -> Path:
    """The trace as the torch tracer exports it, under the name the parent gives it."""
    folder.mkdir(parents=True, exist_ok=True)
    return kineto_trace(RECORDED, folder / "trace.cupti.json", _triton_names)


def _cache(folder: Path, *entries: str) -> Path:
    for entry in entries:
        shutil.copytree(CACHE / entry, folder / entry)
    return folder


def _written(trace: Path) -> tuple[dict[str, str], list[str]]:
    codes, problems = read_codes(codes_file(trace))
    return {name: code.code_id for name, code in codes.items()}, problems


def _without_code(count: int, names: str, cache: Path) -> str:
    return (f"{count} of 3 traced kernels {'has' if count == 1 else 'have'} no machine code ({names}): "
            f"torch.profiler gives no loaded modules, so only Triton's compile cache ({cache}) was read; install "
            "cupti-python in the traced process for every kernel's code")


@needs_nvdisasm
def test_triton_kernels_get_their_code_from_the_cache_for_the_traced_gpu(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("elftools", reason=ELF_READER)
    cache = _cache(tmp_path / "cache", ADD_1024, ADD_1024_SM80, SCALE)
    monkeypatch.setenv("TRITON_CACHE_DIR", str(cache))
    trace = _exported(tmp_path / "run")
    write_cache_codes(trace)
    # The trace names the H200 (CC 9.0): add_kernel's sm_80 build is left out, its sm_90 one gives the code.
    assert _written(trace) == ({"scale_kernel": "baa37a8bd723c344", "add_kernel": "1afdefb251c48738"},
                               [_without_code(1, "vector_add", cache)])


@needs_nvdisasm
def test_a_name_cached_in_two_versions_is_named_among_those_without_code(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("elftools", reason=ELF_READER)
    monkeypatch.setenv("TRITON_CACHE_DIR", str(CACHE))  # add_kernel with BLOCK 1024 and 512: which ran is unknown
    trace = _exported(tmp_path)
    write_cache_codes(trace)
    assert _written(trace) == ({"scale_kernel": "baa37a8bd723c344"},
                               [_without_code(2, "add_kernel, vector_add", CACHE)])


def test_the_torch_tracers_stop_writes_the_codes_file_only_when_asked(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    missing = tmp_path / "no-nvdisasm"
    monkeypatch.setenv(ENV_NVDISASM, str(missing))  # no nvdisasm in the traced process: said, not silent
    monkeypatch.setenv("TRITON_CACHE_DIR", str(CACHE))

    def stopped(folder: Path) -> Path:
        folder.mkdir()
        profiler = SimpleNamespace(__exit__=lambda *exc: None,
                                   export_chrome_trace=lambda path: kineto_trace(RECORDED, Path(path), _triton_names))
        torch = SimpleNamespace(cuda=SimpleNamespace(synchronize=lambda: None))
        tracer = TorchTracer(torch)
        tracer.profiler = profiler
        tracer.stop(folder / "trace.cupti.json")
        return folder / "trace.cupti.json"

    monkeypatch.delenv(ENV_CODE_IDENTITY, raising=False)
    assert not codes_file(stopped(tmp_path / "off")).exists()
    monkeypatch.setenv(ENV_CODE_IDENTITY, "1")
    trace = stopped(tmp_path / "on")
    assert json.loads(trace.read_text(encoding="utf-8"))["deviceProperties"][0]["name"] == "NVIDIA H200"
    assert _written(trace) == ({}, [
        f"no nvdisasm in the traced process ({ENV_NVDISASM} names {missing}, not a program): install the CUDA "
        f"toolkit or nvidia-cuda-nvdisasm, or name it in {ENV_NVDISASM}",
        _without_code(3, "add_kernel, scale_kernel, vector_add", CACHE)])


def test_a_traced_process_without_pyelftools_says_so(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ENV_NVDISASM, sys.executable)  # a program: only pyelftools is missing
    monkeypatch.setitem(sys.modules, "elftools", None)  # what an import of a package not installed finds
    monkeypatch.setenv("TRITON_CACHE_DIR", str(CACHE))
    trace = _exported(tmp_path)
    write_cache_codes(trace)
    assert _written(trace) == ({}, [ELF_READER_MISSING, _without_code(3, "add_kernel, scale_kernel, vector_add",
                                                                      CACHE)])


def test_a_trace_that_cannot_be_read_costs_the_codes_never_an_error(tmp_path: Path) -> None:
    trace = tmp_path / "trace.cupti.json"
    trace.write_text('{"traceEvents": [', encoding="utf-8")  # an export cut short
    write_cache_codes(trace)
    codes, problems = _written(trace)
    assert codes == {} and len(problems) == 1
    assert problems[0].startswith("reading the traced kernels' code failed (InputError: ")
