"""A small picture of each region's timeline, kept with the measurement so a report can draw it.

One entry per top-level region (and ``step``): its representative entry (the one with the median wall time),
as lanes of GPU ops by stream, times in nanoseconds from the entry's start. It travels in the measurement's
settings as a JSON string (``timeline_sketch``), so a baseline written from a trace keeps its picture and the
HTML report draws baseline and current one above the other (``perfgate.render.timeline_html``). Capped: a
region keeps its first ``MAX_OPS`` ops, the whole sketch ``MAX_TOTAL_OPS``.
"""

from __future__ import annotations

import json
from collections import defaultdict
from typing import Any

import numpy as np

from perfgate.collect.timeline.model import OpColumns, Trace
from perfgate.collect.timeline.region_entry import HOST_LEAD, IDLE_SHARE, WALL_TIME, RegionInstance
from perfgate.vocabulary import REGION_SEPARATOR

SKETCH_SETTING = "timeline_sketch"
MAX_OPS, MAX_TOTAL_OPS, MAX_REGIONS, MAX_NAME = 400, 3000, 12, 48


def _representative(entries: list[RegionInstance]) -> RegionInstance:
    ordered = sorted(entries, key=lambda e: e.values[WALL_TIME])
    return ordered[len(ordered) // 2]


def sketch(trace: Trace, instances: list[RegionInstance]) -> str:
    """The sketch as compact JSON; "" when no region launched anything."""
    by_path: dict[str, list[RegionInstance]] = defaultdict(list)
    for instance in instances:
        if REGION_SEPARATOR not in instance.path:
            by_path[instance.path].append(instance)
    ops = OpColumns.of(trace.ops)
    by_start = np.argsort(ops.start, kind="stable")
    sorted_starts = ops.start[by_start]
    regions: dict[str, Any] = {}
    total = 0
    for path, entries in list(by_path.items())[:MAX_REGIONS]:
        chosen = _representative(entries)
        lo, hi = chosen.start, chosen.end
        before_end = by_start[:int(np.searchsorted(sorted_starts, hi, side="left"))]  # the ops that start before hi
        shown = before_end[ops.end[before_end] > lo][:max(min(MAX_OPS, MAX_TOTAL_OPS - total), 0)]
        own = np.isin(shown, chosen.ops)
        lanes: dict[str, list[list[Any]]] = defaultdict(list)
        for index, mine in zip(shown.tolist(), own.tolist(), strict=True):
            start, end = int(ops.start[index]), int(ops.end[index])
            lanes[f"stream {int(ops.stream[index])}"].append([max(start - lo, 0), min(end, hi) - max(start, lo),
                                                              ops.kinds[int(ops.kind[index])],
                                                              ops.texts[int(ops.name[index])][:MAX_NAME], int(mine)])
        total += int(shown.size)
        regions[path] = {"wall": hi - lo, "entries": len(entries), "lanes": dict(lanes),
                         "idle_pct": round(chosen.values[IDLE_SHARE], 2),
                         "lead": round(chosen.values[HOST_LEAD])}
    return json.dumps({"version": 1, "regions": regions}, separators=(",", ":")) if regions else ""
