"""Commits the history holds: a test's recorded points at a commit, as the measurement a run of it would give, so
that the commit is judged (and serves as a reference end) without running it.

A commit's points are the test's series (its test, or its kernel for a pytest-benchmark: ``of_test``) in the runs
of the branch recorded at that commit. A point's samples are its repeated launches' values, one launch each; a
commit recorded more than once gives each launch the median of its runs. A pytest-benchmark keeps no rounds in the
history: its value is the point's (``run_medians``), judged on the threshold alone.

The history was measured on another machine than the runs bisect makes: it is a reference only for a run of the
same GPU (or CPU) model that measured the same launches and gated metrics (``comparable``); otherwise bisect runs
the commit as it would without a history.
"""

from __future__ import annotations

import json
import math
from typing import TYPE_CHECKING, Any, Mapping, NamedTuple, Sequence

import numpy as np

from perfgate.history.keys import function_name, gpu_key, kernel_parts
from perfgate.table import Measurement, make_table
from perfgate.vocabulary import KIND_BENCHMARK

if TYPE_CHECKING:
    from perfgate.compare import CompareOptions
    from perfgate.history.db import History

CHUNK = 500  # commits per statement: bound its parameters


def recorded_measurements(history: History, branch: str, test: str, commits: Sequence[str],
                          options: CompareOptions) -> dict[str, Measurement]:
    """The test's measurement at each of ``commits`` (full hashes) that ``branch`` recorded it at."""
    from perfgate.history.series import commit_order

    recorded, _, _ = commit_order(history, branch)  # checks a SQLite history's values before they are read
    wanted = {commit.lower() for commit in commits}
    held = [commit for commit in recorded if commit.lower() in wanted]
    metrics = set(options.compared_metrics())
    values: dict[str, dict[tuple[str, str, str, str, str, str], list[list[float]]]] = {}
    for start in range(0, len(held), CHUNK):
        part = held[start:start + CHUNK]
        marks = ", ".join("?" * len(part))
        for commit, gpu, kind, kernel, region, metric, unit, value, samples in history.query(
                "SELECT r.commit_sha, s.gpu, s.kind, s.kernel, s.region, s.metric, s.unit, p.value, p.samples "
                "FROM perfgate_points p JOIN perfgate_runs r ON r.id = p.run_id "
                "JOIN perfgate_series s ON s.id = p.series_id "
                f"WHERE r.branch = ? AND (s.test = ? OR s.kernel = ?) AND r.commit_sha IN ({marks})",
                (branch, test, test, *part)):
            if metric not in metrics:
                continue
            key = (str(gpu), str(kind), str(kernel), str(region), str(metric), str(unit))
            values.setdefault(str(commit).lower(), {}).setdefault(key, []).append(_launch_values(value, samples))
    return {commit: _measurement(found) for commit, found in values.items() if found}


def _launch_values(value: Any, samples: Any) -> list[float]:
    try:
        kept = json.loads(samples) if isinstance(samples, str) else None
    except ValueError:
        kept = None
    if isinstance(kept, list) and kept and all(isinstance(v, (int, float)) for v in kept):
        return [float(v) for v in kept]
    return [float(value)]


def _measurement(found: Mapping[tuple[str, str, str, str, str, str], list[list[float]]]) -> Measurement:
    """One launch per sample (a repeated kernel's launches); reruns of the commit folded into their median."""
    launches: dict[tuple[str, str, str, str], int] = {}
    rows: list[dict[str, Any]] = []
    first: dict[tuple[str, ...], int] = {}  # per (kind, function, region, series kernel): its first ordinal
    taken: dict[tuple[str, ...], int] = {}  # per (kind, function, region): the ordinals its series hold
    for (gpu, kind, kernel, region, metric, unit), runs in sorted(found.items()):
        sizes = {len(run) for run in runs}
        per_launch = ([float(np.median(column)) for column in zip(*runs)] if len(sizes) == 1
                      else [float(np.median([np.median(run) for run in runs]))])
        # A series is one kernel identity (``series_kernel``): a run's ordinals count a function's launches.
        function, (name, grid, block) = function_name(kernel, kind), kernel_parts(kernel)
        if (kind, function, region, kernel) not in first:
            first[kind, function, region, kernel] = taken.get((kind, function, region), 0)
        start = first[kind, function, region, kernel]
        taken[kind, function, region] = max(taken.get((kind, function, region), 0), start + len(per_launch))
        for ordinal, value in enumerate(per_launch, start):
            launch = launches.setdefault((kind, kernel, region, str(ordinal)), len(launches))
            rows.append({"kind": kind, "kernel": function, "demangled": name, "region": region, "ordinal": ordinal,
                         "launch": launch, "device": gpu, "cc": "", "grid": grid, "block": block, "metric": metric,
                         "unit": unit, "value": value if math.isfinite(value) else math.nan})
    rows.sort(key=lambda row: (row["launch"], row["metric"]))
    benchmarks = frozenset(row["kernel"] for row in rows if row["kind"] == KIND_BENCHMARK)
    return Measurement(make_table(rows), source="the history", run_medians=benchmarks)


