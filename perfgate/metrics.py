"""What perfgate knows about metrics: which direction is worse, and which ones gate by default.

The default gated set is deliberately small. Work counters (bytes, instructions) barely move
between runs of the same code, so they get tight tolerances; duration is the number users
care about but jitters, so it gets a looser one. Throughput and occupancy percentages explain a
change but do not fail the gate on their own: a kernel that got faster must not fail because its
DRAM throughput % dropped.
"""

from __future__ import annotations

import enum
import math
import re
from typing import NamedTuple

from perfgate.derived import DERIVED, POINT_METRICS
from perfgate.errors import ConfigError
from perfgate.vocabulary import is_benchmark_metric


class Direction(enum.Enum):
    LOWER_IS_BETTER = "lower"
    HIGHER_IS_BETTER = "higher"
    NEUTRAL = "neutral"  # a change is reported, never called better or worse


class Threshold(NamedTuple):
    """How much worse a metric may get before it is a regression.

    A change is a regression only when it is worse than *every* limit given: ``5%+1000`` means
    "more than 5% and more than 1000 units", which keeps tiny kernels from failing on jitter.
    ``relative`` is a fraction (0.05 = 5%); ``absolute`` is in the metric's base unit.
    ``gating=False`` shows the metric and its change but never fails the gate. ``floor`` (``>=60``): a value
    below it is a regression whatever the change (``derived.roofline_pct >= 60``); a spec of a floor alone gates
    on the floor alone.
    """

    relative: float | None = None
    absolute: float | None = None
    gating: bool = True
    floor: float | None = None

    @property
    def spec(self) -> str:
        if not self.gating:
            return "off"
        parts = []
        if self.relative is not None:
            parts.append(f"{self.relative * 100:g}%")
        if self.absolute is not None:
            parts.append(f"{self.absolute:g}")
        if self.floor is not None:
            parts.append(f">={self.floor:g}")
        return "+".join(parts) or "0%"


OFF = Threshold(gating=False)

_SPEC_PART = re.compile(r"^\s*(?P<floor>>=)?\s*(?P<num>[0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?)\s*(?P<pct>%?)\s*$")


MAX_RELATIVE_PERCENT = 1000.0  # a limit past a tenfold change is a typo, or a way to gate nothing


def parse_threshold(spec: str) -> Threshold:
    """Parse ``5%``, ``1000``, ``5%+1000``, a floor ``>=60`` (alone or with them: ``5+>=60``) or ``off``."""
    text = str(spec).strip().lower()
    if text in ("off", "none", "no", "false"):
        return OFF
    relative: float | None = None
    absolute: float | None = None
    floor: float | None = None
    for part in text.split("+"):
        match = _SPEC_PART.match(part)
        if not match:
            raise ConfigError(
                f"bad threshold {spec!r}: use a relative limit like '5%', an absolute one in the metric's "
                "base unit like '1000', both like '5%+1000', a floor the value must stay at or above like '>=60', "
                "or 'off'"
            )
        number = float(match["num"])
        if not math.isfinite(number):
            # 1e999 reads as infinity: a limit nothing can exceed would gate nothing, silently.
            raise ConfigError(f"bad threshold {spec!r}: {match['num']} is not a finite number; a limit that "
                              "nothing exceeds gates nothing (use 'off' to show a metric without gating it)")
        if match["floor"]:
            if floor is not None or match["pct"]:
                raise ConfigError(f"bad threshold {spec!r}: one floor, in the metric's own unit (>=60 for 60%)")
            floor = number
            continue
        if match["pct"] and number > MAX_RELATIVE_PERCENT:
            raise ConfigError(f"bad threshold {spec!r}: {match['num']}% is beyond any change a run shows, so it "
                              f"would gate nothing (at most {MAX_RELATIVE_PERCENT:g}%; 'off' shows a metric "
                              "without gating it)")
        if match["pct"]:
            if relative is not None:
                raise ConfigError(f"bad threshold {spec!r}: two relative limits")
            relative = number / 100.0
        else:
            if absolute is not None:
                raise ConfigError(f"bad threshold {spec!r}: two absolute limits")
            absolute = number
    return Threshold(relative=relative, absolute=absolute, floor=floor)


