"""The table of input formats: how each is recognized and which function reads it (``READERS``).

``read_table`` (``perfgate.collect``) consults this table and nothing else to decide what a file is: a stream's first
bytes are accepted if some row recognizes them, a file goes to the first row whose ``head`` recognizes its first
bytes, and a JSON document, parsed once, to the first row whose ``document`` recognizes it. Every reader returns the
same thing, a ``Measurement``, as every importer of Otava (Apache's change-point tool) returns one series type, and
as pytest-benchmark picks its storage from one place (the URL's scheme) rather than asking each caller. A new format
is one reader module and one row here; the error texts that name what perfgate reads are made from the rows.

The order of the rows is the order they are tried: a signature that is certain (ncu's and SQLite's magic bytes, a
JSON document's first character) before a guess from text (ncu's CSV and log lines), a perfgate baseline before
pytest-benchmark output before a trace. ``listed`` orders them in the sentence that names them for the user.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from perfgate.collect.baseline_json import baseline_fix, looks_like_baseline, streams_entries, table_from_baseline
from perfgate.collect.json_input import TRACE_FIX
from perfgate.collect.benchmark_json import looks_like_benchmark_json, table_from_benchmark_json
from perfgate.collect.ncu_csv import looks_like_ncu_csv, read_ncu_csv
from perfgate.collect.ncu_rep import read_ncu_rep
from perfgate.collect.ncu_rep_framing import MAGIC as NCU_REP_MAGIC
from perfgate.collect.timeline import (
    SQLITE_MAGIC,
    looks_like_trace,
    read_nsys_export,
    streams_event_list,
    streams_events,
    table_from_trace,
)
from perfgate.collect.timeline.codes_file import trace_codes
from perfgate.table import Measurement, restrict_metrics


@dataclass(frozen=True)
class JsonInput:
    """A JSON input as ``json_input.open_json`` read it: the document and, where a row's ``streams`` picked a list in
    it, that list's key and its elements, read as they are used (``document`` then holds the rest)."""

    document: Any
    key: str = ""
    events: Iterator[Any] | None = None


@dataclass(frozen=True)
class Input:
    """What a reader is handed: the file, what was asked of it, and its parsed JSON for a JSON format."""

    path: Path
    metrics: Collection[str] | None = None
    code: bool = False  # read the kernels' machine code where the file holds it (or a trace's codes file)
    json: JsonInput | None = None


@dataclass(frozen=True)
class Streams:
    """Which list of a JSON input is read one element at a time (``json_input.open_json``'s two predicates): under a
    key of the top-level object, or the top-level list itself."""

    key: Callable[[str, dict[str, Any]], bool]
    top_level: Callable[[Any], bool] | None = None  # None: it never streams a top-level list
    fix: Callable[[str, dict[str, Any]], str] = lambda key, document: TRACE_FIX  # a broken list's error's fix


@dataclass(frozen=True)
class Reader:
    """One input format: one row of ``READERS``.

    ``head`` recognizes the file's first bytes (up to 8 KiB) and its suffix ("" for a stream, whose name says
    nothing); a JSON format's ``head`` recognizes JSON text and its ``document`` the parsed document, asked of every
    JSON row in order once the document is read. A row with ``streams`` has its list read one element at a time;
    a document so read goes to the first row with ``streams``, unasked (the elements are not read yet). ``description`` names the format to the user in the list of
    everything perfgate reads, at the place ``listed``. A JSON format also says what its documents are and how to
    make one (``json_name``, ``json_fix``), for the error when a JSON document is none of them."""

    name: str
    description: str
    listed: int
    head: Callable[[bytes, str], bool]
    read: Callable[[Input], Measurement]
    document: Callable[[Any], bool] | None = None
    streams: Streams | None = None
    json_name: str = ""
    json_fix: str = ""


def json_text(head: bytes, suffix: str = "") -> bool:
    """The first bytes of a JSON object or array."""
    return head.lstrip()[:1] in (b"{", b"[")


def _ncu_report(head: bytes, suffix: str) -> bool:
    return head.startswith(NCU_REP_MAGIC) or suffix == ".ncu-rep"


def _sqlite(head: bytes, suffix: str) -> bool:
    return head.startswith(SQLITE_MAGIC)


def _ncu_text(head: bytes, suffix: str) -> bool:
    """ncu CSV output, or an ncu log with only ==PROF==/==ERROR== lines (the CSV reader explains it)."""
    text = head.decode("utf-8", errors="replace")
    return looks_like_ncu_csv(text) or "==PROF==" in text or "==ERROR==" in text


