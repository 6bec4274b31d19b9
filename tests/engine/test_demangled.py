"""A kernel's short name (its function name with its template arguments), as every output shows a kernel, from
the one module that parses kernel names (``perfgate.demangled``)."""

from __future__ import annotations

import pytest

from perfgate.demangled import bare_name, kernel_function_name, short_name


@pytest.mark.parametrize(("demangled", "short"), [
    ("void ns::gemm_tiled<128, 64, 8>(float *, int)", "gemm_tiled<128, 64, 8>"),
    ("void at::native::vectorized_elementwise_kernel<4, F>(int, F)", "vectorized_elementwise_kernel<4, F>"),
    ("<unnamed>::transposeNaive(const float *)", "transposeNaive"),
    ("reduce_kernel<(int)512, f(g<1>)>", "reduce_kernel<(int)512, f(g<1>)>"),
    ("sm80_xmma_gemm_f32f32", "sm80_xmma_gemm_f32f32"),
    ("void broken<1, 2(int", "broken<1, 2(int"),  # unbalanced: the function name as far as it parsed
])
def test_the_short_name_keeps_the_template_arguments_and_drops_the_rest(demangled: str, short: str) -> None:
    assert short_name(demangled) == short
    assert short.startswith(kernel_function_name(demangled))
    assert bare_name(demangled) == kernel_function_name(demangled)
