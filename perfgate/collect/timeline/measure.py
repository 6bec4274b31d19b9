"""A trace as perfgate's normalized table: one launch per kernel, one region row per region path.

Kernel rows (kind ``kernel``): ``timeline.kernel_duration`` (ns, the GPU's start-to-end time of the launch)
and the launch facts (stream, registers, shared memory), in the region their launch was made in
(``perfgate.collect.timeline.attribute``). Region rows (kind ``region``, one per region path, ``ordinal`` 0):
the metrics of ``REGION_UNITS``, each the median over the region's instances (each profiler step's, each
entry's), so one slow step does not move it. An instance is its host range: from the range's start (or, where
GPU work launched before it still runs then, that work's end) to the later of the range's end and the end of the
GPU work it launched. Every instance that launched GPU work counts; one that launched none is left out. A trace
without ranges is one region, ``whole trace``.
"""

from __future__ import annotations

import json
import statistics
from collections import defaultdict
from pathlib import Path
from typing import Any

from perfgate.collect.timeline.attribute import Attribution, attribute
from perfgate.collect.timeline.intervals import BusyTimeline, QueuedWork, merged, union_length
from perfgate.collect.timeline.model import FROM_PROCESS_START, KERNEL, Device, Trace
from perfgate.collect.timeline.region_entry import (
    GPU_BUSY,
    GPU_IDLE,
    HOST_LEAD,
    IDLE_SHARE,
    KERNEL_COUNT,
    KERNEL_TIME,
    LAUNCH_OVERHEAD,
    MODULE_LOADING,
    REGION_UNITS,
    WALL_TIME,
    RegionInstance,
)
from perfgate.collect.timeline.sketch import SKETCH_SETTING, sketch
from perfgate.errors import InputError
from perfgate.table import Measurement, assign_ordinals, format_dim, make_table
from perfgate.vocabulary import KIND_KERNEL, KIND_REGION

SOURCE_SETTING = "source"  # a measurement's setting: "timeline" for a trace; an ncu report has none
TIMELINE = "timeline"
KERNEL_DURATION = "timeline.kernel_duration"
STREAM = "launch__stream"  # the CUDA stream a kernel ran on: a launch fact, like ncu's launch__ metrics
WHOLE_TRACE = "whole trace"  # the one region of a trace that has no host ranges
# A measurement's setting: per region, the median host time its entries spent in first launch calls (CUDA's lazy
# module loading), left out of its wall time and GPU idle; JSON {path: ns}.
MODULE_LOADING_SETTING = "timeline_module_loading"


def no_kernels(path: Path, trace: Trace) -> InputError:
    launches = len(trace.launches)
    what = f"{launches} API call{'s' if launches != 1 else ''} with a correlation id but" if launches else "no"
    return InputError(path, f"no kernels: this {trace.format} trace holds {what} GPU kernel records (a CPU-only "
                            "trace, a WSL export, or CUDA activity not traced), so there is no time to compare",
                      "trace again with CUDA activity on (torch.profiler ProfilerActivity.CUDA, nsys --trace=cuda)")


# Times are summed and subtracted as int64 (``intervals``): a bound with room for that. 2**62 ns is 146 years, so
# absolute CUPTI timestamps (nanoseconds since 1970) fit.
MAX_TIME_NS = 2**62


def check_times(trace: Trace, path: Path) -> None:
    """InputError for a time no clock gave (a hand-edited or corrupt trace): it would overflow int64 later."""
    spans = [(op.start, op.end) for op in trace.ops] + [(call.start, call.end) for call in trace.launches.values()]
    for start, end in spans + [(host.start, host.end) for host in trace.ranges]:
        if not (-MAX_TIME_NS < start < MAX_TIME_NS and -MAX_TIME_NS < end < MAX_TIME_NS):
            raise InputError(path, f"a time stamp out of any clock's range ({start:.3g} to {end:.3g} ns)",
                             "trace again; the file is corrupt or was edited")


