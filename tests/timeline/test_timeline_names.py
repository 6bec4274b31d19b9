"""Kernel names of traces: CUPTI's mangled names demangled for the ``demangled`` column, on read.

Names from the live timeline source's H200 fixtures (``tests/data/h200/timeline-live``), which keep CUPTI's
mangled names as recorded; the expected signatures are what ``c++filt`` prints for them.
"""

from __future__ import annotations

import lzma
from pathlib import Path

import pytest

from perfgate.demangled import bare_name, demangled_name
from perfgate.vocabulary import KIND_KERNEL, KIND_REGION

DATA = Path(__file__).resolve().parents[1] / "data" / "h200" / "timeline-live"
FILL = "_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_11FillFunctorIfEESt5arrayIPcLm1EEEEviT0_T1_"


@pytest.mark.parametrize(("mangled", "signature"), [
    (FILL, "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>, "
           "std::array<char*, 1ul> >(int, at::native::FillFunctor<float>, std::array<char*, 1ul>)"),
    ("_ZN7cutlass7Kernel2I43cutlass_80_simt_sgemm_128x256_8x4_nt_align1EEvNT_6ParamsE",
     "void cutlass::Kernel2<cutlass_80_simt_sgemm_128x256_8x4_nt_align1>"
     "(cutlass_80_simt_sgemm_128x256_8x4_nt_align1::Params)"),
    ("_Z10vector_addPKfS0_Pfi", "vector_add(float const*, float const*, float*, int)"),
])
def test_a_mangled_name_is_demangled(mangled: str, signature: str) -> None:
    assert demangled_name(mangled) == signature
    assert bare_name(mangled) == bare_name(signature)


@pytest.mark.parametrize("name", ["vector_add", "_Zgarbage", "_Z", "_Zé3foo", "void f<int>(int)", ""])
def test_a_name_that_does_not_demangle_is_kept(name: str) -> None:
    assert demangled_name(name) == name


def test_the_live_trace_has_demangled_kernels_and_no_region_signature(tmp_path: Path) -> None:
    from perfgate.collect import read_table

    trace = tmp_path / "trace.cupti.json"
    trace.write_bytes(lzma.decompress((DATA / "sessions" / "tl-sync.trace.cupti.json.xz").read_bytes()))
    table = read_table(trace).table
    kernels = table[table["kind"] == KIND_KERNEL]
    signatures = set(kernels["demangled"].tolist())
    assert not [s for s in signatures if s.startswith("_Z")]
    assert "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>, std::array<char*, " \
           "1ul> >(int, at::native::FillFunctor<float>, std::array<char*, 1ul>)" in signatures
    assert set(table[table["kind"] == KIND_REGION]["demangled"].tolist()) == {""}


def test_a_committed_timeline_baseline_is_demangled_on_read() -> None:
    from perfgate.collect.baseline_json import read_baseline

    path = DATA / "baselines" / "examples.test_torch_mlp_layers__test_mlp_layer_by_layer.timeline.json"
    assert FILL in path.read_text(encoding="utf-8")  # the fixture stays as recorded
    table = read_baseline(path).table
    signatures = set(table[table["kind"] == KIND_KERNEL]["demangled"].tolist())
    assert demangled_name(FILL) in signatures and not [s for s in signatures if s.startswith("_Z")]
    assert set(table[table["kind"] == KIND_REGION]["demangled"].tolist()) == {""}  # stored as "one entry"
