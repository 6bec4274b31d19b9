"""The traced child of ``pytest --perfgate-source=timeline``: the test body under a CUPTI activity trace.

Stdlib and pytest at import (imported with the plugin); CUPTI (NVIDIA's ``cupti-python``) or torch only when a
trace starts. The parent starts ``python -m pytest NODEID`` with ``PERFGATE_TIMELINE`` naming the file to write;
this child traces the test's call (not its setup), records each ``perfgate.region`` (and ``perfgate.step``) as a
host interval on CUPTI's clock, and writes perfgate's CUPTI trace (``perfgate.collect.timeline.cupti_dump``), which the parent
reads like any trace.

Tracers, the first that can run:

- ``ReplayTracer`` when ``PERFGATE_TIMELINE_REPLAY`` names a recorded trace: writes that trace instead of
  tracing. perfgate's own tests use it to run the whole plugin flow on a machine without a GPU, with a trace
  recorded on one (tests/data/h200/timeline); everything after the capture is the real code.
- ``CuptiTracer``: cupti-python's activity API (kernels, copies, sets, runtime and driver calls,
  synchronisation, device records; NVTX markers when ``NVTX_INJECTION64_PATH`` is set), flushed at the end;
  fails when CUPTI dropped records (its buffer was too small for the test). With ``PERFGATE_CODE_IDENTITY`` set
  it also keeps the cubin of each module CUDA loads and writes the traced kernels' code beside the trace
  (``perfgate.plugin.kernel_codes``).
- ``TorchTracer``: torch.profiler (Kineto) when cupti-python is not installed; regions as
  ``record_function`` ranges, written as a Chrome trace. With ``PERFGATE_CODE_IDENTITY`` set it writes beside it
  the code Triton's compile cache holds for the traced kernels (``perfgate.plugin.kernel_codes.write_cache_codes``),
  and says which kernels got none.
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import shutil
import sys
import threading
from pathlib import Path
from typing import Any, Generator, Iterator

import pytest

ENV_TIMELINE = "PERFGATE_TIMELINE"  # where the traced child writes its trace
ENV_TIMELINE_REPLAY = "PERFGATE_TIMELINE_REPLAY"  # a recorded trace the child writes instead of tracing
ENV_CODE_IDENTITY = "PERFGATE_CODE_IDENTITY"  # set: also write each traced kernel's code (perfgate.plugin.kernel_codes)
TRACER_MISSING = ("perfgate: the timeline source needs NVIDIA's cupti-python in the traced process (pip install "
                  "cupti-python: 13.x for a CUDA 13 driver, 12.x for CUDA 12), or torch (torch.profiler)")
BUFFER_BYTES = 8 << 20
STEP_REGION = "step"  # the region ``perfgate.step()`` records (the readers' name for a profiler step)
_KERNEL_KINDS = (3, 10)  # CUPTI's KERNEL and CONCURRENT_KERNEL activity kinds
_KERNEL_FIELDS = ("kind", "start", "end", "correlation_id", "name", "device_id", "stream_id", "grid_x", "grid_y",
                  "grid_z", "block_x", "block_y", "block_z", "registers_per_thread", "static_shared_memory",
                  "dynamic_shared_memory", "graph_id")
_API_FIELDS = ("kind", "start", "end", "correlation_id", "thread_id", "process_id", "cbid", "return_value")
_MEMORY_FIELDS = ("kind", "start", "end", "correlation_id", "device_id", "stream_id", "bytes")
_DEVICE_FIELDS = ("kind", "id", "name", "compute_capability_major", "compute_capability_minor")
_OTHER_FIELDS = ("kind", "start", "end", "correlation_id", "type", "stream_id", "name", "timestamp", "id", "flags_")


def _plain(value: Any) -> Any:
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    with contextlib.suppress(TypeError, ValueError):
        return int(value)  # enums and numpy integers
    return str(value)


class _Regions:
    """``perfgate.region`` host intervals: name, path (outer regions first), thread, start and end."""

    def __init__(self) -> None:
        self.found: list[dict[str, Any]] = []
        self._local = threading.local()

    @contextlib.contextmanager
    def entered(self, name: str, clock: Any) -> Iterator[None]:
        stack: list[str] = self._local.__dict__.setdefault("stack", [])
        stack.append(name)
        begin = int(clock())
        try:
            yield
        finally:
            self.found.append({"name": name, "path": " > ".join(stack), "thread": threading.get_ident(),
                               "start": begin, "end": int(clock())})
            stack.pop()

    @contextlib.contextmanager
    def step(self, clock: Any) -> Iterator[None]:
        """One iteration of the test's loop: region ``step`` (``"step": true``), in no other region's path, so the
        regions inside it keep theirs (``layer0``, not ``step > layer0``)."""
        begin = int(clock())
        try:
            yield
        finally:
            self.found.append({"name": STEP_REGION, "path": STEP_REGION, "thread": threading.get_ident(),
                               "start": begin, "end": int(clock()), "step": True})


class CuptiTracer:
    """cupti-python's activity API; records are copied out of CUPTI's buffers as plain dicts."""

    name = "cupti"

    def __init__(self, cupti: Any) -> None:
        self.cupti = cupti
        self.records: list[dict[str, Any]] = []
        self.regions = _Regions()
        self.enabled: list[Any] = []
        kind = cupti.ActivityKind
        self.kinds = [kind.CONCURRENT_KERNEL, kind.MEMCPY, kind.MEMSET, kind.RUNTIME, kind.DRIVER]
        optional = ["SYNCHRONIZATION", "DEVICE"] + (["MARKER"] if os.environ.get("NVTX_INJECTION64_PATH") else [])
        self.optional = [getattr(kind, name) for name in optional if hasattr(kind, name)]
        self.fields = {int(kind.CONCURRENT_KERNEL): _KERNEL_FIELDS, int(kind.RUNTIME): _API_FIELDS,
                       int(kind.DRIVER): _API_FIELDS, int(kind.MEMCPY): _MEMORY_FIELDS,
                       int(kind.MEMSET): _MEMORY_FIELDS}
        if hasattr(kind, "DEVICE"):
            self.fields[int(kind.DEVICE)] = _DEVICE_FIELDS
        self.modules: Any = None  # the loaded modules' cubins, for --perfgate-code-identity (kernel_codes)

    def _requested(self) -> tuple[int, int]:
        return BUFFER_BYTES, 0

    def _completed(self, activities: Any) -> None:
        for record in activities:
            kind = _plain(getattr(record, "kind", None))
            names = self.fields.get(kind, _OTHER_FIELDS) if isinstance(kind, int) else _OTHER_FIELDS
            self.records.append({field: _plain(getattr(record, field, None)) for field in names
                                 if hasattr(record, field)})

    def start(self) -> None:
        if os.environ.get(ENV_CODE_IDENTITY):
            from perfgate.plugin.kernel_codes import ModuleCubins

            self.modules = ModuleCubins(self.cupti)
            self.modules.start()
        self.cupti.activity_register_callbacks(self._requested, self._completed)
        for kind in self.kinds:
            self.cupti.activity_enable(kind)
            self.enabled.append(kind)
        for kind in self.optional:
            with contextlib.suppress(Exception):  # not every driver traces every kind
                self.cupti.activity_enable(kind)
                self.enabled.append(kind)

    def region(self, name: str) -> contextlib.AbstractContextManager[None]:
        return self.regions.entered(name, self.cupti.get_timestamp)

    def step(self) -> contextlib.AbstractContextManager[None]:
        return self.regions.step(self.cupti.get_timestamp)

    def stop(self, target: Path) -> None:
        self.cupti.activity_flush_all(1)
        dropped = ctypes.c_size_t(0)
        # (context, stream id, where to write the count): NULL context, the global queue.
        self.cupti.activity_get_num_dropped_records(0, 0, ctypes.addressof(dropped))
        for kind in reversed(self.enabled):
            with contextlib.suppress(Exception):
                self.cupti.activity_disable(kind)
        if self.modules is not None:
            self.modules.stop()
        with contextlib.suppress(Exception):  # detach: no buffer callback into Python while the process exits
            self.cupti.finalize()
        devices = _devices(self.records)
        _write(target, {"format": "perfgate-cupti-trace", "version": 1, "tracer": "cupti-python",
                        "devices": devices, "records": self.records,
                        "regions": self.regions.found, "dropped": int(dropped.value)})
        if self.modules is not None:
            from perfgate.plugin.kernel_codes import write_codes

            write_codes(target, self.records, self.modules, _KERNEL_KINDS, {str(d["cc"]) for d in devices})


def _devices(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The GPUs: from CUPTI's device records, else from torch or CuPy when the test imported them."""
    found = [{"id": r["id"], "name": r.get("name", ""),
              "cc": f"{r['compute_capability_major']}.{r['compute_capability_minor']}"}
             for r in records if "id" in r and "compute_capability_major" in r]
    if found:
        return found
    torch = sys.modules.get("torch")
    if torch is not None:
        with contextlib.suppress(Exception):
            count = torch.cuda.device_count()
            return [{"id": index, "name": torch.cuda.get_device_name(index),
                     "cc": "{}.{}".format(*torch.cuda.get_device_capability(index))} for index in range(count)]
    cupy = sys.modules.get("cupy")
    if cupy is not None:
        with contextlib.suppress(Exception):
            properties = cupy.cuda.runtime.getDeviceProperties(0)
            name = properties["name"]
            return [{"id": 0, "name": name.decode() if isinstance(name, bytes) else str(name),
                     "cc": f"{properties['major']}.{properties['minor']}"}]
    return []


