"""Record the current side of perfgate's JSON reports into a history.

A series is one (GPU model, test, launch kind, kernel, region, metric), the kernel as the comparison knows it
(its demangled name and launch configuration: ``perfgate.history.keys.series_kernel``); a run is one report recorded at a
commit of a branch. A point is a series' value in a run: the median of the launches of that kernel in that
test (a kernel launched repeatedly gives several samples, all kept), with their number, minimum and maximum.

The run key is natural: the commit, the branch and a digest of the points recorded, so recording the same
report twice adds nothing, while a rerun of the same commit (other values) is a run of its own.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import os
import statistics
import subprocess
from typing import Any, Iterable, Mapping, NamedTuple, Sequence

from perfgate.errors import InputError
from perfgate.history.db import History
from perfgate.history.findings import write_findings
from perfgate.history.keys import SELECT_SERIES_KEYS, SERIES_FIELDS, SeriesKey, launch_kernels, series_key
from perfgate.history.verdicts import GATE_RANK, worse_gate
from perfgate.metrics import is_timing
from perfgate.vocabulary import SAME_CODE_HELD
from perfgate.report import Report, load_report

MAX_SAMPLES = 1000  # samples kept per point; a longer run of launches keeps its median, minimum and maximum


class Provenance(NamedTuple):
    """Where and when a run was measured."""

    commit: str
    branch: str
    when: str  # ISO-8601, UTC


class Point(NamedTuple):
    series: SeriesKey
    unit: str
    direction: str
    samples: tuple[float, ...]
    gate: str | None = None  # the gate's verdict on the series in this run (perfgate.history.verdicts)
    code_id: str | None = None  # its launches' code_id(s), sorted, space-separated; None: not known
    # Where its launches ran the same code in the same launch configuration as its comparison's baseline: their
    # relative changes, A/A samples of the runner's noise (timing metrics only); None: none.
    same_code: tuple[float, ...] | None = None


class Recorded(NamedTuple):
    source: str
    run_key: str
    points: int
    added: bool  # False: the same run was recorded before


def _git(*args: str) -> str:
    try:
        done = subprocess.run(["git", *args], capture_output=True, text=True, timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return ""
    return done.stdout.strip() if done.returncode == 0 else ""


def provenance(env: Mapping[str, str], commit: str | None = None, branch: str | None = None,
               when: str | None = None) -> Provenance:
    """Flags win over GitHub Actions' environment, which wins over the git checkout in the current folder."""
    from perfgate.publish.context import commits_from_environment

    for flag, given in (("--commit", commit), ("--branch", branch)):
        if given is not None and not given.strip():  # a run no one can find again, or an acceptance of every commit
            raise InputError(flag, "is empty", f"name the {flag[2:]}, or leave {flag} out to take it from the "
                                               "environment")

    if commit is None:
        commit = commits_from_environment(env)[1] or _git("rev-parse", "HEAD") or "unknown"
    if branch is None:
        branch = (env.get("GITHUB_HEAD_REF") or env.get("GITHUB_REF_NAME") or _git("branch", "--show-current")
                  or "unknown")
    return Provenance(commit.strip().lower(), branch.strip(), iso_time(when))


