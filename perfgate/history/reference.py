"""The reference side built from the history: judge the current run against the recent runs of the base branch,
not one snapshot.

The rule, per series (GPU, test, kind, kernel, region, metric): the base branch's last ``REFERENCE_COMMITS``
commits that measured anything (reruns of a commit folded into their median, as everywhere in the history);
a series measured in at least ``MIN_REFERENCE_RUNS`` of them has as reference the **median** of its values
there. A series with fewer is *insufficient data*, said in a note of its own: it keeps the baseline file's
value when one was given, else it has no reference.

A kernel's series is of its identity (``perfgate.history.keys.series_kernel``: demangled name and launch
configuration). Where the current launch's own series has too few runs, it is judged against the one series of the
same name in another launch configuration (a pull request changed the tile size, so the grid), else against the
series of its function name (a history recorded before series had identities). Where several fit, or two kernels of
the run would share one (a function-name series folded them together), none is guessed: the note says so.

The result is a baseline-shaped ``Measurement`` (what ``compare_tables`` takes as its baseline side): the
baseline file's rows, each value replaced by its series' history median where there is one, and the current
run's launches the file lacks added with their history medians. Every launch of a repeated kernel gets its
series' median (a series' value in a run is already the median of its launches), so the group test compares
the current launches with that one value. The comparison itself is unchanged.
"""

from __future__ import annotations

import math
from collections import Counter
from typing import TYPE_CHECKING, Any, Callable, Mapping, NamedTuple

import numpy as np

from perfgate.history.db import WAIT_SECONDS, History, damaged, open_history
from perfgate.history.keys import (
    SELECT_SERIES_KEYS,
    SeriesKey,
    function_name,
    kernel_name,
    series_kernel,
    series_key,
    shown_kernel,
    with_kernel,
    with_test,
)
from perfgate.history.noise import compare_options_from_history, series_thresholds
from perfgate.history.series import commit_order
from perfgate.metrics import Threshold
from perfgate.table import Measurement, make_table
from perfgate.vocabulary import KIND_BENCHMARK, NO_ENTRIES

REFERENCE_COMMITS = 12  # the base branch's latest commits a reference is the median of
MIN_REFERENCE_RUNS = 5  # a series measured in fewer of them: insufficient data
NOTES_SHOWN = 20  # insufficient-data notes listed one by one; the rest are counted

if TYPE_CHECKING:
    from perfgate.compare import CompareOptions

ReferenceFor = Callable[[Measurement, Measurement], tuple[Measurement, list[str]]]  # as perfgate.gate.Reference
Median = tuple[float, int]  # a series' median over the window, and the commits that measured it


class Found(NamedTuple):
    """The reference a series key found: its (median, runs) or None, the series it is of where another than the key's
    (``None``: its own), and why none was chosen where several fit ("": not so)."""

    median: Median | None
    series: SeriesKey | None = None
    why: str = ""


class Reference(NamedTuple):
    """The medians of a branch's recent commits, per series, and what the report says about where they came from."""

    branch: str
    commits: int  # commits in the window (at most REFERENCE_COMMITS)
    since: str  # first recording of the window's first commit (ISO-8601 UTC)
    medians: Mapping[SeriesKey, tuple[float, int]]  # series -> (median, commits that measured it)
    tests: Mapping[SeriesKey, tuple[str, ...]]  # a series of no test ("") -> the tests measuring it
    thresholds: Mapping[tuple[str, ...], Threshold] = NO_ENTRIES  # per series, learned from its spread (noise)
    # (gpu, kind, region, metric, kernel name) -> the series kernels of that name (any test, any configuration)
    names: Mapping[tuple[str, ...], tuple[str, ...]] = NO_ENTRIES

    @property
    def label(self) -> str:
        return f"history: median of {self.commits} runs of {self.branch} since {self.since[:10]}"

    def lookup(self, test: str | None, key: SeriesKey) -> tuple[float, int] | None:
        """The (median, runs) of series ``key`` (of no test) as measured by ``test``; ``test`` None (a report
        compared by hand): the series of no test, else of the only test that measured it (several tests measuring
        the same kernel are not guessed between)."""
        if test is not None:
            return self.medians.get(with_test(key, test))
        found = self.medians.get(key)
        if found is not None:
            return found
        tests = self.tests.get(key, ())
        return self.medians.get(with_test(key, tests[0])) if len(tests) == 1 else None

    def find(self, test: str | None, key: SeriesKey) -> Found:
        """The reference of series ``key`` (of no test) as measured by ``test``: its own series where it has enough
        runs; else the one series of its name in another launch configuration; else its function name's."""
        own = self.lookup(test, key)
        if own is not None and own[1] >= MIN_REFERENCE_RUNS:
            return Found(own)
        gpu, _, kind, kernel, region, metric = key
        others = []
        for other in self.names.get((gpu, kind, region, metric, kernel_name(kernel)), ()):
            candidate = with_kernel(key, other)
            found = self.lookup(test, candidate) if other != kernel else None
            if found is not None and found[1] >= MIN_REFERENCE_RUNS:
                others.append(Found(found, candidate))
        if len(others) > 1:
            return Found(own, None, f"{len(others)} series of its name in other launch configurations: none chosen")
        if others:
            return others[0]
        function = function_name(kernel, kind)
        old = with_kernel(key, function)
        found = self.lookup(test, old) if function != kernel else None
        return Found(found, old) if found is not None and found[1] >= MIN_REFERENCE_RUNS else Found(own)


