"""Issue 33, item 5: fuzzing what the trace readers' memory work changed, each family one test that tallies what it
tried (``pytest -s`` prints it): kernel-dense Nsight Systems exports with hostile cells (the table is built as
columns now), Chrome traces as a bare list of events (streamed now), and gzip/xz traces read as they expand
(damaged, truncated, past the input limit). Every input must be read or refused with one InputError: anything
else is a traceback.

``PERFGATE_FUZZ_ROUNDS`` raises the rounds of each family (the closing note's run used 400).
"""

from __future__ import annotations

import gzip
import json
import lzma
import os
import random
import sqlite3
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import pytest
from helpers.nsys_export import write_nsys_export
from helpers.timeline import OURS

from perfgate.collect import read_table
from perfgate.errors import InputError

ROUNDS = int(os.environ.get("PERFGATE_FUZZ_ROUNDS", "12"))
KINETO = OURS / "vector_add.torch.pt.trace.json.gz"
_CELLS = [None, "", "text", b"\x00\xff", -1, 0, 2**63 - 1, -(2**63), 1e308, float("inf"), float("nan"), 3.5]
_KERNEL_COLUMNS = ["start", "end", "deviceId", "streamId", "correlationId", "demangledName", "shortName",
                   "registersPerThread", "gridX", "blockZ", "staticSharedMemory", "dynamicSharedMemory"]


def _tally(tried: Counter[str], family: str, attempt: Callable[[], object]) -> None:
    try:
        attempt()
        tried["read"] += 1
    except InputError as exc:
        assert "\n" not in str(exc), exc
        tried["refused"] += 1
    except Exception as exc:  # noqa: BLE001 - the finding this fuzzing looks for
        tried["traceback"] += 1
        print(f"{family}: traceback {type(exc).__name__}: {exc}")


def test_fuzz_kernel_dense_nsys_exports(tmp_path: Path) -> None:
    rng = random.Random(33)
    clean = write_nsys_export(tmp_path / "clean.sqlite", 300, per_step=25)
    tried: Counter[str] = Counter()
    for round_ in range(ROUNDS):
        export = tmp_path / f"fuzz{round_}.sqlite"
        export.write_bytes(clean.read_bytes())
        with sqlite3.connect(export) as connection:
            for _ in range(rng.randint(1, 4)):
                column, value = rng.choice(_KERNEL_COLUMNS), rng.choice(_CELLS)
                where = rng.choice(["", f" WHERE rowid % {rng.randint(2, 7)} = 0", f" WHERE rowid = {rng.randint(1, 300)}"])
                connection.execute(f"UPDATE OR IGNORE CUPTI_ACTIVITY_KIND_KERNEL SET {column} = ?{where}", (value,))
            if rng.random() < 0.3:
                connection.execute("UPDATE NVTX_EVENTS SET end = start - ? WHERE rowid % 3 = 0", (rng.randint(0, 9),))
            if rng.random() < 0.3:
                connection.execute("UPDATE StringIds SET value = ? WHERE id = 0", (rng.choice(["", "x" * 70_000, "é"]),))
        connection.close()
        _tally(tried, "nsys", lambda: read_table(export))
    print(f"kernel-dense nsys exports: {sum(tried.values())} tried, {dict(tried)}")
    assert not tried["traceback"]


def _bare_list_mutations(rng: random.Random, text: bytes) -> bytes:
    choice = rng.randrange(6)
    at = rng.randrange(len(text))
    if choice == 0:
        return text[:at]  # truncated
    if choice == 1:
        return text[:at] + bytes([rng.randrange(256)]) + text[at + 1:]  # one byte changed
    if choice == 2:
        return text[:at] + rng.choice([b"[", b"]", b"{", b"}", b",", b'"', b"NaN", b"1e999", b"\\u", b" " * 5000])
        + text[at:]
    if choice == 3:
        return b"[" * rng.randint(1, 200) + text  # nested deeper
    if choice == 4:
        return text + rng.choice([b" []", b",", b"\x00", b"]"])  # after the list
    return b"[" + b",".join([b'{"ph": "X", "cat": "kernel", "ts": 1, "dur": 1, "name": "k"}'] * rng.randint(0, 3))
    + rng.choice([b"]", b"", b", 1]", b', {"ph": "X", "ts": "x"}]'])


def test_fuzz_bare_list_chrome_traces(tmp_path: Path) -> None:
    rng = random.Random(34)
    text = json.dumps(json.loads(gzip.decompress(KINETO.read_bytes()))["traceEvents"]).encode()
    tried: Counter[str] = Counter()
    for round_ in range(ROUNDS * 3):
        trace = tmp_path / f"bare{round_}.json"
        trace.write_bytes(_bare_list_mutations(rng, text))
        _tally(tried, "bare list", lambda: read_table(trace))
    print(f"bare-list Chrome traces: {sum(tried.values())} tried, {dict(tried)}")
    assert not tried["traceback"]


@pytest.mark.parametrize("packed", ["gz", "xz"])
def test_fuzz_compressed_traces_read_as_they_expand(packed: str, tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    rng = random.Random(35)
    text = gzip.decompress(KINETO.read_bytes())
    bare = json.dumps(json.loads(text)["traceEvents"]).encode()
    compress = gzip.compress if packed == "gz" else lzma.compress
    tried: Counter[str] = Counter()
    for round_ in range(ROUNDS * 2):
        data = compress(rng.choice([text, bare]))
        change = rng.randrange(4)
        if change == 0:
            data = data[:rng.randrange(1, len(data))]
        elif change == 1:
            at = rng.randrange(len(data))
            data = data[:at] + bytes([data[at] ^ (1 << rng.randrange(8))]) + data[at + 1:]
        elif change == 2:
            data += rng.choice([b"\x00" * 8, b"junk", compress(b"{}")])
        monkeypatch.setenv("PERFGATE_MAX_INPUT_BYTES", str(rng.choice([len(text) // 2, 10 * len(text)])))
        trace = tmp_path / f"packed{round_}.json.{packed}"
        trace.write_bytes(data)
        _tally(tried, packed, lambda: read_table(trace))
    print(f"{packed} traces: {sum(tried.values())} tried, {dict(tried)}")
    assert not tried["traceback"]
