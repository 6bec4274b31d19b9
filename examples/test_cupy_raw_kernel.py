"""A raw CUDA kernel through CuPy's RawKernel, gated by name."""

from __future__ import annotations

import pytest

cupy = pytest.importorskip("cupy")


def _has_gpu() -> bool:
    try:
        return cupy.cuda.runtime.getDeviceCount() > 0
    except Exception:  # no driver, no device: CuPy raises its own CUDARuntimeError
        return False


pytestmark = pytest.mark.skipif(not _has_gpu(), reason="needs a CUDA GPU")

VECTOR_ADD = r"""
extern "C" __global__ void vector_add(const float* a, const float* b, float* out, int n) {
    int i = blockDim.x * blockIdx.x + threadIdx.x;
    if (i < n) out[i] = a[i] + b[i];
}
"""


@pytest.mark.perfgate(kernels="vector_add", metrics=["lts__t_sectors.sum"],
                      thresholds={"lts__t_sectors.sum": "2%"})
def test_vector_add(perfgate) -> None:
    kernel = cupy.RawKernel(VECTOR_ADD, "vector_add")
    n = 1 << 24
    a = cupy.random.rand(n, dtype=cupy.float32)
    b = cupy.random.rand(n, dtype=cupy.float32)
    out = cupy.empty_like(a)
    grid, block = ((n + 255) // 256,), (256,)
    kernel(grid, block, (a, b, out, cupy.int32(n)))  # compiles and warms up outside the region
    with perfgate.region("vector_add"):
        kernel(grid, block, (a, b, out, cupy.int32(n)))
    cupy.cuda.Device().synchronize()
    assert cupy.allclose(out, a + b)
