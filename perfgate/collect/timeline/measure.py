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

import itertools
import json
import statistics
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from perfgate.collect.timeline.attribute import Attribution, attribute
from perfgate.collect.timeline.cold import first_launch_calls, longest_gap
from perfgate.collect.timeline.intervals import BusyTimeline, QueuedWork, merged, union_length
from perfgate.collect.timeline.model import Device, Ints, LaunchColumns, OpColumns, Trace
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
from perfgate.limits import MAX_LAUNCH_TEXT_CHARS
from perfgate.columns import Columns, Gather, objects
from perfgate.table import COLUMNS, Measurement, format_dim, normalized
from perfgate.vocabulary import KIND_KERNEL, KIND_REGION

SOURCE_SETTING = "source"  # a measurement's setting: "timeline" for a trace; an ncu report has none
TIMELINE = "timeline"
KERNEL_DURATION = "timeline.kernel_duration"
STREAM = "launch__stream"  # the CUDA stream a kernel ran on: a launch fact, like ncu's launch__ metrics
WHOLE_TRACE = "whole trace"  # the one region of a trace that has no host ranges
# A measurement's setting: per region, the median host time its entries spent in first launch calls (CUDA's lazy
# module loading), left out of its wall time and GPU idle; JSON {path: ns}.
MODULE_LOADING_SETTING = "timeline_module_loading"
# A measurement's setting: the trace does not say where it began, but its kernels' first launch calls show module
# loading (``_shows_loading``), so they are left out as in a trace from the process start.
SHOWS_LOADING_SETTING = "trace_shows_module_loading"
# A measurement's setting for a trace without ranges that began cold: the whole trace's longest GPU idle gap outside
# kernels' first launch calls (ns) and the GPU work after it, JSON {path: [ns, name]}: what a one-shot run's wall
# time holds besides module loading.
LONGEST_GAP_SETTING = "timeline_longest_gap"


def no_kernels(path: Path, trace: Trace) -> InputError:
    launches = len(trace.launches)
    what = f"{launches} API call{'s' if launches != 1 else ''} with a correlation id but" if launches else "no"
    return InputError(path, f"no kernels: this {trace.format} trace holds {what} GPU kernel records (a CPU-only "
                            "trace, a WSL export, or CUDA activity not traced), so there is no time to compare",
                      "trace again with CUDA activity on (torch.profiler ProfilerActivity.CUDA, nsys --trace=cuda)")


# Times are summed and subtracted as int64 (``intervals``): a bound with room for that. 2**62 ns is 146 years, so
# absolute CUPTI timestamps (nanoseconds since 1970) fit.
MAX_TIME_NS = 2**62


def _out_of_range(items: LaunchColumns | OpColumns) -> Iterable[tuple[int, int]]:
    """Of int64 columns, only the (start, end) pairs out of range."""
    wrong = ((items.start <= -MAX_TIME_NS) | (items.start >= MAX_TIME_NS) | (items.end <= -MAX_TIME_NS)
             | (items.end >= MAX_TIME_NS))
    return zip(items.start[wrong].tolist(), items.end[wrong].tolist(), strict=True)


def check_times(trace: Trace, path: Path) -> None:
    """InputError for a time no clock gave (a hand-edited or corrupt trace): it would overflow int64 later."""
    calls, ops = trace.launches, trace.ops
    call_spans = (_out_of_range(calls) if isinstance(calls, LaunchColumns)
                  else ((call.start, call.end) for call in calls.values()))
    op_spans = _out_of_range(ops) if isinstance(ops, OpColumns) else ((op.start, op.end) for op in ops)
    spans = itertools.chain(op_spans, call_spans,
                            ((host.start, host.end) for host in trace.ranges))  # one at a time: no list per op
    for start, end in spans:
        if not (-MAX_TIME_NS < start < MAX_TIME_NS and -MAX_TIME_NS < end < MAX_TIME_NS):
            raise InputError(path, f"a time stamp out of any clock's range ({start:.3g} to {end:.3g} ns)",
                             "trace again; the file is corrupt or was edited")


