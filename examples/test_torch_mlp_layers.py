""""Runtime and metrics of each layer of my model": one region per layer, plus the backward pass.

Under ``pytest --perfgate`` every kernel is reported in its region (``layer0``, ``layer1``...),
each region gets a total (sum of its kernels' time, DRAM bytes and instructions), and the test a
grand total; any of them crossing its threshold fails the test.

``PERFGATE_EXAMPLE_SYNC=1`` plants a host synchronisation after each layer (what a ``.item()`` in a
logging line does): the kernels stay the same, the GPU waits for the host between layers. Nsight
Compute's counters cannot see it; the timeline source's wall time and GPU idle do.

``PERFGATE_EXAMPLE_SLOW_LOADER=1`` makes the data loader's ``__next__`` take 20 ms of host time before the
step's first launch (a loader with too few workers): the kernels stay the same, the GPU starves. The timeline
source's ``step`` (``perfgate.step()``) fails on its wall time and host lead, no kernel blamed.
"""

from __future__ import annotations

import os
import time
from typing import Any, Callable, ContextManager, Generic, TypeVar

import pytest

Batch = TypeVar("Batch")
SLOW_LOADER_S = 0.020  # PERFGATE_EXAMPLE_SLOW_LOADER=1: the host time each batch costs before the GPU gets it


class Batches(Generic[Batch]):
    """A data loader's iterator, as a training step sees it: the next batch, after the host work it costs."""

    def __init__(self, batch: Batch) -> None:
        self.batch = batch

    def __iter__(self) -> Batches[Batch]:
        return self

    def __next__(self) -> Batch:
        if os.environ.get("PERFGATE_EXAMPLE_SLOW_LOADER") == "1":
            time.sleep(SLOW_LOADER_S)  # decoding and augmenting on the training thread, no worker ahead of it
        return self.batch


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


def forward_backward(model: MLP, x: torch.Tensor, region: Callable[[str], ContextManager[Any]]) -> None:
    """The measured work, one region per layer and one for the backward pass.

    ``tests/gpu`` runs this same function under torch.profiler to count the kernels each region
    launches, and checks that ncu's NVTX filter kept exactly those.
    """
    h = x
    sync = os.environ.get("PERFGATE_EXAMPLE_SYNC") == "1"
    for index, layer in enumerate(model.layers):
        with region(f"layer{index}"):
            h = layer(h)
            if sync:
                torch.cuda.synchronize()
    with region("backward"):  # autograd launches these on its own thread: ncu sees them (process scope)
        h.sum().backward()


def make_model_and_input() -> tuple[MLP, torch.Tensor]:
    torch.manual_seed(0)
    model = MLP().cuda()
    x = torch.randn(4096, 2048, device="cuda", requires_grad=True)
    model(x).sum().backward()  # warm-up outside any region: cuBLAS handles and heuristics are not measured
    model.zero_grad()
    x.grad = None
    torch.cuda.synchronize()
    return model, x


@pytest.mark.perfgate(thresholds={"gpu__time_duration.sum": "8%+2000"})
def test_mlp_layer_by_layer(perfgate) -> None:
    model, x = make_model_and_input()
    batches = Batches(x)
    with perfgate.step():  # the timeline source's step: from its start, the loader's wait included
        forward_backward(model, next(batches), perfgate.region)
    torch.cuda.synchronize()
    assert x.grad is not None and torch.isfinite(x.grad).all()
