"""``perfgate history changes``: the change points of every series of a branch, as text, Markdown or JSON.

A creep (several same-direction changes in a row, each small enough to pass a PR gate) shows on each of its
later changes as ``creep: true`` with ``cumulative``: the change from before the first one of the run. A slow
movement (gradual points, ``changes.merge``: no step, a slope or a wander) shows only where its net change is
beyond what a PR gate lets through, each of its points as ``creep: true`` with its ``cumulative``.

A change in a series' newest runs is no change point yet (``search.MIN_SIDE`` runs must show it): where the gate
judged the newest run a regression or an improvement and no change point covers that run, the list carries it as
``awaiting: true``, worded as the dashboard words it: the newest run's regression awaits confirmation.
"""

from __future__ import annotations

import contextlib
import gc
import json
import math
from typing import Any, Iterable, Iterator, Sequence

from perfgate.errors import InputError
from perfgate.history.accept import Acceptance, acceptance_of, load_acceptances
from perfgate.history.cache import found_in, cached_changes, search
from perfgate.history.cache_rows import Found
from perfgate.history.code_change import code_note, mark_code
from perfgate.history.culprits import load_culprits, mark_culprits
from perfgate.history.changes import P_VALUE, movements
from perfgate.history.db import History
from perfgate.history.keys import SERIES_FIELDS, shown_kernel
from perfgate.history.runner_spells import hide_spells, history_pools, runner_signal, sample, spell_note
from perfgate.history.search import MIN_SIDE, WINDOW
from perfgate.history.stats import require_scipy
from perfgate.history.series import Branch, Series, commit_order, load_branch, load_series, relative, series_facts
from perfgate.history.verdicts import gate_verdicts_at, newest_gate_verdicts, newest_verdict
from perfgate.metrics import CATALOG_BY_NAME
from perfgate.render.formatting import md_escape
from perfgate.text import inert, inert_json
from perfgate.vocabulary import Status

CHANGE_FIELDS = (*SERIES_FIELDS, "unit", "commit", "previous_commit", "time", "change", "direction", "before",
                 "after", "confidence", "p_value", "exact", "creep", "cumulative", "accepted", "awaiting", "culprit",
                 "code")
AWAITED = (Status.REGRESSION.value, Status.IMPROVEMENT.value)  # the newest run's gate verdicts that await a change


def direction_word(change: float, direction: str) -> str:
    """regression, improvement, or change (a metric that is neither better nor worse either way)."""
    if direction == "lower":
        return "regression" if change > 0 else "improvement"
    if direction == "higher":
        return "regression" if change < 0 else "improvement"
    return "change"


def creep_step_limit(metric: str) -> float | None:
    """The largest change that may be a creep's step: the metric's default relative limit, what a pull request
    gate lets through (a larger change is a regression of its own); None where the metric has none."""
    info = CATALOG_BY_NAME.get(metric)
    return info.threshold.relative if info is not None and info.threshold.gating else None


def change_dicts(commits: Sequence[str], times: Sequence[str], facts: dict[str, str],
                 found: Sequence[Found]) -> list[dict[str, Any]]:
    """The change points of one series as JSON-ready objects, creeps marked: a creep is a run of same-direction
    steps in a row, each within ``creep_step_limit``, or a slow movement (a run of same-direction gradual points,
    no step between them) whose net change is beyond that limit. Gradual points that add up to no more are not
    reported."""
    limit = creep_step_limit(facts["metric"])
    steps = [item for item in found if not item.point.gradual]
    changes = list(zip((item.point.position for item in steps), _step_dicts(commits, times, facts, steps, limit)))
    run: list[Found] = []
    for item in [*found, None]:
        if item is not None and item.point.gradual and (
                not run or _word(run[0], facts) == _word(item, facts) != "change"):
            run.append(item)
            continue
        if run and limit is not None and _word(run[0], facts) != "change" and abs(
                relative(run[0].point.before, run[-1].point.after)) > limit:
            changes += [(point.point.position, _change_dict(commits, times, facts, point, run[0].point.before, True))
                        for point in run]
        run = [item] if item is not None and item.point.gradual else []
    return [change for _, change in sorted(changes, key=lambda pair: pair[0])]


def _word(item: Found, facts: dict[str, str]) -> str:
    return direction_word(relative(item.point.before, item.point.after), facts["direction"])


