"""The change-point cache (``perfgate_change_cache``): ``history changes`` after more commits gives what a search
from scratch gives, on both engines, while reading whole only the series whose change points may move."""

from __future__ import annotations

import base64
import itertools
from typing import Any

import numpy as np
import pytest

from helpers import history as history_helpers
from helpers.history_planted import held_out_style_series, spiky_series
from perfgate.history import cache
from perfgate.history.db import History, open_history
from perfgate.history.detect import find_changes

history_url = history_helpers.history_url
COMMITS = 108


def _series() -> list[np.ndarray]:
    """Five of each planted family (one-sided spikes' included), cut to 120 commits, and 20 flat ones: most series
    have no change."""
    picked = [s.values[:COMMITS] for family, group in itertools.groupby(held_out_style_series(41, 5),
                                                                         key=lambda s: s.family)
              for s in list(group)[:5]]
    picked += [s.values[:COMMITS] for s in spiky_series(42, 10) if len(s.values) >= COMMITS][:12]
    rng = np.random.default_rng(4)
    return picked + [100.0 * (1 + rng.normal(0, 0.01, COMMITS)) for _ in range(20)]


def _from_scratch(history: History) -> list[dict[str, Any]]:
    with history.transaction():
        history.execute("DELETE FROM perfgate_change_cache")
        history.execute("DELETE FROM perfgate_meta WHERE name LIKE ?", ("change_cache %",))
    return find_changes(history, "main")


