"""Each series' change points kept in the history (``perfgate_change_cache``), so that ``history changes`` after
one more recorded commit redoes only what the new points change.

The windowed search (``search.window_search``) judges a window of full length on its own points only: a
series that grows by a commit keeps the candidates of those windows and searches again from the first window its
end cut short. A series' state (the candidates, where the search resumes, the points from there on, and for a
series with candidates all its points) and its change points are kept with its count of points and its newest
commit; a branch's states are kept as columns, ``CHUNK`` series a row (``perfgate.history.cache_rows``), so that
100,000 series are read and written as a few arrays, and most series (no candidate) are updated as columns too
(``_append_plain``): their new points appended and screened as one array a tail length. A branch's entry in
``perfgate_meta`` says which runs and commits the rows cover, how many series they hold and under which settings;
anything else (a rerun or a backfill of a covered commit, other settings, another ``CACHE_VERSION``, a row that
does not parse, rows lost) is searched from scratch, and the result is the same as without the cache. A search from
scratch checks every point of a SQLite history first (``check_sqlite_values``); an update checks the points it reads
as it reads them.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
from typing import Any, Collection, Iterable, Iterator, NamedTuple, Sequence

import numpy as np

from perfgate.errors import InputError
from perfgate.history.changes import P_VALUE, ChangePoint
from perfgate.history.cache_rows import (
    Found,
    Plain,
    State,
    chunk_states,
    chunk_text,
    joined,
    plain_columns,
    plain_states,
    plain_text,
    stored_form,
)
from perfgate.history.search import WINDOW, quiet_resume
from perfgate.history.db import History, check_sqlite_values
from perfgate.history.divide import window_search_many
from perfgate.history.judge import merge_many
from perfgate.history.screen import loud_windows
from perfgate.history.series import Series, checked_points, load_series, split_series

CACHE_VERSION = 19  # bump when the search or the rows change: older rows are searched again
CHUNK = 8192  # series a row


class Stored(NamedTuple):
    """A branch's states: the series with candidates, kept values or change points, and the others as columns."""

    states: dict[int, State]
    plain: dict[int, Plain]  # by tail length


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


def found_in(series: Series, points: Iterable[ChangePoint]) -> list[Found]:
    """Change points of ``series`` by the branch's commit indexes."""
    return [Found(int(series.commits[p.position]), int(series.commits[p.position - 1]), p) for p in points]


def search(series_list: Sequence[Series], p_value: float, min_change: float, window: int) -> dict[int, State]:
    """Each series searched from scratch; many at once where they have the same length (``loud_windows``), and
    those the screen cannot clear all at once (``window_search_many``)."""
    by_length: dict[int, list[Series]] = {}
    for series in series_list:
        by_length.setdefault(len(series.values), []).append(series)
    first: dict[int, int] = {}
    for group in by_length.values():
        first.update(zip([s.id for s in group], loud_windows(np.array([s.values for s in group]), p_value,
                                                             window).tolist()))
    loud = [s for group in by_length.values() for s in group if first[s.id] >= 0]
    searched = dict(zip([s.id for s in loud], window_search_many([s.values for s in loud], p_value, window,
                                                                 [first[s.id] for s in loud])))
    states: dict[int, State] = {}
    pending: list[tuple[Series, list[int]]] = []
    for length, group in by_length.items():
        calm_resume = quiet_resume(length, window)
        for series in group:
            candidates, weak, resume = searched.get(series.id, ([], [], calm_resume))
            if candidates:
                pending.append((series, candidates))
            states[series.id] = State(length, int(series.commits[-1]) if length else -1, weak, resume,
                                      series.values[resume:], [],
                                      *((series.values, series.commits) if candidates else ()))
    _merge_pending(states, pending, p_value, min_change)
    return states


def _merge_pending(states: dict[int, State], pending: Sequence[tuple[Series, list[int]]], p_value: float,
                   min_change: float) -> None:
    """Each pending series' candidates that hold (``merge_many``: all series at once), as its state's changes."""
    merged = merge_many([series.values for series, _ in pending], [candidates for _, candidates in pending],
                        p_value, min_change)
    for (series, _), points in zip(pending, merged):
        if points:
            state = states[series.id]
            states[series.id] = State(*state[:5], found_in(series, points), *state[6:])