def _change_dict(commits: Sequence[str], times: Sequence[str], facts: dict[str, str], item: Found,
                 run_start: float, creep: bool) -> dict[str, Any]:
    point = item.point
    change = relative(point.before, point.after)
    return {
        **{name: facts[name] for name in (*SERIES_FIELDS, "unit")},
        "commit": commits[item.commit], "previous_commit": commits[item.previous], "time": times[item.commit],
        "change": change, "direction": direction_word(change, facts["direction"]), "before": point.before,
        "after": point.after, "confidence": 1.0 - point.p_value, "p_value": point.p_value, "exact": point.exact,
        "creep": creep, "cumulative": relative(run_start, point.after), "accepted": None, "awaiting": False,
        "culprit": None, "code": None}


def _step_dicts(commits: Sequence[str], times: Sequence[str], facts: dict[str, str], found: Sequence[Found],
                limit: float | None) -> list[dict[str, Any]]:
    """The steps as JSON-ready objects: a run of same-direction steps in a row, each within ``limit``, a creep."""
    changes: list[dict[str, Any]] = []
    run_start: float | None = None
    previous_small = False
    for item in found:
        point = item.point
        change = relative(point.before, point.after)
        word = direction_word(change, facts["direction"])
        previous = changes[-1] if changes else None
        small = limit is None or abs(change) <= limit
        continues = (previous is not None and previous["direction"] == word and word != "change" and small
                     and previous_small)
        previous_small = small
        run_start = run_start if continues and run_start is not None else point.before
        changes.append(_change_dict(commits, times, facts, item, run_start, continues))
        if continues:
            previous["creep"] = True  # type: ignore[index]
    return changes


def series_changes(branch: Branch, series: Series, p_value: float, min_change: float) -> list[dict[str, Any]]:
    """One series' change points as JSON-ready objects, searched from its values."""
    found = found_in(series, movements(series.values, p_value=p_value, min_change=min_change))
    return change_dicts(branch.commits, branch.times, series.facts, found)


def _mark_accepted(acceptances: Sequence[Acceptance], changes: Iterable[dict[str, Any]]) -> None:
    for change in changes:
        accepted = acceptance_of(acceptances, change, change["commit"])
        if accepted is not None:
            change["accepted"] = {"by": accepted.by, "reason": accepted.reason, "when": accepted.when}


def changes_by_series(history: History, branch: str, p_value: float = P_VALUE, min_change: float = 0.0
                      ) -> tuple[Branch, dict[int, list[dict[str, Any]]], list[str]]:
    """The branch's series (every value: the dashboard charts them) and each one's change points, in commit
    order, accepted ones marked, and a note per runner spell that explained some (``runner_spells``). A branch
    with no run is an InputError naming the branches that have runs."""
    loaded = load_branch(history, branch)
    if not loaded.commits:
        raise no_runs(history, branch)
    acceptances = load_acceptances(history)
    culprits = load_culprits(history)
    states = search(loaded.series, p_value, min_change, WINDOW)
    by_id = {series.id: series for series in loaded.series}

    def pool_of(gpu: str, signal: str) -> list[Series]:
        return [by_id[sid] for sid in sample([s.id for s in loaded.series if s.facts["gpu"] == gpu
                                              and runner_signal(s.facts["metric"]) == signal])]

    kept, spells = hide_spells({sid: state.changes for sid, state in states.items()},
                               {s.id: s.facts for s in loaded.series}, len(loaded.commits), pool_of,
                               lambda ids: [by_id[sid] for sid in ids], p_value, min_change)
    found: dict[int, list[dict[str, Any]]] = {}
    for series in loaded.series:
        found[series.id] = change_dicts(loaded.commits, loaded.times, series.facts, kept[series.id])
        _mark_accepted(acceptances, found[series.id])
        mark_culprits(culprits, branch, found[series.id])
    mark_code(history, branch, found)
    return loaded, found, [spell_note(spell, loaded.commits) for spell in spells]


def no_runs(history: History, branch: str) -> InputError:
    """The error for a branch with no run: one line naming the branches that have runs."""
    names = [str(row[0]) for row in history.query("SELECT DISTINCT branch FROM perfgate_runs ORDER BY branch "
                                                  "LIMIT 6")]
    shown = ", ".join(names[:5]) + (", ..." if len(names) > 5 else "")
    recorded = f"branches with runs: {shown}" if names else "no run is recorded at all"
    return InputError(f"branch {branch!r}", "has no runs in this history",
                      f"{recorded}; pass --branch, or set history_branch in [tool.perfgate]")