def load_reference(history: History, branch: str) -> Reference:
    """The last ``REFERENCE_COMMITS`` commits of ``branch``: each series' median over them."""
    commits, times, run_commit = commit_order(history, branch)
    start = max(0, len(commits) - REFERENCE_COMMITS)
    if not commits:
        return Reference(branch, 0, "", {}, {})
    runs = [run for run, commit in run_commit.items() if commit >= start]
    facts = {int(row[0]): tuple(str(v) for v in row[1:]) for row in history.query(SELECT_SERIES_KEYS)}
    per_commit: dict[tuple[int, int], list[float]] = {}
    for chunk in range(0, len(runs), 500):  # bound the statement's parameters
        part = runs[chunk:chunk + 500]
        marks = ", ".join("?" * len(part))
        for series_id, run_id, value in history.query(
                f"SELECT series_id, run_id, value FROM perfgate_points WHERE run_id IN ({marks})", part):
            if not (isinstance(value, (int, float)) and math.isfinite(value)):  # PostgreSQL keeps NaN and infinities
                raise damaged(history, "perfgate_points holds a value of the wrong type")
            per_commit.setdefault((int(series_id), run_commit[int(run_id)]), []).append(float(value))
    values: dict[int, list[float]] = {}
    for (series_id, _), found in per_commit.items():
        values.setdefault(series_id, []).append(_median(found))
    medians: dict[SeriesKey, tuple[float, int]] = {}
    tests: dict[SeriesKey, list[str]] = {}
    names: dict[tuple[str, ...], set[str]] = {}
    for series_id, found in values.items():
        key: Any = facts[series_id]
        medians[key] = (_median(found), len(found))
        tests.setdefault(with_test(key, ""), []).append(key[1])
        gpu, _, kind, kernel, region, metric = key
        names.setdefault((gpu, kind, region, metric, kernel_name(kernel)), set()).add(kernel)
    return Reference(branch, len(commits) - start, times[start], medians,
                     {k: tuple(sorted(v)) for k, v in tests.items()},
                     names={k: tuple(sorted(v)) for k, v in names.items()})


def _median(values: list[float]) -> float:
    """The median, halved first: the mean of two middle values near a double's limit (1e308) does not overflow."""
    return float(np.median(np.asarray(values) / 2) * 2)


def _facts(row: Mapping[str, Any]) -> SeriesKey:
    """The series of a table's row, of no test (``Reference.lookup`` puts the test in)."""
    kernel = series_kernel(row["kind"], row["kernel"], row["demangled"], row["grid"], row["block"])
    return series_key(row["device"], "", row["kind"], kernel, row["region"], row["metric"])


def _references(reference: Reference, test: str | None, keys: set[SeriesKey]) -> dict[SeriesKey, Found]:
    """Each key's reference (``Reference.find``); a series found for several keys is none's: a function-name
    series of a history recorded before folded those kernels together, and its median is none of theirs."""
    found = {key: reference.find(test, key) for key in keys}
    shared = Counter(item.series for item in found.values() if item.series is not None)
    return {key: Found(reference.lookup(test, key), None, _shared(key, item.series, shared[item.series]))
            if item.series is not None and shared[item.series] > 1 else item for key, item in found.items()}


def _shared(key: SeriesKey, series: SeriesKey, kernels: int) -> str:
    whose = ("its function's series" if series[3] == function_name(key[3], key[2]) else
             "the series of its name in another launch configuration")
    return f"{whose} is shared by {kernels} kernels of this run: none chosen"


def _where(row: Mapping[str, Any]) -> str:
    """A row's series as a note names it: the kernel as the history shows it (its launch configuration where known,
    which tells apart the kernels of one name), its region, its metric."""
    key = _facts(row)
    return shown_kernel(key[3], key[2]) + (f" [{row['region']}]" if row["region"] else "") + f" {row['metric']}"


