"""Each series' change points kept in the history (``perfgate_change_cache``), so that ``history changes`` after
one more recorded commit redoes only what the new points change.

The windowed search (``changes.window_search``) judges a window of full length on its own points only: a
series that grows by a commit keeps the candidates of those windows and searches again from the first window its
end cut short. A series' row keeps that state (the candidates, where the search resumes, the points from there
on, its count of equal neighbours for the exact-counter rule) and its change points, keyed by its count of
points and its newest commit. A branch's entry in ``perfgate_meta`` says which runs and commits the rows cover
and under which settings; anything else (a rerun or a backfill of a covered commit, other settings, a row that
does not parse) is searched from scratch, and the result is the same as without the cache. A search from
scratch checks every point of a SQLite history first (``check_sqlite_values``); an update checks the points it
reads as it reads them.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
from typing import Any, Iterable, NamedTuple, Sequence

import numpy as np

from perfgate.errors import InputError
from perfgate.history.changes import (
    P_VALUE,
    WINDOW,
    ChangePoint,
    merge,
    quiet_resume,
    loud_windows,
    window_search,
)
from perfgate.history.db import History, check_sqlite_values
from perfgate.history.series import Series, checked_points, load_series, split_series

CACHE_VERSION = 2  # bump when the search changes: older rows are searched again


class Found(NamedTuple):
    """A change point of a series, by the branch's commit indexes (its rows need no values to be shown)."""

    commit: int
    previous: int
    point: ChangePoint


class State(NamedTuple):
    points: int  # values the series has on the branch
    last: int  # index of its newest commit in the branch's commits
    weak: list[int]  # candidates from windows of full length
    resume: int  # where the search resumes
    tail: np.ndarray  # values[resume:]
    changes: list[Found]
    # a series with candidates: every value and its commit indexes, to judge them again without reading it
    values: np.ndarray = np.zeros(0)
    commits: np.ndarray = np.zeros(0, dtype=np.int64)


class Cached(NamedTuple):
    commits: list[str]
    times: list[str]
    run_commit: dict[int, int]
    changes: dict[int, list[Found]]  # per series id
    newest: dict[int, int]  # per series id: its newest commit's index


def _digest(commits: Sequence[str]) -> str:
    return hashlib.sha256("\n".join(commits).encode()).hexdigest()


def _meta_name(branch: str) -> str:
    return f"change_cache {branch}"


def _settings(p_value: float, min_change: float, window: int) -> dict[str, Any]:
    return {"version": CACHE_VERSION, "p_value": p_value, "min_change": min_change, "window": window}


def _state_text(state: State) -> str:
    """A state as ``|``-separated fields: its counts, weak candidates, then its arrays as base64 and its change
    points as JSON (written and read in a few microseconds: a history of 100,000 series rewrites every row)."""
    changes = json.dumps([[f.commit, f.previous, *f.point] for f in state.changes], separators=(",", ":")) \
        if state.changes else ""
    return "|".join((str(state.points), str(state.last), str(state.resume), ",".join(map(str, state.weak)),
                     _pack(state.tail, "<f8"), changes, _pack(state.values, "<f8"), _pack(state.commits, "<i8")))


def _pack(array: np.ndarray, dtype: str) -> str:
    """An array as base64 of its little-endian bytes: a tenth of the time of a JSON list of numbers."""
    return base64.b64encode(array.astype(dtype, copy=False).tobytes()).decode() if len(array) else ""


def _unpack(text: str, dtype: str) -> np.ndarray:
    """``_pack``'s array, as float64 or int64 in this machine's byte order (read-only: the text's bytes)."""
    if not text:
        return np.zeros(0, dtype)
    array = np.frombuffer(base64.b64decode(text, validate=True), dtype=dtype)
    return array if array.dtype.isnative else array.astype(array.dtype.newbyteorder("="))


def _state_of(text: str) -> State:
    points, last, resume, weak, tail, changes, values, commits = text.split("|")
    found = [Found(int(c[0]), int(c[1]), ChangePoint(int(c[2]), float(c[3]), float(c[4]), float(c[5]), bool(c[6])))
             for c in json.loads(changes)] if changes else []
    rest = _unpack(tail, "<f8")  # checked with the other rows' (``_read_states``)
    if not values and not commits:  # most series: no candidate, nothing kept
        return State(int(points), int(last), [int(w) for w in weak.split(",")] if weak else [], int(resume), rest,
                     found)
    kept, at = _unpack(values, "<f8"), _unpack(commits, "<i8").astype(np.int64)
    if len(kept) != len(at) or (len(kept) and (len(kept) != int(points) or not np.isfinite(kept).all())):
        raise ValueError("kept values")
    return State(int(points), int(last), [int(w) for w in weak.split(",")] if weak else [], int(resume), rest,
                 found, kept, at)


