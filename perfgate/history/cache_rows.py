"""The change cache's states (``perfgate.history.cache``) in memory and as rows.

Most series of a history have no candidate (``Plain``): their state is a count, a newest commit, where the search
resumes and the points from there on, kept as columns, the series of one tail length as the rows of one array, so
that an update appends their new points, screens them and writes them back as a few arrays, with no object per
series. The others (candidates, kept values, change points) are a ``State`` each.

A row of ``perfgate_change_cache`` holds the columns of a piece of the branch's series (keyed by one of its series
ids): per series its counts, then its weak candidates, tail values, kept values (and their commit indexes, as
steps of a byte, the larger ones apart) and change points, each column the series' pieces end to end. A row is the columns' bytes after
their lengths (``pack``), a BLOB in SQLite and base64 text in PostgreSQL (whose column is text): decoding base64
and the ``.npz`` archive's checksums were a third of reading and writing 100,000 series.
"""

from __future__ import annotations

import base64
import itertools
from typing import Iterable, NamedTuple, Sequence

import numpy as np

from perfgate.history.changes import ChangePoint


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


class Plain(NamedTuple):
    """Series with no candidate, kept value or change point, and tails of one length: a state's fields as columns."""

    ids: np.ndarray
    points: np.ndarray
    last: np.ndarray
    resume: np.ndarray
    tails: np.ndarray  # a row per series


_COUNTS = 7  # per series: points, last, resume, and how many weak candidates, tail values, kept values, changes
_FIELDS = ("ids", "counts", "weak", "tails", "values", "commit_steps", "jumps_at", "jumps", "found_at",
           "found_values", "found_kind")
_TYPES = {"ids": "<i8", "counts": "<i8", "weak": "<i8", "tails": "<f8", "values": "<f8", "commit_steps": "u1",
          "jumps_at": "<i8", "jumps": "<i8", "found_at": "<i8", "found_values": "<f8", "found_kind": "u1"}
_WIDTHS = {"counts": _COUNTS, "found_at": 3, "found_values": 3}
_MAGIC = b"perfgate-change-cache-6\n"
KINDS = 3  # a change point's kind byte: 0 a step, 1 an exact step, 2 gradual


def is_plain(state: State) -> bool:
    return not (state.weak or len(state.values) or state.changes)


def plain_columns(states: dict[int, State]) -> tuple[dict[int, State], dict[int, Plain]]:
    """``states`` parted: those with candidates, kept values or change points, and the others by tail length."""
    kept = {sid: state for sid, state in states.items() if not is_plain(state)}
    by_length: dict[int, list[tuple[int, State]]] = {}
    for sid, state in states.items():
        if sid not in kept:
            by_length.setdefault(len(state.tail), []).append((sid, state))
    plain = {}
    for length, items in by_length.items():
        points, last, resume = (np.array([getattr(s, name) for _, s in items], dtype=np.int64)
                                for name in ("points", "last", "resume"))
        plain[length] = Plain(np.array([sid for sid, _ in items], dtype=np.int64), points, last, resume,
                              np.array([s.tail for _, s in items], dtype=np.float64).reshape(len(items), length))
    return kept, plain


def plain_states(plain: Plain, rows: np.ndarray) -> dict[int, State]:
    """The ``rows`` of ``plain`` as a ``State`` each."""
    return {sid: State(points, last, [], resume, plain.tails[row], [])
            for row, sid, points, last, resume in zip(rows.tolist(), plain.ids[rows].tolist(),
                                                        plain.points[rows].tolist(), plain.last[rows].tolist(),
                                                        plain.resume[rows].tolist())}


def joined(pieces: Iterable[Plain]) -> dict[int, Plain]:
    """Pieces of plain columns joined by tail length."""
    by_length: dict[int, list[Plain]] = {}
    for piece in pieces:
        if len(piece.ids):
            by_length.setdefault(piece.tails.shape[1], []).append(piece)
    return {length: Plain(*(np.concatenate([getattr(p, name) for p in group]) for name in Plain._fields))
            for length, group in by_length.items()}


