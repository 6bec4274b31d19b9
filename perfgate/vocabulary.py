"""The words every stage shares: statuses, verdicts, kinds, ncu outcomes, and a few facts about ncu.

Stdlib only: the pytest plugin (with ``--perfgate`` off too), the renderers and ``publish`` import it. Each fact
lives here once; modules import it rather than restating it.
"""

from __future__ import annotations

import enum
from types import MappingProxyType
from typing import Any, Mapping, Sequence

# The empty default of a record's mapping field (thresholds, kernel aliases, a table's settings): one object
# shared by every record, so read-only.
NO_ENTRIES: Mapping[Any, Any] = MappingProxyType({})

# What ``perfgate compare`` and ``baseline`` read (``perfgate.collect``), for help texts and refusals.
# The table of readers names these (collect.readers.readable_inputs, which a test holds equal to this): here for the
# commands' help, which must not load the readers.
READABLE_INPUTS = ("a .ncu-rep, ncu --csv output (--page details or raw), a pytest-benchmark JSON, a perfgate "
                   "baseline, a PyTorch profiler trace (.json) or an Nsight Systems SQLite export")


class Status(str, enum.Enum):
    """Of a compared metric, or of a launch (the worst of its gated metrics)."""

    REGRESSION = "regression"
    # Repeated launches judged as one sample: the change's confidence interval straddles the limit, so
    # neither a regression nor a pass can be claimed. Shown and counted apart; does not fail the gate.
    INCONCLUSIVE = "inconclusive"
    IMPROVEMENT = "improvement"
    UNCHANGED = "unchanged"
    NEW = "new"
    MISSING = "missing"
    NO_DATA = "no data"
    INFO = "info"  # metric rows only: shown to explain, not gated


# Display order: what needs attention first.
STATUS_ORDER = (Status.REGRESSION, Status.INCONCLUSIVE, Status.NO_DATA, Status.MISSING, Status.NEW, Status.IMPROVEMENT,
                Status.UNCHANGED, Status.INFO)
# Each status value's place in that order: sorting by it puts what needs attention first.
STATUS_RANK: dict[str, int] = {s.value: i for i, s in enumerate(STATUS_ORDER)}


class Verdict(str, enum.Enum):
    """Of a whole comparison or report, worst first. Only "pass" is green: a gate that measured nothing, or
    whose changes could be neither confirmed nor ruled out, must not look like one that passed."""

    FAIL = "fail"  # a regression, or a perf test that failed
    NOT_MEASURED = "not measured"  # nothing was compared, or perf tests could not be measured (no GPU, no ncu...)
    INCONCLUSIVE = "inconclusive"  # measured, but some change straddles its threshold (repeated launches)
    PASS = "pass"


VERDICT_RANK: dict[str, int] = {v.value: i for i, v in enumerate(Verdict)}


def worst_verdict(*verdicts: str) -> str:
    return min(verdicts, key=lambda v: VERDICT_RANK.get(v, -1)) if verdicts else Verdict.NOT_MEASURED.value


# Kinds of launch in the normalized table (see perfgate.table).
KIND_KERNEL = "kernel"  # an ncu launch
KIND_BENCHMARK = "benchmark"  # a pytest-benchmark benchmark
KIND_REGION = "region"  # a per-NVTX-region total made from kernel launches
# The end of a launch's code_why where the same-code rule held its time (compare.same_code): the history keeps such
# a launch's timing changes as A/A samples (history.record).
SAME_CODE_HELD = "its time is judged unchanged"
# The note an update's report carries ("--perfgate-update: baselines written: ..."): a report of new launches
# that has it was a first recording, not a run that still needs its baselines.
UPDATE_NOTE = "--perfgate-update: "
REGION_SEPARATOR = " > "  # between nested NVTX regions: "layer1 > attention"
# The overall total (``regions``: of every region's launches, or the whole report's where it has no region) and the
# total of the launches outside every region beside regions (``regions.add_outside_total``).
TOTAL = "total"
OUTSIDE = "outside any region"
REPLAY_PASSES = "replay_passes"  # a measurement's setting: the most replay passes any of its launches took
KINDS = (KIND_KERNEL, KIND_BENCHMARK, KIND_REGION)


