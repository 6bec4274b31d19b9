"""Edits of a real Nsight Systems SQLite export (a copy in the scratch folder), the same kinds as t2_chrome's:
times are integer ns; a GPU row moves with its launch call (the runtime row of its correlationId)."""
from __future__ import annotations

import math
import random
import sqlite3
from typing import Any

GPU_TABLES = ("CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_MEMCPY", "CUPTI_ACTIVITY_KIND_MEMSET",
              "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION")
RUNTIME = "CUPTI_ACTIVITY_KIND_RUNTIME"
KERNEL = "CUPTI_ACTIVITY_KIND_KERNEL"
LABEL = "coalesce(text, (SELECT value FROM StringIds WHERE id = textId))"


def _tables(con: sqlite3.Connection) -> dict[str, list[str]]:
    names = [r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
    return {t: [r[1] for r in con.execute(f"PRAGMA table_info({t})")] for t in names}


def _gpu(con: sqlite3.Connection) -> list[str]:
    return [t for t in GPU_TABLES if t in _tables(con)]


def _ops(con: sqlite3.Connection) -> list[str]:
    """The tables of GPU work: kernels, copies, sets."""
    return [t for t in GPU_TABLES[:3] if t in _tables(con)]


def reflow(con: sqlite3.Connection, new_dur: dict[tuple[str, int], int]) -> None:
    """Give the chosen rows ((table, rowid)) their new durations; on each stream the delay an op's end gains pushes
    the ops queued behind it, and idle time on the stream absorbs it (see t2_chrome.reflow)."""
    ops = [(t, int(r[0]), r[1], r[2], int(r[3]), int(r[4])) for t in _ops(con)
           for r in con.execute(f"SELECT rowid, deviceId, streamId, start, end FROM {t}")]
    streams: dict[tuple[Any, Any], list[tuple[str, int, int, int]]] = {}
    for t, rowid, device, stream, start, end in ops:
        streams.setdefault((device, stream), []).append((t, rowid, start, end))
    for rows in streams.values():
        carry, prev_end = 0, None
        for t, rowid, start, end in sorted(rows, key=lambda r: r[2]):
            gap = 0 if prev_end is None else max(0, start - prev_end)
            new_start = start + max(0, carry - gap)
            new_end = new_start + new_dur.get((t, rowid), end - start)
            if (new_start, new_end) != (start, end):
                con.execute(f"UPDATE {t} SET start = ?, end = ? WHERE rowid = ?", (new_start, new_end, rowid))
            carry = new_end - end
            prev_end = end if prev_end is None else max(prev_end, end)


def jitter(con: sqlite3.Connection, rng: random.Random, sigma: float) -> None:
    """A re-run: each kernel, copy and set lasts a little more or less (relative sd sigma, at most 3 sd), in ns."""
    new_dur = {}
    for t in _ops(con):
        for rowid, start, end in con.execute(f"SELECT rowid, start, end FROM {t}").fetchall():
            err = max(-3 * sigma, min(3 * sigma, rng.gauss(0.0, sigma)))
            new_dur[(t, int(rowid))] = max(1, round((end - start) * (1 + err)))
    reflow(con, new_dur)


def insert_host_time(con: sqlite3.Connection, at: int, amount: int) -> None:
    """The host stops for ``amount`` ns at ``at`` (see t2_chrome.insert_host_time)."""
    tables = _tables(con)
    for t in _gpu(con):
        con.execute(f"UPDATE {t} SET start = start + ?1, end = end + ?1 WHERE correlationId IN "
                    f"(SELECT correlationId FROM {RUNTIME} WHERE end > ?2)", (amount, at))
    for t, cols in tables.items():
        if t in GPU_TABLES or "start" not in cols:
            continue
        if "end" in cols:
            con.execute(f"UPDATE {t} SET end = end + ?1 WHERE start < ?2 AND end > ?2", (amount, at))
            con.execute(f"UPDATE {t} SET start = start + ?1, end = end + ?1 WHERE start >= ?2", (amount, at))
        else:
            con.execute(f"UPDATE {t} SET start = start + ?1 WHERE start >= ?2", (amount, at))


def ranges(con: sqlite3.Connection, name: str) -> list[tuple[int, int, int]]:
    """(start, end, globalTid) of each closed NVTX range of this label, in time order."""
    return [tuple(r) for r in con.execute(f"SELECT start, end, globalTid FROM NVTX_EVENTS WHERE end IS NOT NULL AND "
                                          f"{LABEL} = ? ORDER BY start", (name,))]


def _first_launch(con: sqlite3.Connection, start: int, end: int, tid: int) -> tuple[int, int]:
    owned = " UNION ".join(f"SELECT correlationId FROM {t}" for t in _ops(con))
    row = con.execute(f"SELECT start, end FROM {RUNTIME} WHERE globalTid = ? AND start BETWEEN ? AND ? AND "
                      f"correlationId IN ({owned}) ORDER BY start LIMIT 1", (tid, start, end)).fetchone()
    assert row is not None, "no launch in the range"
    return int(row[0]), int(row[1])


def stall(con: sqlite3.Connection, name: str, entries: list[int] | None, at: str, amount_ns: int) -> None:
    """A host stall in each chosen entry of a range: before its first launch call, or inside it."""
    points = []
    for i, (start, end, tid) in enumerate(ranges(con, name)):
        if entries is not None and i not in entries:
            continue
        call_start, _ = _first_launch(con, start, end, tid)
        points.append(call_start if at == "first_launch" else call_start + 1)
    for p in sorted(points, reverse=True):
        insert_host_time(con, p, amount_ns)


def stall_before_launch(con: sqlite3.Connection, index: int, amount_ns: int) -> None:
    owned = " UNION ".join(f"SELECT correlationId FROM {t}" for t in _ops(con))
    row = con.execute(f"SELECT start FROM {RUNTIME} WHERE correlationId IN ({owned}) ORDER BY start LIMIT 1 OFFSET ?",
                      (index,)).fetchone()
    insert_host_time(con, int(row[0]), amount_ns)


def _kernel_ids(con: sqlite3.Connection, name: str, within: str | None) -> list[tuple[int, int, int]]:
    """(rowid, start, end) of kernels whose short name holds ``name``, launched inside a range ``within``."""
    sql = (f"SELECT k.rowid, k.start, k.end, r.start FROM {KERNEL} k JOIN StringIds s ON s.id = k.shortName "
           f"JOIN {RUNTIME} r ON r.correlationId = k.correlationId WHERE instr(s.value, ?) > 0 ORDER BY k.start")
    rows = con.execute(sql, (name,)).fetchall()
    if within is not None:
        spans = [(a, b) for a, b, _ in ranges(con, within)]
        rows = [r for r in rows if any(a <= r[3] <= b for a, b in spans)]
    return [(int(r[0]), int(r[1]), int(r[2])) for r in rows]


def stretch(con: sqlite3.Connection, name: str, factor: float, within: str | None = None) -> int:
    """Kernels last longer by ``factor``; GPU work that started after each one's end moves by as much."""
    chosen = _kernel_ids(con, name, within)
    reflow(con, {(KERNEL, rowid): round((end - start) * (1 + factor)) for rowid, start, end in chosen})
    return len(chosen)


def _copy_row(con: sqlite3.Connection, table: str, rowid: int, changes: dict[str, Any]) -> None:
    cols = _tables(con)[table]
    row = dict(zip(cols, con.execute(f"SELECT {', '.join(cols)} FROM {table} WHERE rowid = ?", (rowid,)).fetchone()))
    row.update(changes)
    con.execute(f"INSERT INTO {table} ({', '.join(cols)}) VALUES ({', '.join('?' * len(cols))})", list(row.values()))


def insert_launches(con: sqlite3.Connection, name: str, within: str, total_ns: int) -> None:
    """In each entry of the range, after the kernel's last launch there, more launches of it (``total_ns`` of GPU
    time), each with its launch call: the host spends the call's time again, the GPU runs them back to back."""
    for start, end, _ in reversed(ranges(con, within)):
        row = con.execute(f"SELECT k.rowid, k.start, k.end, r.rowid, r.start, r.end FROM {KERNEL} k JOIN StringIds s "
                          f"ON s.id = k.shortName JOIN {RUNTIME} r ON r.correlationId = k.correlationId WHERE "
                          f"instr(s.value, ?) > 0 AND r.start BETWEEN ? AND ? ORDER BY r.start DESC LIMIT 1",
                          (name, start, end)).fetchone()
        k_row, k_start, k_end, r_row, r_start, r_end = (int(x) for x in row)
        count = max(1, math.ceil(total_ns / (k_end - k_start)))
        insert_host_time(con, r_end, (r_end - r_start) * count)
        reflow(con, {(KERNEL, k_row): (k_end - k_start) * (count + 1)})
        new_start, new_end = con.execute(f"SELECT start, end FROM {KERNEL} WHERE rowid = ?", (k_row,)).fetchone()
        k_end = int(new_start) + (k_end - k_start)
        k_start = int(new_start)
        con.execute(f"UPDATE {KERNEL} SET end = ? WHERE rowid = ?", (k_end, k_row))
        corr = int(con.execute(f"SELECT max(correlationId) FROM {RUNTIME}").fetchone()[0]) + 1
        for j in range(count):
            call_at = r_end + j * (r_end - r_start)
            _copy_row(con, RUNTIME, r_row, {"start": call_at, "end": call_at + r_end - r_start, "correlationId": corr + j})
            at = k_end + j * (k_end - k_start)
            _copy_row(con, KERNEL, k_row, {"start": at, "end": at + k_end - k_start, "correlationId": corr + j})


def rename_range(con: sqlite3.Connection, name: str, new: str) -> None:
    con.execute(f"UPDATE NVTX_EVENTS SET text = ?, textId = NULL WHERE end IS NOT NULL AND {LABEL} = ?", (new, name))


def strip_ranges(con: sqlite3.Connection) -> None:
    con.execute("DELETE FROM NVTX_EVENTS WHERE end IS NOT NULL")


def wrap_launches(con: sqlite3.Connection, name: str) -> None:
    """The NVTX range torch.autograd.profiler.emit_nvtx() puts around each operator, around each launch call of
    the kernel (an operator's range, never a region)."""
    rows = con.execute(f"SELECT r.start, r.end, r.globalTid FROM {KERNEL} k JOIN StringIds s ON s.id = k.shortName "
                       f"JOIN {RUNTIME} r ON r.correlationId = k.correlationId WHERE instr(s.value, ?) > 0", (name,))
    cols = _tables(con)["NVTX_EVENTS"]
    for i, (start, end, tid) in enumerate(rows.fetchall()):
        values = {c: None for c in cols}
        values.update({"start": start - 200, "end": end + 200, "eventType": 59, "globalTid": tid,
                       "text": f"aten::mm, seq = {100 + i}, op_id = {7 + i}, sizes = [[512, 4096], [4096, 4096]]"})
        con.execute(f"INSERT INTO NVTX_EVENTS ({', '.join(cols)}) VALUES ({', '.join('?' * len(cols))})",
                    list(values.values()))


def interfere(con: sqlite3.Connection, within: str, entry: int, dur_ns: int) -> None:
    """Another process's kernel, no launch call here, on a stream of its own, where the entry's first kernel starts."""
    start, end, tid = ranges(con, within)[entry]
    _, _ = _first_launch(con, start, end, tid)
    row = con.execute(f"SELECT k.rowid, k.start FROM {KERNEL} k JOIN {RUNTIME} r ON r.correlationId = k.correlationId "
                      f"WHERE r.start BETWEEN ? AND ? ORDER BY k.start LIMIT 1", (start, end)).fetchone()
    name_id = int(con.execute("SELECT max(id) FROM StringIds").fetchone()[0]) + 1
    con.execute("INSERT INTO StringIds (id, value) VALUES (?, ?)", (name_id, "interfering_kernel_of_another_process"))
    corr = int(con.execute(f"SELECT max(correlationId) FROM {KERNEL}").fetchone()[0]) + 10**6
    _copy_row(con, KERNEL, int(row[0]), {"start": int(row[1]), "end": int(row[1]) + dur_ns, "streamId": 4242,
                                         "correlationId": corr, "shortName": name_id, "demangledName": name_id,
                                         "mangledName": name_id})