def parse_threshold_assignment(text: str) -> tuple[str, Threshold]:
    """Parse ``METRIC=SPEC`` as given to ``--threshold``."""
    name, sep, spec = text.partition("=")
    if not sep or not name.strip():
        raise ConfigError(f"bad --threshold {text!r}: expected METRIC=SPEC, e.g. gpu__time_duration.sum=5%")
    return name.strip(), parse_threshold(spec)


class MetricInfo(NamedTuple):
    name: str
    label: str
    direction: Direction
    threshold: Threshold
    why: str
    time_like: bool = False  # measures time, not work: repeated launches are judged as a sample (see is_time_like)


# The curated default set. Order is display order.
CATALOG: tuple[MetricInfo, ...] = (
    MetricInfo(
        "gpu__time_duration.sum", "duration", Direction.LOWER_IS_BETTER, Threshold(relative=0.05, absolute=2000.0),
        "Kernel time: what users feel. Under ncu's base clocks on an H100, same-code runs moved <= 0.9% for "
        "kernels of 80 us and more, but up to 4.7% (0.96 us) for 20 us kernels; so 5% and at least 2 us.",
        time_like=True,
    ),
    MetricInfo(
        "dram__bytes_read.sum", "DRAM read", Direction.LOWER_IS_BETTER, Threshold(relative=0.02, absolute=4096.0),
        "Bytes read from device memory: a work counter (<= 0.6% between same-code runs on an H100, caches "
        "flushed); a change means the access pattern changed (uncoalescing, lost reuse).",
    ),
    MetricInfo(
        "dram__bytes_write.sum", "DRAM write", Direction.LOWER_IS_BETTER, Threshold(relative=0.10, absolute=262144.0),
        "Bytes written back to device memory: less steady than reads, because what is written back during "
        "the kernel depends on L2 evictions (H100, 50 MB L2: same-code runs moved up to 6.6% on a 1.4 MB "
        "write, 2.7% on 13 MB); so 10% and at least 256 KiB.",
    ),
    MetricInfo(
        "smsp__inst_executed.sum", "instructions", Direction.LOWER_IS_BETTER, Threshold(relative=0.01),
        "Warp instructions executed: deterministic for the same code and input (0 to 0.0001% on an H100); 1% "
        "catches a lost unroll or a new bounds check.",
    ),
    MetricInfo(
        "launch__registers_per_thread", "registers", Direction.LOWER_IS_BETTER, OFF,
        "Registers per thread: explains occupancy and spill changes; shown, not gated.",
    ),
    MetricInfo(
        "sm__throughput.avg.pct_of_peak_sustained_elapsed", "SM throughput %", Direction.HIGHER_IS_BETTER, OFF,
        "Compute speed-of-light: explains why time moved; not gated on its own.",
    ),
    MetricInfo(
        "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed", "memory throughput %",
        Direction.HIGHER_IS_BETTER, OFF,
        "Memory speed-of-light: explains why time moved; not gated on its own.",
    ),
    MetricInfo(
        "sm__warps_active.avg.pct_of_peak_sustained_active", "achieved occupancy %", Direction.HIGHER_IS_BETTER, OFF,
        "Achieved occupancy: explains latency-hiding changes; not gated on its own.",
    ),
    MetricInfo(
        "time.min", "min time", Direction.LOWER_IS_BETTER, Threshold(relative=0.20),
        "pytest-benchmark minimum: load on a shared CI runner only ever adds time, so the fastest "
        "round is the steadiest estimate of the code's own cost; 20%, and when raw timings exist on "
        "both sides the slowdown must also be statistically significant (Mann-Whitney U).",
    ),
    MetricInfo(
        "time.median", "median time", Direction.LOWER_IS_BETTER, OFF,
        "pytest-benchmark median: the typical round, shown beside the minimum.",
    ),
    MetricInfo(
        "time.stddev", "stddev", Direction.LOWER_IS_BETTER, OFF,
        "pytest-benchmark standard deviation: shows how noisy the measurement was.",
    ),
)