def cached_changes(history: History, branch: str, commits: list[str], times: list[str], run_commit: dict[int, int],
                   p_value: float = P_VALUE, min_change: float = 0.0, window: int = WINDOW) -> Cached:
    """Every series' change points on ``branch`` (``commit_order``'s commits, times and runs), from the cache
    where it covers them, updating it."""
    settings = _settings(p_value, min_change, window)
    meta = _read_meta(history, branch)
    usable = (meta is not None and {k: meta.get(k) for k in settings} == settings
              and isinstance(meta.get("commits"), int) and isinstance(meta.get("last_run"), int)
              and 0 < meta["commits"] <= len(commits) and meta.get("digest") == _digest(commits[:meta["commits"]]))
    stored = _read_states(history, branch) if usable else None
    if stored is not None and meta is not None and _count(stored) != meta.get("series"):
        stored = None  # rows lost (deleted by hand): what they covered is searched again, not taken as no change
    if stored is None or meta is None:
        check_sqlite_values(history)  # every point is read: checked first, as every whole reader does
        stored = _searched(history, branch, run_commit, p_value, min_change, window)
        changed = True
    else:
        new_runs = sorted(run for run in run_commit if run > meta["last_run"])
        if any(run_commit[run] < meta["commits"] for run in new_runs):  # a covered commit measured again
            check_sqlite_values(history)
            stored = _searched(history, branch, run_commit, p_value, min_change, window)
        elif new_runs:
            stored = _update(history, branch, run_commit, new_runs, stored, p_value, min_change, window)
        changed = bool(new_runs)
    if changed and run_commit:
        _write(history, branch, stored, {**settings, "commits": len(commits), "digest": _digest(commits),
                                         "last_run": max(run_commit), "series": _count(stored)})
    changes = {sid: s.changes for sid, s in stored.states.items()}
    newest = {sid: s.last for sid, s in stored.states.items() if s.points}
    for piece in stored.plain.values():
        changes.update((sid, []) for sid in piece.ids.tolist())
        newest.update(zip(piece.ids[piece.points > 0].tolist(), piece.last[piece.points > 0].tolist()))
    return Cached(commits, times, run_commit, {sid: changes[sid] for sid in sorted(changes)}, newest)


def _count(stored: Stored) -> int:
    return len(stored.states) + sum(len(piece.ids) for piece in stored.plain.values())


def _searched(history: History, branch: str, run_commit: dict[int, int], p_value: float, min_change: float,
              window: int) -> Stored:
    """Every series of the branch searched from scratch."""
    return Stored(*plain_columns(search(load_series(history, branch, run_commit, with_facts=False), p_value,
                                        min_change, window)))


def _update(history: History, branch: str, run_commit: dict[int, int], new_runs: list[int], stored: Stored,
            p_value: float, min_change: float, window: int) -> Stored:
    """Append the new runs' points to their series' states and search again from where each resumes: the plain
    series with one new point each as columns (``_append_plain``), the others one by one (``_update_states``)."""
    lookup = np.full(max(run_commit) + 1, -1, dtype=np.int64)
    lookup[list(run_commit)] = list(run_commit.values())
    parts = [np.zeros((0, 3))]
    for start in range(0, len(new_runs), 500):
        part = new_runs[start:start + 500]
        parts.append(checked_points(history, history.query(
            f"SELECT series_id, run_id, value FROM perfgate_points WHERE run_id IN ({', '.join('?' * len(part))})",
            part)))
    table = np.concatenate(parts)
    ids, commits = table[:, 0].astype(np.int64), lookup[table[:, 1].astype(np.int64)]
    plain, moved, consumed = _append_plain(stored.plain, ids, commits, table[:, 2], p_value, window)
    states = {**stored.states, **moved}
    rest = ~consumed
    _update_states(history, branch, run_commit, ids[rest], commits[rest], table[rest, 2], states, p_value,
                   min_change, window)
    kept, more = plain_columns(states)
    return Stored(kept, joined([*plain.values(), *more.values()]))


