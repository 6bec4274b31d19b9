"""Timeline traces against Nsight Compute reports: never compared; traces compared on the timeline metrics.

A trace's kernel durations are the GPU's own clocks with other work beside them; ncu's are one kernel alone,
replayed with caches flushed under locked clocks. The two are different measurements of time, so a
comparison of one against the other is refused (one line, exit 2). A comparison of two traces compares the
timeline metrics (``perfgate.metrics.TIMELINE_METRICS``) in place of ncu's defaults, and says per region what
moved: ``region `step`: wall +8% (8.77 ms → 9.48 ms), idle gaps +774 µs, host lead -58.8 µs, GPU idle 4.2% → 11.4%
(+7.2 pp), kernels unchanged``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any


import numpy as np

from perfgate.collect.timeline.measure import LONGEST_GAP_SETTING, MODULE_LOADING_SETTING
from perfgate.collect.timeline.region_entry import HOST_LEAD, IDLE_SHARE, WALL_TIME
from perfgate.collect.timeline.model import RESOLUTION_SETTING
from perfgate.compare.options import CompareOptions
from perfgate.errors import InputError
from perfgate.limits import parse_json_or_none
from perfgate.metrics import DEFAULT_KERNEL_METRICS, TIMELINE_METRICS
from perfgate.timeline_why import duration, moved_parts, points, signed_duration
from perfgate.columns import objects
from perfgate.table import Measurement, assign_ordinals
from perfgate.vocabulary import KIND_KERNEL, KIND_REGION, REGION_SEPARATOR, is_benchmark_metric

SOURCE_SETTING = "source"
TIMELINE = "timeline"


def is_timeline(measurement: Measurement) -> bool:
    return measurement.settings.get(SOURCE_SETTING) == TIMELINE


def for_measurement(options: CompareOptions, *measurements: Measurement) -> CompareOptions:
    """``options`` as they apply to these measurements: for traces, the timeline metrics take the place of
    Nsight Compute's defaults (metrics asked for by name stay)."""
    measured = [m for m in measurements if not m.table.empty]  # no baseline yet: an empty table, no source
    if not measured or not all(is_timeline(m) for m in measured):
        return options
    chosen = options.compared_metrics()
    kept = [m for m in chosen if m not in DEFAULT_KERNEL_METRICS and not is_benchmark_metric(m)]
    return options._replace(metrics=tuple(dict.fromkeys([*TIMELINE_METRICS, *kept])))


def check_same_source(baseline: Measurement, current: Measurement) -> None:
    """Refuse a trace against an ncu measurement (or a baseline of one)."""
    if is_timeline(baseline) == is_timeline(current) or baseline.table.empty or current.table.empty:
        return
    trace, other = (baseline, current) if is_timeline(baseline) else (current, baseline)
    raise InputError(trace.source or "trace", f"a timeline trace cannot be compared with {other.source or 'the other input'}, "
                     "an Nsight Compute measurement (different measurements of time: traced GPU clocks with other work "
                     "beside each kernel, against one kernel replayed alone)",
                     "compare a trace with a trace (or a baseline written from one), and a report with a report")


def _values(measurement: Measurement) -> dict[str, dict[str, float]]:
    table = measurement.table
    regions = table[table.equals("kind", KIND_REGION)]
    found: dict[str, dict[str, float]] = {}
    for name, metric, value in zip(regions["kernel"].tolist(), regions["metric"].tolist(), regions["value"].tolist(),
                                   strict=True):
        found.setdefault(str(name), {})[str(metric)] = float(value)
    return found


def _kernel_names(measurement: Measurement, region: str) -> list[str]:
    table = measurement.table
    kernels = table[table.equals("kind", KIND_KERNEL) & table.equals("metric", "timeline.kernel_duration")]
    inside = [name for name, path in zip(kernels["kernel"].tolist(), kernels["region"].tolist(), strict=True)
              if region == "step" or path == region or path.startswith(region + " > ")]
    return sorted(inside)


def _percent(before: float, after: float) -> str:
    return f"{(after - before) / before * 100:+.0f}%" if before else "new"


