"""The raw page's cells, read without pandas: numpy on the bytes where the page is as ncu writes it, Python's csv
module where it is not.

Reading a raw page must not import pandas (~0.4 s of CPU, more than reading and comparing two pages of
10,000 launches takes), yet give the cells pandas' C parser gave when perfgate used it
(``read_csv(names=header, index_col=False)``), so that tables and errors stay the same.

* As ncu writes it (``_plain_columns``): every line a row of quoted cells, as many as the header's, with
  quotes inside doubled and no line end inside; blank lines and ncu's own lines (``==PROF== Disconnected
  ...``) between them, which pandas made rows that were then left out (their "ID" is no number). The
  structure is checked and the cells located with a few numpy passes over the bytes, and only the columns
  asked for become strings: a page of ~300 metric columns of which ~20 are compared costs little more
  than one of 20.
* Anything else (``_csv_columns``): the csv module reads every record, and they are made into pandas' rows:
  blank lines (empty, or spaces and tabs only) skipped, short rows filled with "", and the page fails in
  pandas' words where pandas failed: a row wider than the header and the first row, a quote left open at the
  end, a first row wider than the header unless the extra cells are empty (a trailing comma). One known
  difference: pandas also dropped a comma that starts a line after a blank line ended by a bare carriage
  return (``\\r``, no ``\\n``), which ncu never writes.
"""

from __future__ import annotations

import codecs
import csv
import io
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

import numpy as np

from perfgate.collect.ncu_csv.arrays import ByteArray, IntArray
from perfgate.collect.ncu_csv.parsing import Unparsed

# pandas' warning (an error here) for a first row wider than the header.
WIDER_THAN_HEADER = ("Length of header or names does not match length of data. This leads to a loss of data "
                     "with index_col=False.")

_QUOTE, _COMMA, _NEWLINE = ord('"'), ord(","), ord("\n")


def read_raw_columns(data: bytes, width: int, columns: Sequence[int]) -> list[list[str]]:
    """The text of the cells of ``columns`` (indices into the header, ``width`` wide), one list per column and
    an entry per row pandas made ("" where empty) but for ncu's own lines, never launches, which may be left
    out; ``data``: the page after its units row.

    Raises :class:`Unparsed` where pandas' C parser failed.
    """
    data = data.removeprefix(codecs.BOM_UTF8)  # pandas skipped one where it started reading
    plain = _plain_columns(data, width, columns)
    return plain if plain is not None else _csv_columns(data.decode("utf-8", errors="replace"), width, columns)


# ---------------------------------------------------------------- as ncu writes it: numpy


def _plain_columns(data: bytes, width: int, columns: Sequence[int]) -> list[list[str]] | None:
    """The cells of a page as ncu writes it; None for any other page."""
    rows = _row_lines(data, width)
    if rows is None:
        return None
    source, length = rows
    if not length:
        return [[] for _ in columns]
    ends = _cell_ends(source, length, width)
    if ends is None:
        return None
    buf = np.frombuffer(source, dtype=np.uint8, count=length)
    # A cell runs from after the quote that follows the previous cell's end to the next end, its closing quote.
    starts = np.concatenate(([-1], ends[:-1])).reshape(-1, width) + 2
    stops = ends.reshape(-1, width)
    return [_texts(buf, starts[:, column], stops[:, column]) for column in columns]


def _row_lines(data: bytes, width: int) -> tuple[bytes, int] | None:
    """``(source, length)``: ``source[:length]`` holds the lines that start with a quote, each ended by ``\\n``
    (``\\r\\n`` too: pandas read both); None when another line is neither blank nor one of ncu's own that
    pandas made a row left out."""
    if b"\r" in data:
        if data.count(b"\r") != data.count(b"\r\n"):
            return None  # a bare \r ends a line too
        data = data.replace(b"\r\n", b"\n")  # one inside a quoted cell is found later: a line end in a cell
    if not data:
        return data, 0
    if not data.endswith(b"\n"):
        data += b"\n"
    buf = np.frombuffer(data, dtype=np.uint8)
    ends = np.flatnonzero(buf == _NEWLINE)
    starts = np.concatenate(([0], ends[:-1] + 1))
    others = np.flatnonzero(buf[starts] != _QUOTE)
    if not others.size:
        return data, len(data)
    for line in others.tolist():
        if not _left_out(data[starts[line]:ends[line]], width):
            return None
    if others[0] == len(starts) - len(others):  # all at the end (ncu's "Disconnected" line): no copy
        return data, int(starts[others[0]])
    keep = np.ones(len(starts), dtype=bool)
    keep[others] = False
    rows = b"".join(data[start:end + 1] for start, end in zip(starts[keep].tolist(), ends[keep].tolist()))
    return rows, len(rows)


def _left_out(line: bytes, width: int) -> bool:
    """A line pandas skipped (only spaces and tabs) or made a row that was left out and could not fail the page:
    ncu's own (``==``) but ``==ERROR==``, no binary junk, no cell that opens a quote, not too many cells."""
    if not line.strip(b" \t"):
        return True
    return (line.startswith(b"==") and not line.startswith(b"==ERROR==") and b',"' not in line
            and line.count(b",") < width and "\ufffd" not in line.decode("utf-8", errors="replace"))


_CHUNK = 1 << 20  # bytes of lines checked at once: numpy's temporaries stay small (and in the cache)


def _cell_ends(source: bytes, length: int, width: int) -> IntArray | None:
    """Where each cell of ``source[:length]`` ends (the comma or line end after its closing quote), row after row;
    None unless every line is ``width`` quoted cells whose quotes inside are doubled, with no line end inside.
    Looked at a chunk of whole lines at a time."""
    pieces = []
    start = 0
    while start < length:
        stop = source.find(b"\n", min(start + _CHUNK, length - 1)) + 1
        ends = _chunk_cell_ends(np.frombuffer(source, dtype=np.uint8, count=stop - start, offset=start), width)
        if ends is None:
            return None
        pieces.append(ends + start)
        start = stop
    return np.concatenate(pieces)


