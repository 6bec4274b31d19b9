"""The outcome of a comparison, as plain tables: what render, report and the gate consume."""

from __future__ import annotations

from collections import Counter
from typing import Any, NamedTuple

import numpy as np

from perfgate.columns import Columns
from perfgate.compare.arrays import Ints, Objects
from perfgate.table import Location
from perfgate.verdict import judged_verdict
from perfgate.vocabulary import STATUS_ORDER, STATUS_RANK, Status

_UNCOMPARED = (Status.NEW.value, Status.MISSING.value, Status.NO_DATA.value)


class Comparison(NamedTuple):
    """The outcome of a comparison, as plain tables.

    ``results``: one row per (launch, metric) with columns kind, kernel, demangled, region, ordinal,
    metric, label, unit, baseline, current, change, delta, status, gated, threshold, direction, device,
    and, for the time rows of a kernel launched repeatedly and judged as one (``repeats``): group (its
    id, else -1), n_baseline and n_current (the samples compared, else 0), median_baseline and
    median_current, estimate (the relative change: Hodges-Lehmann), ci_low and ci_high (its interval,
    relative; all NaN elsewhere). The row's status is then the group's; baseline/current/change stay
    the launch's own (n-th against n-th), the per-launch detail.
    ``launches``: one row per launch with columns kind, kernel, demangled, region, ordinal, status,
    device, launch_change (a human note or ""), baseline_kernel (the kernel's name in the baseline,
    which differs from ``kernel`` for a paired rename; "" for a new launch), matched_by ("name",
    "alias", "normalized" or "position" for a paired rename; "" for a launch on one side only) and
    group (the repeated-launch group it belongs to, else -1).
    """

    results: Columns
    launches: Columns
    baseline_source: str
    current_source: str
    baseline_devices: tuple[str, ...]
    current_devices: tuple[str, ...]
    settings: dict[str, Any]
    locations: dict[str, Location]
    notes: tuple[str, ...] = ()  # what the reader must know: metrics not compared, renames, inconclusive kernels...
    # Gated values measured on one side only (ncu's n/a, an unusable cell, a metric one input lacks): each
    # a launch the gate could not judge, so the comparison is "not measured" rather than a pass.
    unmeasured: tuple[tuple[str, str], ...] = ()  # (launch label, cause)
    # Per row of ``results``, its row in ``launches`` (what their key columns say, without matching them
    # again); None where not known.
    result_launch: Ints | None = None
    # Per row of ``results``, a number that only rows with the same metric, label, unit, threshold and direction
    # share (the report's metrics table is made of those columns, found without reading them again); None
    # where not known.
    result_metric: Ints | None = None

    @property
    def regressed(self) -> bool:
        return bool(self.launches.equals("status", Status.REGRESSION.value).any())

    @property
    def inconclusive(self) -> bool:
        """Some kernel's change could be neither confirmed nor ruled out: not a failure, and not a clean pass."""
        return bool(self.launches.equals("status", Status.INCONCLUSIVE.value).any())

    @property
    def verdict(self) -> str:
        return judged_verdict(regressed=self.regressed, unmeasured=bool(self.unmeasured),
                              inconclusive=self.inconclusive)

    def kernel_statuses(self) -> Objects:
        """One status per kernel as the reader counts them: a group of repeated launches judged as one
        counts once, every other launch on its own. A group's status is the worst of its compared
        launches: a launch more or fewer than the baseline (new, missing) or one without values does not
        make the kernel new, missing or "no data" while its other launches were compared."""
        launches = self.launches
        status: Objects = launches["status"]
        if "group" not in launches or not (launches["group"] >= 0).any():
            return status
        grouped = launches["group"] >= 0
        worst: dict[int, tuple[int, str]] = {}
        for group, member in zip(launches["group"][grouped].tolist(), status[grouped].tolist(), strict=True):
            rank = STATUS_RANK[member] + (len(STATUS_RANK) if member in _UNCOMPARED else 0)
            if group not in worst or rank < worst[group][0]:
                worst[group] = (rank, member)
        statuses: Objects = np.concatenate([status[~grouped],
                                            np.array([member for _, member in worst.values()], dtype=object)])
        return statuses

    def counts(self) -> dict[str, int]:
        """Kernels (a group of repeated launches once) and benchmarks by status."""
        found = Counter(self.kernel_statuses().tolist())
        return {s.value: int(found.get(s.value, 0)) for s in STATUS_ORDER if s is not Status.INFO}
