"""Thresholds learned from history: each series' observed spread on the base branch sizes how much change is
noise, within the hand-set threshold.

The rule, per series (GPU, test, kernel, region, metric) with at least ``MIN_RUNS`` of the base branch's last
``WINDOW`` commits: its robust relative spread ``s = 1.4826 * MAD / |median|`` (a standard deviation where the
values are normal, untouched by a few outliers), and its learned relative threshold ``max(SIGMAS * s, FLOOR)``,
never above the hand-set threshold (the default and the ceiling); the hand-set absolute part is kept as it is.
Each series is gated at its own threshold (``CompareOptions.series_thresholds``, (kernel, region, metric) ->
threshold); a series with too little history keeps the hand-set threshold, and a note says so ("insufficient
data"), never silently.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Iterable, Mapping, NamedTuple, Sequence

import numpy as np

from perfgate.history.db import History, open_history
from perfgate.history.keys import gpu_key
from perfgate.history.series import Series, load_branch
from perfgate.metrics import Threshold
from perfgate.options import selection

if TYPE_CHECKING:
    from perfgate.compare import CompareOptions
    from perfgate.table import Measurement

WINDOW = 20  # the base branch's latest commits a series' spread is measured over
MIN_RUNS = 5  # fewer commits than this: insufficient data
SIGMAS = 4.0  # a change beyond 4 robust standard deviations is not noise (about 1 in 15,000 for normal noise)
FLOOR = 0.005  # never below 0.5%: rounding and clock steps
MAD_TO_SIGMA = 1.4826


class Learned(NamedTuple):
    series: dict[tuple[str, ...], Threshold]  # per series (SERIES_KEY), only those learned
    notes: list[str]


SERIES_KEY = ("gpu", "test", "kind", "kernel", "region", "metric")


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
    """Per series, the learned threshold of ``series``, capped by ``hand_set``. ``wanted``: the launches the
    current run measured, as (GPU, kind, kernel, region): only their series count (any test), and one with no
    series at all is insufficient data."""
    learned: dict[tuple[str, ...], Threshold] = {}
    short: dict[str, int] = {}
    seen: set[tuple[str, ...]] = set()
    for item in series:
        launch = tuple(item.facts[name] for name in ("gpu", "kind", "kernel", "region"))
        if wanted is not None and launch not in wanted:
            continue
        seen.add(launch)
        metric = item.facts["metric"]
        ceiling = hand_set.get(metric)
        if ceiling is None or not ceiling.gating or ceiling.relative is None:
            continue  # not gated, or gated by an absolute amount only: nothing relative to size
        if len(item.values) < MIN_RUNS:
            short[metric] = short.get(metric, 0) + 1
            continue
        rounded = math.ceil(series_threshold(item.values) * 1000) / 1000  # up to a tenth of a percent: a spec
        learned[tuple(item.facts[name] for name in SERIES_KEY)] = ceiling._replace(
            relative=min(rounded, float(ceiling.relative)))
    if wanted is not None and wanted - seen:
        for metric, limit in hand_set.items():  # a launch the base branch never measured
            if limit.gating and limit.relative is not None and any(key[-1] == metric for key in learned):
                short[metric] = short.get(metric, 0) + len(wanted - seen)
    return Learned(learned, _notes(learned, short, hand_set))


def _notes(learned: Mapping[tuple[str, ...], Threshold], short: Mapping[str, int],
           hand_set: Mapping[str, Threshold]) -> list[str]:
    notes: list[str] = []
    for metric in sorted({key[-1] for key in learned}):
        found = sorted((t.relative or 0.0, t.spec) for key, t in learned.items() if key[-1] == metric)
        span = found[0][1] if found[0][1] == found[-1][1] else f"{found[0][1]} to {found[-1][1]}"
        notes.append(f"history: {metric} gated at {span} in {len(found)} series (each learned from its own spread "
                     f"on the base branch; hand-set {hand_set[metric].spec})")
    for metric, count in sorted(short.items()):
        notes.append(f"history: insufficient data for {count} series of {metric} (fewer than {MIN_RUNS} base-branch "
                     f"runs): its hand-set threshold {hand_set[metric].spec} applies")
    return notes


def series_thresholds(learned: Mapping[tuple[str, ...], Threshold], test: str | None = None
                      ) -> dict[tuple[str, str, str], Threshold]:
    """For ``CompareOptions.series_thresholds``: (kernel, region, metric) -> threshold, of ``test``'s series (None:
    any test's); a kernel measured on several GPUs or by several tests gets the loosest of its series'."""
    found: dict[tuple[str, str, str], Threshold] = {}
    for (_, of_test, _, kernel, region, metric), threshold in learned.items():
        if test is not None and of_test != test:
            continue
        key = (kernel, region, metric)
        if key not in found or (threshold.relative or 0.0) > (found[key].relative or 0.0):
            found[key] = threshold
    return found


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
    """``perfgate compare --history``: ``options`` with the learned thresholds of the series of ``current``'s
    launches, and the notes for the report."""
    table = current.table
    wanted = {(gpu_key(device), *rest) for device, *rest in
              zip(*(table[name].tolist() for name in ("device", "kind", "kernel", "region")))}
    hand_set = options.effective_thresholds()
    compared = set(options.compared_metrics())
    with open_history(url, create=False) as history:
        found = learned_thresholds(history, branch, {m: t for m, t in hand_set.items() if m in compared}, wanted)
    return options._replace(series_thresholds=series_thresholds(found.series)), found.notes


def plugin_thresholds(url: str, branch: str, thresholds: Mapping[str, Threshold],
                      metrics: Sequence[str] | None) -> Learned:
    """``pytest --perfgate --perfgate-history-thresholds``: the learned thresholds of every series of ``branch``
    (each test takes its own, ``series_thresholds(learned, test)``), and the notes."""
    options = selection(metrics=metrics, thresholds=thresholds, significance=0.01, allow_device_mismatch=False)
    compared = set(options.compared_metrics())
    hand_set = {m: t for m, t in options.effective_thresholds().items() if m in compared}
    with open_history(url, create=False) as history:
        return learned_thresholds(history, branch, hand_set)