def region_why(baseline: Measurement, current: Measurement, min_change: float = 0.03) -> list[str]:
    """One line per region whose wall time, GPU idle share or host lead moved: by how much, which part of it
    (host lead, idle gaps, kernels, launch overhead), the idle share in percentage points, and whether the
    kernels changed."""
    before, after = _values(baseline), _values(current)
    lines = []
    for region, now in after.items():
        then = before.get(region)
        if then is None:
            continue
        parts: list[str] = []
        old_wall, new_wall = then.get(WALL_TIME), now.get(WALL_TIME)
        wall_moved = bool(old_wall and new_wall is not None and abs(new_wall - old_wall) / old_wall >= min_change)
        if wall_moved and old_wall is not None and new_wall is not None:
            parts.append(f"wall {_percent(old_wall, new_wall)} ({duration(old_wall)} → "
                         f"{duration(new_wall)})")
        lead_then, lead_now = then.get(HOST_LEAD), now.get(HOST_LEAD)
        lead_moved = (lead_then is not None and lead_now is not None
                      and abs(lead_now - lead_then) >= max(0.5 * lead_then, 100_000.0))
        idle_then, idle_now = then.get(IDLE_SHARE), now.get(IDLE_SHARE)
        idle_moved = idle_then is not None and idle_now is not None and abs(idle_now - idle_then) >= 1.0
        if not (wall_moved or idle_moved or lead_moved):
            continue
        if wall_moved:
            parts += [f"{name} {signed_duration(delta)}" for name, delta in moved_parts(then, now)[:3]]
        elif lead_moved and lead_then is not None and lead_now is not None:
            parts.append(f"host lead {duration(lead_then)} → {duration(lead_now)}")
        if idle_moved and idle_then is not None and idle_now is not None:
            parts.append(f"GPU idle {points(idle_then, idle_now)}")
        parts.append(_kernels_moved(baseline, current, region, then, now))
        lines.append(f"region `{region}`: {', '.join(parts)}")
    return lines


def _kernels_moved(baseline: Measurement, current: Measurement, region: str, then: dict[str, float],
                   now: dict[str, float]) -> str:
    names_then, names_now = _kernel_names(baseline, region), _kernel_names(current, region)
    time_then, time_now = then.get("timeline.kernel_time", 0.0), now.get("timeline.kernel_time", 0.0)
    time_moved = bool(time_then) and abs(time_now - time_then) / time_then >= 0.05
    if names_then != names_now:
        counts = f"{int(then.get('timeline.kernel_count', 0))} → {int(now.get('timeline.kernel_count', 0))} a step"
        return f"kernels changed ({counts}, kernel time {_percent(time_then, time_now)})" if time_moved else \
            f"kernels changed ({counts})"
    if time_moved:
        return f"kernel time {_percent(time_then, time_now)}"
    return "kernels unchanged"


def _one_sided(path: str, common: set[str]) -> str:
    """The nearest enclosing region of ``path`` that both sides have; "" (no region) where none does."""
    parts = path.split(REGION_SEPARATOR)
    while parts and REGION_SEPARATOR.join(parts) not in common:
        parts.pop()
    return REGION_SEPARATOR.join(parts)


def _rehomed(measurement: Measurement, common: set[str]) -> Measurement:
    table = measurement.table
    kind, region = table["kind"], table["region"]
    is_region = kind == KIND_REGION
    moved = np.array([not r or r in common for r in region.tolist()], dtype=bool)
    if moved.all():
        return measurement
    keep = ~is_region | moved
    homes = objects([r if ok else _one_sided(r, common) for r, ok in zip(region.tolist(), moved.tolist(), strict=True)])
    return measurement.with_table(assign_ordinals(table.assign(region=homes)[keep]))


def common_regions(baseline: Measurement, current: Measurement) -> tuple[Measurement, Measurement, list[str]]:
    """Two traces as compared when a range was dropped, added or renamed between them: the kernels of a region
    one side lacks are compared under its nearest enclosing region both have (by their own identity, not as
    missing and new), that region's row is left out, and a note names it."""
    if not (is_timeline(baseline) and is_timeline(current)) or baseline.table.empty or current.table.empty:
        return baseline, current, []
    paths = [set(m.table[m.table.equals("kind", KIND_REGION)]["kernel"].tolist()) for m in (baseline, current)]
    common = paths[0] & paths[1]
    notes = []
    for side, own in (("baseline", paths[0] - common), ("current run", paths[1] - common)):
        for path in sorted(own):
            home = _one_sided(path, common)
            notes.append(f"region `{path}`: in the {side} only (a range dropped, added or renamed): its kernels are "
                         f"compared under {f'`{home}`' if home else 'no region'}")
    if not notes:
        return baseline, current, []
    return _rehomed(baseline, common), _rehomed(current, common), notes


def time_resolution(*measurements: Measurement) -> float:
    """The coarsest time step of these traces' values (ns): 1000 where a trace wrote whole microseconds; 0 where
    none says. A group's floor never shrinks below it (``repeats``): a shift of one step is rounding."""
    steps = [m.settings.get(RESOLUTION_SETTING) for m in measurements if is_timeline(m)]
    return max([float(s) for s in steps if isinstance(s, (int, float)) and not isinstance(s, bool) and s > 0],
               default=0.0)