def _append_plain(plain: dict[int, Plain], ids: np.ndarray, commits: np.ndarray, values: np.ndarray,
                  p_value: float, window: int) -> tuple[dict[int, Plain], dict[int, State], np.ndarray]:
    """Each plain series' one new point appended to its tail, the tails of a length screened as one array: the
    series the screen clears stay plain (their search resumes where a quiet one's does); those it cannot clear and
    those with several new points become states, searched one by one. Also which points were used here."""
    order = np.argsort(ids, kind="stable")
    in_order = ids[order]
    consumed = np.zeros(len(ids), dtype=bool)
    pieces: list[Plain] = []
    moved: dict[int, State] = {}
    for length, piece in plain.items():
        first = np.searchsorted(in_order, piece.ids, "left")
        count = np.searchsorted(in_order, piece.ids, "right") - first
        pieces.append(Plain(*(column[count == 0] for column in piece)))
        rows = np.flatnonzero(count == 1)
        at = order[first[rows]]
        grown = np.empty((len(rows), length + 1))
        grown[:, :length] = piece.tails[rows]
        grown[:, length] = values[at]
        quiet = loud_windows(grown, p_value, window, fresh=length) < 0  # no blip in the old tail
        resume = quiet_resume(length + 1, window)
        calm = rows[quiet]
        pieces.append(Plain(piece.ids[calm], piece.points[calm] + 1, commits[at[quiet]], piece.resume[calm] + resume,
                            grown[quiet, resume:]))
        consumed[at[quiet]] = True
        moved.update(plain_states(piece, np.concatenate((rows[~quiet], np.flatnonzero(count > 1)))))
    return joined(pieces), moved, consumed


def _update_states(history: History, branch: str, run_commit: dict[int, int], ids: np.ndarray, commits: np.ndarray,
                   values: np.ndarray, states: dict[int, State], p_value: float, min_change: float,
                   window: int) -> None:
    """The new points (``ids``, ``commits``, ``values``) appended to their series' states, each searched again from
    where it resumes; a series with no state searched whole."""
    unknown = [sid for sid in np.unique(ids).tolist() if sid not in states]
    tails = _new_tails(ids, commits, values, states)
    by_length: dict[int, list[int]] = {}
    for series_id, (tail, _) in tails.items():
        by_length.setdefault(len(tail), []).append(series_id)
    full_needed: list[int] = list(unknown)
    pending: dict[int, list[int]] = {}
    first: dict[int, int] = {}
    for group in by_length.values():
        first.update(zip(group, loud_windows(np.stack([tails[sid][0] for sid in group]), p_value, window).tolist()))
    loud = [sid for group in by_length.values() for sid in group if first[sid] >= 0]
    searched = dict(zip(loud, window_search_many([tails[sid][0] for sid in loud], p_value, window,
                                                 [first[sid] for sid in loud])))
    grown = _grown_values(tails, states)
    for length, group in by_length.items():
        calm_resume = quiet_resume(length, window)
        for series_id in group:
            state = states[series_id]
            tail, order = tails[series_id]
            found_all, saved, resume = searched.get(series_id, ((), (), calm_resume))
            weak = state.weak + [state.resume + at for at in saved] if saved else state.weak
            candidates = state.weak + [state.resume + at for at in found_all] if found_all else state.weak
            if candidates:
                pending[series_id] = candidates
                if series_id not in grown:
                    full_needed.append(series_id)
            states[series_id] = State(state.points + len(order), order[-1], weak, state.resume + resume,
                                      tail[resume:], [], *(grown.get(series_id, ()) if candidates else ()))
    loaded = {s.id: s for s in load_series(history, branch, run_commit, full_needed, False)} if full_needed else {}
    states.update(search([loaded[sid] for sid in unknown if sid in loaded], p_value, min_change, window))
    for series_id, series in loaded.items():
        if series_id in pending:
            states[series_id] = states[series_id]._replace(values=series.values, commits=series.commits)
    _merge_pending(states, [(Series(sid, {}, states[sid].commits, states[sid].values), candidates)
                            for sid, candidates in pending.items()], p_value, min_change)


def _grown_values(tails: dict[int, tuple[np.ndarray, list[int]]],
                  states: dict[int, State]) -> dict[int, tuple[np.ndarray, np.ndarray]]:
    """Per series with kept values and new points (``_new_tails``), its values and commit indexes with the new ones
    after them, each a view of one array: one copy for all of them, not two per series."""
    ids = [sid for sid in tails if len(states[sid].values)]
    values: list[np.ndarray] = []
    commits: list[np.ndarray | list[int]] = []
    sizes: list[int] = []
    for series_id in ids:
        state, (tail, order) = states[series_id], tails[series_id]
        values += (state.values, tail[len(state.tail):])
        commits += (state.commits, order)
        sizes.append(len(state.values) + len(order))
    flat_values = np.concatenate([np.zeros(0), *values])
    flat_commits = np.concatenate([np.zeros(0, dtype=np.int64), *commits])
    ends = np.cumsum(sizes, dtype=np.int64).tolist()
    return {series_id: (flat_values[end - size:end], flat_commits[end - size:end])
            for series_id, end, size in zip(ids, ends, sizes)}


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