def _read_ncu_csv(given: Input) -> Measurement:
    measurement = read_ncu_csv(given.path, given.metrics)
    return measurement if given.metrics is None else restrict_metrics(measurement, given.metrics)


def _json(given: Input) -> JsonInput:
    assert given.json is not None, "a JSON row is handed its parsed document"
    return given.json


def _read_baseline(given: Input) -> Measurement:
    parsed = _json(given)
    return table_from_baseline(parsed.document, given.path, parsed.events)


def _read_trace(given: Input) -> Measurement:
    parsed = _json(given)
    if parsed.events is not None:
        measurement = table_from_trace(parsed.document, given.path, parsed.events, parsed.key)
    else:
        measurement = table_from_trace(parsed.document, given.path)
    return trace_codes(measurement, given.path) if given.code else measurement


def _read_nsys_export(given: Input) -> Measurement:
    measurement = read_nsys_export(given.path)
    return trace_codes(measurement, given.path) if given.code else measurement


READERS: tuple[Reader, ...] = (
    Reader("ncu-rep", "a .ncu-rep", 0, _ncu_report,
           lambda given: read_ncu_rep(given.path, given.metrics, code=given.code)),
    Reader("nsys-export", "an Nsight Systems SQLite export", 5, _sqlite, _read_nsys_export),
    Reader("baseline", "a perfgate baseline", 3, json_text,
           _read_baseline, document=looks_like_baseline, streams=Streams(streams_entries, fix=baseline_fix),
           json_name="a perfgate baseline", json_fix="a baseline written by 'perfgate baseline'"),
    Reader("pytest-benchmark", "a pytest-benchmark JSON", 2, json_text,
           lambda given: table_from_benchmark_json(_json(given).document, given.path),
           document=looks_like_benchmark_json,
           json_name="pytest-benchmark output", json_fix="a --benchmark-json file"),
    Reader("trace", "a PyTorch profiler trace (.json)", 4, json_text, _read_trace,
           document=looks_like_trace,
           streams=Streams(streams_events, streams_event_list),
           json_name="a Chrome trace (no traceEvents)", json_fix="a trace torch.profiler exported"),
    Reader("ncu-csv", "ncu --csv output (--page details or raw)", 1, _ncu_text, _read_ncu_csv),
)


def either(phrases: list[str], last: str) -> str:
    """``a, b and c`` (``last`` = "and"), ``a`` alone."""
    return phrases[0] if len(phrases) == 1 else f"{', '.join(phrases[:-1])} {last} {phrases[-1]}"


def readable_inputs(readers: tuple[Reader, ...] = READERS) -> str:
    """Everything perfgate reads, in one phrase for error messages and help texts."""
    return either([row.description for row in sorted(readers, key=lambda row: row.listed)], "or")


def recognized(head: bytes, suffix: str, readers: tuple[Reader, ...] = READERS) -> Reader | None:
    """The first row that recognizes a file's first bytes (and suffix)."""
    return next((row for row in readers if row.head(head, suffix)), None)


def json_rows(readers: tuple[Reader, ...] = READERS) -> tuple[Reader, ...]:
    return tuple(row for row in readers if row.document is not None)


def streams_key(readers: tuple[Reader, ...]) -> Callable[[str, dict[str, Any]], bool]:
    """``open_json``'s predicate for a list under a key: any JSON row's."""
    picks = [row.streams.key for row in readers if row.streams is not None]
    return picks[0] if len(picks) == 1 else lambda key, document: any(pick(key, document) for pick in picks)


def streams_top_level(readers: tuple[Reader, ...]) -> Callable[[Any], bool]:
    """``open_json``'s predicate for a top-level list: any JSON row's."""
    picks = [row.streams.top_level for row in readers if row.streams is not None and row.streams.top_level is not None]
    return picks[0] if len(picks) == 1 else lambda first: any(pick(first) for pick in picks)


def streaming_row(readers: tuple[Reader, ...], key: str, document: dict[str, Any]) -> Reader:
    """The row whose ``streams`` picked the list under ``key`` (``document``: the keys before it); no key, the
    row that streams a top-level list."""
    return next(row for row in readers if row.streams is not None and (
        row.streams.key(key, document) if key else row.streams.top_level is not None))


def stream_fix(readers: tuple[Reader, ...]) -> Callable[[str, dict[str, Any]], str]:
    """``open_json``'s ``stream_fix``: the fix of the row that streams the list."""
    def fix(key: str, document: dict[str, Any]) -> str:
        streams = streaming_row(readers, key, document).streams
        assert streams is not None
        return streams.fix(key, document)
    return fix