# The timeline source's metrics (``perfgate.collect.timeline``; docs/timeline.md). Kept apart from CATALOG: ncu
# cannot collect them, and a comparison of traces compares these instead of ncu's (``TIMELINE_METRICS``).
# Thresholds from the H200 fixtures (tests/data/h200/timeline, tests/timeline/test_timeline_thresholds.py), a region's
# time being its host range: between single entries (one step each) of unchanged runs, leaving out each trace's
# first traced step (CUPTI's first use), the MLP's host work before its first layer took 99-373 us, so the step's
# host lead moved up to +252 us and its GPU idle up to +279 us, layer0's wall time +183 us (+22%); a host
# synchronisation after each MLP layer moved the step's wall time +8% and its GPU idle 0.37 -> 1.08 ms.
TIMELINE_CATALOG: tuple[MetricInfo, ...] = (
    MetricInfo(
        "timeline.wall_time", "wall time", Direction.LOWER_IS_BETTER, Threshold(relative=0.08, absolute=200000.0),
        "A region's wall time, median over its entries (steps): from the range's start on the host to the later "
        "of its end and the end of the GPU work it launched. 8% and at least 20 us.", time_like=True,
    ),
    MetricInfo(
        "timeline.gpu_idle", "GPU idle", Direction.LOWER_IS_BETTER, Threshold(relative=0.50, absolute=300000.0),
        "Nanoseconds of the region's wall time with nothing running on the GPU (no kernel, copy or set on any "
        "stream): a host synchronisation or a starved GPU. 50% and at least 40 us.", time_like=True,
    ),
    MetricInfo(
        "timeline.host_lead", "host lead", Direction.LOWER_IS_BETTER, Threshold(relative=0.50, absolute=500000.0),
        "Nanoseconds from the region's start on the host to the start of its first GPU work: what a data loader, "
        "a tokenizer or Python costs before the GPU gets anything. 50% and at least 0.5 ms.",
        time_like=True,
    ),
    MetricInfo(
        "timeline.kernel_duration", "GPU time", Direction.LOWER_IS_BETTER, Threshold(relative=0.10, absolute=2000.0),
        "A kernel's duration as traced (the GPU's own clocks, not ncu's locked base clocks, other work beside "
        "it): repeated launches are judged as a sample; 10% and at least 2 us.", time_like=True,
    ),
    MetricInfo("timeline.gpu_idle_pct", "GPU idle %", Direction.LOWER_IS_BETTER, OFF,
               "GPU idle as a share of the region's wall time: shown (a short region's share jumps by points)."),
    MetricInfo("timeline.launch_overhead", "launch overhead", Direction.LOWER_IS_BETTER, OFF,
               "Wall time minus the region's own GPU busy time (tritonbench's definition): shown.", time_like=True),
    MetricInfo("timeline.gpu_busy", "GPU busy", Direction.LOWER_IS_BETTER, OFF,
               "The union of the region's own kernel, copy and set intervals (overlapping streams counted once): "
               "shown.", time_like=True),
    MetricInfo("timeline.kernel_time", "kernel time", Direction.LOWER_IS_BETTER, OFF,
               "Summed durations of the region's kernels (overlap counted twice): shown.", time_like=True),
    MetricInfo("timeline.kernel_count", "kernels", Direction.NEUTRAL, OFF,
               "Kernels the region launched: shown, to say whether the kernels changed."),
)
TIMELINE_METRICS: tuple[str, ...] = tuple(m.name for m in TIMELINE_CATALOG)

# The derived metrics (``perfgate.derived``: each one row there, its formula beside it), computed when compared.
DERIVED_CATALOG: tuple[MetricInfo, ...] = tuple(
    MetricInfo(d.name, d.label, Direction(d.direction), parse_threshold(d.threshold), d.why, d.time_like)
    for d in DERIVED)

CATALOG_BY_NAME: dict[str, MetricInfo] = {m.name: m for m in (*CATALOG, *TIMELINE_CATALOG, *DERIVED_CATALOG)}

DEFAULT_KERNEL_METRICS: tuple[str, ...] = tuple(m.name for m in CATALOG if not is_benchmark_metric(m.name))

# Metrics that cost ncu extra replay passes of every kernel (measured alone, one launch, H100, ncu 2025.3.1;
# every other default metric and launch fact fits in 1 pass, and the default set without these in 1 pass,
# with them in 10). ``pytest --perfgate`` collects them only when asked for by name; ``perfgate compare``
# shows them whenever both inputs have them.
MULTI_PASS_METRICS: dict[str, int] = {
    "sm__throughput.avg.pct_of_peak_sustained_elapsed": 9,
    "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed": 6,
}
DEFAULT_BENCHMARK_METRICS: tuple[str, ...] = tuple(m.name for m in CATALOG if is_benchmark_metric(m.name))

