"""Compare a current table with a baseline table: matching, thresholds, statistics. No I/O.

Launches are matched by (kind, kernel name, NVTX region, ordinal). Each compared metric gets a
status; a launch's status is the worst of its gated metrics. Metrics without a gating threshold
(throughput %, occupancy, registers) are reported with status ``info``: they explain a change
but never fail the gate.
"""

from __future__ import annotations

import enum
import math
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

import numpy as np
import pandas as pd

from perfgate.errors import DeviceMismatchError
from perfgate.metrics import (
    CATALOG_BY_NAME,
    DEFAULT_BENCHMARK_METRICS,
    DEFAULT_KERNEL_METRICS,
    LAUNCH_CONFIG_METRICS,
    Direction,
    Threshold,
    default_thresholds,
    direction_of,
    label_of,
)
from perfgate.table import ATTR_LOCATIONS, ATTR_SAMPLES, ATTR_SETTINGS, ATTR_SOURCE, LAUNCH_KEY, device_label, devices


class Status(str, enum.Enum):
    REGRESSION = "regression"
    IMPROVEMENT = "improvement"
    UNCHANGED = "unchanged"
    NEW = "new"
    MISSING = "missing"
    NO_DATA = "no data"
    INFO = "info"  # metric rows only: shown to explain, not gated


# Display order: what needs attention first.
STATUS_ORDER = (Status.REGRESSION, Status.NO_DATA, Status.MISSING, Status.NEW, Status.IMPROVEMENT,
                Status.UNCHANGED, Status.INFO)
_STATUS_RANK = {s.value: i for i, s in enumerate(STATUS_ORDER)}
TIME_METRIC = "gpu__time_duration.sum"


@dataclass(frozen=True)
class CompareOptions:
    """What to compare and how strictly. ``thresholds`` overrides the catalog defaults per metric."""

    thresholds: Mapping[str, Threshold] = field(default_factory=dict)
    metrics: Sequence[str] | None = None  # None: the default set for each kind
    allow_device_mismatch: bool = False
    significance: float = 0.01  # two-sided p-value a benchmark slowdown must beat when raw timings exist

    def effective_thresholds(self) -> dict[str, Threshold]:
        merged = default_thresholds()
        merged.update(self.thresholds)
        return merged

    def compared_metrics(self) -> tuple[str, ...]:
        """Metrics to show: the chosen set plus every metric that has an explicit threshold."""
        chosen = list(self.metrics) if self.metrics is not None else [*DEFAULT_KERNEL_METRICS,
                                                                      *DEFAULT_BENCHMARK_METRICS]
        extra = [m for m in self.thresholds if m not in chosen]
        return tuple(dict.fromkeys([*chosen, *extra]))

    def wanted_metrics(self) -> tuple[str, ...]:
        """Metrics a reader must keep: compared ones plus the launch facts used for notes."""
        return tuple(dict.fromkeys([*self.compared_metrics(), *LAUNCH_CONFIG_METRICS]))


@dataclass(frozen=True)
class Comparison:
    """The outcome of a comparison, as plain tables.

    ``results``: one row per (launch, metric) with columns kind, kernel, demangled, region, ordinal,
    metric, label, unit, baseline, current, change, delta, status, gated, threshold, direction, device.
    ``launches``: one row per launch with columns kind, kernel, demangled, region, ordinal, status,
    device, launch_change (a human note or "").
    """

    results: pd.DataFrame
    launches: pd.DataFrame
    baseline_source: str
    current_source: str
    baseline_devices: tuple[str, ...]
    current_devices: tuple[str, ...]
    settings: dict[str, Any]
    locations: dict[str, dict[str, Any]]

    @property
    def regressed(self) -> bool:
        return bool((self.launches["status"] == Status.REGRESSION.value).any())

    @property
    def verdict(self) -> str:
        return "fail" if self.regressed else "pass"

    def counts(self) -> dict[str, int]:
        found = self.launches["status"].value_counts().to_dict()
        return {s.value: int(found.get(s.value, 0)) for s in STATUS_ORDER if s is not Status.INFO}


def check_devices(baseline: pd.DataFrame, current: pd.DataFrame, allow_mismatch: bool) -> None:
    base_devices, cur_devices = devices(baseline), devices(current)
    if allow_mismatch or not base_devices or not cur_devices or set(base_devices) == set(cur_devices):
        return
    base_label = ", ".join(device_label(*d) for d in base_devices)
    cur_label = ", ".join(device_label(*d) for d in cur_devices)
    raise DeviceMismatchError(
        f"{baseline.attrs.get(ATTR_SOURCE, 'baseline')} was measured on {base_label} but "
        f"{current.attrs.get(ATTR_SOURCE, 'current')} on {cur_label}; metrics of different GPUs are not comparable "
        "(keep one baseline per GPU, or pass --allow-device-mismatch to compare anyway)")