def _chunk_cell_ends(buf: ByteArray, width: int) -> IntArray | None:
    """``_cell_ends`` of whole lines.

    ``inside``: after this byte, the quotes so far are odd (the byte is in a quoted cell). Outside, only
    quotes, commas and line ends may stand, and each comma or line end outside ends a cell and is followed by
    the next cell's opening quote (but the last line end). Then every cell is a quoted one: a quote inside it
    is followed by a quote (doubled) or by the comma or line end that ends the cell.
    """
    quote, comma, newline = buf == _QUOTE, buf == _COMMA, buf == _NEWLINE
    inside = np.logical_xor.accumulate(quote)
    if not quote[0] or (newline & inside).any() or not (inside | quote | comma | newline).all():
        return None  # a line end inside a quoted cell, or text outside one
    ends = np.flatnonzero((comma | newline) & ~inside)
    rows = int(np.count_nonzero(newline))
    if len(ends) != rows * width or not quote[ends[:-1] + 1].all():
        return None  # too many or too few cells in all, or a cell that is not quoted
    cells = ends.reshape(rows, width)
    if not (newline[cells[:, -1]].all() and comma[cells[:, :-1]].all()):
        return None  # a row with another number of cells
    return ends


def _texts(buf: ByteArray, starts: IntArray, stops: IntArray) -> list[str]:
    """The text of the cells ``buf[starts[i]:stops[i]]``, gathered with their closing quotes, which become the
    line ends that split them (decoded as pandas did: undecodable bytes replaced, never across cells)."""
    lengths = stops - starts
    offsets = np.cumsum(lengths)
    gathered = buf[np.arange(int(offsets[-1])) + np.repeat(starts - (offsets - lengths), lengths)]
    gathered[offsets - 1] = _NEWLINE
    text = gathered.tobytes().decode("utf-8", errors="replace")
    cells = text.split("\n")
    cells.pop()
    return [cell.replace('""', '"') for cell in cells] if '"' in text else cells


# ---------------------------------------------------------------- anything else: the csv module


def _csv_columns(text: str, width: int, columns: Sequence[int]) -> list[list[str]]:
    """The cells as pandas' C parser gave them, read by the csv module (see the module's docstring)."""
    records, cut = _records(text)
    _check_widths(records, width, cut)
    rows = [record if len(record) == width else (record + [""] * (width - len(record)))[:width]
            for record in records if record]
    return [[row[column] for row in rows] for column in columns]


def _records(text: str) -> tuple[list[list[str]], int | None]:
    """The cells of each record ([] for a line pandas skips: empty, or spaces and tabs only), and the index of
    the record that the text ends inside of (a quote left open), if any.

    One record per line but for quoted cells that span lines: a record's index plus one is the line number
    pandas gave in its errors.
    """
    ended: list[bool] = []
    records: list[list[str]] = []
    spaces: list[tuple[int, int]] = []  # (record, its line number) of records of spaces and tabs only
    cut = None
    reader = csv.reader(_lines(text, ended))
    with _fields_up_to(len(text)):
        try:
            for record in reader:
                if ended:  # the csv module hands on what it has where the text ends inside a quoted cell
                    cut = len(records)
                    break
                if len(record) == 1 and not record[0].strip(" \t"):
                    spaces.append((len(records), reader.line_num))
                records.append(record)
        except csv.Error as exc:  # not reached: NUL bytes are refused before parsing
            raise Unparsed(str(exc)) from None
    if spaces:
        lines = io.StringIO(text, newline="").readlines()
        for index, number in spaces:
            if '"' not in lines[number - 1]:  # a quoted cell of spaces is a row to pandas
                records[index] = []
    return records, cut


def _lines(text: str, ended: list[bool]) -> Iterator[str]:
    """The lines of ``text`` as pandas ends them (``\\n``, ``\\r\\n`` or ``\\r``); ``ended`` gets True after the last."""
    yield from io.StringIO(text, newline="")
    ended.append(True)


@contextmanager
def _fields_up_to(length: int) -> Iterator[None]:
    """Let the csv module read cells as long as the text (its default stops at 128 KiB; pandas has no limit, and
    a name too long for perfgate gets its own error later). The limit is global: it is restored after."""
    limit = csv.field_size_limit()
    csv.field_size_limit(max(limit, min(length + 1, 2**31 - 1)))
    try:
        yield
    finally:
        csv.field_size_limit(limit)


def _check_widths(records: list[list[str]], width: int, cut: int | None) -> None:
    """Raise :class:`Unparsed` where pandas' C parser failed, in the order it met the problems."""
    widths: IntArray = np.fromiter(map(len, records), dtype=np.int64, count=len(records))
    rows = np.flatnonzero(widths)
    if rows.size:
        # Each row after the first may be as wide as the header or the first row, whichever is wider.
        expected = max(width, int(widths[rows[0]]))
        wider = rows[0] + 1 + np.flatnonzero(widths[rows[0] + 1:] > expected)
        if wider.size:
            raise Unparsed(f"Expected {expected} fields in line {wider[0] + 1}, saw {widths[wider[0]]}")
    if cut is not None:
        raise Unparsed(f"EOF inside string starting at row {cut}")
    widest = int(widths.max(initial=0))
    if widest > width and (widest > width + 1 or any(record[width] for record in records if len(record) > width)):
        raise Unparsed(WIDER_THAN_HEADER)  # one empty cell more is a trailing comma, dropped