# DRAM byte counters: their absolute floor grows with the launch's DRAM traffic (read + written): at least
# TRAFFIC_FLOOR_SHARE of it. Same-code reruns moved a launch's DRAM read by up to 0.55% of its traffic and its
# write by up to 0.83% (perfgate's H100 MLP pairs; 0.18% on the corpus T4 pair), and torch's RNG kernel (241 MB
# written) read 19.5 KB -> 36.1 KB on two runs of the same code (GH200): a few KB against a 4 KB floor. Bytes
# below 1% of a kernel's traffic cannot move its memory time by more than 1% (docs/matching.md, "Floors").
DRAM_BYTE_METRICS: tuple[str, ...] = ("dram__bytes_read.sum", "dram__bytes_write.sum")
TRAFFIC_FLOOR_SHARE = 0.01
# Metrics whose absolute floor says what size of change matters, not how much one launch jitters: a group of
# repeated launches judges its shift against the whole floor, never divided by √n or lowered to the measured
# spread (a fill kernel's DRAM read of 0-600 B per launch, measured 200 times, moved by 160 B: nothing that can
# move its memory time). Time's floor guards against jitter, which averages out (docs/matching.md, "Floors").
# A share's floor in points (the roofline's 5) says the same: a fall of 0.3 points measured ever so well is none.
RELEVANCE_FLOOR_METRICS: tuple[str, ...] = (*DRAM_BYTE_METRICS, *sorted(POINT_METRICS))

# Launch facts compared to explain a row ("launch config changed"), never gated.
LAUNCH_CONFIG_METRICS: tuple[str, ...] = (
    "launch__registers_per_thread",
    "launch__shared_mem_per_block_static",
    "launch__shared_mem_per_block_dynamic",
)

_LOWER_HINTS = ("time", "duration", "bytes", "inst_executed", "registers", "sectors", "cycles", "wavefronts",
                "requests", "spill", "stall", "bank_conflict", "passes")
_HIGHER_HINTS = ("pct_of_peak", "throughput", "hit_rate", "warps_active", "occupancy", "per_second", "efficiency")


def can_fail(metric: str, threshold: Threshold | None) -> bool:
    """Whether a change of ``metric`` can fail the gate: it has a gating threshold and a direction that is
    worse one way (a neutral metric is information only)."""
    return threshold is not None and threshold.gating and direction_of(metric) is not Direction.NEUTRAL


def direction_of(metric: str) -> Direction:
    """Direction of any metric: the catalog's, else a guess from ncu's naming conventions."""
    info = CATALOG_BY_NAME.get(metric)
    if info is not None:
        return info.direction
    name = metric.lower()
    if any(hint in name for hint in _HIGHER_HINTS):
        return Direction.HIGHER_IS_BETTER
    if any(hint in name for hint in _LOWER_HINTS) or name.endswith((".sum", ".max")):
        return Direction.LOWER_IS_BETTER
    return Direction.NEUTRAL


# Names of time-like metrics outside the catalog: elapsed time and cycles move with clocks, caches and
# co-running work; work counters (bytes, instructions, sectors, requests) do not.
_TIME_LIKE_HINTS = ("time_duration", "cycles_elapsed", "cycles_active")


def is_time_like(metric: str) -> bool:
    """Whether a metric measures time rather than counting work: the catalog's word, else its name.

    A time-like metric jitters from launch to launch, so the repeated launches of a kernel are judged
    together, as a sample (``perfgate.compare.repeats``); work counters stay judged launch by launch.
    """
    info = CATALOG_BY_NAME.get(metric)
    if info is not None:
        return info.time_like
    return any(hint in metric for hint in _TIME_LIKE_HINTS)


# Rates and shares of peak are made from the time: they move with it (ncu's ``.per_second``, a derived
# ``derived.flop_per_s``, ``derived.roofline_pct``: achieved FLOP/s against the roof).
_TIMING_HINTS = ("per_second", "pct_of_peak", "throughput", "roofline_pct")


def is_timing(metric: str) -> bool:
    """Whether a metric measures time or is made from it: what the same machine code may take more or less of
    (``perfgate.compare.same_code``), unlike the work it counts."""
    return is_time_like(metric) or metric.endswith("_per_s") or any(hint in metric for hint in _TIMING_HINTS)


def label_of(metric: str) -> str:
    info = CATALOG_BY_NAME.get(metric)
    return info.label if info else metric


def default_thresholds() -> dict[str, Threshold]:
    return {m.name: m.threshold for m in (*CATALOG, *TIMELINE_CATALOG, *DERIVED_CATALOG)}