def _first_launch_calls(trace: Trace, attribution: Attribution) -> list[tuple[int, int]]:
    """The launch calls (start, end) of each kernel's first launch in the traced process: where CUDA's lazy loading
    loads the kernel's module, inside the call. Empty unless the trace is known to start with its process
    (perfgate's own CUPTI trace; an Nsight Systems export captured from the start): a profiler trace may start
    after warm-up steps, where a kernel's first launch in the trace is not its first in the process."""
    if trace.format != "cupti" and not trace.facts.get(FROM_PROCESS_START):
        return []
    first: dict[str, int] = {}
    for index in sorted((i for i, op in enumerate(trace.ops) if op.kind == KERNEL), key=lambda i: trace.ops[i].start):
        first.setdefault(trace.ops[index].demangled, index)
    calls = {(launch.start, launch.end) for launch in (attribution.op_launch[i] for i in first.values())
             if launch is not None}
    return sorted(calls)


def _measure(path: str, host_start: int, inside: list[int], trace: Trace, timelines: tuple[BusyTimeline, QueuedWork],
             range_end: int, cold_calls: list[tuple[int, int]]) -> RegionInstance:
    """One entry: from ``host_start`` (or, where GPU work queued earlier still runs then, that work's end) to the
    later of ``range_end`` and its GPU work's end."""
    ops = trace.ops
    busy, queue = timelines
    first_work = min(ops[i].start for i in inside)
    # The host ran ahead of the GPU (asynchronous launches): the region's clock starts when the GPU is done with
    # what was queued before it, so the time the GPU spends on earlier regions' work is not this region's.
    start = max(host_start, min(queue.end_before(first_work), first_work))
    end = max(range_end, max(ops[i].end for i in inside))
    wall = max(end - start, 0)
    idle = wall - busy.busy(start, end)
    # Lazy module loading inside a first launch call is the driver's, not the code's: its host time is left out.
    loading = [(max(lo, start), min(hi, end)) for lo, hi in cold_calls if lo < end and hi > start]
    lead = max(first_work - start, 0)
    loaded = 0
    if loading:
        spans = merged_pairs(loading)
        loaded = sum(hi - lo for lo, hi in spans)
        loaded_idle = loaded - sum(busy.busy(lo, hi) for lo, hi in spans)
        wall, idle = wall - loaded, max(idle - loaded_idle, 0)
        lead = max(lead - sum(max(min(hi, first_work) - lo, 0) for lo, hi in spans), 0)
    own_busy = union_length([ops[i].start for i in inside], [ops[i].end for i in inside])
    kernels = [i for i in inside if ops[i].kind == KERNEL]
    values = {WALL_TIME: float(wall), GPU_BUSY: float(own_busy), GPU_IDLE: float(idle),
              IDLE_SHARE: 100.0 * idle / wall if wall else 0.0, HOST_LEAD: float(lead),
              LAUNCH_OVERHEAD: float(max(wall - own_busy, 0)), KERNEL_COUNT: float(len(kernels)),
              KERNEL_TIME: float(sum(ops[i].end - ops[i].start for i in kernels)), MODULE_LOADING: float(loaded)}
    return RegionInstance(path, start, end, tuple(inside), values)


def merged_pairs(intervals: list[tuple[int, int]]) -> list[tuple[int, int]]:
    begin, finish = merged([lo for lo, _ in intervals], [hi for _, hi in intervals])
    return list(zip(begin.tolist(), finish.tolist(), strict=True))


def region_instances(trace: Trace, attribution: Attribution) -> list[RegionInstance]:
    """Each range that launched GPU work, measured from the range's start on the host (see ``perfgate.metrics``
    for each metric); a trace without ranges: one whole-trace entry, from its first launch call on."""
    members: dict[int, list[int]] = defaultdict(list)
    for op_index, held in enumerate(attribution.op_ranges):
        for range_index in held:
            members[range_index].append(op_index)
    ops = trace.ops
    timelines = (BusyTimeline([op.start for op in ops], [op.end for op in ops]),
                 QueuedWork([op.start for op in ops], [op.end for op in ops]))
    cold_calls = _first_launch_calls(trace, attribution)
    if not trace.ranges and ops:
        everything = list(range(len(ops)))
        start = min(launch.start if launch is not None else op.start
                    for op, launch in zip(ops, attribution.op_launch, strict=True))
        return [_measure(WHOLE_TRACE, start, everything, trace, timelines, start, cold_calls)]
    found = []
    for range_index in sorted(members, key=lambda i: trace.ranges[i].start):
        host = trace.ranges[range_index]
        found.append(_measure(attribution.paths[range_index], host.start, members[range_index], trace, timelines,
                              host.end, cold_calls))
    return found