def reference_measurement(reference: Reference, baseline: Measurement, current: Measurement,
                          options: CompareOptions, test: str | None = None) -> tuple[Measurement, list[str]]:
    """The baseline side for comparing ``current``: ``baseline`` (a file's, possibly empty) with each compared
    series' history median where the history has enough runs, plus ``current``'s launches it lacks; and the
    notes that say which reference was used and which gated series had insufficient data."""
    compared, gated = set(options.compared_metrics()), set(options.gated_metrics())
    rows: list[dict[str, Any]] = []
    launches: set[tuple[Any, ...]] = set()
    used: set[tuple[str, ...]] = set()
    short: dict[tuple[str, ...], str] = {}  # series -> its insufficient-data note
    from_history: set[str] = set()  # benchmarks whose values come from the history: the file's timings are not theirs
    file_name = baseline.source or "the baseline file"
    base_rows, cur_rows = list(baseline.table.rows()), list(current.table.rows())
    references = _references(reference, test, {_facts(row) for row in (*base_rows, *cur_rows)})
    for row in base_rows:
        launches.add((row["kind"], row["kernel"], row["region"], row["ordinal"]))
        facts = _facts(row)
        if row["metric"] in compared:
            found = references[facts]
            if found.median is not None and found.median[1] >= MIN_REFERENCE_RUNS:
                row = {**row, "value": found.median[0]}
                used.add(facts)
                if row["kind"] == KIND_BENCHMARK:
                    from_history.add(row["kernel"])
            elif row["metric"] in gated:
                short[facts] = f"{_where(row)}: {_runs(found)}: judged against {file_name}"
        rows.append(row)
    offset = int(baseline.table["launch"].max()) + 1 if len(baseline.table) else 0
    for row in cur_rows:
        if (row["kind"], row["kernel"], row["region"], row["ordinal"]) in launches:
            continue
        facts = _facts(row)
        found = references[facts]
        if found.median is not None and found.median[1] >= MIN_REFERENCE_RUNS:
            rows.append({**row, "value": found.median[0], "launch": row["launch"] + offset})
            used.add(facts)
            if row["kind"] == KIND_BENCHMARK:
                from_history.add(row["kernel"])
        elif row["metric"] in gated and facts not in short:
            short[facts] = f"{_where(row)}: {_runs(found)}: no reference"
    notes = _notes(reference, used, short, file_name if len(baseline.table) else None)
    source = reference.label + (f"; else {baseline.source}" if short and len(baseline.table) and baseline.source
                                else "")
    if not used:
        return baseline, notes
    samples = {name: timings for name, timings in baseline.samples.items() if name not in from_history}
    return baseline._replace(table=make_table(rows), source=source, samples=samples,
                             run_medians=frozenset(from_history)), notes


def _runs(found: Found) -> str:
    runs = found.median[1] if found.median else 0
    return f"insufficient data ({runs} of the last runs, {MIN_REFERENCE_RUNS} needed" + \
        (f"; {found.why})" if found.why else ")")


def _notes(reference: Reference, used: set[tuple[str, ...]], short: Mapping[tuple[str, ...], str],
           file_name: str | None) -> list[str]:
    if not reference.commits:
        rest = f"judged against {file_name}" if file_name else "no reference"
        return [f"history: insufficient data: no run of branch {reference.branch!r} is recorded; {rest}"]
    if used:
        notes = [f"reference: {reference.label} for {len(used)} series"
                 + (f"; {file_name} for the others" if file_name and short else "")]
    else:  # "for 0 series" read as if the history had been the reference
        notes = [f"reference: {reference.label}, for none of this run's series"
                 + (f": all judged against {file_name}" if file_name else "")]
    listed = sorted(short.values())
    notes += [f"history: {line}" for line in listed[:NOTES_SHOWN]]
    if len(listed) > NOTES_SHOWN:
        notes.append(f"history: insufficient data for {len(listed) - NOTES_SHOWN} more series")
    return notes


def compare_history(url: str, branch: str, options: CompareOptions, current: Measurement, max_time: float = WAIT_SECONDS
                    ) -> tuple[CompareOptions, ReferenceFor, list[str]]:
    """``perfgate compare --history``: the options with learned thresholds (``noise``), what builds the reference
    side from a baseline (a file's, or an empty table), and the thresholds' notes. The history is opened once;
    ``max_time``: seconds the opening may wait for it (``--max-time``)."""
    with open_history(url, create=False, max_time=max_time) as history:
        options, notes = compare_options_from_history(history, branch, options, current)
        reference = load_reference(history, branch)
    return options, reference_for(reference, options), notes


def reference_for(reference: Reference, options: CompareOptions, test: str | None = None) -> ReferenceFor:
    """``reference_measurement`` for one test, in the form ``perfgate.gate.gate`` takes."""
    def build(baseline: Measurement, current: Measurement) -> tuple[Measurement, list[str]]:
        return reference_measurement(reference, baseline, current, options, test)
    return build


def judging_for(reference: Reference, options: CompareOptions, test: str) -> tuple[CompareOptions, ReferenceFor]:
    """The plugin, for one test: its options with its series' learned thresholds (within the test's own hand-set
    ones: a marker's thresholds= may be tighter than the session's), and its reference."""
    hand_set = options.effective_thresholds()
    learned = {key: ceiling._replace(relative=min(threshold.relative or 0.0, ceiling.relative))
               for key, threshold in series_thresholds(reference.thresholds, test).items()
               if (ceiling := hand_set.get(key[2])) is not None and ceiling.gating and ceiling.relative is not None}
    options = options._replace(series_thresholds={**learned, **options.series_thresholds})
    return options, reference_for(reference, options, test)


def plugin_reference(url: str, branch: str, max_time: float = WAIT_SECONDS) -> Reference:
    """``pytest --perfgate`` learning from the history: the reference every test is judged against, read once
    (``max_time``: seconds the history may keep it waiting)."""
    with open_history(url, create=False, max_time=max_time) as history:
        return load_reference(history, branch)