def _module_loading(settings: Any) -> dict[str, float]:
    """Per region, the host time in first launch calls its measurement left out; none where absent or malformed."""
    text = settings.get(MODULE_LOADING_SETTING) if isinstance(settings, dict) else None
    found = parse_json_or_none(text) if isinstance(text, str) else None
    if not isinstance(found, dict):
        return {}
    return {str(k): float(v) for k, v in found.items()
            if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)}


NOTED_LOADING_NS = 100_000.0
HELD_SHARE = 0.9  # a range whose left-out time a range inside it holds this much of, on both sides, is that one's


def module_loading_notes(baseline: Measurement, current: Measurement) -> list[str]:
    """A note per region whose wall time left out a kernel's first launch call (CUDA's lazy module loading: host
    time of milliseconds that is neither the code's nor the kernel's). Only that call's time is left out; the rest
    of the region is judged. Only regions both runs hold (one run's region is compared under another, whose note
    this is); a region inside others that holds (nearly) all of their left-out time speaks for them in one note."""
    before, after = _module_loading(baseline.settings), _module_loading(current.settings)
    both = _region_paths(baseline) & _region_paths(current)
    noted = [r for r in sorted(set(before) | set(after))
             if r in both and max(before.get(r, 0.0), after.get(r, 0.0)) >= NOTED_LOADING_NS]
    around: dict[str, int] = {}  # per region that speaks for others: how many ranges around it it speaks for
    for region in noted:
        speaker = region
        for inner in noted:  # sorted: the deepest range inside it that holds its time comes last
            if inner.startswith(region + REGION_SEPARATOR) and all(
                    side.get(inner, 0.0) >= HELD_SHARE * side.get(region, 0.0) for side in (before, after)):
                speaker = inner
        around[speaker] = around.get(speaker, -1) + 1
    notes = []
    for region in noted:
        if region not in around:
            continue
        sides = " → ".join(duration(side.get(region, 0.0)) for side in (before, after))
        others = around[region]
        ranges = "the range" if others == 1 else f"the {others} ranges"
        where = f"region `{region}`" + (f" and {ranges} around it" if others else "")
        notes.append(f"{where}: {sides} of kernels' first launch calls (CUDA's lazy module loading) left out of "
                     f"{'their' if others else 'its'} wall time and GPU idle; warm the kernels up before the region, "
                     "or set CUDA_MODULE_LOADING=EAGER")
    return notes + _cold_gap_notes(baseline, current)


def _region_paths(measurement: Measurement) -> set[str]:
    """The regions (range stacks) a measurement times, as its region rows name them."""
    table = measurement.table
    return {str(path) for path in table[table.equals("kind", KIND_REGION)]["region"].tolist()}


def _longest_gaps(settings: Any) -> dict[str, tuple[float, str]]:
    text = settings.get(LONGEST_GAP_SETTING) if isinstance(settings, dict) else None
    found = parse_json_or_none(text) if isinstance(text, str) else None
    return {str(path): (float(gap[0]), str(gap[1])) for path, gap in (found.items() if isinstance(found, dict) else ())
            if isinstance(gap, list) and len(gap) == 2 and isinstance(gap[0], (int, float)) and math.isfinite(gap[0])}


def _cold_gap_notes(baseline: Measurement, current: Measurement) -> list[str]:
    """A note where a trace without ranges that began cold (a one-shot run) moved its longest GPU idle gap outside
    first launch calls: host time no rule can tell from the code's (a library's first call initialising it, its
    files read from disk, a stall), judged; it names the GPU work that waited for it."""
    before, after = _longest_gaps(baseline.settings), _longest_gaps(current.settings)
    notes = []
    for region in sorted(set(before) & set(after)):
        (then, first), (now, second) = before[region], after[region]
        if abs(now - then) < max(0.1 * min(then, now), 1_000_000.0):
            continue
        then_side = duration(then) + ("" if first == second else f" before `{first}`")
        notes.append(f"region `{region}`: a one-shot run from a cold start (no ranges): its longest GPU idle gap outside "
                     f"first launch calls went {then_side} → {duration(now)} before `{second}`, host time such as a "
                     "library's first call (cuBLAS initialises on the first matrix multiply), judged like any; annotate the "
                     "code you gate (record_function) and profile it after warm-up steps")
    return notes


def settings_source(settings: dict[str, Any] | Sequence[Any]) -> str:
    """"timeline" or "ncu": which source measured a measurement with these settings."""
    return TIMELINE if isinstance(settings, dict) and settings.get(SOURCE_SETTING) == TIMELINE else "ncu"