def _device_of(trace: Trace, device: int) -> Device:
    return trace.devices.get(device, Device("", ""))


def _kernel_rows(trace: Trace, attribution: Attribution) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    kernels = sorted((i for i, op in enumerate(trace.ops) if op.kind == KERNEL), key=lambda i: trace.ops[i].start)
    for launch, index in enumerate(kernels):
        op = trace.ops[index]
        held = [r for r in attribution.op_ranges[index] if not trace.ranges[r].step]
        region = max((attribution.paths[r] for r in held), key=len, default="")
        device = _device_of(trace, op.device)
        base = {"kind": KIND_KERNEL, "kernel": op.name, "demangled": op.demangled, "region": region,
                "launch": launch, "device": device.name, "cc": device.cc,
                "grid": format_dim(*op.grid) if op.grid else "", "block": format_dim(*op.block) if op.block else ""}
        rows.append({**base, "metric": KERNEL_DURATION, "unit": "ns", "value": float(op.end - op.start)})
        rows.append({**base, "metric": STREAM, "unit": "", "value": float(op.stream)})  # shown, never compared
        for metric, value in (("launch__registers_per_thread", op.registers),
                              ("launch__shared_mem_per_block_static", op.static_shared),
                              ("launch__shared_mem_per_block_dynamic", op.dynamic_shared)):
            if value is not None:
                rows.append({**base, "metric": metric, "unit": "register/thread" if "registers" in metric
                             else "byte/block", "value": float(value)})
    return rows


def _region_rows(trace: Trace, instances: list[RegionInstance], first_launch: int) -> list[dict[str, Any]]:
    by_path: dict[str, list[RegionInstance]] = defaultdict(list)
    for instance in instances:
        by_path[instance.path].append(instance)
    rows: list[dict[str, Any]] = []
    for offset, (path, entries) in enumerate(by_path.items()):
        device = _device_of(trace, trace.ops[entries[0].ops[0]].device)
        # No signature: a region is known by its path (``kernel`` and ``region``), its values are medians
        # over its entries.
        base = {"kind": KIND_REGION, "kernel": path, "region": path, "launch": first_launch + offset, "demangled": "",
                "device": device.name, "cc": device.cc, "grid": "", "block": ""}
        for metric, unit in REGION_UNITS.items():
            rows.append({**base, "metric": metric, "unit": unit,
                         "value": float(statistics.median(e.values[metric] for e in entries))})
    return rows


def module_loading(instances: list[RegionInstance]) -> dict[str, float]:
    """Per region, the median host time its entries spent in kernels' first launch calls (lazy module loading),
    which its wall time and GPU idle leave out; regions that spent none are not named."""
    by_path: dict[str, list[float]] = defaultdict(list)
    for instance in instances:
        by_path[instance.path].append(instance.values[MODULE_LOADING])
    found = {path: float(statistics.median(spent)) for path, spent in by_path.items()}
    return {path: spent for path, spent in found.items() if spent > 0}


def measurement_of(trace: Trace, path: Path) -> Measurement:
    """The normalized table of a trace; InputError when it holds no kernels."""
    if not any(op.kind == KERNEL for op in trace.ops):
        raise no_kernels(path, trace)
    check_times(trace, path)
    attribution = attribute(trace)
    rows = _kernel_rows(trace, attribution)
    instances = region_instances(trace, attribution)
    rows += _region_rows(trace, instances, first_launch=len(rows) and rows[-1]["launch"] + 1)

    settings: dict[str, Any] = {SOURCE_SETTING: TIMELINE, "trace_format": trace.format, **trace.facts}
    loading = module_loading(instances)
    if loading:
        settings[MODULE_LOADING_SETTING] = json.dumps(loading, separators=(",", ":"))
    drawn = sketch(trace, instances)
    if drawn:
        settings[SKETCH_SETTING] = drawn
    return Measurement(assign_ordinals(make_table(rows)), source=str(path), settings=settings)
