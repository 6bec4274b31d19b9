"""Blind timeline set: a training/inference program simulated on one host clock and a GPU with streams.

A program (a dict, see `default_program`) is run into a neutral timeline: host ranges, API calls and GPU
operations, all in nanoseconds. The writers (`tl_write.py`) serialise it as a Kineto Chrome trace (recent or
older schema) or an Nsight Systems SQLite export. Noise (`rng`) jitters host work and kernel durations.
"""
from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any

import numpy as np

LAUNCH_CALL_NS = 6_000      # a cudaLaunchKernel call on the host
LAUNCH_LATENCY_NS = 4_000   # from the call's start to the earliest start of its kernel
SYNC_CALL_NS = 5_000


@dataclass
class Timeline:
    ranges: list[dict[str, Any]] = field(default_factory=list)    # name, kind, tid, start, end, inputs
    calls: list[dict[str, Any]] = field(default_factory=list)     # name, tid, start, end, corr
    gpu: list[dict[str, Any]] = field(default_factory=list)       # kind, name, stream, start, end, corr, grid, block


def kernel(name: str, dur_us: float, grid: tuple[int, int, int] = (128, 1, 1),
           block: tuple[int, int, int] = (256, 1, 1), stream: int = 7) -> dict[str, Any]:
    return {"name": name, "dur_us": dur_us, "grid": list(grid), "block": list(block), "stream": stream}


def op(name: str, kernels: list[dict[str, Any]], host_us: float = 20.0, autograd: str = "") -> dict[str, Any]:
    """An aten operator: host_us of Python/dispatcher work, then its launches (each after 3 µs of host work)."""
    return {"name": name, "kernels": kernels, "host_us": host_us, "autograd": autograd}


def layer(name: str, ops: list[dict[str, Any]], pre_us: float = 30.0, stall_before_us: float = 0.0,
          sync_after: bool = False, thread: str = "main", annotate: bool = True) -> dict[str, Any]:
    return {"name": name, "ops": ops, "pre_us": pre_us, "stall_before_us": stall_before_us,
            "sync_after": sync_after, "thread": thread, "annotate": annotate}


def default_program() -> dict[str, Any]:
    """An MLP-like training step: input copy, 4 forward layers, a backward pass on autograd's thread, SGD."""
    fwd = [layer(f"layer{i}", [op("aten::linear", [kernel("ampere_sgemm_128x64_tn", 180.0, (64, 8, 1))]),
                               op("aten::relu", [kernel("vectorized_elementwise_kernel", 22.0, (512, 1, 1))],
                                  host_us=12.0)])
           for i in range(4)]
    bwd = layer("backward", [op("aten::mm", [kernel("ampere_sgemm_64x64_nn", 150.0, (32, 16, 1))],
                                autograd="AddmmBackward0")
                             for _ in range(4)], thread="bwd")
    opt = layer("Optimizer.step#SGD.step",
                [op("aten::_foreach_add_", [kernel("multi_tensor_apply_kernel", 35.0, (40, 1, 1))])])
    return {"steps": 8, "profiler_steps": True, "loader_us": 900.0, "input_copy_us": 60.0,
            "layers": fwd + [bwd, opt], "sync_end": True, "cold_us": 0.0, "slow_step": None,
            "step_overhead_us": 40.0}


def variant(program: dict[str, Any], **changes: Any) -> dict[str, Any]:
    out = copy.deepcopy(program)
    out.update(changes)
    return out


