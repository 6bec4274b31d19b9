"""Thresholds learned from history: each series' observed spread on the base branch sizes how much change is
noise, within the hand-set threshold.

The rule, per series (GPU, test, kernel, region, metric) with at least ``MIN_RUNS`` of the base branch's last
``WINDOW`` commits: its robust relative spread ``s = 1.4826 * MAD / |median|`` (a standard deviation where the
values are normal, untouched by a few outliers), and its learned relative threshold ``max(SIGMAS * s, FLOOR)``.
The comparison gates per metric, so a metric's threshold is the largest learned one among its series (the
noisiest kernel decides), never above the hand-set threshold (the default and the ceiling); the hand-set
absolute part is kept as it is. A metric any of whose series has too little history keeps its hand-set
threshold, and a note says so ("insufficient data"), never silently.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Iterable, Mapping, NamedTuple, Sequence

import numpy as np

from perfgate.history.db import History
from perfgate.history.series import Series, load_branch
from perfgate.metrics import Threshold

if TYPE_CHECKING:
    from perfgate.compare import CompareOptions
    from perfgate.table import Measurement

WINDOW = 20  # the base branch's latest commits a series' spread is measured over
MIN_RUNS = 5  # fewer commits than this: insufficient data
SIGMAS = 4.0  # a change beyond 4 robust standard deviations is not noise (about 1 in 15,000 for normal noise)
FLOOR = 0.005  # never below 0.5%: rounding and clock steps
MAD_TO_SIGMA = 1.4826


class Learned(NamedTuple):
    thresholds: dict[str, Threshold]  # per metric, only those learned (the rest keep their hand-set threshold)
    notes: list[str]


def series_threshold(values: np.ndarray) -> float:
    """``max(SIGMAS * robust relative spread, FLOOR)`` of a series' latest ``WINDOW`` values."""
    recent = values[-WINDOW:]
    median = float(np.median(recent))
    if median == 0:
        return FLOOR
    spread = MAD_TO_SIGMA * float(np.median(np.abs(recent - median))) / abs(median)
    return max(SIGMAS * spread, FLOOR)


def learn(series: Iterable[Series], hand_set: Mapping[str, Threshold],
          wanted: set[tuple[str, ...]] | None = None) -> Learned:
    """Per metric, the learned threshold of ``series``, capped by ``hand_set``. ``wanted``: the launches the
    current run measured, as (GPU, kind, kernel, region): only their series count (any test), and one with no
    series at all is insufficient data."""
    learned: dict[str, float] = {}
    short: dict[str, int] = {}
    seen: set[tuple[str, ...]] = set()
    for item in series:
        launch = tuple(item.facts[name] for name in ("gpu", "kind", "kernel", "region"))
        if wanted is not None and launch not in wanted:
            continue
        seen.add(launch)
        metric = item.facts["metric"]
        limit = hand_set.get(metric)
        if limit is None or not limit.gating or limit.relative is None:
            continue  # not gated, or gated by an absolute amount only: nothing relative to size
        if len(item.values) < MIN_RUNS:
            short[metric] = short.get(metric, 0) + 1
            continue
        learned[metric] = max(learned.get(metric, 0.0), series_threshold(item.values))
    if wanted is not None and wanted - seen:
        for metric, limit in hand_set.items():  # a launch the base branch never measured
            if metric in learned and limit.gating and limit.relative is not None:
                short[metric] = short.get(metric, 0) + len(wanted - seen)
    thresholds: dict[str, Threshold] = {}
    notes: list[str] = []
    for metric, relative in sorted(learned.items()):
        if metric in short:
            continue
        ceiling = hand_set[metric]
        rounded = math.ceil(relative * 1000) / 1000  # up to a tenth of a percent: a spec people read
        thresholds[metric] = ceiling._replace(relative=min(rounded, float(ceiling.relative or 0.0)))
        notes.append(f"history: {metric} gated at {thresholds[metric].spec} (learned from its spread on the base "
                     f"branch; hand-set {ceiling.spec})")
    for metric, count in sorted(short.items()):
        notes.append(f"history: insufficient data for {count} series of {metric} (fewer than {MIN_RUNS} base-branch "
                     f"runs): its hand-set threshold {hand_set[metric].spec} applies")
    return Learned(thresholds, notes)


def learned_thresholds(history: History, branch: str, hand_set: Mapping[str, Threshold],
                       wanted: set[tuple[str, ...]] | None = None) -> Learned:
    """Learned thresholds from ``branch``'s series in ``history``; a note when the branch has no runs at all."""
    loaded = load_branch(history, branch)
    if not loaded.series:
        return Learned({}, [f"history: insufficient data: no run of branch {branch!r} is recorded; the hand-set "
                            "thresholds apply"])
    return learn(loaded.series, hand_set, wanted)


def compare_options_from_history(url: str, branch: str, options: CompareOptions,
                                  current: Measurement) -> tuple[CompareOptions, list[str]]:
    """``perfgate compare --history``: ``options`` with the compared metrics' learned thresholds (for the launches
    of ``current``), and the notes for the report."""
    from perfgate.history.db import open_history

    table = current.table
    wanted = set(zip(*(table[name].tolist() for name in ("device", "kind", "kernel", "region"))))
    hand_set = options.effective_thresholds()
    compared = set(options.compared_metrics())
    with open_history(url, create=False) as history:
        found = learned_thresholds(history, branch, {m: t for m, t in hand_set.items() if m in compared}, wanted)
    return options._replace(thresholds={**options.thresholds, **found.thresholds}), found.notes


def plugin_thresholds(url: str, branch: str, thresholds: Mapping[str, Threshold],
                      metrics: Sequence[str] | None) -> tuple[dict[str, Threshold], tuple[str, ...]]:
    """``pytest --perfgate --perfgate-history-thresholds``: the configured thresholds with the learned ones of the
    compared metrics over every series of ``branch`` (the session's launches are not known before it runs)."""
    from perfgate.history.db import open_history
    from perfgate.options import selection

    options = selection(metrics=metrics, thresholds=thresholds, significance=0.01, allow_device_mismatch=False)
    compared = set(options.compared_metrics())
    hand_set = {m: t for m, t in options.effective_thresholds().items() if m in compared}
    with open_history(url, create=False) as history:
        found = learned_thresholds(history, branch, hand_set)
    return {**thresholds, **found.thresholds}, tuple(found.notes)