def plain_text(plain: Plain) -> bytes:
    """Plain columns as a row (``chunk_states`` reads it)."""
    rows, length = plain.tails.shape
    counts = np.zeros((rows, _COUNTS), dtype=np.int64)
    counts[:, 0], counts[:, 1], counts[:, 2], counts[:, 4] = plain.points, plain.last, plain.resume, length
    return _archive(ids=plain.ids, counts=counts, weak=np.zeros(0, np.int64), tails=plain.tails.ravel(),
                    values=np.zeros(0), **_steps(np.zeros(0, np.int64)),
                    found_at=np.zeros((0, 3), np.int64), found_values=np.zeros((0, 3)),
                    found_kind=np.zeros(0, np.uint8))


def chunk_text(items: Sequence[tuple[int, State]]) -> bytes:
    """States as a row (``chunk_states`` reads it)."""
    states = [state for _, state in items]
    kept = [state for state in states if len(state.values)]
    found = [f for state in states for f in state.changes]
    return _archive(
        ids=np.array([sid for sid, _ in items], dtype=np.int64),
        counts=np.array([(s.points, s.last, s.resume, len(s.weak), len(s.tail), len(s.values), len(s.changes))
                         for s in states], dtype=np.int64).reshape(len(states), _COUNTS),
        weak=np.fromiter(itertools.chain.from_iterable(s.weak for s in states), dtype=np.int64),
        tails=np.concatenate([np.zeros(0)] + [s.tail for s in states]).astype(np.float64, copy=False),
        values=np.concatenate([np.zeros(0)] + [s.values for s in kept]).astype(np.float64, copy=False),
        **_steps(np.concatenate([np.zeros(0, np.int64)] + [s.commits for s in kept])),
        found_at=np.array([(f.commit, f.previous, f.point.position) for f in found], dtype=np.int64).reshape(-1, 3),
        found_values=np.array([(f.point.p_value, f.point.before, f.point.after) for f in found],
                              dtype=np.float64).reshape(-1, 3),
        found_kind=np.array([f.point.exact + 2 * f.point.gradual for f in found], dtype=np.uint8))


def _archive(**columns: np.ndarray) -> bytes:
    arrays = [np.ascontiguousarray(columns[name], dtype=_TYPES[name]) for name in _FIELDS]
    return b"".join([_MAGIC, np.array([a.size for a in arrays], dtype="<i8").tobytes(), *(a.tobytes() for a in arrays)])


def stored_form(raw: bytes, dialect: str) -> bytes | str:
    """A row's bytes as its column holds them: a BLOB in SQLite, base64 text in PostgreSQL."""
    return raw if dialect == "sqlite" else base64.b64encode(raw).decode("ascii")


def _columns(stored: object) -> dict[str, np.ndarray]:
    """``_archive``'s columns, writable; ValueError where the row is no such thing."""
    raw = bytearray(stored if isinstance(stored, bytes) else base64.b64decode(str(stored), validate=True))
    if not raw.startswith(_MAGIC) or len(raw) < len(_MAGIC) + 8 * len(_FIELDS):
        raise ValueError("change cache chunk")
    at = len(_MAGIC) + 8 * len(_FIELDS)
    columns = {}
    for name, size in zip(_FIELDS, np.frombuffer(raw, "<i8", len(_FIELDS), len(_MAGIC)).tolist()):
        kind = np.dtype(_TYPES[name])
        if size < 0 or at + size * kind.itemsize > len(raw):
            raise ValueError("change cache chunk")
        column = np.frombuffer(raw, kind, size, at)
        columns[name] = column.reshape(-1, _WIDTHS[name]) if name in _WIDTHS else column
        at += size * kind.itemsize
    if at != len(raw) or (columns["found_kind"] >= KINDS).any():
        raise ValueError("change cache chunk")
    return columns


