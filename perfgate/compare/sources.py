"""Timeline traces against Nsight Compute reports: never compared; traces compared on the timeline metrics.

A trace's kernel durations are the GPU's own clocks with other work beside them; ncu's are one kernel alone,
replayed with caches flushed under locked clocks. The two are different measurements of time, so a
comparison of one against the other is refused (one line, exit 2). A comparison of two traces compares the
timeline metrics (``perfgate.metrics.TIMELINE_METRICS``) in place of ncu's defaults, and says per region what
moved: ``region `step`: wall +11%, GPU idle 1.0% → 11%, kernels unchanged``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from perfgate.collect.timeline.model import COLD_SETTING, RESOLUTION_SETTING
from perfgate.compare.codes import STATUS_CODE
from perfgate.compare.options import CompareOptions
from perfgate.errors import InputError
from perfgate.limits import parse_json_or_none
from perfgate.metrics import DEFAULT_KERNEL_METRICS, TIMELINE_METRICS
from perfgate.table import Measurement
from perfgate.vocabulary import KIND_KERNEL, KIND_REGION, Status, is_benchmark_metric

if TYPE_CHECKING:
    from perfgate.compare.joining import JoinedRows
    from perfgate.compare.matching import MatchedLaunches
    from perfgate.compare.policies import JudgedRows

SOURCE_SETTING = "source"
TIMELINE = "timeline"
HOST_TIMES = ("timeline.wall_time", "timeline.gpu_idle", "timeline.gpu_idle_pct", "timeline.launch_overhead")


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
    """One line per region whose wall time or GPU idle share moved: what moved, and whether the kernels did."""
    before, after = _values(baseline), _values(current)
    lines = []
    for region, now in after.items():
        then = before.get(region)
        if then is None:
            continue
        parts: list[str] = []
        wall = ("timeline.wall_time", "timeline.wall_time")
        if all(k in then and k in now for k in wall) and then[wall[0]] and \
                abs(now[wall[0]] - then[wall[0]]) / then[wall[0]] >= min_change:
            parts.append(f"wall {_percent(then[wall[0]], now[wall[0]])}")
        idle = "timeline.gpu_idle_pct"
        if idle in then and idle in now and abs(now[idle] - then[idle]) >= 1.0:
            parts.append(f"GPU idle {then[idle]:.1f}% → {now[idle]:.1f}%")
        if not parts:
            continue
        parts.append(_kernels_moved(baseline, current, region, then, now))
        lines.append(f"region `{region}`: {', '.join(parts)}")
    return lines


def _kernels_moved(baseline: Measurement, current: Measurement, region: str, then: dict[str, float],
                   now: dict[str, float]) -> str:
    names_then, names_now = _kernel_names(baseline, region), _kernel_names(current, region)
    time_then, time_now = then.get("timeline.kernel_time", 0.0), now.get("timeline.kernel_time", 0.0)
    if names_then != names_now:
        return f"kernels changed ({int(then.get('timeline.kernel_count', 0))} → {int(now.get('timeline.kernel_count', 0))} a step)"
    if time_then and abs(time_now - time_then) / time_then >= 0.05:
        return f"kernel time {_percent(time_then, time_now)}"
    return "kernels unchanged"


def time_resolution(*measurements: Measurement) -> float:
    """The coarsest time step of these traces' values (ns): 1000 where a trace wrote whole microseconds; 0 where
    none says. A group's floor never shrinks below it (``repeats``): a shift of one step is rounding."""
    steps = [m.settings.get(RESOLUTION_SETTING) for m in measurements if is_timeline(m)]
    return max([float(s) for s in steps if isinstance(s, (int, float)) and not isinstance(s, bool) and s > 0],
               default=0.0)


def _cold(settings: Any) -> set[str]:
    """The cold regions a measurement's settings name; none where the setting is absent or malformed."""
    if not isinstance(settings, dict) or not settings.get(COLD_SETTING):
        return set()
    text = settings[COLD_SETTING]
    found = parse_json_or_none(text) if isinstance(text, str) else None
    return {str(name) for name in found} if isinstance(found, list) else set()


def cold_region_rows(rows: JoinedRows, judged: JudgedRows, launches: MatchedLaunches, baseline: Measurement,
                     current: Measurement) -> tuple[JudgedRows, list[str]]:
    """A region whose wall time holds a kernel's first launch in the process (on either side) has its host-side
    times (wall time, GPU idle, launch overhead) shown as info, not judged: CUDA's lazy module loading in the
    first launch call is host noise of milliseconds (3.9 ms of a 0.28 ms kernel's region on an H200), which
    moved that region's wall time by 10-19% between runs of unchanged code. Its kernels are still judged."""
    cold = _cold(baseline.settings) | _cold(current.settings)
    if not cold or not len(rows.launch_id):
        return judged, []
    frame = launches.frame
    kind, name = frame["kind"][rows.launch_id], frame["kernel"][rows.launch_id]
    metric = np.asarray(rows.names, dtype=object)[rows.metric_code]
    hit = (kind == KIND_REGION) & np.isin(name, sorted(cold)) & np.isin(metric, HOST_TIMES)
    if not hit.any():
        return judged, []
    status, gated = judged.status.copy(), judged.gated.copy()
    status[hit], gated[hit] = STATUS_CODE[Status.INFO], False
    notes = [f"region `{region}`: wall time and GPU idle not judged: the region holds a kernel's first launch in "
             "the process, whose launch call paid CUDA's lazy module loading (warm the kernel up before the region, "
             "or set CUDA_MODULE_LOADING=EAGER)" for region in sorted(set(name[hit].tolist()))]
    return judged._replace(status=status, gated=gated), notes


def settings_source(settings: dict[str, Any] | Sequence[Any]) -> str:
    """"timeline" or "ncu": which source measured a measurement with these settings."""
    return TIMELINE if isinstance(settings, dict) and settings.get(SOURCE_SETTING) == TIMELINE else "ncu"