def _write(target: Path, document: dict[str, Any]) -> None:
    temporary = target.with_name(target.name + ".tmp")
    temporary.write_text(json.dumps(document), encoding="utf-8")
    os.replace(temporary, target)


class TorchTracer:
    """torch.profiler, where cupti-python is not installed."""

    name = "torch.profiler"

    def __init__(self, torch: Any) -> None:
        self.torch = torch
        self.profiler: Any = None
        self.steps = 0

    def start(self) -> None:
        profiler = self.torch.profiler
        self.profiler = profiler.profile(activities=[profiler.ProfilerActivity.CPU, profiler.ProfilerActivity.CUDA])
        self.profiler.__enter__()

    def region(self, name: str) -> contextlib.AbstractContextManager[None]:
        return self.torch.profiler.record_function(name)  # type: ignore[no-any-return]

    def step(self) -> contextlib.AbstractContextManager[None]:
        self.steps += 1  # as torch.profiler's own schedule names them: a step of the trace's reader
        return self.torch.profiler.record_function(f"ProfilerStep#{self.steps}")  # type: ignore[no-any-return]

    def stop(self, target: Path) -> None:
        self.torch.cuda.synchronize()
        self.profiler.__exit__(None, None, None)
        temporary = target.with_name(target.name + ".tmp.json")
        self.profiler.export_chrome_trace(str(temporary))
        os.replace(temporary, target)
        if os.environ.get(ENV_CODE_IDENTITY):  # Kineto keeps no cubin: Triton's cache is the one source of code
            from perfgate.plugin.kernel_codes import write_cache_codes

            write_cache_codes(target, {str(device["cc"]) for device in _devices([])})