class _Sim:
    def __init__(self, rng: np.random.Generator | None, noise_host: float, noise_gpu: float) -> None:
        self.t = 1_000_000.0
        self.rng = rng
        self.noise_host, self.noise_gpu = noise_host, noise_gpu
        self.streams: dict[int, float] = {}
        self.corr = 1000
        self.seen: set[str] = set()
        self.tl = Timeline()

    def host(self, us: float, scale: float | None = None) -> float:
        s = self.noise_host if scale is None else scale
        j = 1.0 + (self.rng.normal(0.0, s) if self.rng is not None and s > 0 else 0.0)
        return max(us * 1000.0 * max(j, 0.5), 0.0)

    def gpu_dur(self, us: float) -> float:
        j = float(np.exp(self.rng.normal(0.0, self.noise_gpu))) if self.rng is not None else 1.0
        return us * 1000.0 * j

    def launch(self, k: dict[str, Any], tid: str, cold_us: float, kind: str = "kernel") -> None:
        self.corr += 1
        start = self.t
        dur = LAUNCH_CALL_NS
        if kind == "kernel" and k["name"] not in self.seen and cold_us > 0:
            self.seen.add(k["name"])
            dur += cold_us * 1000.0 * (1.0 + 0.5 * (sum(k["name"].encode()) % 7) / 7.0)
        name = "cudaLaunchKernel" if kind == "kernel" else "cudaMemcpyAsync"
        self.tl.calls.append({"name": name, "tid": tid, "start": start, "end": start + dur, "corr": self.corr})
        gstart = max(start + dur - LAUNCH_CALL_NS + LAUNCH_LATENCY_NS, self.streams.get(k["stream"], 0.0))
        gend = gstart + self.gpu_dur(k["dur_us"])
        self.streams[k["stream"]] = gend
        self.tl.gpu.append({"kind": kind, "name": k["name"], "stream": k["stream"], "start": gstart, "end": gend,
                            "corr": self.corr, "grid": k["grid"], "block": k["block"]})
        self.t = start + dur

    def sync(self, tid: str) -> None:
        self.corr += 1
        start = self.t
        end = max(start, max(self.streams.values(), default=start)) + SYNC_CALL_NS
        self.tl.calls.append({"name": "cudaStreamSynchronize", "tid": tid, "start": start, "end": end,
                              "corr": self.corr})
        self.t = end

    def range(self, name: str, kind: str, tid: str, start: float, **extra: Any) -> dict[str, Any]:
        r = {"name": name, "kind": kind, "tid": tid, "start": start, "end": start, **extra}
        self.tl.ranges.append(r)
        return r


def _run_op(sim: _Sim, o: dict[str, Any], tid: str, prog: dict[str, Any]) -> None:
    outer = sim.range(o["autograd"], "autograd", tid, sim.t) if o["autograd"] else None
    r = sim.range(o["name"], "op", tid, sim.t, inputs=True)
    sim.t += sim.host(o["host_us"] + o.get("extra_host_us", 0.0))
    for k in o["kernels"]:
        sim.t += sim.host(3.0)
        sim.launch(k, tid, prog["cold_us"])
    sim.t += sim.host(2.0)
    r["end"] = sim.t
    if outer is not None:
        sim.t += sim.host(o.get("autograd_tail_us", 4.0))
        outer["end"] = sim.t


def _run_layer(sim: _Sim, ly: dict[str, Any], prog: dict[str, Any], ranges: bool) -> None:
    sim.t += sim.host(ly["stall_before_us"], 0.02)
    tid = "bwd" if ly["thread"] == "bwd" else "main"
    r = sim.range(ly["name"], "range", "main", sim.t) if ranges and ly["annotate"] else None
    sim.t += sim.host(ly["pre_us"])
    for o in ly["ops"]:
        _run_op(sim, o, tid, prog)
    if ly["sync_after"]:
        sim.t += sim.host(8.0)
        sim.sync(tid)
    sim.t += sim.host(5.0)
    if r is not None:
        r["end"] = sim.t


def simulate(prog: dict[str, Any], rng: np.random.Generator | None,
             noise_host: float = 0.03, noise_gpu: float = 0.015) -> Timeline:
    """Run the program; rng None gives the noise-free timeline the expectations are measured on."""
    sim = _Sim(rng, noise_host, noise_gpu)
    ranges = prog.get("ranges", True)
    for s in range(prog["steps"]):
        step = sim.range(f"ProfilerStep#{s + 2}", "step", "main", sim.t) \
            if ranges and prog["profiler_steps"] else None
        if prog["loader_us"] > 0:
            extra = prog["slow_step"][1] if prog["slow_step"] and prog["slow_step"][0] == s else 0.0
            lr = sim.range("enumerate(DataLoader)#_MultiProcessingDataLoaderIter.__next__", "range", "main",
                           sim.t) if ranges else None
            sim.t += sim.host(prog["loader_us"] + extra, 0.05)
            if lr is not None:
                lr["end"] = sim.t
        sim.t += sim.host(prog["step_overhead_us"])
        if prog["input_copy_us"] > 0:
            sim.launch({"name": "Memcpy HtoD (Pinned -> Device)", "dur_us": prog["input_copy_us"],
                        "stream": 7, "grid": None, "block": None}, "main", 0.0, kind="memcpy")
        for ly in prog["layers"]:
            _run_layer(sim, ly, prog, ranges)
        if prog["sync_end"]:
            sim.t += sim.host(10.0)
            sim.sync("main")
        sim.t += sim.host(20.0)
        if step is not None:
            step["end"] = sim.t
        sim.t += sim.host(prog.get("between_steps_us", 15.0))
    return sim.tl
