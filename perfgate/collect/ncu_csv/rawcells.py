"""The raw page's cells, read without pandas: numpy on the bytes where the page is as ncu writes it, Python's csv
module where it is not.

Reading a raw page must not import pandas (~0.4 s of CPU, more than reading and comparing two pages of
10,000 launches takes), yet give the cells pandas' C parser gave when perfgate used it
(``read_csv(names=header, index_col=False)``), so that tables and errors stay the same.

* As ncu writes it (``_plain_columns``): every line a row of quoted cells, as many as the header's, with
  quotes inside doubled and no line end inside; blank lines and ncu's own lines (``==PROF== Disconnected
  ...``) between them, which pandas made rows that were then left out (their "ID" is no number). The
  structure is checked and the cells located with a few numpy passes over the bytes (``_quote_pairs``: the
  quotes pair up as each cell's opening and closing one, what ncu nearly always writes; else
  ``_doubled_quote_cells``, a running count of quotes), and the cells of the columns asked for stay where
  they are: a :class:`CellColumn` holds where each lies. Its cells become strings only on demand: numbers
  are read from their bytes (``values.plain_decimals``), and the distinct cells of a column of a few values
  repeated (kernel names, launch dimensions) are told apart by their bytes and decoded once each. A page of
  ~300 metric columns of which ~20 are compared costs little more than one of 20.
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
import itertools
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import TypeVar

import numpy as np
import numpy.typing as npt

from perfgate.columns import factorize, objects
from perfgate.collect.ncu_csv.arrays import BoolArray, ByteArray, IntArray
from perfgate.collect.ncu_csv.parsing import Unparsed

# pandas' warning (an error here) for a first row wider than the header.
WIDER_THAN_HEADER = ("Length of header or names does not match length of data. This leads to a loss of data "
                     "with index_col=False.")

_QUOTE, _COMMA, _NEWLINE = ord('"'), ord(","), ord("\n")

T = TypeVar("T", str, bytes)


def read_raw_columns(data: bytes, width: int, columns: Sequence[int]) -> list[CellColumn]:
    """The cells of ``columns`` (indices into the header, ``width`` wide), a :class:`CellColumn` each with a cell
    per row pandas made ("" where empty) but for ncu's own lines, never launches, which may be left out;
    ``data``: the page after its units row.

    Raises :class:`Unparsed` where pandas' C parser failed.
    """
    data = data.removeprefix(codecs.BOM_UTF8)  # pandas skipped one where it started reading
    plain = _plain_columns(data, width, columns)
    if plain is not None:
        return plain
    texts = _csv_columns(data.decode("utf-8", errors="replace"), width, columns)
    return [CellColumn(column) for column in texts]


class CellColumn:
    """The cells of one column, one per row: their texts, and on a page as ncu writes it where they lie in its
    bytes, so that numbers and repeated values are read from the bytes, never made a str per cell."""

    def __init__(self, texts: list[str] | None = None,
                 located: tuple[ByteArray, IntArray, IntArray] | None = None) -> None:
        """``texts``, or ``located``: (page, starts, stops), the cells being ``page[starts[i]:stops[i]]`` (between
        their quotes, a quote inside doubled)."""
        self._texts = texts
        self._located = located
        self._distinct: tuple[IntArray, list[str]] | None = None

    def __len__(self) -> int:
        return len(self._located[1]) if self._located is not None else len(self.texts())

    def texts(self) -> list[str]:
        """The text of each cell ("" where empty)."""
        if self._texts is None:
            self._texts = _texts(*self._located) if self._located is not None else []
        return self._texts

    def where(self, rows: BoolArray) -> CellColumn:
        """The cells of the ``rows`` that are True."""
        if self._located is not None:
            page, starts, stops = self._located
            return CellColumn(located=(page, starts[rows], stops[rows]))
        return CellColumn(list(itertools.compress(self.texts(), rows.tolist())))

    def byte_rows(self, widest: int) -> tuple[ByteArray, IntArray] | None:
        """(rows, lengths): each cell's bytes as the page holds them (a quote inside doubled), in a row as long as
        the longest cell and zero after the cell's end, and each cell's length; None when the cells were read as
        text (the csv module) or one is longer than ``widest``."""
        if self._located is None:
            return None
        page, starts, stops = self._located
        lengths = stops - starts
        longest = int(lengths.max(initial=0))
        if longest > widest:
            return None
        inside = np.arange(longest) < lengths[:, None]
        return _byte_rows(page, starts, longest) * inside, lengths

    def distinct(self) -> tuple[IntArray, list[str]]:
        """Each cell's index into the distinct texts, in order of first appearance, and those texts: told apart
        by their bytes where the cells lie in them, so that a text repeated over many rows is decoded once."""
        if self._distinct is None:
            if self._located is not None:
                page, starts, stops = self._located
                codes, firsts = _distinct_bytes(page, starts, stops)
                self._distinct = _merged(codes, _texts(page, starts[firsts], stops[firsts]))
            else:
                self._distinct = _first_seen(self.texts())
        return self._distinct


def _first_seen(texts: Sequence[T]) -> tuple[IntArray, list[T]]:
    """Each text's index into the distinct ones (in order of first appearance), and those."""
    codes, distinct = factorize(objects(texts))
    return codes, distinct.tolist()