def _measure(path: str, host_start: int, inside: Ints, ops: OpColumns, timelines: tuple[BusyTimeline, QueuedWork],
             range_end: int, cold_calls: list[tuple[int, int]]) -> RegionInstance:
    """One entry: from ``host_start`` (or, where GPU work queued earlier still runs then, that work's end) to the
    later of ``range_end`` and its GPU work's end; ``inside``: its ops, by index, ascending."""
    busy, queue = timelines
    starts, ends = ops.start[inside], ops.end[inside]
    first_work = int(starts.min())
    # The host ran ahead of the GPU (asynchronous launches): the region's clock starts when the GPU is done with
    # what was queued before it, so the time the GPU spends on earlier regions' work is not this region's.
    start = max(host_start, min(queue.end_before(first_work), first_work))
    end = max(range_end, int(ends.max()))
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
    own_busy = union_length(starts, ends)
    kernels = ops.is_kernel()[inside]
    durations = ends[kernels] - starts[kernels]
    values = {WALL_TIME: float(wall), GPU_BUSY: float(own_busy), GPU_IDLE: float(idle),
              IDLE_SHARE: 100.0 * idle / wall if wall else 0.0, HOST_LEAD: float(lead),
              LAUNCH_OVERHEAD: float(max(wall - own_busy, 0)), KERNEL_COUNT: float(durations.size),
              KERNEL_TIME: float(_exact_sum(durations)), MODULE_LOADING: float(loaded)}
    return RegionInstance(path, start, end, inside, values)


def _exact_sum(values: Ints) -> int:
    """The sum as Python's ints give it: int64's where it cannot overflow (times are bounded by ``MAX_TIME_NS``)."""
    if values.size and int(np.abs(values).max()) > (2**63 - 1) // values.size:
        return sum(values.tolist())
    return int(values.sum())


def merged_pairs(intervals: list[tuple[int, int]]) -> list[tuple[int, int]]:
    begin, finish = merged([lo for lo, _ in intervals], [hi for _, hi in intervals])
    return list(zip(begin.tolist(), finish.tolist(), strict=True))


def region_instances(trace: Trace, attribution: Attribution,
                     cold_calls: list[tuple[int, int]] | None = None) -> list[RegionInstance]:
    """Each range that launched GPU work, measured from the range's start on the host (see ``perfgate.metrics``
    for each metric); a trace without ranges: one whole-trace entry, from its first launch call on. ``cold_calls``:
    the launch calls whose host time is module loading (``cold.first_launch_calls`` where not given)."""
    ops = OpColumns.of(trace.ops)
    timelines = (BusyTimeline(ops.start, ops.end), QueuedWork(ops.start, ops.end))
    if cold_calls is None:
        cold_calls, _ = first_launch_calls(trace, attribution)
    if not trace.ranges and len(ops):
        launched = attribution.op_launch.positions
        start = int(np.where(launched >= 0, attribution.op_launch.calls.start[np.maximum(launched, 0)],
                             ops.start).min()) if len(attribution.op_launch.calls) else int(ops.start.min())
        return [_measure(WHOLE_TRACE, start, np.arange(len(ops)), ops, timelines, start, cold_calls)]
    members = _members(attribution)
    found = []
    for range_index in sorted(members, key=lambda i: _found_order(trace, attribution, i, int(members[i][0]))):
        host = trace.ranges[range_index]
        found.append(_measure(attribution.paths[range_index], host.start, members[range_index], ops, timelines,
                              host.end, cold_calls))
    return found


def _found_order(trace: Trace, attribution: Attribution, range_index: int, first_op: int) -> tuple[int, int, int]:
    """Ranges by start; at the same start, in the order their first ops are (and there, that op's ranges are)."""
    return (trace.ranges[range_index].start, first_op,
            attribution.sets[int(attribution.op_sets[first_op])].index(range_index))