def found_in(series: Series, points: Iterable[ChangePoint]) -> list[Found]:
    """Change points of ``series`` by the branch's commit indexes."""
    return [Found(int(series.commits[p.position]), int(series.commits[p.position - 1]), p) for p in points]


def search(series_list: Sequence[Series], p_value: float, min_change: float, window: int) -> dict[int, State]:
    """Each series searched from scratch; many at once where they have the same length (``loud_windows``)."""
    states: dict[int, State] = {}
    by_length: dict[int, list[Series]] = {}
    for series in series_list:
        by_length.setdefault(len(series.values), []).append(series)
    for length, group in by_length.items():
        loud = loud_windows(np.array([s.values for s in group]), p_value, window)
        calm_resume = quiet_resume(length, window)
        for series, first in zip(group, loud.tolist()):
            values = series.values
            candidates: list[int] = []
            weak: list[int] = []
            if first < 0:
                resume = calm_resume
            else:
                candidates, weak, resume = window_search(values, p_value, window, first)
            found = found_in(series, merge(values, candidates, p_value, min_change)) if candidates else []
            states[series.id] = State(length, int(series.commits[-1]) if length else -1, weak, resume,
                                      values[resume:], found,
                                      *((values, series.commits) if candidates else ()))
    return states


def cached_changes(history: History, branch: str, commits: list[str], times: list[str], run_commit: dict[int, int],
                   p_value: float = P_VALUE, min_change: float = 0.0, window: int = WINDOW) -> Cached:
    """Every series' change points on ``branch`` (``commit_order``'s commits, times and runs), from the cache
    where it covers them, updating it."""
    settings = _settings(p_value, min_change, window)
    meta = _read_meta(history, branch)
    usable = (meta is not None and {k: meta.get(k) for k in settings} == settings
              and isinstance(meta.get("commits"), int) and isinstance(meta.get("last_run"), int)
              and 0 < meta["commits"] <= len(commits) and meta.get("digest") == _digest(commits[:meta["commits"]]))
    states = _read_states(history, branch) if usable else None
    if states is None or meta is None:
        check_sqlite_values(history)  # every point is read: checked first, as every whole reader does
        states = search(load_series(history, branch, run_commit), p_value, min_change, window)
        changed = True
    else:
        new_runs = sorted(run for run in run_commit if run > meta["last_run"])
        if any(run_commit[run] < meta["commits"] for run in new_runs):  # a covered commit measured again
            check_sqlite_values(history)
            states = search(load_series(history, branch, run_commit), p_value, min_change, window)
        else:
            _update(history, branch, run_commit, new_runs, states, p_value, min_change, window)
        changed = bool(new_runs)
    if changed and run_commit:
        _write(history, branch, states, {**settings, "commits": len(commits), "digest": _digest(commits),
                                         "last_run": max(run_commit)})
    return Cached(commits, times, run_commit, {sid: s.changes for sid, s in states.items()},
                  {sid: s.last for sid, s in states.items() if s.points})