def _merged(codes: IntArray, texts: list[str]) -> tuple[IntArray, list[str]]:
    """``codes`` into ``texts`` with equal texts made one (distinct bytes that decoded alike: undecodable bytes
    all become U+FFFD)."""
    if len(set(texts)) == len(texts):
        return codes, texts
    recoded, distinct = _first_seen(texts)
    return recoded[codes], distinct


# ---------------------------------------------------------------- as ncu writes it: numpy


def _plain_columns(data: bytes, width: int, columns: Sequence[int]) -> list[CellColumn] | None:
    """The cells of a page as ncu writes it; None for any other page."""
    rows = _row_lines(data, width)
    if rows is None:
        return None
    source, length, lines = rows
    if not length:
        return [CellColumn([]) for _ in columns]
    bounds = _cell_bounds(source, length, width, lines, columns)
    if bounds is None:
        return None
    starts, stops = bounds
    page = np.frombuffer(source, dtype=np.uint8, count=length)
    return [CellColumn(located=(page, starts[i], stops[i])) for i in range(len(columns))]


_CHUNK = 1 << 20  # bytes looked at once: numpy's temporaries stay small (and in the cache)


def _row_lines(data: bytes, width: int) -> tuple[bytes, int, int] | None:
    """``(source, length, lines)``: ``source[:length]`` holds the ``lines`` lines that start with a quote, each
    ended by ``\\n`` (``\\r\\n`` too: pandas read both); None when another line is neither blank nor one of
    ncu's own that pandas made a row left out."""
    if b"\r" in data:
        if data.count(b"\r") != data.count(b"\r\n"):
            return None  # a bare \r ends a line too
        data = data.replace(b"\r\n", b"\n")  # one inside a quoted cell is found later: a line end in a cell
    if not data:
        return data, 0, 0
    if not data.endswith(b"\n"):
        data += b"\n"
    buf = np.frombuffer(data, dtype=np.uint8)
    ends = np.concatenate([np.flatnonzero(buf[low:low + _CHUNK] == _NEWLINE) + low  # small temporaries
                           for low in range(0, len(buf), _CHUNK)])
    starts = np.concatenate(([0], ends[:-1] + 1))
    others = np.flatnonzero(buf[starts] != _QUOTE)
    lines = len(starts) - len(others)
    if not others.size:
        return data, len(data), lines
    for line in others.tolist():
        if not _left_out(data[starts[line]:ends[line]], width):
            return None
    if others[0] == lines:  # all at the end (ncu's "Disconnected" line): no copy
        return data, int(starts[others[0]]), lines
    keep = np.ones(len(starts), dtype=bool)
    keep[others] = False
    rows = b"".join(data[start:end + 1] for start, end in zip(starts[keep].tolist(), ends[keep].tolist()))
    return rows, len(rows), lines


