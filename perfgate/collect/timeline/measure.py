"""A trace as perfgate's normalized table: one launch per kernel, one region row per region path.

Kernel rows (kind ``kernel``): ``timeline.kernel_duration`` (ns, the GPU's start-to-end time of the launch)
and the launch facts (stream, registers, shared memory), in the region their launch was made in
(``perfgate.collect.timeline.attribute``). Region rows (kind ``region``, one per region path, ``ordinal`` 0):
the metrics of ``perfgate.metrics.TIMELINE_REGION_METRICS``, each the median over the region's instances
(each profiler step's, each entry's), so one slow step does not move it. Every instance that launched GPU
work counts; an instance that launched none has no wall time to measure and is left out.
"""

from __future__ import annotations

import json
import statistics
from collections import defaultdict
from pathlib import Path
from typing import Any, NamedTuple

from perfgate.collect.timeline.attribute import Attribution, attribute
from perfgate.collect.timeline.intervals import BusyTimeline, QueuedWork, union_length
from perfgate.collect.timeline.model import COLD_SETTING, FROM_PROCESS_START, KERNEL, Device, Trace
from perfgate.errors import InputError
from perfgate.table import Measurement, assign_ordinals, format_dim, make_table
from perfgate.vocabulary import KIND_KERNEL, KIND_REGION

SOURCE_SETTING = "source"  # a measurement's setting: "timeline" for a trace; an ncu report has none
TIMELINE = "timeline"
KERNEL_DURATION = "timeline.kernel_duration"
STREAM = "launch__stream"  # the CUDA stream a kernel ran on: a launch fact, like ncu's launch__ metrics
WALL_TIME = "timeline.wall_time"
GPU_BUSY = "timeline.gpu_busy"
GPU_IDLE = "timeline.gpu_idle"
IDLE_SHARE = "timeline.gpu_idle_pct"
LAUNCH_OVERHEAD = "timeline.launch_overhead"
KERNEL_COUNT = "timeline.kernel_count"
KERNEL_TIME = "timeline.kernel_time"
REGION_UNITS = {WALL_TIME: "ns", GPU_BUSY: "ns", GPU_IDLE: "ns", IDLE_SHARE: "%", LAUNCH_OVERHEAD: "ns",
                KERNEL_COUNT: "", KERNEL_TIME: "ns"}


class RegionInstance(NamedTuple):
    """One entry into a region (one step's), measured."""

    path: str
    first_launch: int
    last_end: int
    ops: tuple[int, ...]  # indices into trace.ops
    values: dict[str, float]


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


def region_instances(trace: Trace, attribution: Attribution) -> list[RegionInstance]:
    """Each range that launched GPU work, measured (see ``perfgate.metrics`` for each metric)."""
    members: dict[int, list[int]] = defaultdict(list)
    for op_index, held in enumerate(attribution.op_ranges):
        for range_index in held:
            members[range_index].append(op_index)
    ops = trace.ops
    busy = BusyTimeline([op.start for op in ops], [op.end for op in ops])
    queue = QueuedWork([op.start for op in ops], [op.end for op in ops])
    found = []
    for range_index in sorted(members, key=lambda i: trace.ranges[i].start):
        inside = members[range_index]
        launched = [attribution.op_launch[i] for i in inside]
        first_start = min(ops[i].start for i in inside)
        launch_at = min(launch.start if launch is not None else ops[i].start for i, launch in zip(inside, launched))
        # Queued behind earlier GPU work, the region's clock starts when that work ends, not at its launch call.
        first = max(launch_at, min(queue.end_before(first_start), first_start))
        last = max(ops[i].end for i in inside)
        wall = max(last - first, 0)
        own_busy = union_length([ops[i].start for i in inside], [ops[i].end for i in inside])
        idle = wall - busy.busy(first, last)
        kernels = [i for i in inside if ops[i].kind == KERNEL]
        values = {WALL_TIME: float(wall), GPU_BUSY: float(own_busy), GPU_IDLE: float(idle),
                  IDLE_SHARE: 100.0 * idle / wall if wall else 0.0, LAUNCH_OVERHEAD: float(max(wall - own_busy, 0)),
                  KERNEL_COUNT: float(len(kernels)), KERNEL_TIME: float(sum(ops[i].end - ops[i].start for i in kernels))}
        found.append(RegionInstance(attribution.paths[range_index], first, last, tuple(inside), values))
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


def cold_regions(trace: Trace, instances: list[RegionInstance]) -> list[str]:
    """The regions that, in at least half their entries (so in their median), hold a kernel's first launch in
    the process, whose launch call paid CUDA's lazy module loading. Only for traces known to start with their
    process: perfgate's own CUPTI trace (its child is traced from the test's call on) and an Nsight Systems
    export whose capture started at once (``FROM_PROCESS_START``); a profiler trace otherwise may start after
    warm-up steps, where a kernel's first launch in the trace is not its first in the process."""
    if trace.format != "cupti" and not trace.facts.get(FROM_PROCESS_START):
        return []
    first: dict[str, int] = {}
    for index in sorted((i for i, op in enumerate(trace.ops) if op.kind == KERNEL), key=lambda i: trace.ops[i].start):
        first.setdefault(trace.ops[index].demangled, index)
    firsts = set(first.values())
    entries: dict[str, list[bool]] = defaultdict(list)
    for instance in instances:
        entries[instance.path].append(not firsts.isdisjoint(instance.ops))
    return sorted(path for path, cold in entries.items() if 2 * sum(cold) >= len(cold))


def measurement_of(trace: Trace, path: Path) -> Measurement:
    """The normalized table of a trace; InputError when it holds no kernels."""
    if not any(op.kind == KERNEL for op in trace.ops):
        raise no_kernels(path, trace)
    check_times(trace, path)
    attribution = attribute(trace)
    rows = _kernel_rows(trace, attribution)
    instances = region_instances(trace, attribution)
    rows += _region_rows(trace, instances, first_launch=len(rows) and rows[-1]["launch"] + 1)
    # sketch reads this module's RegionInstance: imported here, the two stay out of an import circle.
    from perfgate.collect.timeline.sketch import SKETCH_SETTING, sketch

    settings: dict[str, Any] = {SOURCE_SETTING: TIMELINE, "trace_format": trace.format, **trace.facts}
    cold = cold_regions(trace, instances)
    if cold:
        settings[COLD_SETTING] = json.dumps(cold)
    drawn = sketch(trace, instances)
    if drawn:
        settings[SKETCH_SETTING] = drawn
    return Measurement(assign_ordinals(make_table(rows)), source=str(path), settings=settings)