def _update(history: History, branch: str, run_commit: dict[int, int], new_runs: list[int], states: dict[int, State],
            p_value: float, min_change: float, window: int) -> None:
    """Append the new runs' points to their series' states and search again from where each resumes."""
    lookup = np.full(max(run_commit) + 1, -1, dtype=np.int64)
    lookup[list(run_commit)] = list(run_commit.values())
    parts = [np.zeros((0, 3))]
    for start in range(0, len(new_runs), 500):
        part = new_runs[start:start + 500]
        parts.append(checked_points(history, history.query(
            f"SELECT series_id, run_id, value FROM perfgate_points WHERE run_id IN ({', '.join('?' * len(part))})",
            part)))
    table = np.concatenate(parts)
    unknown = [sid for sid in np.unique(table[:, 0]).astype(np.int64).tolist() if sid not in states]
    tails = _new_tails(table[:, 0].astype(np.int64), lookup[table[:, 1].astype(np.int64)], table[:, 2], states)
    by_length: dict[int, list[int]] = {}
    for series_id, (tail, _) in tails.items():
        by_length.setdefault(len(tail), []).append(series_id)
    full_needed: list[int] = list(unknown)
    pending: dict[int, list[int]] = {}
    for length, ids in by_length.items():
        loud = loud_windows(np.stack([tails[sid][0] for sid in ids]), p_value, window)
        calm_resume = quiet_resume(length, window)
        for series_id, first in zip(ids, loud.tolist()):
            state = states[series_id]
            tail, order = tails[series_id]
            found_all: list[int] = []
            saved: list[int] = []
            if first < 0:
                resume = calm_resume
            else:
                found_all, saved, resume = window_search(tail, p_value, window, first)
            weak = state.weak + [state.resume + at for at in saved]
            candidates = state.weak + [state.resume + at for at in found_all]
            states[series_id] = State(state.points + len(order), order[-1], weak, state.resume + resume,
                                      tail[resume:], [])
            if candidates:
                pending[series_id] = candidates
                if len(state.values):  # kept: the new values appended
                    states[series_id] = states[series_id]._replace(
                        values=np.concatenate((state.values, tail[len(state.tail):])),
                        commits=np.concatenate((state.commits, np.array(order, dtype=np.int64))))
                else:
                    full_needed.append(series_id)
    loaded = {s.id: s for s in load_series(history, branch, run_commit, full_needed)} if full_needed else {}
    states.update(search([loaded[sid] for sid in unknown if sid in loaded], p_value, min_change, window))
    for series_id, candidates in pending.items():
        state = states[series_id]
        if series_id in loaded:
            state = state._replace(values=loaded[series_id].values, commits=loaded[series_id].commits)
        series = Series(series_id, {}, state.commits, state.values)
        states[series_id] = state._replace(changes=found_in(series, merge(series.values, candidates, p_value,
                                                                        min_change)))


def _new_tails(ids: np.ndarray, commits: np.ndarray, values: np.ndarray,
               states: dict[int, State]) -> dict[int, tuple[np.ndarray, list[int]]]:
    """Per series with a state, its tail with the new commits' values after it (a rerun's: the median), and those
    commits' indexes; by series id."""
    order = np.argsort(ids, kind="stable")
    ids, commits, values = ids[order], commits[order], values[order]
    tails: dict[int, tuple[np.ndarray, list[int]]] = {}
    if len(ids) and not np.all(ids[1:] > ids[:-1]):  # a series with several new points
        for series in split_series(ids, commits, values, None):
            if series.id in states:
                tails[series.id] = (np.concatenate((states[series.id].tail, series.values)), series.commits.tolist())
        return tails
    # one new point a series (CI records one commit at a time): the tails of a length as the rows of one array
    listed, at = ids.tolist(), commits.tolist()
    by_length: dict[int, list[int]] = {}
    for position, series_id in enumerate(listed):
        state = states.get(series_id)
        if state is not None:
            by_length.setdefault(len(state.tail), []).append(position)
    for length, positions in by_length.items():
        rows = np.empty((len(positions), length + 1))
        rows[:, :length] = np.array([states[listed[p]].tail for p in positions]).reshape(len(positions), length)
        rows[:, length] = values[positions]
        for row, position in zip(rows, positions):
            tails[listed[position]] = (row, [at[position]])
    return tails


def _read_meta(history: History, branch: str) -> dict[str, Any] | None:
    rows = history.query("SELECT value FROM perfgate_meta WHERE name = ?", (_meta_name(branch),))
    try:
        meta = json.loads(rows[0][0]) if rows else None
    except (TypeError, ValueError):
        return None
    return meta if isinstance(meta, dict) else None


def _read_states(history: History, branch: str) -> dict[int, State] | None:
    """The branch's rows; None where one does not parse (searched from scratch, then rewritten)."""
    states = {}
    try:
        for series_id, text in history.query("SELECT series_id, state FROM perfgate_change_cache WHERE branch = ?",
                                             (branch,)):
            states[int(series_id)] = _state_of(text)
    except (TypeError, ValueError, IndexError, binascii.Error):
        return None
    if states and not np.isfinite(np.concatenate([state.tail for state in states.values()])).all():
        return None
    return states


def _write(history: History, branch: str, states: dict[int, State], meta: dict[str, Any]) -> None:
    """Replace the branch's rows in one transaction. A history this user cannot write (a read-only copy) keeps
    its cache as it was: the change points are right either way, only slower next time."""
    try:
        with history.transaction():
            history.execute("DELETE FROM perfgate_change_cache WHERE branch = ?", (branch,))
            history.insert_rows("perfgate_change_cache", ("branch", "series_id", "state"),
                                [(branch, sid, _state_text(state)) for sid, state in sorted(states.items())])
            history.execute("DELETE FROM perfgate_meta WHERE name = ?", (_meta_name(branch),))
            history.execute("INSERT INTO perfgate_meta (name, value) VALUES (?, ?)",
                            (_meta_name(branch), json.dumps(meta)))
    except InputError:
        return