def mann_whitney_p(a: Sequence[float], b: Sequence[float]) -> float:
    """Two-sided p-value of the Mann-Whitney U test (normal approximation, tie-corrected)."""
    x, y = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    n1, n2 = x.size, y.size
    if n1 < 3 or n2 < 3:
        return math.nan
    combined = np.concatenate([x, y])
    ranks = pd.Series(combined).rank(method="average").to_numpy()
    u1 = ranks[:n1].sum() - n1 * (n1 + 1) / 2.0
    mean_u = n1 * n2 / 2.0
    _, tie_counts = np.unique(combined, return_counts=True)
    n = n1 + n2
    tie_term = ((tie_counts**3 - tie_counts).sum()) / (n * (n - 1))
    var_u = n1 * n2 / 12.0 * ((n + 1) - tie_term)
    if var_u <= 0:
        return 1.0
    z = (abs(u1 - mean_u) - 0.5) / math.sqrt(var_u)
    return math.erfc(max(z, 0.0) / math.sqrt(2.0))


def _launch_change_notes(merged_facts: pd.DataFrame) -> pd.Series:
    """Per launch, a note like 'grid (2016, 1, 1) → (504, 1, 1); registers 16 → 18' or ''."""
    notes: list[str] = []
    for row in merged_facts.itertuples(index=False):
        parts = []
        for what in ("grid", "block"):
            before, after = getattr(row, f"{what}_b"), getattr(row, f"{what}_c")
            if isinstance(before, str) and isinstance(after, str) and before and after and before != after:
                parts.append(f"{what} {before} → {after}")
        for metric, label in (("launch__registers_per_thread", "registers"),
                              ("launch__shared_mem_per_block_static", "static shared mem"),
                              ("launch__shared_mem_per_block_dynamic", "dynamic shared mem")):
            before, after = getattr(row, f"{metric}_b", math.nan), getattr(row, f"{metric}_c", math.nan)
            if not (pd.isna(before) or pd.isna(after)) and before != after:
                parts.append(f"{label} {before:g} → {after:g}")
        notes.append("; ".join(parts))
    return pd.Series(notes, index=merged_facts.index, dtype=object)