def _left_out(line: bytes, width: int) -> bool:
    """A line pandas skipped (only spaces and tabs) or made a row that was left out and could not fail the page:
    ncu's own (``==``) but ``==ERROR==``, no binary junk, no cell that opens a quote, not too many cells."""
    if not line.strip(b" \t"):
        return True
    return (line.startswith(b"==") and not line.startswith(b"==ERROR==") and b',"' not in line
            and line.count(b",") < width and "\ufffd" not in line.decode("utf-8", errors="replace"))


def _cell_bounds(source: bytes, length: int, width: int, lines: int,
                 columns: Sequence[int]) -> tuple[IntArray, IntArray] | None:
    """(starts, stops): where the text of each cell of ``columns`` starts and stops in ``source[:length]`` (after its
    opening quote, at its closing one), a row per column and a column per line; None unless every one of the
    ``lines`` lines is ``width`` quoted cells whose quotes inside are doubled, with no line end inside.
    Looked at a chunk of whole lines at a time."""
    starts, stops = [], []
    start = rows = 0
    while start < length:
        stop = source.find(b"\n", min(start + _CHUNK, length - 1)) + 1
        chunk = np.frombuffer(source, dtype=np.uint8, count=stop - start, offset=start)
        cells = _quote_pairs(chunk, width)
        if cells is None:
            cells = _doubled_quote_cells(chunk, width)
            if cells is None:
                return None
        rows += len(cells[0])
        starts.append(cells[0][:, columns].T + start)
        stops.append(cells[1][:, columns].T + start)
        start = stop
    if rows != lines:
        return None  # a line end inside a quoted cell: the line it ends was taken for a row
    return np.concatenate(starts, axis=1), np.concatenate(stops, axis=1)


def _quote_pairs(buf: ByteArray, width: int) -> tuple[IntArray, IntArray] | None:
    """(starts, stops) of each cell of whole lines (a row per line) with no quote inside a cell, what ncu
    nearly always writes: the quotes pair up as each cell's opening and closing one, and between a closing
    quote and the next opening one stands a comma, or a line end after the last cell of a line. None where
    the quotes do not pair up so (a quote inside a cell, or a line otherwise written).

    That a line end inside a cell was taken for a row is seen by the caller: more line ends than rows.
    """
    quotes = np.flatnonzero(buf == _QUOTE)
    if len(quotes) % (2 * width):
        return None
    pairs = quotes.reshape(-1, 2)
    opening, closing = pairs[:, 0], pairs[:, 1]
    if opening[0] != 0 or closing[-1] != len(buf) - 2 or (opening[1:] != closing[:-1] + 2).any():
        return None  # a quote inside a cell, text outside one, or a line not ended after its last cell
    separators = buf[closing + 1].reshape(-1, width)
    if not ((separators[:, :-1] == _COMMA).all() and (separators[:, -1] == _NEWLINE).all()):
        return None  # a line with another number of cells
    return (opening + 1).reshape(-1, width), closing.reshape(-1, width)