def is_benchmark_metric(metric: str) -> bool:
    """pytest-benchmark statistics (``time.min``...), not ncu metrics."""
    return metric.startswith("time.") or metric in ("rounds", "ops")


# The NVTX domain of perfgate.region(): the ncu filter, the reader and the fixture all use it.
NVTX_DOMAIN = "perfgate"

# Device and launch attributes: the GPU's identity and the grid/block columns. They cost no replay pass.
DEVICE_METRICS: tuple[str, ...] = (
    "device__attribute_display_name",
    "device__attribute_compute_capability_major",
    "device__attribute_compute_capability_minor",
)
DIM_METRICS: tuple[str, ...] = tuple(f"launch__{what}_dim_{axis}" for what in ("grid", "block") for axis in "xyz")
IDENTITY_METRICS: tuple[str, ...] = (*DEVICE_METRICS, *DIM_METRICS)


class NcuOutcome(str, enum.Enum):
    """What one profiled run of ncu came to (perfgate.plugin.ncu_run.diagnose_ncu_run)."""

    OK = "ok"
    TIMEOUT = "timeout"
    NO_PERMISSION = "no-permission"
    NO_KERNELS = "no-kernels"
    ERROR = "error"  # ncu itself failed (bad metric, cannot attach...)
    APP_ERROR = "app-error"  # ncu ran fine; the profiled program exited non-zero or crashed


# How to get GPU performance counters when the driver restricts them to admins (ERR_NVGPUCTRPERM).
PERMISSION_FIX = ("run as root or with CAP_SYS_ADMIN (CAP_PERFMON on driver R565 and newer); in a container add "
                  "--cap-add=SYS_ADMIN; or on the host put 'options nvidia NVreg_RestrictProfilingToAdminUsers=0' "
                  "in /etc/modprobe.d/ and reboot")


# The speed-of-light percentages a kernel's bound is read from (Nsight Compute's "GPU Speed Of Light
# Throughput" section): compute (SM) and memory throughput, each as % of the device's sustained peak.
SOL_COMPUTE_METRIC = "sm__throughput.avg.pct_of_peak_sustained_elapsed"
SOL_MEMORY_METRIC = "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed"
# The bound: the larger of the two names it when it reaches this share of peak, else the kernel is latency-bound
# (neither unit is busy: too little parallelism, stalls). Nsight Compute's own "Bottleneck" rule calls 80% high
# throughput and warns below 60%; 60% is where a unit is busy enough to be what limits the kernel.
BOUND_MIN_PERCENT = 60.0


class Bound(str, enum.Enum):
    MEMORY = "memory"
    COMPUTE = "compute"
    LATENCY = "latency"


def bound_of(compute: float | None, memory: float | None) -> str | None:
    """``memory``, ``compute`` or ``latency`` from the two speed-of-light percentages; None without both."""
    if compute is None or memory is None:
        return None
    if max(compute, memory) < BOUND_MIN_PERCENT:
        return Bound.LATENCY.value
    return Bound.MEMORY.value if memory >= compute else Bound.COMPUTE.value


def total_label(region: str) -> str:
    """How a line names a region's total: ``region total forward``; TOTAL and OUTSIDE by what they hold."""
    return {TOTAL: "the overall total", OUTSIDE: "the total of the launches outside any region"}.get(
        region, f"region total {region}")


def some_of(names: Sequence[str], most: int) -> str:
    """The first ``most`` names and how many more: a note naming kernels or regions stays a line one can read."""
    return ", ".join(names[:most]) + (f" and {len(names) - most} more" if len(names) > most else "")