def _steps(indexes: np.ndarray) -> dict[str, np.ndarray]:
    """The kept commit indexes as their steps, a byte each (mostly 1s), and apart the steps a byte cannot hold
    (each series' first index, long gaps): where they are and what. zlib over the steps as int64 cost 70 ms a
    100,000-series update, this a few."""
    steps = np.diff(indexes, prepend=0)
    jumps_at = np.flatnonzero((steps < 0) | (steps > 255))
    small = steps.astype(np.uint8)
    small[jumps_at] = 0
    return {"commit_steps": small, "jumps_at": jumps_at, "jumps": steps[jumps_at]}


def _indexes(columns: dict[str, np.ndarray]) -> np.ndarray:
    """``_steps``'s commit indexes; ValueError where its columns do not hold together."""
    steps = columns["commit_steps"].astype(np.int64)
    jumps_at = columns["jumps_at"]
    if len(jumps_at) != len(columns["jumps"]) or ((jumps_at < 0) | (jumps_at >= len(steps))).any():
        raise ValueError("change cache chunk")
    steps[jumps_at] = columns["jumps"]
    indexes: np.ndarray = np.cumsum(steps)
    return indexes


def _starts(lengths: np.ndarray) -> np.ndarray:
    starts: np.ndarray = np.cumsum(lengths) - lengths
    return starts


def chunk_states(text: object) -> tuple[dict[int, State], list[Plain]]:
    """A row's states with candidates, kept values or change points by series id, and its other series as plain
    columns; ValueError where it does not hold together."""
    columns = _columns(text)
    columns["commits"] = _indexes(columns)
    ids, counts = columns["ids"], columns["counts"]
    n, found = len(ids), len(columns["found_kind"])
    if (ids.ndim != 1 or counts.shape != (n, _COUNTS) or columns["found_at"].shape != (found, 3)
            or columns["found_values"].shape != (found, 3) or (counts[:, [0, 2, 3, 4, 5, 6]] < 0).any()
            or (counts[:, 1] < -1).any() or not ((counts[:, 5] == 0) | (counts[:, 5] == counts[:, 0])).all()
            or [int(x) for x in counts[:, 3:].sum(axis=0)] != [len(columns["weak"]), len(columns["tails"]),
                                                                len(columns["values"]), found]
            or len(columns["commits"]) != len(columns["values"]) or columns["tails"].ndim != 1
            or not np.isfinite(columns["tails"]).all() or not np.isfinite(columns["values"]).all()):
        raise ValueError("change cache chunk")
    tail_at = _starts(counts[:, 4])
    plain = (counts[:, 3] == 0) & (counts[:, 5] == 0) & (counts[:, 6] == 0)
    pieces = []
    for length in np.unique(counts[plain, 4]).tolist():
        rows = np.flatnonzero(plain & (counts[:, 4] == length))
        pieces.append(Plain(ids[rows], counts[rows, 0], counts[rows, 1], counts[rows, 2],
                            columns["tails"][tail_at[rows, None] + np.arange(length)]))
    return _states(columns, np.flatnonzero(~plain), tail_at), pieces


def _states(columns: dict[str, np.ndarray], rows: np.ndarray, tail_at: np.ndarray) -> dict[int, State]:
    counts = columns["counts"]
    weak_at, kept_at, found_at = (_starts(counts[:, k]) for k in (3, 5, 6))
    weak, tails, values, commits = (columns[name] for name in ("weak", "tails", "values", "commits"))
    where, found_values, kinds = (columns[name].tolist() for name in ("found_at", "found_values", "found_kind"))
    states: dict[int, State] = {}
    for row in rows.tolist():
        points, last, resume, weak_n, tail_n, kept_n, found_n = counts[row].tolist()
        w, t, k, f = int(weak_at[row]), int(tail_at[row]), int(kept_at[row]), int(found_at[row])
        changes = [Found(where[i][0], where[i][1], ChangePoint(where[i][2], found_values[i][0], found_values[i][1],
                                                               found_values[i][2], kinds[i] == 1, kinds[i] == 2))
                   for i in range(f, f + found_n)]
        states[int(columns["ids"][row])] = State(points, last, weak[w:w + weak_n].tolist(), resume,
                                                 tails[t:t + tail_n], changes,
                                                 *((values[k:k + kept_n], commits[k:k + kept_n]) if kept_n else ()))
    return states