def compare_tables(baseline: pd.DataFrame, current: pd.DataFrame, options: CompareOptions | None = None) -> Comparison:
    """Compare two normalized tables. Raises DeviceMismatchError unless the devices agree."""
    options = options or CompareOptions()
    check_devices(baseline, current, options.allow_device_mismatch)
    thresholds = options.effective_thresholds()
    compared = options.compared_metrics()

    key = list(LAUNCH_KEY)
    launch_cols = [*key, "demangled", "device", "grid", "block"]
    base_launches = baseline.drop_duplicates(key)[launch_cols]
    cur_launches = current.drop_duplicates(key)[launch_cols]
    launches = base_launches.merge(cur_launches, on=key, how="outer", suffixes=("_b", "_c"), indicator="side")

    # Launch facts for the "launch config changed" note.
    facts = launches[key + ["grid_b", "grid_c", "block_b", "block_c"]]
    for metric in LAUNCH_CONFIG_METRICS:
        for table, suffix in ((baseline, "_b"), (current, "_c")):
            values = table.loc[table["metric"] == metric, [*key, "value"]].drop_duplicates(key)
            facts = facts.merge(values.rename(columns={"value": f"{metric}{suffix}"}), on=key, how="left")
    launches["launch_change"] = _launch_change_notes(facts).to_numpy()

    # Metric rows: the compared metrics each launch has on either side.
    cols = [*key, "metric", "unit", "value"]
    base_rows = baseline.loc[baseline["metric"].isin(compared), cols]
    cur_rows = current.loc[current["metric"].isin(compared), cols]
    rows = base_rows.merge(cur_rows, on=[*key, "metric"], how="outer", suffixes=("_b", "_c"))
    # Keep each kind to its own metrics: no benchmark time.* on kernels and vice versa.
    rows = rows.merge(launches[[*key, "side", "demangled_b", "demangled_c", "device_b", "device_c"]],
                      on=key, how="left")
    # A launch whose metric rows were all filtered out still needs a row to carry its status.
    present = launches.merge(rows[key].drop_duplicates(), on=key, how="left", indicator="has_rows")
    bare = present[present["has_rows"] == "left_only"]
    if not bare.empty:
        filler = bare[[*key, "side", "demangled_b", "demangled_c", "device_b", "device_c"]].copy()
        filler["metric"] = np.where(filler["kind"] == "benchmark", "time.median", "gpu__time_duration.sum")
        filler["unit"], filler["unit_b"], filler["unit_c"] = "", "", ""
        filler["value_b"], filler["value_c"] = math.nan, math.nan
        rows = pd.concat([rows, filler.drop(columns=["unit"])], ignore_index=True)

    base_val = rows["value_b"].to_numpy(dtype=float)
    cur_val = rows["value_c"].to_numpy(dtype=float)
    delta = cur_val - base_val
    with np.errstate(divide="ignore", invalid="ignore"):
        change = np.where(base_val != 0, delta / np.abs(base_val), np.where(delta == 0, 0.0, np.inf * np.sign(delta)))
    metric_names = rows["metric"].to_numpy(dtype=object)
    unique_metrics = pd.unique(metric_names)
    sign_of = {m: {Direction.LOWER_IS_BETTER: 1.0, Direction.HIGHER_IS_BETTER: -1.0}.get(direction_of(m), 0.0)
               for m in unique_metrics}
    sign = np.array([sign_of[m] for m in metric_names]) if len(metric_names) else np.zeros(0)
    worse = delta * sign  # > 0 means worse

    def per_metric(fn: Any, default: float) -> np.ndarray:
        lookup = {m: fn(thresholds.get(m)) for m in unique_metrics}
        return np.array([lookup[m] for m in metric_names], dtype=float) if len(metric_names) else np.zeros(0)

    gated = per_metric(lambda t: 1.0 if t is not None and t.gating else 0.0, 0.0) > 0
    gated &= sign != 0
    rel_limit = per_metric(lambda t: t.relative if t is not None and t.relative is not None else -1.0, -1.0)
    abs_limit = per_metric(lambda t: t.absolute if t is not None and t.absolute is not None else -1.0, -1.0)
    rel_change = np.abs(change)
    beyond = (np.where(rel_limit >= 0, rel_change > rel_limit, True)
              & np.where(abs_limit >= 0, np.abs(delta) > abs_limit, True)
              & (np.abs(delta) > 0))

    side = rows["side"].astype(str).to_numpy()
    missing_value = np.isnan(base_val) | np.isnan(cur_val)
    status = np.full(len(rows), Status.UNCHANGED.value, dtype=object)
    status[beyond & (worse > 0)] = Status.REGRESSION.value
    status[beyond & (worse < 0)] = Status.IMPROVEMENT.value
    status[~gated] = Status.INFO.value
    status[missing_value] = Status.NO_DATA.value
    status[side == "left_only"] = Status.MISSING.value
    status[side == "right_only"] = Status.NEW.value

    # Benchmarks with raw timings on both sides: a slowdown must also be significant.
    base_samples = baseline.attrs.get(ATTR_SAMPLES, {})
    cur_samples = current.attrs.get(ATTR_SAMPLES, {})
    is_bench_time = (rows["kind"].to_numpy() == "benchmark") & (metric_names == "time.median")
    for index in np.flatnonzero(is_bench_time & np.isin(status, [Status.REGRESSION.value,
                                                                    Status.IMPROVEMENT.value])):
        name = rows["kernel"].iat[index]
        if name in base_samples and name in cur_samples:
            p_value = mann_whitney_p(base_samples[name], cur_samples[name])
            if not math.isnan(p_value) and p_value >= options.significance:
                status[index] = Status.UNCHANGED.value

    # A kernel that got clearly faster does not fail on a work counter that grew: more
    # instructions for less time is a trade-off the author made. Those rows explain, not gate.
    is_time = metric_names == TIME_METRIC
    faster = status[is_time] == Status.IMPROVEMENT.value
    if faster.any():
        faster_keys = rows.loc[is_time, key][faster]
        in_faster = rows[key].merge(faster_keys.assign(_faster=True), on=key, how="left")["_faster"].eq(True)
        traded = in_faster.to_numpy() & (status == Status.REGRESSION.value)
        status[traded] = Status.INFO.value
        gated = gated & ~traded

    threshold_spec = {m: (thresholds[m].spec if m in thresholds else "off") for m in unique_metrics}
    results = pd.DataFrame({
        "kind": rows["kind"].to_numpy(),
        "kernel": rows["kernel"].to_numpy(),
        "demangled": rows["demangled_c"].fillna(rows["demangled_b"]).fillna(rows["kernel"]).to_numpy(),
        "region": rows["region"].to_numpy(),
        "ordinal": rows["ordinal"].to_numpy(dtype="int64"),
        "metric": metric_names,
        "label": [label_of(m) for m in metric_names],
        "unit": rows["unit_c"].fillna(rows["unit_b"]).fillna("").to_numpy(),
        "baseline": base_val,
        "current": cur_val,
        "change": np.where(missing_value, np.nan, change),
        "delta": np.where(missing_value, np.nan, delta),
        "status": status,
        "gated": gated,
        "threshold": [threshold_spec[m] for m in metric_names],
        "direction": [direction_of(m).value for m in metric_names],
        "device": rows["device_c"].fillna(rows["device_b"]).fillna("").to_numpy(),
    })

    # Launch status = worst comparable gated metric; with none comparable it is "no data";
    # new/missing come from the launch itself.
    comparable = results[results["gated"] & ~results["status"].isin([Status.NO_DATA.value, Status.NEW.value,
                                                                       Status.MISSING.value])]
    worst = comparable.assign(rank=comparable["status"].map(_STATUS_RANK)).groupby(key, sort=False)["rank"].min()
    launch_frame = launches[[*key, "side", "launch_change"]].copy()
    launch_frame["demangled"] = launches["demangled_c"].fillna(launches["demangled_b"]).to_numpy()
    launch_frame["device"] = launches["device_c"].fillna(launches["device_b"]).to_numpy()
    launch_frame = launch_frame.merge(worst.rename("rank").reset_index(), on=key, how="left")
    status_of_rank = {i: s.value for i, s in enumerate(STATUS_ORDER)}
    # Launches with gated metrics but none comparable are "no data"; with no gated metric at all
    # (e.g. --metrics chose only explanatory ones) there is nothing to fail: "unchanged".
    has_gated = results.loc[results["gated"], key].drop_duplicates().assign(_gated=True)
    launch_frame = launch_frame.merge(has_gated, on=key, how="left")
    fallback = np.where(launch_frame["_gated"].eq(True), Status.NO_DATA.value, Status.UNCHANGED.value)
    launch_status = launch_frame["rank"].map(status_of_rank).fillna(pd.Series(fallback, index=launch_frame.index))
    launch_status = launch_status.where(launch_frame["side"].astype(str) != "left_only", Status.MISSING.value)
    launch_status = launch_status.where(launch_frame["side"].astype(str) != "right_only", Status.NEW.value)
    launch_frame["status"] = launch_status.to_numpy()
    launch_frame["rank"] = launch_frame["status"].map(_STATUS_RANK)
    launch_frame = launch_frame.sort_values(["rank", "kind", "kernel", "region", "ordinal"], kind="stable")
    launch_frame = launch_frame[[*key, "demangled", "status", "device", "launch_change"]].reset_index(drop=True)

    # Rows in launch order, then gated before info, then catalog order (duration first).
    catalog_order = {name: i for i, name in enumerate(CATALOG_BY_NAME)}
    results = results.assign(_rank=results["status"].eq(Status.INFO.value).astype(int),
                             _metric=results["metric"].map(catalog_order).fillna(len(catalog_order)))
    order = launch_frame[key].reset_index().rename(columns={"index": "_launch_order"})
    results = results.merge(order, on=key, how="left").sort_values(
        ["_launch_order", "_rank", "_metric", "metric"], kind="stable")
    results = results.drop(columns=["_rank", "_metric", "_launch_order"]).reset_index(drop=True)

    settings = {"baseline": dict(baseline.attrs.get(ATTR_SETTINGS, {})),
                "current": dict(current.attrs.get(ATTR_SETTINGS, {}))}
    locations = {**baseline.attrs.get(ATTR_LOCATIONS, {}), **current.attrs.get(ATTR_LOCATIONS, {})}
    return Comparison(
        results=results,
        launches=launch_frame,
        baseline_source=str(baseline.attrs.get(ATTR_SOURCE, "")),
        current_source=str(current.attrs.get(ATTR_SOURCE, "")),
        baseline_devices=tuple(device_label(*d) for d in devices(baseline)),
        current_devices=tuple(device_label(*d) for d in devices(current)),
        settings=settings,
        locations=locations,
    )