def comparable(recorded: Measurement, run: Measurement, options: CompareOptions) -> str:
    """"" when ``recorded`` can stand for a run like ``run`` (the same device model; every gated value of the run's
    launches is among the recorded ones), else why not."""
    run_devices = {gpu_key(device) for device in run.table["device"].tolist()}
    recorded_devices = set(recorded.table["device"].tolist())
    if run_devices != recorded_devices:
        return (f"the history measured on {', '.join(sorted(recorded_devices))}, this machine on "
                f"{', '.join(sorted(run_devices))}")
    gated = set(options.gated_metrics())
    missing = _gated(run, gated) - _gated(recorded, gated)
    if missing or not _gated(run, gated):
        return "the history holds other measurements of the test than its run gives"
    return _rounds_too_noisy(recorded, run, options)


def _rounds_too_noisy(recorded: Measurement, run: Measurement, options: CompareOptions) -> str:
    """"" unless a benchmark the history holds as a median (no rounds: judged on the threshold alone) has rounds
    in ``run`` that leave their own median too uncertain for that threshold: at either bound of the median's
    confidence interval (``options.confidence``, distribution-free) the run's median would read as a change
    from itself, so a median from the history could pass for a change, or a change for none."""
    from scipy.stats import quantile_test

    for name in sorted(recorded.run_medians):
        rounds = np.asarray(run.samples.get(name, ()), dtype=float)
        if len(rounds) < 2:
            continue
        middle = float(np.median(rounds))
        interval = quantile_test(rounds, q=middle, p=0.5).confidence_interval(options.confidence)
        for bound in (float(interval.low), float(interval.high)):
            if not (math.isfinite(bound) and middle > 0) or not unmoved(_scaled(run, name, bound / middle), run,
                                                                          options):
                return (f"the history keeps {name}'s median only, and this machine's {len(rounds)} rounds put their "
                        f"median within {interval.low:.4g}..{interval.high:.4g} s at {options.confidence:.0%}: too "
                        "wide for its threshold")
    return ""


def _scaled(run: Measurement, name: str, factor: float) -> Measurement:
    """``run`` with benchmark ``name`` a median-only reference ``factor`` times its times (as the history holds it)."""
    from perfgate.units import SECOND

    table = run.table
    mine = (table["kind"] == KIND_BENCHMARK) & (table["kernel"] == name)
    values = np.asarray(table["value"], dtype=float).copy()
    values[mine & (table["unit"] == SECOND)] *= factor
    values[mine & (table["unit"] == "1/s")] /= factor
    samples = {kept: rounds for kept, rounds in run.samples.items() if kept != name}
    return run._replace(table=table.assign(value=values), samples=samples, run_medians=run.run_medians | {name})


def unmoved(end: Measurement, run: Measurement, options: CompareOptions) -> bool:
    """Whether ``run`` is like ``end`` (compared with it, no gated value moved): a run like neither end the history
    holds (everything faster on this machine, say) shows the history measured otherwise."""
    from perfgate.compare import compare_tables
    from perfgate.vocabulary import Status

    moved = {Status.REGRESSION.value, Status.IMPROVEMENT.value, Status.INCONCLUSIVE.value}
    return not moved & set(compare_tables(end, run, options).results["status"].tolist())


def _gated(measurement: Measurement, gated: set[str]) -> set[tuple[str, str, str, int, str]]:
    table = measurement.table
    return {(kind, kernel, region, ordinal, metric) for kind, kernel, region, ordinal, metric, value in zip(
        table["kind"].tolist(), table["kernel"].tolist(), table["region"].tolist(), table["ordinal"].tolist(),
        table["metric"].tolist(), table["value"].tolist()) if metric in gated and math.isfinite(value)}


def on_devices_of(recorded: Measurement, run: Measurement) -> Measurement:
    """``recorded`` with the run's compute capability beside each device name (the history keeps only the name)."""
    capability = dict(zip((gpu_key(d) for d in run.table["device"].tolist()), run.table["cc"].tolist()))
    table = recorded.table
    cc = [capability.get(device, "") for device in table["device"].tolist()]
    from perfgate.columns import objects

    return recorded.with_table(table.assign(cc=objects(cc)))


class References(NamedTuple):
    """The ends a run is judged against; ``checked``: the run was like an end the history holds, which shows the
    history measured as this machine does (a run like only an end run here shows nothing of the history's)."""

    good: Measurement
    bad: Measurement
    checked: bool


def as_references(good: Measurement, bad: Measurement, held: tuple[bool, bool], run: Measurement,
                  options: CompareOptions, check_like: bool = True) -> References | str:
    """The ends to judge ``run`` against, those the history holds (``held``: the good end's, the bad end's) on the
    run's devices, where the run shows the history can be its reference: ``comparable`` with each held end and,
    with ``check_like``, like one of the ends; else why it cannot be."""
    for end, from_history in zip((good, bad), held, strict=True):
        problem = comparable(end, run, options) if from_history else ""
        if problem:
            return problem
    sides = (on_devices_of(good, run) if held[0] else good, on_devices_of(bad, run) if held[1] else bad)
    if not check_like:
        return References(*sides, checked=True)
    like = [unmoved(end, run, options) for end in sides]
    if not any(like):
        return "a commit run is like neither end"
    return References(*sides, checked=any(a and b for a, b in zip(like, held, strict=True)))
