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

from perfgate.collect.timeline.model import Trace
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
    starts = sorted(range(len(trace.ops)), key=lambda i: trace.ops[i].start)
    regions: dict[str, Any] = {}
    total = 0
    for path, entries in list(by_path.items())[:MAX_REGIONS]:
        chosen = _representative(entries)
        lo, hi = chosen.start, chosen.end
        own = set(chosen.ops)
        lanes: dict[str, list[list[Any]]] = defaultdict(list)
        kept = 0
        for index in starts:
            op = trace.ops[index]
            if op.start >= hi:
                break
            if op.end <= lo:
                continue
            if kept >= MAX_OPS or total >= MAX_TOTAL_OPS:
                break
            lanes[f"stream {op.stream}"].append([max(op.start - lo, 0), min(op.end, hi) - max(op.start, lo),
                                                 op.kind, op.name[:MAX_NAME], int(index in own)])
            kept += 1
            total += 1
        regions[path] = {"wall": hi - lo, "entries": len(entries), "lanes": dict(lanes),
                         "idle_pct": round(chosen.values[IDLE_SHARE], 2),
                         "lead": round(chosen.values[HOST_LEAD])}
    return json.dumps({"version": 1, "regions": regions}, separators=(",", ":")) if regions else ""
