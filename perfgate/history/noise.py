"""Thresholds learned from history: each series' observed spread on the base branch sizes how much change is
noise, within the hand-set threshold.

The rule, per series (GPU, test, kernel, region, metric) with at least ``MIN_RUNS`` of the base branch's last
``WINDOW`` commits: its robust relative spread ``s = 1.4826 * MAD / |median|`` (a standard deviation where the
values are normal, untouched by a few outliers), and its learned relative threshold ``max(k(n) * s, FLOOR)``,
never above the hand-set threshold (the default and the ceiling); the hand-set absolute part is kept as it is.
Each series is gated at its own threshold (``CompareOptions.series_thresholds``, (kernel, region, metric) ->
threshold); a series with too little history keeps the hand-set threshold, and a note says so ("insufficient
data"), never silently; so does a run none of whose launches has a series on the branch.

The spread is that of the statistic that is judged. A value measured once per run (a kernel launched once, a
region total, a benchmark's statistic) is judged as it is: its spread is that of its run values. A kernel launched
repeatedly is also judged launch by launch (a launch that moved alone, each launch against the history's median), so
its spread is that of its launches' values over the window's runs (the samples each point keeps), which holds the
runs' spread and the launches' own: learned from the run medians alone it is too tight, and unchanged runs come out
inconclusive or blame a launch.

``k(n)`` is ``SIGMAS`` where the spread is known and more where it is estimated from few values: Student's t
quantile with ``n - 1`` degrees of freedom at the normal tail beyond ``SIGMAS`` (``small_sample_sigmas``): 5.1 at
20 runs, 12.3 at 6. A spread measured on 6 values is often half the true one: 4 of those fail about 1 unchanged
run in 18 (1 in 200 at 20 runs); k(n) of them about 1 in 300 (1 in 800 at 20 runs), measured on normal noise.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Iterable, Mapping, NamedTuple, Sequence

import numpy as np

from perfgate.history.db import WAIT_SECONDS, History, open_history
from perfgate.history.keys import facts_key, function_name, gpu_key
from perfgate.history.series import Branch, Series, commit_order, load_branch
from perfgate.history.stats import t_quantile_upper
from perfgate.limits import parse_json_or_none
from perfgate.metrics import Threshold
from perfgate.options import selection

if TYPE_CHECKING:
    from perfgate.compare import CompareOptions
    from perfgate.table import Measurement

WINDOW = 20  # the base branch's latest commits a series' spread is measured over
MIN_RUNS = 5  # fewer commits than this: insufficient data
SIGMAS = 4.0  # a change beyond 4 robust standard deviations is not noise (1 in 15,000 for normal noise of known spread)
FLOOR = 0.005  # never below 0.5%: rounding and clock steps
MAD_TO_SIGMA = 1.4826


class Learned(NamedTuple):
    series: dict[tuple[str, ...], Threshold]  # per series (its key, perfgate.history.keys), only those learned
    notes: list[str]


def small_sample_sigmas(count: int) -> float:
    """How many robust standard deviations a threshold spans when the spread is estimated from ``count`` values:
    Student's t quantile (``count - 1`` degrees of freedom) at the normal tail beyond ``SIGMAS``."""
    return t_quantile_upper(0.5 * math.erfc(SIGMAS / math.sqrt(2.0)), max(count - 1, 1))


def series_threshold(values: np.ndarray) -> float:
    """``max(k(n) * robust relative spread, FLOOR)`` of a series' latest ``WINDOW`` values."""
    return spread_threshold(values[-WINDOW:])


def spread_threshold(recent: np.ndarray) -> float:
    """``max(k(n) * robust relative spread, FLOOR)`` of ``recent`` values (run values, or launches' values)."""
    recent = np.asarray(recent) / 2  # a relative spread: halved, values near a double's limit do not overflow
    median = float(np.median(recent))
    if median == 0:
        return FLOOR
    spread = MAD_TO_SIGMA * float(np.median(np.abs(recent - median))) / abs(median)
    return max(small_sample_sigmas(len(recent)) * spread, FLOOR)


def same_code_threshold(changes: np.ndarray) -> float:
    """``max(k(n) * robust spread, FLOOR)`` of A/A samples: relative changes between two runs of the same machine
    code, whose spread is that of a comparison's change itself (no real change can be in them: 0 is their centre)."""
    spread = MAD_TO_SIGMA * float(np.median(np.abs(changes)))
    return max(small_sample_sigmas(len(changes)) * spread, FLOOR)