def awaiting_note(status: str) -> str:
    """What the history says of a gate verdict on a newest run that no change point covers yet."""
    return (f"the newest run's {status} awaits confirmation (a change point needs {MIN_SIDE} runs that show "
            "it; this is the gate's verdict against its own baseline, and the change shown is the history's: the "
            "newest run against the median since the series' last change point)")


def newest_runs(history: History, branch: Branch, changes: dict[int, list[dict[str, Any]]],
                run_commit: dict[int, int] | None = None) -> dict[int, dict[str, Any]]:
    """Per series, the gate's verdict on its newest run where no change point covers that run, with the
    acceptance that covers it (``perfgate accept`` of that commit), as a change point has."""
    index = {commit: at for at, commit in enumerate(branch.commits)}
    by_id = {series.id: series for series in branch.series}
    acceptances = load_acceptances(history)
    found = {}
    for series_id, status in newest_gate_verdicts(history, branch, run_commit).items():
        verdict = newest_verdict(branch, by_id[series_id], status, changes[series_id], index)
        if verdict is not None:
            accepted = acceptance_of(acceptances, by_id[series_id].facts, verdict["commit"])
            verdict["accepted"] = None if accepted is None else {"by": accepted.by, "reason": accepted.reason}
            found[series_id] = verdict
    return found


def awaiting_changes(history: History, branch: Branch, by_series: dict[int, list[dict[str, Any]]],
                     run_commit: dict[int, int] | None = None) -> list[dict[str, Any]]:
    """The newest runs the gate judged a regression or an improvement that no change point covers yet, as
    entries of the change list (``awaiting: true``)."""
    by_id = {series.id: series for series in branch.series}
    found = []
    for series_id, verdict in newest_runs(history, branch, by_series, run_commit).items():
        if verdict["status"] not in AWAITED:
            continue
        series = by_id[series_id]
        found.append({
            **{name: series.facts[name] for name in (*SERIES_FIELDS, "unit")},
            "commit": verdict["commit"], "previous_commit": branch.commits[int(series.commits[-2])],
            "time": branch.times[int(series.commits[-1])], "change": verdict["change"], "direction": verdict["status"],
            "before": verdict["before"], "after": verdict["after"], "confidence": None, "p_value": None,
            "exact": False, "creep": False, "cumulative": None, "accepted": verdict["accepted"], "awaiting": True,
            "culprit": None, "code": None})
    return found