def _members(attribution: Attribution) -> dict[int, Ints]:
    """Per range that holds any op: its ops, by index, ascending (each op's set of ranges looked up once)."""
    order = np.argsort(attribution.op_sets, kind="stable")
    numbers, first = np.unique(attribution.op_sets[order], return_index=True)
    groups = np.split(order, first[1:])
    by_range: dict[int, list[Ints]] = defaultdict(list)
    for number, group in zip(numbers.tolist(), groups, strict=True):
        for range_index in attribution.sets[number]:
            by_range[range_index].append(group)
    return {index: np.sort(np.concatenate(held)) for index, held in by_range.items()}


def _device_of(trace: Trace, device: int) -> Device:
    return trace.devices.get(device, Device("", ""))


class _Codes:
    """Distinct values, each coded by its first appearance: a column held as codes into them (``columns.Gather``)."""

    def __init__(self) -> None:
        self.index: dict[Any, int] = {}

    def __call__(self, value: Any) -> int:
        return self.index.setdefault(value, len(self.index))

    def values(self, shown: Callable[[Any], str] = str) -> npt.NDArray[np.object_]:
        return objects([shown(value) for value in self.index])

    def coded(self, raw: Ints, table: Sequence[Any]) -> npt.NDArray[np.int32]:
        """Per row, the code of ``table[raw]``: the values coded in the order the rows first show them."""
        if not raw.size:
            return np.empty(0, dtype=np.int32)
        distinct, first, inverse = np.unique(raw, return_index=True, return_inverse=True)
        codes = np.empty(distinct.size, dtype=np.int32)
        for at in np.argsort(first, kind="stable").tolist():
            codes[at] = self(table[int(distinct[at])])
        return codes[inverse.reshape(-1)]


# A kernel launch's rows, in this order, each where the trace gives the value (a launch's duration and stream always).
_KERNEL_METRICS = ((KERNEL_DURATION, "ns"), (STREAM, ""), ("launch__registers_per_thread", "register/thread"),
                   ("launch__shared_mem_per_block_static", "byte/block"),
                   ("launch__shared_mem_per_block_dynamic", "byte/block"))


def _dim(dims: tuple[int, int, int] | None) -> str:
    return format_dim(*dims) if dims else ""