def _spread(item: Series, launches: Mapping[int, np.ndarray] | None,
            same_code: Mapping[int, np.ndarray] | None) -> tuple[float, str]:
    """The series' learned relative spread, and what it was learned from ("runs", "launches" or "same code")."""
    samples = same_code.get(item.id) if same_code else None
    if samples is not None and len(samples) >= MIN_RUNS:
        return same_code_threshold(samples[-WINDOW * 10:]), "same code"
    pooled = launches.get(item.id) if launches else None
    return (series_threshold(item.values), "runs") if pooled is None else (spread_threshold(pooled), "launches")


def learn(series: Iterable[Series], hand_set: Mapping[str, Threshold], wanted: set[tuple[str, ...]] | None = None,
          launches: Mapping[int, np.ndarray] | None = None, same_code: Mapping[int, np.ndarray] | None = None
          ) -> Learned:
    """Per series, the learned threshold of ``series``, capped by ``hand_set``. ``wanted``: the launches the
    current run measured, as (GPU, kind, kernel, region): only their series count (any test), and one with no
    series at all is insufficient data. ``launches``: per series id of a kernel launched repeatedly, its launches'
    values over its window (``launch_values``): its threshold is learned from their spread. ``same_code``: per
    series id, its A/A samples (``same_code_values``): with at least ``MIN_RUNS`` of them, they size it."""
    learned: dict[tuple[str, ...], Threshold] = {}
    per_launch: dict[tuple[str, ...], str] = {}
    short: dict[str, int] = {}
    seen: set[tuple[str, ...]] = set()
    gpus: set[str] = set()
    absolute_only: set[str] = set()
    for item in series:
        launch = (item.facts["gpu"], item.facts["kind"], function_name(item.facts["kernel"], item.facts["kind"]),
                  item.facts["region"])  # as the comparison's thresholds are keyed: by function name
        gpus.add(launch[0])
        if wanted is not None and launch not in wanted:
            continue
        seen.add(launch)
        metric = item.facts["metric"]
        ceiling = hand_set.get(metric)
        if ceiling is None or not ceiling.gating or ceiling.relative is None:
            if ceiling is not None and ceiling.gating:
                absolute_only.add(metric)
            continue  # not gated, or gated by an absolute amount only: nothing relative to size
        if len(item.values) < MIN_RUNS:
            short[metric] = short.get(metric, 0) + 1
            continue
        spread, source = _spread(item, launches, same_code)
        rounded = math.ceil(spread * 1000) / 1000  # up to a tenth of a percent: a spec
        key = facts_key(item.facts)
        learned[key] = ceiling._replace(relative=min(rounded, float(ceiling.relative)))
        per_launch[key] = source
    if wanted is not None and wanted - seen:
        for metric, limit in hand_set.items():  # a launch the base branch never measured
            if limit.gating and limit.relative is not None and any(key[-1] == metric for key in learned):
                short[metric] = short.get(metric, 0) + len(wanted - seen)
    notes = _notes(learned, per_launch, short, hand_set)
    notes += [f"history: {metric} keeps its hand-set threshold {hand_set[metric].spec}: only a relative part is "
              "learned from the history" for metric in sorted(absolute_only)]
    if wanted and not seen:
        notes.append(_unseen_note(wanted, gpus))
    return Learned(learned, notes)


def _unseen_note(wanted: set[tuple[str, ...]], gpus: set[str]) -> str:
    """Why nothing was learned for a run none of whose launches has a series on the branch."""
    mine = sorted({launch[0] for launch in wanted})
    if gpus and not gpus & set(mine):
        why = f"the branch records GPU {', '.join(sorted(gpus))}, this run {', '.join(mine)}"
    else:
        why = "its kernels and regions were never recorded on it"
    count = f"{len(wanted)} kernel{'s' if len(wanted) != 1 else ''} and regions"
    return (f"history: no threshold learned: none of the {count} this run measured has a series on the base branch "
            f"({why}); the hand-set thresholds apply")


_HOW = {"runs": "(each learned from its own spread on the base branch",
        "launches": "of kernels launched repeatedly (each learned from the spread of its launches on the base branch, "
                    "as they are judged one by one too",
        "same code": "(each learned from its A/A samples: changes between runs of the same machine code in the same "
                     "launch configuration"}


def _notes(learned: Mapping[tuple[str, ...], Threshold], per_launch: Mapping[tuple[str, ...], str],
           short: Mapping[str, int], hand_set: Mapping[str, Threshold]) -> list[str]:
    notes: list[str] = []
    for metric in sorted({key[-1] for key in learned}):
        for source, how in _HOW.items():
            found = sorted((t.relative or 0.0, t.spec) for key, t in learned.items()
                           if key[-1] == metric and per_launch.get(key) == source)
            if not found:
                continue
            span = found[0][1] if found[0][1] == found[-1][1] else f"{found[0][1]} to {found[-1][1]}"
            notes.append(f"history: {metric} gated at {span} in {len(found)} series {how}; hand-set "
                         f"{hand_set[metric].spec})")
    for metric, count in sorted(short.items()):
        notes.append(f"history: insufficient data for {count} series of {metric} (fewer than {MIN_RUNS} base-branch "
                     f"runs): its hand-set threshold {hand_set[metric].spec} applies")
    return notes