@contextlib.contextmanager
def _collector_paused() -> Iterator[None]:
    """Python's cyclic garbage collector held off: a search keeps a container or more per series (100,000 states,
    their lists and change points), none in a cycle, and every collection of the oldest generation walks them all
    (a fifth of an update's CPU time at 100,000 series). Reference counting frees them as before."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def find_changes(history: History, branch: str, p_value: float = P_VALUE,
                 min_change: float = 0.0) -> list[dict[str, Any]]:
    """Every change point of ``branch``, and every newest run whose change awaits confirmation, the most recent
    first (``changes_and_notes`` without its notes)."""
    return changes_and_notes(history, branch, p_value, min_change)[0]


@_collector_paused()
def changes_and_notes(history: History, branch: str, p_value: float = P_VALUE,
                      min_change: float = 0.0) -> tuple[list[dict[str, Any]], list[str]]:
    """Every change point of ``branch``, and every newest run whose change awaits confirmation, the most recent
    first; and a note per runner spell that explained some change points (``runner_spells``: not named). The
    search is kept in the history (``perfgate.history.cache``): only series with new points are searched again,
    from where their new points matter; the runner spells are judged again each time."""
    require_scipy()
    commits, times, run_commit = commit_order(history, branch, check_points=False)  # the cache checks what it reads
    if not commits:
        raise no_runs(history, branch)
    cached = cached_changes(history, branch, commits, times, run_commit, p_value, min_change)
    # the facts of the series with change points only: most of a large history's have none
    facts = series_facts(history, [sid for sid, found in cached.changes.items() if found])
    kept, spells = hide_spells(cached.changes, facts, len(commits), history_pools(history, branch, run_commit,
                                                                                    cached.changes),
                               lambda ids: load_series(history, branch, run_commit, ids), p_value, min_change)
    by_series = {sid: change_dicts(commits, times, facts[sid], found) if found else []
                 for sid, found in kept.items()}
    found = [change for changes in by_series.values() for change in changes]
    _mark_accepted(load_acceptances(history), found)
    mark_culprits(load_culprits(history), branch, found)
    mark_code(history, branch, by_series)
    # the gate's verdicts on each series' newest commit; only the series it flagged are read whole
    flagged = gate_verdicts_at(history, cached.newest, run_commit)
    if flagged:
        read = Branch(branch, commits, times, load_series(history, branch, run_commit, sorted(flagged)))
        found += awaiting_changes(history, read, by_series, run_commit)
    found.sort(key=lambda c: (c["time"], c["gpu"], c["test"], c["kernel"], c["region"], c["metric"]), reverse=True)
    return found, [spell_note(spell, commits) for spell in spells]


def _finite(value: Any) -> Any:
    return None if isinstance(value, float) and not math.isfinite(value) else value


def _name(change: dict[str, Any]) -> str:
    if change["kind"] == "region":
        launch = f"region {change['region'] or '(all)'}"
    else:
        launch = shown_kernel(change["kernel"], change["kind"]) + (f" [{change['region']}]" if change["region"] else "")
    return f"{launch} ({change['test']}, {change['gpu']})"


def _creep_note(change: dict[str, Any]) -> str:
    return f"; creep: {change['cumulative']:+.1%} in all" if change["creep"] else ""


def render_changes(changes: Sequence[dict[str, Any]], fmt: str, notes: Sequence[str] = ()) -> str:
    """The change list as ``fmt``; ``notes`` (runner spells) after it in text and Markdown (JSON stays the list of
    change points: its caller says them on stderr)."""
    if fmt == "json":  # a change from 0 is infinite: null in JSON, which has no infinity
        return inert_json(json.dumps([{name: _finite(c[name]) for name in CHANGE_FIELDS} for c in changes], indent=1,
                                     allow_nan=False, default=str)) + "\n"
    if fmt == "md":
        return _markdown(changes) + "".join(f"\n> note: {md_escape(note, 600)}\n" for note in notes)
    return _text(changes) + "".join(inert(f"note: {note}", 600) + "\n" for note in notes)


def _text(changes: Sequence[dict[str, Any]]) -> str:
    if not changes:
        return "no change points\n"
    lines = []
    for c in changes:
        if c["awaiting"]:
            at, note = f"{c['commit'][:12]}", awaiting_note(c["direction"])
        else:
            at = f"{c['commit'][:12]}{' exactly' if c['exact'] else ''}"
            note = f"confidence {c['confidence']:.1%}{_creep_note(c)}"
        lines.append(inert(f"{c['direction'].upper()} {c['change']:+.1%} {c['metric']} {_name(c)} at {at}: "
                           f"{c['before']:.6g} -> {c['after']:.6g} ({note})", 600))
        if c["accepted"]:
            lines.append(inert(f"  accepted by {c['accepted']['by']}: {c['accepted']['reason']}", 600))
        if c["culprit"]:
            lines.append(inert(f"  culprit: {c['culprit']['commit']} (perfgate bisect, "
                               f"{c['culprit']['runs']} runs)", 600))
        if c["code"]:
            lines.append(inert(f"  {code_note(c['code'])}", 600))
    return "\n".join(lines) + "\n"


def _markdown(changes: Sequence[dict[str, Any]]) -> str:
    if not changes:
        return "No change points.\n"
    lines = ["| | change | metric | kernel | commit | before → after | confidence | note |",
             "|---|---:|---|---|---|---|---:|---|"]
    for c in changes:
        note = [awaiting_note(c["direction"])] if c["awaiting"] else []
        if c["creep"]:
            note.append(f"creep, {c['cumulative']:+.1%} in all")
        if c["culprit"]:
            note.append(f"culprit {md_escape(c['culprit']['commit'][:12])} (bisect)")
        if c["code"]:
            note.append(md_escape(code_note(c["code"])))
        if c["accepted"]:
            note.append(f"accepted by {md_escape(c['accepted']['by'])}: {md_escape(c['accepted']['reason'])}")
        lines.append(f"| {c['direction']} | {c['change']:+.1%} | {md_escape(c['metric'])} | {md_escape(_name(c))} "
                      f"| {md_escape(c['commit'][:12])} | {c['before']:.6g} → {c['after']:.6g} | "
                      f"{'gate' if c['awaiting'] else format(c['confidence'], '.1%')} | {'; '.join(note)} |")
    return "\n".join(lines) + "\n"