def _table(trace: Trace, attribution: Attribution, instances: list[RegionInstance], source: Path) -> Columns:
    """The kernel rows (one launch per kernel, by start) and then the region rows (one per path: the median of its
    entries), built as columns: a launch's texts as codes into their few distinct values, each row's launch and
    metric as codes (``columns.Gather``). Rows as dicts took 2 GB for an export of 200,000 kernels."""
    ops = OpColumns.of(trace.ops)
    kernels = np.flatnonzero(ops.is_kernel())
    kernels = kernels[np.argsort(ops.start[kernels], kind="stable")]
    by_path: dict[str, list[RegionInstance]] = defaultdict(list)
    for instance in instances:
        by_path[instance.path].append(instance)
    count, regions = len(kernels), len(by_path)
    names, demangled, region, device, dims = _Codes(), _Codes(), _Codes(), _Codes(), _Codes()
    demangled("")  # a region's
    dims(None)
    launch_codes = {column: np.empty(count + regions, dtype=np.int32)  # codes into fewer distinct values than rows
                    for column in ("kernel", "demangled", "region", "device", "grid", "block")}
    # Each launch's region: its innermost non-step range's path, found once per set of ranges.
    regions_of = [max((attribution.paths[r] for r in held if not trace.ranges[r].step), key=len, default="")
                  for held in attribution.sets]
    device_ids = np.unique(ops.device[kernels])
    device_of = {int(d): _device_of(trace, int(d)) for d in device_ids.tolist()}
    raw = (ops.name, ops.demangled, attribution.op_sets, ops.device)
    tables: tuple[Any, ...] = (ops.texts, ops.texts, regions_of, device_of)
    for column, coder, by_op, table in zip(launch_codes.values(), (names, demangled, region, device), raw, tables,
                                           strict=False):
        column[:count] = coder.coded(by_op[kernels], table)
    # A launch's grid, then its block, coded in one run of codes: the order the rows show them.
    grid_block = dims.coded(np.column_stack((ops.grid[kernels], ops.block[kernels])).ravel(), ops.dims).reshape(-1, 2)
    launch_codes["grid"][:count], launch_codes["block"][:count] = grid_block[:, 0], grid_block[:, 1]
    values = np.empty((count, len(_KERNEL_METRICS)))  # filled a column at a time: no copies of the whole
    values[:, 0] = ops.end[kernels] - ops.start[kernels]
    for at, given in enumerate((ops.stream, ops.registers, ops.static_shared, ops.dynamic_shared), start=1):
        values[:, at] = given[kernels]
    _check_launch_text(source, count, launch_codes, {"kernel": names, "demangled": demangled, "region": region})
    kernel_ordinals = _ordinals(launch_codes["kernel"][:count].astype(np.int64) * (len(region.index) + 1)
                                + launch_codes["region"][:count])
    region_values = _region_values(trace, ops, by_path, count, launch_codes, (names, region, device))
    launch, metric, value = _rows(values, region_values)
    del values
    metrics = [*_KERNEL_METRICS, *REGION_UNITS.items()]
    devices = device.values(lambda d: d.name)

    def per_row(column: str, texts: npt.NDArray[np.object_]) -> Gather:
        return Gather(Gather(texts, launch_codes[column]), launch)

    data: dict[str, npt.NDArray[Any] | Gather] = {
        "kind": Gather(Gather(objects([KIND_KERNEL, KIND_REGION]), (np.arange(count + regions) >= count).astype(np.int8)),
                       launch),
        "kernel": per_row("kernel", names.values()), "demangled": per_row("demangled", demangled.values()),
        "region": per_row("region", region.values()),
        "ordinal": Gather(np.concatenate((kernel_ordinals, np.zeros(regions, dtype=np.int64))), launch),
        "launch": launch, "device": per_row("device", devices),
        "cc": per_row("device", device.values(lambda d: d.cc)),
        "grid": per_row("grid", dims.values(_dim)), "block": per_row("block", dims.values(_dim)),
        "metric": Gather(objects([name for name, _ in metrics]), metric),
        "unit": Gather(objects([unit for _, unit in metrics]), metric),
        "value": value,
    }
    return normalized(Columns({column: data[column] for column in COLUMNS}))


def _rows(values: npt.NDArray[np.float64], region_values: npt.NDArray[np.float64]) -> tuple[Ints, npt.NDArray[np.int8],
                                                                                     npt.NDArray[np.float64]]:
    """Per row: its launch, metric (a code into the kernel metrics and then the region ones) and value, from the
    kernel launches' ``values`` (NaN where the trace gives none, beyond a launch's duration and stream) and the
    regions' ``region_values``. Filled in place, a block of launches at a time: a million rows' temporaries were
    40 MB."""
    count, regions = len(values), len(region_values)
    present = ~np.isnan(values)
    present[:, :2] = True
    per_launch = np.concatenate((present.sum(axis=1), np.full(regions, len(REGION_UNITS))))
    kernel_rows, rows = int(per_launch[:count].sum()), int(per_launch.sum())
    metric, value = np.empty(rows, dtype=np.int8), np.empty(rows)
    _present_into(present, values, value[:kernel_rows], metric[:kernel_rows])
    value[kernel_rows:] = region_values.ravel()
    metric[kernel_rows:] = np.tile(np.arange(len(REGION_UNITS)) + len(_KERNEL_METRICS), regions)
    return np.repeat(np.arange(count + regions, dtype=np.int64), per_launch), metric, value


def _present_into(present: npt.NDArray[np.bool_], values: npt.NDArray[np.float64], value: npt.NDArray[np.float64],
                  metric: npt.NDArray[np.int8], block: int = 16384) -> None:
    """``value`` and ``metric``: ``values``' present cells, row by row, and their columns (``values[present]``, as
    a few blocks of rows: taken whole, the positions of a million cells took 16 MB for a moment)."""
    columns = np.arange(values.shape[1], dtype=np.int8)
    filled = 0
    for lo in range(0, len(values), block):
        shown = present[lo:lo + block]
        taken = values[lo:lo + block][shown]
        value[filled:filled + taken.size] = taken
        metric[filled:filled + taken.size] = np.broadcast_to(columns, shown.shape)[shown]
        filled += taken.size


