"""What to compare and how strictly: the options of one comparison, resolved against the metric catalog."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import NamedTuple

from perfgate.derived import DECLARED_WORK_METRICS, derived_inputs, expand_groups
from perfgate.metrics import (
    DEFAULT_BENCHMARK_METRICS,
    DEFAULT_KERNEL_METRICS,
    LAUNCH_CONFIG_METRICS,
    Threshold,
    can_fail,
    default_thresholds,
)
from perfgate.vocabulary import NO_ENTRIES

# The time metric of each kind: a kernel's is what the speed-up trade-off rule looks at, and each
# names the placeholder row of a launch whose metrics were all filtered out.
TIME_METRIC = "gpu__time_duration.sum"
BENCHMARK_TIME_METRIC = "time.min"


class CompareOptions(NamedTuple):
    """What to compare and how strictly. ``thresholds`` overrides the catalog defaults per metric."""

    thresholds: Mapping[str, Threshold] = NO_ENTRIES
    metrics: Sequence[str] | None = None  # None: the default set for each kind
    allow_device_mismatch: bool = False
    significance: float = 0.01  # two-sided p-value a benchmark slowdown must beat when raw timings exist
    # Pairing rules for renamed kernels: a glob pattern (fnmatch) -> the name that kernels matching it are
    # known by. A kernel in the baseline only and one in the current run only that come to the same name
    # in the same region are compared as one (``[tool.perfgate] kernel_aliases``; see ``renames``).
    kernel_aliases: Mapping[str, str] = NO_ENTRIES
    # Coverage of the interval around the change of a kernel launched repeatedly (see ``repeats``).
    confidence: float = 0.95
    # Thresholds of single series, (kernel, region, metric) -> threshold, over the metric's for that kernel only
    # (``series_thresholds``; learned from the history).
    series_thresholds: Mapping[tuple[str, str, str], Threshold] = NO_ENTRIES
    # Kernels missing and new in the same region that no rule paired are "not measured" (they may be one kernel
    # renamed, whose change nobody judged) unless accepted: ``--accept-unpaired-kernels`` or
    # ``accept_unpaired_kernels`` in [tool.perfgate] or the perfgate marker.
    accept_unpaired_kernels: bool = False
    # Thresholds of the kernels matching a glob pattern, pattern -> {metric: threshold} (``[tool.perfgate]
    # kernel_thresholds``): over the metric's and a series' learned one (what a person wrote wins; ``row_limits``).
    kernel_thresholds: Mapping[str, Mapping[str, Threshold]] = NO_ENTRIES
    # The useful work the compared test declares, in FLOP (``@pytest.mark.perfgate(flops=…)``, ``perfgate compare
    # --flops``): the counted FLOP and their ratio to it are compared, and counted FLOP above
    # ``derived.REDUNDANT_WORK_RATIO`` x it is a finding (redundant work). None: none declared.
    declared_flops: float | None = None

    def effective_thresholds(self) -> dict[str, Threshold]:
        merged = default_thresholds()
        merged.update(self.thresholds)
        return merged

    def gated_metrics(self) -> list[str]:
        """The compared metrics a change can fail (as the comparison judges them)."""
        thresholds = self.effective_thresholds()
        return [m for m in self.compared_metrics() if can_fail(m, thresholds.get(m))]

    def compared_metrics(self) -> tuple[str, ...]:
        """Metrics to show: the chosen set plus every metric that has an explicit threshold."""
        chosen = list(self.metrics) if self.metrics is not None else [*DEFAULT_KERNEL_METRICS,
                                                                      *DEFAULT_BENCHMARK_METRICS]
        per_kernel = [m for table in self.kernel_thresholds.values() for m in table]
        declared = DECLARED_WORK_METRICS if self.declared_flops is not None else ()
        extra = [m for m in [*self.thresholds, *per_kernel, *declared] if m not in chosen]
        return expand_groups([*chosen, *extra])  # a group (``roofline``) stands for its metrics

    def wanted_metrics(self) -> tuple[str, ...]:
        """Metrics a reader must keep: compared ones, the launch facts used for notes, the counters the derived
        metrics among them are computed from."""
        compared = self.compared_metrics()
        return tuple(dict.fromkeys([*compared, *LAUNCH_CONFIG_METRICS, *derived_inputs(compared)]))
