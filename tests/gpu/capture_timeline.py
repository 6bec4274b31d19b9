"""Record timeline fixtures of perfgate's own examples on a GPU: one workload, one tracer, one process.

    python tests/gpu/capture_timeline.py WORKLOAD TRACER OUTPREFIX [--iters N] [--warmup W]

WORKLOAD: ``mlp`` (the MLP example's forward_backward, one region per layer and ``backward``), ``softmax``,
``vector_add`` (the CuPy example). The examples' own switches apply: ``PERFGATE_EXAMPLE_SYNC=1`` plants a
host synchronisation in the MLP's layer loop, ``PERFGATE_EXAMPLE_REGRESSION=1`` the uncoalesced vector add.

TRACER:
- ``none``: no tracer; the per-step wall times alone (the overhead baseline).
- ``torch``: torch.profiler (Kineto), regions as ``record_function`` ranges, one ``ProfilerStep`` per step;
  writes OUTPREFIX.pt.trace.json.gz.
- ``perfgate``: the live timeline source's own tracer (``perfgate.plugin.tracer.CuptiTracer``), regions through
  its ``region()``, one ``step`` region per measured step; writes OUTPREFIX.cupti.json (what
  ``pytest --perfgate-source=timeline`` writes): its overhead is the live source's. With ``--outside`` the
  steps run under the started tracer with no region open: the cost of the trace on a test's code outside
  ``perfgate.region`` (the issue's goal: ≤ 1.02× against ``none``).
- ``cupti``: NVIDIA's cupti-python activity API (kernels, memcpy/memset, runtime and driver API calls,
  synchronisation, and NVTX markers when NVTX_INJECTION64_PATH points at libcupti); each region's host
  interval from ``cupti.get_timestamp()``; writes OUTPREFIX.cupti.json.gz.

Every run writes OUTPREFIX.summary.json: per-step wall seconds (warm-up excluded), versions, dropped records.
``tests/gpu/capture_timeline.sh`` runs the set that ``tests/data/h200/timeline`` holds.
"""

from __future__ import annotations

import argparse
import contextlib
import gzip
import json
import os
import sys
import threading
import time
from pathlib import Path
from typing import Any, Callable, ContextManager, Iterator

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))


def _jsonable(value: Any) -> Any:
    if isinstance(value, (bool, int, float, str)) or value is None:
        return value
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    if hasattr(value, "value") and isinstance(value.value, int):  # enums
        return int(value.value)
    try:
        return int(value)
    except (TypeError, ValueError):
        return repr(value)


class CuptiTrace:
    """Activity records as plain dicts (a record is only valid inside the buffer callback)."""

    def __init__(self) -> None:
        from cupti import cupti  # NVIDIA's cupti-python
        self.cupti = cupti
        self.records: list[dict[str, Any]] = []
        self.regions: list[dict[str, Any]] = []
        self._fields: dict[type, list[str]] = {}
        self.kinds = [cupti.ActivityKind.CONCURRENT_KERNEL, cupti.ActivityKind.MEMCPY, cupti.ActivityKind.MEMSET,
                      cupti.ActivityKind.RUNTIME, cupti.ActivityKind.DRIVER]
        for optional in ("SYNCHRONIZATION", "MARKER", "MARKER_DATA", "EXTERNAL_CORRELATION"):
            if os.environ.get("NVTX_INJECTION64_PATH") or not optional.startswith("MARKER"):
                kind = getattr(cupti.ActivityKind, optional, None)
                if kind is not None:
                    self.kinds.append(kind)
        self.enabled: list[Any] = []
        self.errors: list[str] = []

    def _fields_of(self, record: Any) -> list[str]:
        cls = type(record)
        if cls not in self._fields:
            names = []
            for name in dir(record):
                if name.startswith("_"):
                    continue
                try:
                    value = getattr(record, name)
                except Exception:
                    continue
                if callable(value) and not hasattr(value, "value"):
                    continue
                names.append(name)
            self._fields[cls] = names
        return self._fields[cls]

    def _requested(self) -> tuple[int, int]:
        return 8 * 1024 * 1024, 0

    def _completed(self, activities: list[Any]) -> None:
        for record in activities:
            row: dict[str, Any] = {"_type": type(record).__name__}
            for name in self._fields_of(record):
                try:
                    row[name] = _jsonable(getattr(record, name))
                except Exception as error:  # a field this record kind does not fill
                    row[name] = f"<error {type(error).__name__}>"
            self.records.append(row)

    def start(self) -> None:
        self.cupti.activity_register_callbacks(self._requested, self._completed)
        for kind in self.kinds:
            try:
                self.cupti.activity_enable(kind)
                self.enabled.append(kind)
            except Exception as error:
                self.errors.append(f"enable {kind}: {error}")

    def stop(self) -> dict[str, Any]:
        self.cupti.activity_flush_all(1)
        dropped: Any = None
        try:
            dropped = self.cupti.activity_get_num_dropped_records(None, 0)
        except Exception as error:
            dropped = f"<error {error}>"
        for kind in reversed(self.enabled):
            self.cupti.activity_disable(kind)
        with contextlib.suppress(Exception):
            self.cupti.finalize()
        return {"dropped": dropped, "enabled": [str(k) for k in self.enabled], "errors": self.errors}

    def now(self) -> int:
        return int(self.cupti.get_timestamp())


