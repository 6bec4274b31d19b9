"""One entry into a region, measured, and the names of the metrics it holds: what the normalized table's region
rows (``perfgate.collect.timeline.measure``) and the region sketch (``perfgate.collect.timeline.sketch``) both
read, kept here so that neither imports the other."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import numpy.typing as npt

WALL_TIME = "timeline.wall_time"
GPU_BUSY = "timeline.gpu_busy"
GPU_IDLE = "timeline.gpu_idle"
IDLE_SHARE = "timeline.gpu_idle_pct"
LAUNCH_OVERHEAD = "timeline.launch_overhead"
KERNEL_COUNT = "timeline.kernel_count"
KERNEL_TIME = "timeline.kernel_time"
HOST_LEAD = "timeline.host_lead"
REGION_UNITS = {WALL_TIME: "ns", GPU_BUSY: "ns", GPU_IDLE: "ns", IDLE_SHARE: "%", HOST_LEAD: "ns",
                LAUNCH_OVERHEAD: "ns", KERNEL_COUNT: "", KERNEL_TIME: "ns"}
MODULE_LOADING = "module_loading"  # an entry's value, not a metric: ns of first launch calls left out


class RegionInstance(NamedTuple):
    """One entry into a region (one step's), measured."""

    path: str
    start: int  # the host range's start (a whole-trace row: its first launch call or GPU work)
    end: int  # the later of the range's end and the end of the GPU work it launched
    ops: npt.NDArray[np.int64]  # indices into trace.ops, ascending
    values: dict[str, float]
