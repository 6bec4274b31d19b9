"""Each series' change points kept in the history (``perfgate_change_cache``), so that ``history changes`` after
one more recorded commit redoes only what the new points change.

The windowed search (``changes.window_search``) judges a window of full length on its own points only: a
series that grows by a commit keeps the candidates of those windows and searches again from the first window its
end cut short. A series' state (the candidates, where the search resumes, the points from there on, and for a
series with candidates all its points) and its change points are kept with its count of points and its newest
commit; a branch's states are kept as columns, ``CHUNK`` series a row (an ``.npz`` archive as base64 text,
keyed by the chunk's first series id), so that 100,000 series are read and written as a few arrays. A branch's
entry in ``perfgate_meta`` says which runs and commits the rows cover, how many series they hold and under which
settings; anything else (a rerun or a backfill of a covered commit, other settings, another ``CACHE_VERSION``, a row
that does not parse, rows lost) is searched from scratch, and the result is the same as without the cache. A search from scratch checks every point
of a SQLite history first (``check_sqlite_values``); an update checks the points it reads as it reads them.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import io
import itertools
import json
import zipfile
import zlib
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

CACHE_VERSION = 3  # bump when the search or the rows change: older rows are searched again


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


# A branch's states as columns, a chunk of series a row (keyed by its first series id): reading and writing 100,000
# series' rows one by one was 40% of an update, a few arrays a chunk are read and written at memory speed.
CHUNK = 8192
_COUNTS = 7  # per series: points, last, resume, and how many weak candidates, tail values, kept values, changes


def _chunk_text(items: Sequence[tuple[int, State]]) -> str:
    """A chunk of states as base64 of an ``.npz`` archive of its columns (``_chunk_states`` reads it)."""
    states = [state for _, state in items]
    kept = [state for state in states if len(state.values)]
    found = [f for state in states for f in state.changes]
    buffer = io.BytesIO()
    np.savez(buffer,
             ids=np.array([sid for sid, _ in items], dtype=np.int64),
             counts=np.array([(s.points, s.last, s.resume, len(s.weak), len(s.tail), len(s.values), len(s.changes))
                              for s in states], dtype=np.int64).reshape(len(states), _COUNTS),
             weak=np.fromiter(itertools.chain.from_iterable(s.weak for s in states), dtype=np.int64),
             tails=np.concatenate([np.zeros(0)] + [s.tail for s in states]).astype(np.float64, copy=False),
             values=np.concatenate([np.zeros(0)] + [s.values for s in kept]).astype(np.float64, copy=False),
             commit_steps=_steps(np.concatenate([np.zeros(0, np.int64)] + [s.commits for s in kept])),
             found_at=np.array([(f.commit, f.previous, f.point.position) for f in found],
                               dtype=np.int64).reshape(len(found), 3),
             found_values=np.array([(f.point.p_value, f.point.before, f.point.after) for f in found],
                                   dtype=np.float64).reshape(len(found), 3),
             found_exact=np.array([f.point.exact for f in found], dtype=np.bool_))
    return base64.b64encode(buffer.getvalue()).decode("ascii")


def _steps(indexes: np.ndarray) -> np.ndarray:
    """The kept commit indexes as their steps, compressed: mostly 1s, a fifth of the chunk as raw int64."""
    steps = np.diff(indexes, prepend=0).astype("<i8")
    return np.frombuffer(zlib.compress(steps.tobytes(), 1), dtype=np.uint8)


def _indexes(steps: np.ndarray) -> np.ndarray:
    """``_steps``'s commit indexes."""
    return np.cumsum(np.frombuffer(zlib.decompress(steps.astype(np.uint8).tobytes()), dtype="<i8"), dtype=np.int64)


def _split(flat: np.ndarray, lengths: np.ndarray) -> list[np.ndarray]:
    """``flat`` cut into pieces of ``lengths`` (views; slicing in a loop is a tenth of ``np.split``'s time)."""
    ends = np.cumsum(lengths).tolist()
    return [flat[start:end] for start, end in zip([0] + ends[:-1], ends)]


