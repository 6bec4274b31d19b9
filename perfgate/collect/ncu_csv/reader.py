"""Read ncu CSV output into the table: find the table, parse it fast, fall back to a careful parse.

Speed: the header is found in the first chunk(s) (``framing``); the page is parsed from that offset by
pandas' C parser, straight from the file (``parsing``), and lines of ncu or the application after the header
come back as rows whose "ID" is not a number, which are dropped (an ``==ERROR==`` among them still
raises). Only when that parse fails is the text filtered line by line and parsed again.
"""

from __future__ import annotations

import io
import os
import re
from collections.abc import Collection
from typing import IO


from perfgate.collect.ncu_csv.details import read_details
from perfgate.collect.ncu_csv.framing import (
    FIX_REEXPORT,
    find_header,
    holds_nul,
    ncu_error,
    no_table_error,
    raise_tool_errors,
)
from perfgate.collect.ncu_csv.parsing import (
    Unparsed,
    check_header,
    header_fields,
    is_details,
    read_details_csv,
    read_raw_csv,
)
from perfgate.collect.ncu_csv.raw import coded_columns, number_columns, raw_units, read_raw, unread_columns
from perfgate.collect.screen import screen_values
from perfgate.errors import InputError
from perfgate.table import Measurement


def read_ncu_csv(path: str | os.PathLike[str], metrics: Collection[str] | None = None) -> Measurement:
    """Read ncu CSV output (details or raw page, detected from the header) into the table.

    Raises :class:`NcuError` when the file holds an ``==ERROR==`` line, and :class:`InputError`
    when it is empty, holds no CSV table (a log with only ``==PROF==`` lines, ncu's text output,
    anything else) or a CSV table that cannot be parsed. ``metrics`` is a hint: the raw page skips
    other metric columns before building rows (launch and device attributes are always read).
    """
    source = str(path)
    try:
        with open(path, "rb") as handle:
            measurement = _read(handle, source, None if metrics is None else frozenset(metrics))
    except OSError as exc:
        raise InputError(source, f"cannot read ({exc.strerror or exc})", "check the path and its permissions") from exc
    return screen_values(measurement)


def _read(handle: IO[bytes], source: str, wanted: frozenset[str] | None = None) -> Measurement:
    first = handle.read(4)
    handle.seek(0)
    if first[:2] in (b"\xff\xfe", b"\xfe\xff"):
        # UTF-16 with BOM (PowerShell redirection): re-encode once, then read like any other file.
        text = handle.read().decode("utf-16", errors="replace")
        return _read(io.BytesIO(text.encode("utf-8")), source, wanted)
    found = find_header(handle)
    raise_tool_errors(found.tool_lines, source)
    if found.offset < 0:
        raise no_table_error(found, source)
    if holds_nul(handle, found.offset):
        # Refused before either page's parse: pandas 2's tokenizer ends a field at NUL and would hide the junk.
        raise InputError(source, "binary data inside the CSV table", FIX_REEXPORT)
    _check_last_line(handle, found.offset, source)
    handle.seek(found.offset)
    try:
        return _parse(handle, found.offset, source, wanted)
    except Unparsed:
        # Something between the rows defeated the fast path: filter lines in Python and retry.
        handle.seek(0)
        first_line = handle.read(found.offset).count(b"\n") + 1
        return _parse_filtered(handle.read(), first_line, source, wanted)


_TAIL = 1 << 20


def _check_last_line(handle: IO[bytes], offset: int, source: str) -> None:
    """Refuse a table whose last row was cut after a complete cell (a cut inside a quoted cell fails to parse).

    ncu ends every line it writes; a last row with no line end and fewer cells than a row needs was cut
    short (an upload or copy that stopped), and pandas would fill the missing cells in as empty: a launch
    losing its metrics without a word. Rows of the details page need the cells up to "Metric Value".
    """
    handle.seek(offset)
    header = header_fields(handle.readline())
    end = handle.seek(0, io.SEEK_END)
    handle.seek(max(offset, end - _TAIL))
    tail = handle.read()
    if not tail or tail.endswith(b"\n"):
        return
    cut = tail.rfind(b"\n")
    if cut < 0 and end - _TAIL > offset:
        return  # a last line longer than the tail read: the parse judges it
    last = tail[cut + 1:]
    if not last.startswith(b'"') or last.count(b'"') % 2:
        return  # not a row of the table (ncu's or the application's text), or cut inside a cell: the parse says so
    needed = header.index("Metric Value") + 1 if is_details(header) else len(header)
    cells = len(header_fields(last))
    if cells < needed:
        raise InputError(source, f"the last row is cut short ({cells} of {needed} cells, and no line end): the file "
                                 "is truncated", FIX_REEXPORT)


def _parse(handle: IO[bytes], offset: int, source: str, wanted: frozenset[str] | None = None) -> Measurement:
    """Parse the table whose header starts at ``offset``; the handle is there."""
    header = header_fields(handle.readline())
    check_header(header, source)
    if is_details(header):
        handle.seek(offset)
        return read_details(read_details_csv(handle, header), source, wanted)
    units = raw_units(handle, header)
    unread, numeric = unread_columns(header, units, wanted), number_columns(header, units, wanted)
    return read_raw(read_raw_csv(handle, header, unread, numeric, coded_columns(header)), header, units, source,
                    wanted)


def _parse_filtered(data: bytes, first_line: int, source: str, wanted: frozenset[str] | None = None) -> Measurement:
    """Slow path: keep the header and quoted lines only (ncu quotes every field it writes).

    ``first_line`` is the file's line number of the header, to point errors at the right line.
    """
    lines = data.splitlines(keepends=True)
    kept = [lines[0]]
    numbers = [first_line]
    for number, line in enumerate(lines[1:], start=first_line + 1):
        if line.startswith(b"==ERROR=="):
            raise ncu_error(line.decode("utf-8", errors="replace").strip(), source)
        if line.startswith((b'"', b",")):
            kept.append(line)
            numbers.append(number)
        elif b"\x00" in line:
            raise InputError(source, f"binary data inside the CSV table (line {number})", FIX_REEXPORT)
    try:
        return _parse(io.BytesIO(b"".join(kept)), 0, source, wanted)
    except Unparsed as exc:
        # The parse counts in pandas' words in the text it was given ("line 1" and "row 0" are the header;
        # on the raw page, the first row after the units row): map to the file.
        def file_line(index: int) -> str:
            return f"line {numbers[max(0, min(index, len(numbers) - 1))]}"

        problem = re.sub(r"\bline (\d+)", lambda m: file_line(int(m.group(1)) - 1), str(exc))
        problem = re.sub(r"\brow (\d+)", lambda m: file_line(int(m.group(1))), problem)
        raise InputError(source, f"malformed CSV: {problem}", FIX_REEXPORT) from None
