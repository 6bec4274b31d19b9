"""The issue's shape: one PyTorch op, only its kernels profiled, checked for correctness too."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU and a CUDA build of torch")


# ncu matches kernel names case-sensitively; PyTorch names its kernels cunn_SoftMaxForward..., softmax_warp_forward...
@pytest.mark.perfgate(kernels="regex:[Ss]oft[Mm]ax", metrics=["gpu__time_duration.sum", "dram__bytes_read.sum"])
def test_softmax(perfgate) -> None:
    x = torch.randn(8192, 8192, device="cuda")  # launched outside the region: not profiled
    torch.softmax(x, dim=-1)  # warm-up outside the region: CUDA's lazy loading of the kernel's module is not measured
    torch.cuda.synchronize()
    with perfgate.region("softmax"):  # only kernels launched inside are profiled
        y = torch.softmax(x, dim=-1)
    torch.testing.assert_close(y.sum(dim=-1), torch.ones(8192, device="cuda"))