def _chunk_states(text: str) -> dict[int, State]:
    """``_chunk_text``'s states by series id; ValueError (or the archive's own errors) where it does not hold
    together."""
    with np.load(io.BytesIO(base64.b64decode(text, validate=True)), allow_pickle=False) as archive:
        columns = {name: archive[name] for name in ("ids", "counts", "weak", "tails", "values", "commit_steps",
                                                    "found_at", "found_values", "found_exact")}
    columns["commits"] = _indexes(columns["commit_steps"])
    ids, counts = columns["ids"], columns["counts"]
    n, found = len(ids), len(columns["found_exact"])
    if (ids.ndim != 1 or counts.shape != (n, _COUNTS) or columns["found_at"].shape != (found, 3)
            or columns["found_values"].shape != (found, 3) or (counts < 0).any(axis=0)[[0, 2, 3, 4, 5, 6]].any()
            or (counts[:, 1] < -1).any() or not ((counts[:, 5] == 0) | (counts[:, 5] == counts[:, 0])).all()
            or [int(x) for x in counts[:, 3:].sum(axis=0)] != [len(columns["weak"]), len(columns["tails"]),
                                                                len(columns["values"]), found]
            or len(columns["commits"]) != len(columns["values"])
            or not np.isfinite(columns["tails"]).all() or not np.isfinite(columns["values"]).all()):
        raise ValueError("change cache chunk")
    tails = _split(columns["tails"], counts[:, 4])
    has_kept = counts[:, 5] > 0
    values = iter(_split(columns["values"], counts[has_kept, 5]))
    commits = iter(_split(columns["commits"], counts[has_kept, 5]))
    weak = columns["weak"].tolist()
    found_at, found_values, found_exact = (columns["found_at"].tolist(), columns["found_values"].tolist(),
                                           columns["found_exact"].tolist())
    states: dict[int, State] = {}
    weak_at = found_next = 0
    for sid, (points, last, resume, weak_n, _, kept_n, found_n), tail in zip(ids.tolist(), counts.tolist(), tails):
        changes = [Found(at[0], at[1], ChangePoint(at[2], found_values[i][0], found_values[i][1], found_values[i][2],
                                                   found_exact[i]))
                   for i, at in enumerate(found_at[found_next:found_next + found_n], found_next)] if found_n else []
        found_next += found_n
        states[sid] = State(points, last, weak[weak_at:weak_at + weak_n], resume, tail, changes,
                            *((next(values), next(commits)) if kept_n else ()))
        weak_at += weak_n
    return states


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
    if states is not None and meta is not None and len(states) != meta.get("series"):
        states = None  # rows lost (deleted by hand): what they covered is searched again, not taken as no change
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
                                         "last_run": max(run_commit), "series": len(states)})
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
    states: dict[int, State] = {}
    try:
        for (text,) in history.query("SELECT state FROM perfgate_change_cache WHERE branch = ?", (branch,)):
            states.update(_chunk_states(text))
    except (TypeError, ValueError, IndexError, KeyError, OSError, EOFError, binascii.Error, zipfile.BadZipFile,
            zlib.error):
        return None
    return states


def _write(history: History, branch: str, states: dict[int, State], meta: dict[str, Any]) -> None:
    """Replace the branch's rows in one transaction. A history this user cannot write (a read-only copy) keeps
    its cache as it was: the change points are right either way, only slower next time."""
    try:
        with history.transaction():
            history.execute("DELETE FROM perfgate_change_cache WHERE branch = ?", (branch,))
            ordered = sorted(states.items())
            history.insert_rows("perfgate_change_cache", ("branch", "series_id", "state"),
                                [(branch, ordered[start][0], _chunk_text(ordered[start:start + CHUNK]))
                                 for start in range(0, len(ordered), CHUNK)])
            history.execute("DELETE FROM perfgate_meta WHERE name = ?", (_meta_name(branch),))
            history.execute("INSERT INTO perfgate_meta (name, value) VALUES (?, ?)",
                            (_meta_name(branch), json.dumps(meta)))
    except InputError:
        return