def test_changes_after_more_commits_are_those_of_a_search_from_scratch(history_url: str,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    values = _series()
    read_whole: list[list[int] | None] = []
    real_load = cache.load_series

    def load_series(history: History, branch: str, run_commit: dict[int, int], ids: Any = None, *more: Any,
                    **named: Any) -> Any:
        read_whole.append(None if ids is None else list(ids))
        return real_load(history, branch, run_commit, ids, *more, **named)

    monkeypatch.setattr(cache, "load_series", load_series)
    with open_history(history_url) as history:
        history_helpers.record_commits(history, values, range(0, 100))
        first = find_changes(history, "main")
        assert read_whole == [None]  # no cache yet: every series read
        for commit in range(100, COMMITS):
            history_helpers.record_commits(history, values, range(commit, commit + 1))
            found = find_changes(history, "main")
        assert all(ids is not None and len(ids) < len(values) // 2 for ids in read_whole[1:]), read_whole
        assert any(c["direction"] == "regression" for c in first)
        assert found == _from_scratch(history)
        # a rerun of a covered commit changes a median inside the series: searched from scratch again
        history_helpers.record_commits(history, values, range(50, 51), rerun=True)
        read_whole.clear()
        rerun = find_changes(history, "main")
        assert read_whole == [None] and rerun == _from_scratch(history)
        # other settings: the cache does not hold for them, and is searched again under them
        read_whole.clear()
        small = find_changes(history, "main", min_change=0.04)
        assert read_whole == [None] and len(small) < len(rerun)


def test_a_damaged_cache_row_is_searched_again(tmp_path: Any) -> None:
    url = f"sqlite:///{tmp_path / 'h.sqlite'}"
    values = _series()[:10]
    with open_history(url) as history:
        history_helpers.record_commits(history, values, range(0, 80))
        expected = find_changes(history, "main")
        history.execute("UPDATE perfgate_change_cache SET state = 'not json'")
        history_helpers.record_commits(history, values, range(80, 81))
        assert find_changes(history, "main") == _from_scratch(history)
        assert expected  # the planted steps were found


def test_a_damaged_new_point_is_one_error_line(tmp_path: Any, capsys: pytest.CaptureFixture[str]) -> None:
    """An update reads only the new points of a SQLite history: it checks those as it reads them."""
    from perfgate.cli import main

    url = f"sqlite:///{tmp_path / 'h.sqlite'}"
    values = _series()[:4]
    with open_history(url) as history:
        history_helpers.record_commits(history, values, range(0, 60))
        find_changes(history, "main")
        history_helpers.record_commits(history, values, range(60, 61))
        history.execute("UPDATE perfgate_points SET value = 'fast' WHERE run_id = 61 AND series_id = 2")
    capsys.readouterr()
    assert main(["history", "changes", "--db", url]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "perfgate_points holds a value of the wrong type (the history was edited or " \
                                   "is damaged)" in err


def test_a_search_from_the_screens_first_loud_window_finds_what_one_from_the_start_finds() -> None:
    """``loud_windows``: the windows the screen clears before a row's first loud one find nothing, so the search
    may start there (the cache's searches do)."""
    from perfgate.history.changes import P_VALUE
    from perfgate.history.search import WINDOW, window_search
    from perfgate.history.screen import loud_windows

    rng = np.random.default_rng(7)
    rows = 100.0 * (1 + rng.normal(0, 0.01, (240, 160)))
    for row in rows[::2]:
        row[int(rng.integers(10, 150)):] *= 1 + rng.uniform(-0.06, 0.06)
    rows[::5] = np.round(rows[::5])  # exact counters, now and then one value off
    for row in rows[1::3]:  # one-sided spikes, lone and two commits apart: the search takes them out
        spots = rng.choice(160, int(rng.integers(2, 9)), replace=False)
        row[np.unique(np.minimum(np.concatenate((spots, spots[::2] + 2)), 159))] *= 1 + rng.uniform(0.2, 1.2)
    loud = loud_windows(rows, P_VALUE, WINDOW)
    assert (loud > 0).sum() >= 20 and (loud < 0).sum() >= 20
    for row, first in zip(rows, loud.tolist()):
        searched = window_search(row, P_VALUE, WINDOW)
        assert (window_search(row, P_VALUE, WINDOW, first) if first >= 0 else ([], [], searched[2])) == searched


def test_the_screens_distance_sums_are_the_floats_of_every_prefix() -> None:
    """``_distance_sums`` adds one point's distances at a time: each sum is the float a cumsum over every prefix
    gives (the screen's decisions, and so the cache's output, unchanged), at every cut, 0 and the end included."""
    from perfgate.history.screen import _distance_sums

    rng = np.random.default_rng(3)
    part = rng.normal(0, 1, (40, 30)) * rng.uniform(0.01, 100, (40, 1))
    part[::4] = np.round(part[::4])
    prefix = np.zeros((40, 30, 31))
    np.cumsum(np.abs(part[:, :, None] - part[:, None, :]), axis=2, out=prefix[:, :, 1:])
    whole, earlier = _distance_sums(part)
    assert np.array_equal(whole, prefix[:, :, 30])
    assert np.array_equal(earlier, np.diagonal(prefix[:, :, :30], axis1=1, axis2=2))
    cut = rng.integers(0, 31, 40)
    cut[:2] = 0, 30
    assert np.array_equal(_distance_sums(part, cut)[0], prefix[np.arange(40), :, cut])


def test_a_branch_cached_in_several_chunks_updates_as_a_search_from_scratch(history_url: str,
                                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """The states are kept as columns, ``cache.CHUNK`` series a row: a branch of several rows reads back whole
    (kept values, weak candidates and change points included), an older version's rows are searched again, and
    one damaged row makes the whole branch searched again."""
    monkeypatch.setattr(cache, "CHUNK", 4)
    values = _series()[::3]
    with open_history(history_url) as history:
        history_helpers.record_commits(history, values, range(0, 90))
        find_changes(history, "main")
        rows = history.query("SELECT series_id FROM perfgate_change_cache WHERE branch = 'main' ORDER BY series_id")
        stored = cache._read_states(history, "main")
        assert stored is not None and stored.plain  # most series: columns of a tail length
        plain = [int(sid) for piece in stored.plain.values() for sid in piece.ids]
        assert sorted([*stored.states, *plain]) == list(range(1, len(values) + 1))
        assert len(rows) == sum(-(-len(piece.ids) // 4) for piece in stored.plain.values()) + -(-len(stored.states) // 4)
        states = stored.states
        assert any(len(s.values) for s in states.values()) and any(s.changes for s in states.values())
        assert any(s.weak for s in states.values())
        for commit in range(90, 92):
            history_helpers.record_commits(history, values, range(commit, commit + 1))
            found = find_changes(history, "main")
        assert found == _from_scratch(history)
        meta = cache._read_meta(history, "main")
        assert meta is not None and meta["version"] == cache.CACHE_VERSION
        monkeypatch.setattr(cache, "CACHE_VERSION", cache.CACHE_VERSION + 1)  # rows of another version: not read
        monkeypatch.setattr(cache, "_read_states", lambda *_: pytest.fail("read rows of another version"))
        assert find_changes(history, "main") == found
    monkeypatch.undo()
    monkeypatch.setattr(cache, "CHUNK", 4)
    with open_history(history_url) as history:
        assert find_changes(history, "main") == found  # this version's rows again
        history.execute("UPDATE perfgate_change_cache SET state = ? WHERE series_id = ?",
                        (base64.b64encode(b"PK\x03\x04 not an archive").decode(), int(rows[-1][0])))
        assert cache._read_states(history, "main") is None
        history_helpers.record_commits(history, values, range(92, 93))
        assert find_changes(history, "main") == _from_scratch(history)


def test_a_row_reads_back_as_written_and_a_cut_or_padded_one_is_refused() -> None:
    """A row is the columns' bytes after their lengths: every length must match the bytes that follow."""
    from perfgate.history.cache_rows import Found, Plain, State, chunk_states, chunk_text, plain_text, stored_form
    from perfgate.history.changes import ChangePoint

    state = State(5, 4, [2], 1, np.array([1.0, 2.0, 3.0, 4.0]), [Found(2, 1, ChangePoint(2, 1e-9, 1.0, 3.0, True))],
                  np.arange(5.0), np.arange(5, dtype=np.int64))
    states, plain = chunk_states(chunk_text([(7, state)]))
    assert not plain and list(states) == [7] and states[7]._replace(tail=[], values=[], commits=[]) == \
        state._replace(tail=[], values=[], commits=[])
    assert [list(a) for a in states[7][4:5] + states[7][6:]] == [list(a) for a in state[4:5] + state[6:]]
    columns = Plain(np.array([3, 9]), np.array([6, 6]), np.array([5, 5]), np.array([2, 2]), np.ones((2, 4)))
    raw = plain_text(columns)
    assert chunk_states(stored_form(raw, "postgresql"))[1][0].tails.tolist() == columns.tails.tolist()
    for damaged in (raw[:-1], raw + b"\0", raw[:40], b"PK\x03\x04", "not base64!"):
        with pytest.raises(ValueError):
            chunk_states(damaged)


def test_plain_series_with_no_new_point_several_or_a_new_series_update_as_a_search_from_scratch(
        tmp_path: Any) -> None:
    """The series with no candidate are updated as columns when each has one new point; two new commits at once,
    a commit that measured only some series, and a series new to the branch go through the states, the same
    change points either way."""
    values = _series()[::2]
    url = f"sqlite:///{tmp_path / 'h.sqlite'}"
    with open_history(url) as history:
        history_helpers.record_commits(history, values, range(0, 70))
        find_changes(history, "main")
        stored = cache._read_states(history, "main")
        assert stored is not None and sum(len(piece.ids) for piece in stored.plain.values()) >= len(values) // 2
        history_helpers.record_commits(history, values, range(70, 72))  # two new points a series
        assert find_changes(history, "main") == _from_scratch(history)
        history_helpers.record_commits(history, values[:5], range(72, 73))  # only some series measured
        assert find_changes(history, "main") == _from_scratch(history)
        with history.transaction():  # a series the branch has not seen: searched whole, then kept
            history.insert_rows("perfgate_series", ("id", "gpu", "test", "kind", "kernel", "region", "metric", "unit",
                                                    "direction"), [(999, "H100", "t", "kernel", "new", "", "time",
                                                                     "ns", "lower")])
        for commit in range(73, 77):
            history_helpers.record_commits(history, values, range(commit, commit + 1))
            history.insert_rows("perfgate_points", ("series_id", "run_id", "n", "value", "low", "high"),
                                [(999, commit + 1, 1, 100.0 + commit % 3, 0.0, 0.0)])
            assert find_changes(history, "main") == _from_scratch(history)
        stored = cache._read_states(history, "main")
        assert stored is not None and 999 in [*stored.states, *(sid for p in stored.plain.values() for sid in p.ids)]


@pytest.mark.parametrize("secure_delete", ["OFF", "ON", "FAST"])
def test_an_update_replaces_the_rows_and_leaves_the_connection_and_the_collector_as_they_were(
        tmp_path: Any, monkeypatch: pytest.MonkeyPatch, secure_delete: str) -> None:
    """The new rows go in before the old ones go out (under keys the old ones do not hold, ``secure_delete`` off
    meanwhile): after each update the branch holds exactly the rows written, SQLite's ``secure_delete`` is what it
    was, and Python's cyclic collector, held off during the search, is as it was too."""
    import gc

    from perfgate.history.cache_rows import chunk_states

    monkeypatch.setattr(cache, "CHUNK", 3)
    values = _series()[::2]
    with open_history(f"sqlite:///{tmp_path / 'h.sqlite'}") as history:
        history.execute(f"PRAGMA secure_delete = {secure_delete}")
        history_helpers.record_commits(history, values, range(0, 60))
        for commit in range(60, 64):
            find_changes(history, "main")
            ids = []  # every series once: no row of the previous write left
            for (row,) in history.query("SELECT state FROM perfgate_change_cache WHERE branch = 'main'"):
                states, plain = chunk_states(row)
                ids += [*states, *(sid for piece in plain for sid in piece.ids.tolist())]
            assert sorted(ids) == list(range(1, len(values) + 1))
            assert history.query("PRAGMA secure_delete")[0][0] == ["OFF", "ON", "FAST"].index(secure_delete)
            assert gc.isenabled()
            history_helpers.record_commits(history, values, range(commit, commit + 1))
        gc.disable()
        try:
            assert find_changes(history, "main") == _from_scratch(history) and not gc.isenabled()
        finally:
            gc.enable()