def iso_time(text: str | None) -> str:
    """``text`` (ISO-8601; without a zone: UTC) as UTC ``YYYY-MM-DDTHH:MM:SS.ffffffZ``, which sorts as text."""
    if text is None:
        moment = dt.datetime.now(dt.timezone.utc)
    else:
        try:
            moment = dt.datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
        except ValueError:
            raise InputError("--when", f"{text!r} is not an ISO-8601 time", "e.g. 2026-11-27T12:00:00Z") from None
        if moment.tzinfo is None:
            moment = moment.replace(tzinfo=dt.timezone.utc)
    return moment.astimezone(dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def report_points(report: Report) -> list[Point]:
    """The current side of ``report``, one point per series (values of repeated launches as its samples)."""
    launches, metrics, results = report["launches"], report["metrics"], report["results"]
    collected: dict[SeriesKey, list[float]] = {}
    facts: dict[SeriesKey, tuple[str, str]] = {}
    gates: dict[SeriesKey, str] = {}  # only the few points the gate judged changed
    devices, tests, kinds, regions = launches["device"], launches["test"], launches["kind"], launches["region"]
    kernels = launch_kernels(launches)
    names, units, directions = metrics["metric"], metrics["unit"], metrics["direction"]
    code_ids, held = _launch_code(report)
    codes: dict[SeriesKey, set[str]] = {}
    same_code: dict[SeriesKey, list[float]] = {}
    for at, code, value, status, change in zip(results["launch"], results["metric"], results["current"],
                                               results["status"], results["change"]):
        if value is None:
            continue
        key = series_key(devices[at], tests[at], kinds[at], kernels[at], regions[at], names[code])
        if key not in collected:
            collected[key] = []
            facts[key] = (units[code] or "", directions[code] or "")
        collected[key].append(float(value))
        if status in GATE_RANK:
            gates[key] = worse_gate(gates.get(key), status)
        code_id = code_ids[at]
        if code_id:
            codes.setdefault(key, set()).add(code_id)
        if held[at] and change is not None and is_timing(names[code] or ""):
            same_code.setdefault(key, []).append(float(change))
    return [Point(key, *facts[key], tuple(values), gates.get(key),
                  " ".join(sorted(codes[key])) if key in codes else None,
                  tuple(same_code[key]) if key in same_code else None) for key, values in collected.items()]


def _launch_code(report: Report) -> tuple[list[str | None], list[bool]]:
    """Per launch of ``report``: its code_id (None: not known), and whether the same-code rule held its time (the
    same code and launch configuration as its baseline: its changes are A/A samples)."""
    launches: Any = report["launches"]
    count = len(launches["kernel"])
    code_ids = launches.get("code_id") or [None] * count
    whys = launches.get("code_why") or [None] * count
    base_ids = launches.get("baseline_code_id") or [None] * count
    held = [bool(cur) and cur == base and isinstance(why, str) and why.endswith(SAME_CODE_HELD)
            for cur, base, why in zip(code_ids, base_ids, whys)]
    return list(code_ids), held


def run_settings(report: Report, points: Sequence[Point]) -> dict[str, Any]:
    """perfgate's settings for the run: each comparison's current-side settings (clock control, replay passes,
    ncu version...) and the metrics recorded."""
    current: dict[str, Any] = {}
    for comparison in report["comparisons"]:
        settings = comparison["settings"]
        side = settings.get("current")
        for key, value in (side if isinstance(side, dict) else settings).items():
            if isinstance(value, (str, int, float, bool)) and key not in current:
                current[str(key)] = value
    return {"settings": current, "metrics": sorted({p.series[5] for p in points})}


def run_key(when: Provenance, points: Sequence[Point]) -> str:
    import orjson  # a dependency already (the report writer); one call encodes every point

    digest = hashlib.sha256(f"{when.commit}\0{when.branch}\0".encode())
    digest.update(orjson.dumps([(p.series, p.samples) for p in sorted(points)]))
    return digest.hexdigest()


def record_report(history: History, report: Report, source: str, when: Provenance) -> Recorded:
    """Write one run and its points in one transaction; nothing when the same run was recorded before."""
    with history.transaction():
        return _write_run(history, report, report_points(report), source, when)


def _write_run(history: History, report: Report, points: list[Point], source: str, when: Provenance) -> Recorded:
    key = run_key(when, points)
    settings = json.dumps(run_settings(report, points), sort_keys=True)
    added = history.query(
        "INSERT INTO perfgate_runs (run_key, commit_sha, branch, recorded_at, source, generator, settings) "
        "VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (run_key) DO NOTHING RETURNING id",
        (key, when.commit, when.branch, when.when, source, report["generator"], settings))
    if not added:
        return Recorded(source, key, len(points), False)
    ids = series_ids(history, points)
    history.insert_rows("perfgate_points", ("series_id", "run_id", "n", "value", "low", "high", "samples", "gate",
                                            "code_id", "same_code_changes"),
                        [(*_point_row(ids[p.series], added[0][0], p.samples), p.gate, p.code_id,
                          None if p.same_code is None else json.dumps(list(p.same_code[:MAX_SAMPLES])))
                         for p in points])
    write_findings(history, added[0][0], report)
    return Recorded(source, key, len(points), True)


def _point_row(series_id: int, run_id: int, samples: Sequence[float]) -> tuple[Any, ...]:
    if len(samples) == 1:
        return (series_id, run_id, 1, samples[0], samples[0], samples[0], None)
    kept = json.dumps(list(samples[:MAX_SAMPLES]))
    return (series_id, run_id, len(samples), statistics.median(samples), min(samples), max(samples), kept)


def series_ids(history: History, points: Iterable[Point]) -> dict[tuple[str, ...], int]:
    """Each point's series id, the series created where new. Sorted inserts: concurrent writers lock the
    unique index's rows in the same order, so they wait for each other instead of deadlocking."""
    ids = _all_series(history)
    missing = sorted({(*p.series, p.unit, p.direction) for p in points if p.series not in ids})
    if missing:
        history.insert_rows("perfgate_series", (*SERIES_FIELDS, "unit", "direction"), missing, unique=SERIES_FIELDS)
        ids = _all_series(history)
    return ids


def _all_series(history: History) -> dict[tuple[str, ...], int]:
    return {tuple(row[1:]): int(row[0]) for row in history.query(SELECT_SERIES_KEYS)}


def record_files(history: History, paths: Sequence[str], when: Provenance) -> list[Recorded]:
    """Validate every report first: one that fails is refused before anything is written."""
    reports = [(str(path), load_report(path)) for path in paths]
    points = [report_points(report) for _, report in reports]
    for (path, _), found in zip(reports, points):
        if not found:
            raise InputError(path, "has no current value to record (nothing was measured)",
                             "record the report of a run that measured something")
    with history.transaction():  # all the reports or none
        return [_write_run(history, report, found, os.path.basename(path), when)
                for (path, report), found in zip(reports, points)]