def nvtx_range(name: str) -> ContextManager[None]:
    @contextlib.contextmanager
    def pushed() -> Iterator[None]:
        if "torch" in sys.modules:
            import torch
            torch.cuda.nvtx.range_push(name)
            try:
                yield
            finally:
                torch.cuda.nvtx.range_pop()
        else:
            import cupy
            cupy.cuda.nvtx.RangePush(name)
            try:
                yield
            finally:
                cupy.cuda.nvtx.RangePop()
    return pushed()


def make_region(tracer: str, trace: CuptiTrace | None) -> Callable[[str], ContextManager[None]]:
    stack: list[str] = []

    @contextlib.contextmanager
    def region(name: str) -> Iterator[None]:
        stack.append(name)
        path = " > ".join(stack)
        try:
            if tracer == "torch":
                import torch
                with torch.profiler.record_function(name), nvtx_range(name):
                    yield
            elif tracer == "cupti":
                assert trace is not None
                begin = trace.now()
                with nvtx_range(name):
                    yield
                trace.regions.append({"name": name, "path": path, "thread": threading.get_ident(),
                                      "start": begin, "end": trace.now()})
            else:
                yield
        finally:
            stack.pop()
    return region


def workload(name: str) -> tuple[Callable[[Callable[[str], ContextManager[None]]], None], Callable[[], None]]:
    """(one step given a region function, synchronize)."""
    if name == "mlp":
        import torch

        from examples.test_torch_mlp_layers import forward_backward, make_model_and_input
        model, x = make_model_and_input()

        def mlp_step(region: Callable[[str], ContextManager[None]]) -> None:
            forward_backward(model, x, region)
            model.zero_grad(set_to_none=True)
            x.grad = None
        return mlp_step, torch.cuda.synchronize
    if name == "softmax":
        import torch
        x = torch.randn(8192, 8192, device="cuda")
        torch.softmax(x, dim=-1)

        def softmax_step(region: Callable[[str], ContextManager[None]]) -> None:
            with region("softmax"):
                torch.softmax(x, dim=-1)
        return softmax_step, torch.cuda.synchronize
    if name == "vector_add":
        import cupy

        from examples.test_cupy_raw_kernel import VECTOR_ADD, stride
        kernel = cupy.RawKernel(VECTOR_ADD, "vector_add")
        n = 1 << 24
        a = cupy.random.rand(n, dtype=cupy.float32)
        b = cupy.random.rand(n, dtype=cupy.float32)
        out = cupy.empty_like(a)
        grid, block = ((n + 255) // 256,), (256,)
        args = (a, b, out, cupy.int32(n), cupy.int32(stride()))
        kernel(grid, block, args)

        def vector_add_step(region: Callable[[str], ContextManager[None]]) -> None:
            with region("vector_add"):
                kernel(grid, block, args)
        return vector_add_step, cupy.cuda.Device().synchronize
    raise SystemExit(f"unknown workload {name!r}")


def versions() -> dict[str, Any]:
    found: dict[str, Any] = {"python": sys.version.split()[0]}
    for module in ("torch", "cupy", "cupti"):
        if module in sys.modules:
            found[module] = getattr(sys.modules[module], "__version__", "?")
    try:
        from cupti import cupti
        found["cupti_version"] = int(cupti.get_version())
    except Exception as error:
        found["cupti_version"] = f"<{type(error).__name__}: {error}>"
    if "torch" in sys.modules:
        import torch
        found["gpu"] = torch.cuda.get_device_name()
        found["cuda_runtime"] = torch.version.cuda
    return found


def perfgate_tracer(options: Any, step: Callable[..., None], synchronize: Callable[[], None],
                    summary: dict[str, Any], walls: list[float], out: Path) -> int:
    """The live source's CuptiTracer around the measured steps (after the warm-up ones, untraced)."""
    from cupti import cupti

    from perfgate.plugin.tracer import CuptiTracer

    tracer = CuptiTracer(cupti)

    def timed_step() -> None:
        synchronize()
        begin = time.perf_counter()
        step(tracer.region if tracer.enabled and not options.outside else make_region("none", None))
        synchronize()
        walls.append(time.perf_counter() - begin)

    for _ in range(options.warmup):
        timed_step()
    tracer.start()
    for index in range(options.iters):
        begin = int(cupti.get_timestamp())
        timed_step()
        tracer.regions.found.append({"name": f"step{index}", "path": f"step{index}", "step": True,
                                     "thread": threading.get_ident(), "start": begin,
                                     "end": int(cupti.get_timestamp())})
    target = Path(str(out) + ".cupti.json")
    tracer.stop(target)
    document = json.loads(target.read_text(encoding="utf-8"))
    summary.update(records=len(document["records"]), dropped=document["dropped"], devices=document["devices"],
                   outside=options.outside)
    summary["wall_s"] = walls[options.warmup:]
    summary["versions"] = versions()
    Path(str(out) + ".summary.json").write_text(json.dumps(summary, indent=1), encoding="utf-8")
    median = sorted(summary["wall_s"])[len(summary["wall_s"]) // 2]
    what = "perfgate-tracer-outside-regions" if options.outside else "perfgate-tracer"
    print(f"{options.workload} {what} {summary['env']}: median step {median * 1e6:.1f} us over "
          f"{len(summary['wall_s'])}; records {summary['records']}; dropped {summary['dropped']}")
    return 0


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("workload")
    parser.add_argument("tracer", choices=["none", "torch", "cupti", "perfgate"])
    parser.add_argument("out")
    parser.add_argument("--iters", type=int, default=10)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--outside", action="store_true", help="perfgate's tracer only: steps with no region open")
    options = parser.parse_args()
    if options.outside and options.tracer != "perfgate":
        parser.error("--outside measures perfgate's tracer: name the tracer perfgate")
    out = Path(options.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    if options.workload != "vector_add" or options.tracer == "torch":
        import torch  # noqa: F401  (before CUPTI: torch's own CUPTI use is not started by importing it)
    step, synchronize = workload(options.workload)
    trace = CuptiTrace() if options.tracer == "cupti" else None
    region = make_region(options.tracer, trace)
    walls: list[float] = []
    summary: dict[str, Any] = {"workload": options.workload, "tracer": options.tracer, "iters": options.iters,
                               "warmup": options.warmup,
                               "env": {k: v for k, v in os.environ.items() if k.startswith("PERFGATE_EXAMPLE")
                                       or k == "NVTX_INJECTION64_PATH"}}

    def timed_step() -> None:
        synchronize()
        begin = time.perf_counter()
        step(region)
        synchronize()
        walls.append(time.perf_counter() - begin)

    if options.tracer == "perfgate":
        return perfgate_tracer(options, step, synchronize, summary, walls, out)
    if options.tracer == "torch":
        from torch.profiler import ProfilerActivity, profile, schedule
        target = out.with_name(out.name + ".pt.trace.json")
        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA],
                     schedule=schedule(wait=0, warmup=options.warmup, active=options.iters),
                     on_trace_ready=lambda p: p.export_chrome_trace(str(target))) as prof:
            for _ in range(options.warmup + options.iters):
                timed_step()
                prof.step()
        with open(target, "rb") as raw, gzip.open(str(target) + ".gz", "wb") as packed:
            packed.write(raw.read())
        target.unlink()
    elif options.tracer == "cupti":
        assert trace is not None
        for _ in range(options.warmup):
            timed_step()
        trace.start()
        for index in range(options.iters):
            begin = trace.now()
            timed_step()
            trace.regions.append({"name": f"step{index}", "path": f"step{index}", "thread": threading.get_ident(),
                                  "start": begin, "end": trace.now(), "step": True})
        summary["cupti"] = trace.stop()
        document = {"records": trace.records, "regions": trace.regions}
        with gzip.open(str(out) + ".cupti.json.gz", "wt", encoding="utf-8") as handle:
            json.dump(document, handle)
        summary["records"] = len(trace.records)
    else:
        for _ in range(options.warmup + options.iters):
            timed_step()
    summary["wall_s"] = walls[options.warmup:]
    summary["versions"] = versions()
    Path(str(out) + ".summary.json").write_text(json.dumps(summary, indent=1), encoding="utf-8")
    median = sorted(summary["wall_s"])[len(summary["wall_s"]) // 2]
    print(f"{options.workload} {options.tracer} {summary['env']}: median step {median * 1e6:.1f} us "
          f"over {len(summary['wall_s'])}; records {summary.get('records', '-')}; {summary.get('cupti', '')}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