def _doubled_quote_cells(buf: ByteArray, width: int) -> tuple[IntArray, IntArray] | None:
    """``_quote_pairs`` where a cell may hold quotes (doubled).

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
    # A cell runs from after the quote that follows the previous cell's end to its closing quote.
    starts = np.concatenate(([-1], ends[:-1])).reshape(rows, width) + 2
    return starts, cells - 1


def _texts(buf: ByteArray, starts: IntArray, stops: IntArray) -> list[str]:
    """The text of the cells ``buf[starts[i]:stops[i]]``, gathered with their closing quotes, which become the
    line ends that split them (decoded as pandas did: undecodable bytes replaced, never across cells)."""
    if not len(starts):
        return []
    lengths = stops - starts + 1
    offsets = np.cumsum(lengths)
    gathered = buf[np.arange(int(offsets[-1])) + np.repeat(starts - (offsets - lengths), lengths)]
    gathered[offsets - 1] = _NEWLINE
    text = gathered.tobytes().decode("utf-8", errors="replace")
    cells = text.split("\n")
    cells.pop()
    return [cell.replace('""', '"') for cell in cells] if '"' in text else cells


def _byte_rows(buf: ByteArray, starts: IntArray, width: int) -> ByteArray:
    """The ``width`` bytes from each of ``starts`` (zero past the end of ``buf``), a row each."""
    if not width:
        return np.zeros((len(starts), 0), dtype=np.uint8)
    last = len(buf) - width  # the last start whose bytes lie in the buffer
    if last < 0:
        return _byte_rows(_padded(buf, width), starts, width)
    # An item of ``width`` bytes at each byte of the buffer: gathered an item a row, no index per byte.
    items = np.ndarray((last + 1,), dtype=f"V{width}", buffer=buf, strides=(1,))
    rows: ByteArray = items[np.minimum(starts, last)].view(np.uint8).reshape(len(starts), width)
    late = np.flatnonzero(starts > last)
    if late.size:  # rows that run past the end
        rows[late] = _byte_rows(_padded(buf[last:], width), starts[late] - last, width)
    return rows


def _padded(buf: ByteArray, width: int) -> ByteArray:
    """``buf`` and ``width`` zero bytes."""
    return np.concatenate([buf, np.zeros(width, dtype=np.uint8)])


def _distinct_bytes(buf: ByteArray, starts: IntArray, stops: IntArray) -> tuple[IntArray, IntArray]:
    """(codes, firsts): each cell's index into the distinct cells (by their bytes), in order of first appearance,
    and the first cell of each.

    The cells are hashed 8 bytes at a time (a multiply-add a word), grouped by hash, and each is compared with its
    group's first cell in full; where two unequal cells met in a hash (never seen: a 64-bit hash), a dict of
    their bytes tells them apart. Looked at a block of cells at a time.
    """
    if not len(starts):
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    lengths = stops - starts
    words = max(1, -(-int(lengths.max(initial=0)) // 8))
    multipliers = np.random.default_rng(0).integers(0, 2**63, size=words, dtype=np.uint64) * 2 + 1  # odd
    step = max(1, _BLOCK // (8 * words))
    blocks = [slice(low, low + step) for low in range(0, len(starts), step)]
    kept = _cell_words(buf, starts, lengths, words) if len(blocks) == 1 else None  # all in one block: kept

    def cell_words(block: slice) -> npt.NDArray[np.uint64]:
        return kept if kept is not None else _cell_words(buf, starts[block], lengths[block], words)

    hashes = np.concatenate([cell_words(block) @ multipliers for block in blocks])
    hashes ^= lengths.astype(np.uint64) * _MIX
    _, first, inverse = np.unique(hashes, return_index=True, return_inverse=True)
    inverse = inverse.reshape(-1)
    firsts = _cell_words(buf, starts[first], lengths[first], words)
    if not ((lengths[first][inverse] == lengths).all()
            and all((cell_words(block) == firsts[inverse[block]]).all() for block in blocks)):
        return _distinct_slices(buf, starts, stops)
    order = np.argsort(first, kind="stable")
    rank = np.empty(len(order), dtype=np.int64)
    rank[order] = np.arange(len(order))
    return rank[inverse], first[order]


def _distinct_slices(buf: ByteArray, starts: IntArray, stops: IntArray) -> tuple[IntArray, IntArray]:
    """``_distinct_bytes`` by a dict of the cells' bytes."""
    page = buf.tobytes()
    codes, _ = _first_seen([page[start:stop] for start, stop in zip(starts.tolist(), stops.tolist())])
    return codes, np.unique(codes, return_index=True)[1]


_BLOCK = 1 << 22  # bytes of cells looked at once
_MIX = np.uint64(0x9E3779B97F4A7C15)
_WORD_MASKS = np.array([(1 << (8 * n)) - 1 for n in range(8)] + [2**64 - 1], dtype=np.uint64)


def _cell_words(buf: ByteArray, starts: IntArray, lengths: IntArray, words: int) -> npt.NDArray[np.uint64]:
    """The ``lengths`` bytes from each of ``starts`` as ``words`` little-endian 8-byte words, a row each, zero
    after the end."""
    rows: npt.NDArray[np.uint64] = _byte_rows(buf, starts, 8 * words).view("<u8")
    rows &= _WORD_MASKS[np.clip(lengths[:, None] - 8 * np.arange(words), 0, 8)]
    return rows


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