def _check_launch_text(source: Path, count: int, launch_codes: dict[str, npt.NDArray[np.int32]],
                       texts: dict[str, _Codes]) -> None:
    """InputError when the names and region paths of the ``count`` kernel launches, which every output writes once
    a launch, pass ``MAX_LAUNCH_TEXT_CHARS`` together: each is held once in memory, but a long one repeated over many
    launches would fill the disk."""
    total = 0
    for column, codes in texts.items():
        lengths = np.fromiter((len(str(value)) for value in codes.index), dtype=np.int64, count=len(codes.index))
        total += int(lengths[launch_codes[column][:count]].sum())
    if total > MAX_LAUNCH_TEXT_CHARS:
        raise InputError(source, f"kernel names and region paths of {total:,} characters over its {count:,} launches "
                                 f"together (perfgate reads up to {MAX_LAUNCH_TEXT_CHARS:,})",
                         "name ranges shorter, nest them less deeply, or trace fewer launches")


def _region_values(trace: Trace, ops: OpColumns, by_path: dict[str, list[RegionInstance]], count: int,
                   launch_codes: dict[str, npt.NDArray[np.int32]],
                   codes: tuple[_Codes, _Codes, _Codes]) -> npt.NDArray[np.float64]:
    """The region rows after the ``count`` kernel rows: their launch codes set in ``launch_codes`` and their values,
    the medians over their entries. No signature: a region is known by its path (``kernel`` and ``region``)."""
    names, region, device = codes
    values = np.empty((len(by_path), len(REGION_UNITS)))
    for offset, (path, entries) in enumerate(by_path.items()):
        for column, code in zip(launch_codes.values(), (names(path), 0, region(path),
                                                         device(_device_of(trace, int(ops.device[entries[0].ops[0]]))),
                                                         0, 0), strict=True):
            column[count + offset] = code
        values[offset] = [statistics.median(e.values[metric] for e in entries) for metric in REGION_UNITS]
    return values


def _ordinals(keys: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
    """Each launch's number among the launches of its key before it: 0, 1, 2... (``table.assign_ordinals``)."""
    order = np.argsort(keys, kind="stable")
    ranked = keys[order]
    first = np.ones(len(keys), dtype=bool)
    first[1:] = ranked[1:] != ranked[:-1]
    positions = np.arange(len(keys))
    ordinals = np.empty(len(keys), dtype=np.int64)
    ordinals[order] = positions - np.maximum.accumulate(np.where(first, positions, 0))
    return ordinals


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
    check_times(trace, path)
    try:
        ops, launches = OpColumns.of(trace.ops), LaunchColumns.of(trace.launches)
    except OverflowError:  # a GPU op's device or stream, or a correlation id, past int64
        raise InputError(path, "a device, stream or correlation id out of any profiler's range",
                         "trace again; the file is corrupt or was edited") from None
    trace = trace._replace(ops=ops, launches=launches)
    if not ops.is_kernel().any():
        raise no_kernels(path, trace)
    attribution = attribute(trace)
    cold_calls, shown = first_launch_calls(trace, attribution)
    instances = region_instances(trace, attribution, cold_calls)
    table = _table(trace, attribution, instances, path)

    settings: dict[str, Any] = {SOURCE_SETTING: TIMELINE, "trace_format": trace.format, **trace.facts}
    if shown:
        settings[SHOWS_LOADING_SETTING] = True
    if not trace.ranges and instances and (cold_calls or shown):
        gap, before = longest_gap(trace, instances[0], cold_calls)
        settings[LONGEST_GAP_SETTING] = json.dumps({WHOLE_TRACE: [gap, before]}, separators=(",", ":"))
    loading = module_loading(instances)
    if loading:
        settings[MODULE_LOADING_SETTING] = json.dumps(loading, separators=(",", ":"))
    drawn = sketch(trace, instances)
    if drawn:
        settings[SKETCH_SETTING] = drawn
    return Measurement(table, source=str(path), settings=settings)