def series_thresholds(learned: Mapping[tuple[str, ...], Threshold], test: str | None = None
                      ) -> dict[tuple[str, str, str], Threshold]:
    """For ``CompareOptions.series_thresholds``: (kernel, region, metric) -> threshold, of ``test``'s series (None:
    any test's); a kernel measured on several GPUs or by several tests, or a function of several kernels (template
    arguments, launch configurations), gets the loosest of its series'."""
    found: dict[tuple[str, str, str], Threshold] = {}
    for (_, of_test, kind, kernel, region, metric), threshold in learned.items():
        if test is not None and of_test != test:
            continue
        key = (function_name(kernel, kind), region, metric)
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
    return learn(loaded.series, hand_set, wanted, launch_values(history, loaded), same_code_values(history, loaded))


def launch_values(history: History, branch: Branch) -> dict[int, np.ndarray]:
    """Per series whose points hold several launches (a kernel launched repeatedly in a run): its launches' values
    in the runs of its latest ``WINDOW`` commits, as each point keeps them (up to ``record.MAX_SAMPLES``)."""
    return _window_samples(history, branch, "samples", "p.n > 1 AND p.samples IS NOT NULL")


def same_code_values(history: History, branch: Branch) -> dict[int, np.ndarray]:
    """Per series, its A/A samples in the runs of its latest ``WINDOW`` commits (``record.Point.same_code``): the
    changes of its launches that ran the same code in the same launch configuration as their baseline."""
    return _window_samples(history, branch, "same_code_changes", "p.same_code_changes IS NOT NULL")


def _window_samples(history: History, branch: Branch, column: str, condition: str) -> dict[int, np.ndarray]:
    """Per series, the numbers of the JSON lists in the points' ``column`` (a constant of this module) in the runs of
    the series' latest ``WINDOW`` commits; a cell that is not a list of finite numbers is passed over."""
    window = {s.id: set(s.commits[-WINDOW:].tolist()) for s in branch.series}
    _, _, run_commit = commit_order(history, branch.name)
    found: dict[int, list[float]] = {}
    for series_id, run_id, cell in history.query(
            f"SELECT p.series_id, p.run_id, p.{column} FROM perfgate_points p JOIN perfgate_runs r "
            f"ON r.id = p.run_id WHERE r.branch = ? AND {condition}", (branch.name,)):
        if run_commit.get(int(run_id)) not in window.get(int(series_id), ()):
            continue
        values = parse_json_or_none(cell)
        if isinstance(values, list) and all(isinstance(v, (int, float)) and math.isfinite(v) for v in values):
            found.setdefault(int(series_id), []).extend(float(v) for v in values)
    return {series_id: np.asarray(values, dtype=float) for series_id, values in found.items() if values}


def compare_options_from_history(history: History, branch: str, options: CompareOptions,
                                  current: Measurement) -> tuple[CompareOptions, list[str]]:
    """``perfgate compare --history``: ``options`` with the learned thresholds of the series of ``current``'s
    launches, and the notes for the report."""
    table = current.table
    wanted = {(gpu_key(device), *rest) for device, *rest in
              zip(*(table[name].tolist() for name in ("device", "kind", "kernel", "region")))}
    hand_set = options.effective_thresholds()
    compared = set(options.compared_metrics())
    found = learned_thresholds(history, branch, {m: t for m, t in hand_set.items() if m in compared}, wanted)
    return options._replace(series_thresholds=series_thresholds(found.series)), found.notes


def plugin_thresholds(url: str, branch: str, thresholds: Mapping[str, Threshold],
                      metrics: Sequence[str] | None, max_time: float = WAIT_SECONDS) -> Learned:
    """``pytest --perfgate --perfgate-history-thresholds``: the learned thresholds of every series of ``branch``
    (each test takes its own, ``series_thresholds(learned, test)``), and the notes."""
    options = selection(metrics=metrics, thresholds=thresholds, significance=0.01, allow_device_mismatch=False)
    compared = set(options.compared_metrics())
    hand_set = {m: t for m, t in options.effective_thresholds().items() if m in compared}
    with open_history(url, create=False, max_time=max_time) as history:
        return learned_thresholds(history, branch, hand_set)