class ReplayTracer:
    """Writes a recorded trace (``PERFGATE_TIMELINE_REPLAY``) in place of tracing: no GPU needed."""

    name = "replay"

    def __init__(self, recorded: Path) -> None:
        self.recorded = recorded

    def start(self) -> None:
        pass

    def region(self, name: str) -> contextlib.AbstractContextManager[None]:
        return contextlib.nullcontext()

    def step(self) -> contextlib.AbstractContextManager[None]:
        return contextlib.nullcontext()

    def stop(self, target: Path) -> None:
        shutil.copyfile(self.recorded, target)
        from perfgate.collect.timeline.codes_file import codes_file

        codes = codes_file(self.recorded)
        if codes.is_file():
            shutil.copyfile(codes, codes_file(target))


Tracer = CuptiTracer | TorchTracer | ReplayTracer


def make_tracer(environ: dict[str, str] | None = None) -> Tracer:
    env = os.environ if environ is None else environ
    if env.get(ENV_TIMELINE_REPLAY):
        return ReplayTracer(Path(env[ENV_TIMELINE_REPLAY]))
    try:
        from cupti import cupti
    except ImportError:
        pass
    else:
        return CuptiTracer(cupti)
    try:
        import torch
    except ImportError:
        raise pytest.fail.Exception(TRACER_MISSING, pytrace=False) from None
    return TorchTracer(torch)


class TimelineRecorder:
    """Pytest plugin of the traced child: traces each test's call and writes the trace at its end."""

    def __init__(self, target: Path) -> None:
        self.target = target
        self.tracer: Tracer | None = None

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_call(self, item: pytest.Item) -> Generator[None, Any, Any]:
        self.tracer = make_tracer()
        self.tracer.start()
        try:
            return (yield)
        finally:
            self.tracer.stop(self.target)