def _read_states(history: History, branch: str) -> Stored | None:
    """The branch's rows; None where one does not parse (searched from scratch, then rewritten)."""
    states: dict[int, State] = {}
    pieces: list[Plain] = []
    try:
        for (text,) in history.query("SELECT state FROM perfgate_change_cache WHERE branch = ?", (branch,)):
            kept, plain = chunk_states(text)
            states.update(kept)
            pieces += plain
    except (TypeError, ValueError, IndexError, KeyError):  # base64's errors are ValueErrors
        return None
    return Stored(states, joined(pieces))


def _rows(branch: str, stored: Stored, dialect: str = "sqlite",
          taken: Collection[int] = ()) -> list[tuple[str, int, bytes | str]]:
    """``CHUNK`` series a row, each keyed by its smallest series id that no key in ``taken`` (the rows it replaces)
    holds, or its smallest where every one does: the plain ones of each tail length, then the others."""
    held = np.array(sorted(taken), dtype=np.int64)
    rows = [(branch, _key(piece.ids[start:start + CHUNK], held),
             stored_form(plain_text(Plain(*(column[start:start + CHUNK] for column in piece))), dialect))
            for piece in stored.plain.values() for start in range(0, len(piece.ids), CHUNK)]
    ordered = sorted(stored.states.items())
    return rows + [(branch, _key(np.array([sid for sid, _ in ordered[start:start + CHUNK]], dtype=np.int64), held),
                    stored_form(chunk_text(ordered[start:start + CHUNK]), dialect))
                   for start in range(0, len(ordered), CHUNK)]


def _key(ids: np.ndarray, held: np.ndarray) -> int:
    free = ids[~np.isin(ids, held)]
    return int((free if len(free) else ids).min())


def _keys(history: History, branch: str) -> set[int]:
    return {int(row[0]) for row in history.query("SELECT series_id FROM perfgate_change_cache WHERE branch = ?",
                                                 (branch,))}


def _write(history: History, branch: str, stored: Stored, meta: dict[str, Any]) -> None:
    """Replace the branch's rows in one transaction: the new rows in first, under keys the old ones do not hold,
    then the old ones out (``_freed_pages_kept``). A history this user cannot write (a read-only copy) keeps its
    cache as it was: the change points are right either way, only slower next time."""
    rows = _rows(branch, stored, history.dialect, _keys(history, branch))
    keys = {key for _, key, _ in rows}
    try:
        with history.transaction(), _freed_pages_kept(history):
            old = _keys(history, branch)  # read again under the write lock: a writer may have come in between
            _delete(history, branch, old & keys)
            history.insert_rows("perfgate_change_cache", ("branch", "series_id", "state"), rows)
            _delete(history, branch, old - keys)
            history.execute("DELETE FROM perfgate_meta WHERE name = ?", (_meta_name(branch),))
            history.execute("INSERT INTO perfgate_meta (name, value) VALUES (?, ?)",
                            (_meta_name(branch), json.dumps(meta)))
    except InputError:
        return


def _delete(history: History, branch: str, keys: Iterable[int]) -> None:
    history.executemany("DELETE FROM perfgate_change_cache WHERE branch = ? AND series_id = ?",
                        [(branch, key) for key in sorted(keys)])


@contextlib.contextmanager
def _freed_pages_kept(history: History) -> Iterator[None]:
    """SQLite's ``secure_delete`` off while the old rows go (on in Debian's build): zeroing the 60-80 MB of pages
    they free journals every one of them, half the cost of the write. Those pages then hold the previous copy of
    the cache (derived from the points in the same file) until the next write reuses them: pages free when a
    transaction starts are written without being journaled."""
    if history.dialect != "sqlite":
        yield
        return
    before = int(history.query("PRAGMA secure_delete")[0][0])
    history.execute("PRAGMA secure_delete = OFF")
    try:
        yield
    finally:
        history.execute(f"PRAGMA secure_delete = {('OFF', 'ON', 'FAST')[before] if 0 <= before <= 2 else 'ON'}")
