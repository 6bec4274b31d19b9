""""Runtime and metrics of each layer of my model": one region per layer, plus the backward pass.

Under ``pytest --perfgate`` every kernel is reported in its region (``layer0``, ``layer1``...),
each region gets a total (sum of its kernels' time, DRAM bytes and instructions), and the test a
grand total; any of them crossing its threshold fails the test.
"""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU and a CUDA build of torch")


class MLP(torch.nn.Module):
    def __init__(self, width: int = 2048, depth: int = 4) -> None:
        super().__init__()
        self.layers = torch.nn.ModuleList(
            torch.nn.Sequential(torch.nn.Linear(width, width), torch.nn.GELU()) for _ in range(depth))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for layer in self.layers:
            x = layer(x)
        return x


@pytest.mark.perfgate(thresholds={"gpu__time_duration.sum": "8%+2000"})
def test_mlp_layer_by_layer(perfgate) -> None:
    torch.manual_seed(0)
    model = MLP().cuda()
    x = torch.randn(4096, 2048, device="cuda", requires_grad=True)
    model(x).sum().backward()  # warm-up outside any region: cuBLAS handles and heuristics are not measured
    model.zero_grad()
    torch.cuda.synchronize()

    h = x
    for index, layer in enumerate(model.layers):
        with perfgate.region(f"layer{index}"):
            h = layer(h)
    with perfgate.region("backward"):  # autograd launches these on its own thread: ncu sees them (process scope)
        h.sum().backward()
    torch.cuda.synchronize()
    assert torch.isfinite(x.grad).all()
