"""Perf tests that ``tests/gpu/device_session.sh`` runs under ``pytest --perfgate`` (steps ``code`` and ``dram``):
not collected by the suite (no ``test_`` prefix); name the file to run it. Needs CuPy and a CUDA GPU.

- ``test_copy``: a copy of 256 MiB (float4 loads and stores), as near the DRAM roof as a kernel gets: its
  ``derived.dram_bytes_per_s`` (``--perfgate-metrics=+roofline``) against ncu's own ``dram__bytes.sum.per_second``.
- ``test_renamed``: the example's vector add built twice from the same source under two names, ``vector_add`` and
  ``vector_add_renamed``: the same code_id (issue 38: a rename changes nothing but the name). Run in two processes,
  each kernel must get the same code_id in both.
"""

from __future__ import annotations

import pytest

cupy = pytest.importorskip("cupy")

COPY = r"""
extern "C" __global__ void copy_float4(const float4* source, float4* target, long long n) {
    long long i = (long long)blockDim.x * blockIdx.x + threadIdx.x;
    if (i < n) target[i] = source[i];
}
"""
ADD = r"""
extern "C" __global__ void NAME(const float* a, const float* b, float* out, int n) {
    int i = blockDim.x * blockIdx.x + threadIdx.x;
    if (i < n) out[i] = a[i] + b[i];
}
"""
COPY_BYTES = 256 << 20


def test_copy(perfgate) -> None:  # type: ignore[no-untyped-def]
    kernel = cupy.RawKernel(COPY, "copy_float4")
    n = COPY_BYTES // 16
    source = cupy.random.rand(n * 4, dtype=cupy.float32)
    target = cupy.empty_like(source)
    grid, block = ((n + 255) // 256,), (256,)
    kernel(grid, block, (source, target, cupy.int64(n)))  # compiled and warmed up outside the region
    target.fill(0)
    with perfgate.region("copy"):
        kernel(grid, block, (source, target, cupy.int64(n)))
    cupy.cuda.Device().synchronize()
    assert bool((target == source).all())


def test_renamed(perfgate) -> None:  # type: ignore[no-untyped-def]
    kernels = [cupy.RawKernel(ADD.replace("NAME", name), name) for name in ("vector_add", "vector_add_renamed")]
    n = 1 << 24
    a = cupy.random.rand(n, dtype=cupy.float32)
    b = cupy.random.rand(n, dtype=cupy.float32)
    outs = [cupy.empty_like(a) for _ in kernels]
    grid, block = ((n + 255) // 256,), (256,)
    for kernel, out in zip(kernels, outs):
        kernel(grid, block, (a, b, out, cupy.int32(n)))
    with perfgate.region("add"):
        for kernel, out in zip(kernels, outs):
            kernel(grid, block, (a, b, out, cupy.int32(n)))
    cupy.cuda.Device().synchronize()
    assert all(bool(cupy.allclose(out, a + b)) for out in outs)
