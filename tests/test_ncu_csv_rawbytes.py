"""The raw page read from its bytes: numbers, distinct cells and cell bounds as the text path gives them."""

from __future__ import annotations

import io
import random
import re
import struct

import numpy as np
import pytest

from perfgate.collect.ncu_csv import rawcells
from perfgate.collect.ncu_csv.framing import _profiling_lines
from perfgate.collect.ncu_csv.parsing import header_fields
from perfgate.collect.ncu_csv.raw import raw_units, read_raw
from perfgate.collect.ncu_csv.rawcells import CellColumn, read_raw_columns
from perfgate.collect.ncu_csv.values import column_numbers, plain_decimals


def _column(cells: list[str]) -> CellColumn:
    """One column of ``cells`` as a page ncu writes holds it, located in the bytes."""
    page = "".join('"' + cell.replace('"', '""') + '"\n' for cell in cells).encode("utf-8", "surrogateescape")
    (column,) = read_raw_columns(page, 1, [0])
    return column


def _decimals(cells: list[str]) -> np.ndarray | None:
    located = _column(cells).byte_rows(32)  # None: a cell longer than any number ncu prints
    return None if located is None else plain_decimals(*located)


def _bits(value: float) -> bytes:
    return struct.pack("<d", value)


def _ncu_number(rng: random.Random) -> str:
    """A number as ncu prints it, or close: thousands separators, a fraction, a sign, leading zeros."""
    digits = "".join(rng.choice("0123456789") for _ in range(rng.randint(1, rng.choice([12, 19]))))
    whole = digits
    if rng.random() < 0.5:
        groups = []
        while len(whole) > 3:
            groups.insert(0, whole[-3:])
            whole = whole[:-3]
        whole = ",".join([whole, *groups])
    fraction = "".join(rng.choice("0123456789") for _ in range(rng.randint(0, rng.choice([6, 20]))))
    text = whole + ("." + fraction if rng.random() < 0.6 else "")
    return ("-" if rng.random() < 0.2 else "") + text


def _plain(cell: str) -> bool:
    """Whether ``plain_decimals`` reads ``cell``, said another way: an optional minus, then digits, commas and at most
    one point, 1 to 18 digits making an integer up to 2**53, and not -0."""
    if not re.fullmatch(r"-?[0-9,]*\.?[0-9,]*", cell) or len(cell) > 32:
        return False
    digits = re.sub(r"[^0-9]", "", cell)
    return 0 < len(digits) <= 18 and int(digits) <= 2**53 and not (cell.startswith("-") and int(digits) == 0)


@pytest.mark.parametrize("seed", range(8))
def test_plain_decimals_are_what_float_gives(seed: int) -> None:
    """The cells read from the bytes are float() of their text without separators, to the bit; a cell that is
    not refuses its column."""
    rng = random.Random(seed)
    cells = [_ncu_number(rng) for _ in range(3000)]
    plain = [cell for cell in cells if _plain(cell)]
    assert len(plain) > 1500  # most numbers ncu prints are read from the bytes
    values = _decimals([*plain, ""])
    assert values is not None and np.isnan(values[-1])
    assert [_bits(v) for v in values[:-1]] == [_bits(float(c.replace(",", ""))) for c in plain]
    for cell in cells[:150]:
        assert (_decimals(["1", cell]) is not None) == _plain(cell), cell


@pytest.mark.parametrize("cell", [
    "0.1", "0.3000000000000000", "900719925474099.1", "9007199254740992", "1.", ".5", "-.5", ",5", "-,5", "1,2,3",
    "000000000000000001", "0.00000000000001", "4,294,967,295", "-1,234.5678", "2.5", "0", "0.0", "-7",
])
def test_plain_decimals_hard_cells(cell: str) -> None:
    value = _decimals([cell])
    assert value is not None and _bits(value[0]) == _bits(float(cell.replace(",", "")))


@pytest.mark.parametrize("cell", [
    "-0", "-0.00", "-,0", "1e5", "1E-3", "inf", "nan", "n/a", " 5", "5 ", "+5", "1_000", "1.2.3", "--1", "1-2",
    "-", ".", ",", "true", "0x1F", "\uff11\uff12", "\u0663", "9007199254740993", "1234567890123456789",
    "0.30000000000000004", "0.000000000000000001",
    "99999999999999999999999999999999999", 'a"b', "fast",
])
def test_plain_decimals_refuse_what_the_text_path_reads(cell: str) -> None:
    """More digits than a double holds exactly, -0 (0 in a column of integers), and anything not a plain
    number: the whole column is read from its text."""
    assert _decimals(["1", cell]) is None


def test_plain_decimals_of_empty_cells() -> None:
    values = _decimals(["", "7", ""])
    assert values is not None and np.isnan(values[[0, 2]]).all() and values[1] == 7.0
    all_empty = _decimals(["", ""])
    assert all_empty is not None and np.isnan(all_empty).all()


def test_plain_decimals_agree_with_column_numbers() -> None:
    rng = random.Random(7)
    cells = [rng.choice(["", _ncu_number(rng)]) for _ in range(500)]
    cells = [cell for cell in cells if _decimals([cell]) is not None]
    values = _decimals(cells)
    expected, keep = column_numbers(np.array(cells, dtype=object))
    assert values is not None
    assert np.array_equal(values, expected, equal_nan=True) and np.array_equal(~np.isnan(values), keep)


# ---------------------------------------------------------------- cells located in the bytes

_CELLS = ["void k<float, 128, 8>(const float *, int)", "void k<float, 256, 8>(const float *, int)", "", "k",
          'say "hi"', "a,b", "x" * 700, "x" * 699 + "y", "\u00e9" * 40, "k\udcff", "k\udcfe", "(256, 1, 1)"]


def test_distinct_cells_as_the_text_gives_them() -> None:
    """Cells told apart by their bytes: in order of first appearance, equal texts one (two undecodable bytes
    both become U+FFFD), long cells that differ in the middle apart."""
    rng = random.Random(3)
    cells = [rng.choice(_CELLS) for _ in range(3000)]
    column = _column(cells)
    codes, distinct = column.distinct()
    texts = column.texts()
    expected = list(dict.fromkeys(texts))
    assert distinct == expected
    assert [distinct[c] for c in codes.tolist()] == texts
    assert "k\ufffd" in distinct and len(distinct) == len(set(_CELLS)) - 1


def test_distinct_slices_agree_with_the_hash() -> None:
    rng = random.Random(4)
    column = _column([rng.choice(_CELLS) for _ in range(500)])
    assert column._located is not None
    hashed = rawcells._distinct_bytes(*column._located)
    sliced = rawcells._distinct_slices(*column._located)
    assert hashed[0].tolist() == sliced[0].tolist() and hashed[1].tolist() == sliced[1].tolist()


def test_byte_rows_at_the_end_of_the_page() -> None:
    """Rows wider than what is left of the page (or than the page) are zero past its end."""
    buf = np.frombuffer(b"abcdef", dtype=np.uint8)
    rows = rawcells._byte_rows(buf, np.array([0, 3, 5]), 4)
    assert [bytes(row) for row in rows] == [b"abcd", b"def\0", b"f\0\0\0"]
    assert [bytes(row) for row in rawcells._byte_rows(buf, np.array([1]), 9)] == [b"bcdef\0\0\0\0"]
    assert rawcells._byte_rows(buf, np.array([1, 2]), 0).shape == (2, 0)


def test_cells_where_rows_are_kept() -> None:
    column = _column(["a", "b", "c"])
    kept = column.where(np.array([True, False, True]))
    assert kept.texts() == ["a", "c"] and len(kept) == 2 and kept.distinct()[1] == ["a", "c"]
    text_only = CellColumn(["a", "b", "a"])
    assert text_only.byte_rows(32) is None and text_only.where(np.array([True, True, False])).texts() == ["a", "b"]
    assert text_only.distinct()[0].tolist() == [0, 1, 0]


@pytest.mark.parametrize("page", [
    b'"1","a"\n"2","b""c"\n',        # a quote inside a cell: the running count of quotes
    b'"1","a"\n"2",""""\n',          # a cell of one quote
    b'"1",""\n"2",","\n',            # empty cells, a comma inside one
])
def test_both_ways_of_locating_cells_agree(page: bytes) -> None:
    chunk = np.frombuffer(page, dtype=np.uint8)
    slow = rawcells._doubled_quote_cells(chunk, 2)
    assert slow is not None
    fast = rawcells._quote_pairs(chunk, 2)
    if fast is not None:
        assert np.array_equal(fast[0], slow[0]) and np.array_equal(fast[1], slow[1])
    plain = [column.texts() for column in read_raw_columns(page, 2, [0, 1])]
    assert plain == rawcells._csv_columns(page.decode(), 2, [0, 1])


def test_a_line_end_inside_a_cell_is_no_row() -> None:
    """Quotes that pair up around a line end: more line ends than rows, so the csv module reads the page."""
    page = b'"1","multi\n\n"\n'
    assert rawcells._plain_columns(page, 2, [0, 1]) is None
    assert [c.texts() for c in read_raw_columns(page, 2, [0, 1])] == [["1"], ["multi\n\n"]]


# ---------------------------------------------------------------- whole tables: bytes and text paths

_HEADER = ["ID", "Process ID", "Kernel Name", "Block Size", "Grid Size", "Device", "CC",
           "device__attribute_display_name", "gpu__time_duration.sum", "dram__bytes_read.sum",
           "sm__throughput.avg.pct_of_peak_sustained_elapsed", "launch__grid_dim_x", "smsp__pcsamp_sample_count",
           "l1tex__data_bank_conflicts_pipe_lsu.sum", "launch__func_cache_config"]
_UNITS = ["", "", "", "", "", "", "", "", "ns", "byte", "%", "", "", "", ""]


def _page(rng: random.Random, launches: int) -> bytes:
    def metric() -> str:
        return rng.choice([_ncu_number(rng), _ncu_number(rng), "", "n/a", "-0", "fast", "true", "1e3"])

    columns = [  # per column: a way to make its cells, one column of each kind
        # A kernel name is never empty: a launch without one is refused (issue 23).
        lambda i: str(i), lambda i: "4242", lambda i: rng.choice([c for c in _CELLS[:6] if c]),
        lambda i: rng.choice(["(256, 1, 1)", ""]),
        lambda i: "(64, 1, 1)", lambda i: "0", lambda i: "9.0", lambda i: rng.choice(["NVIDIA H100", "", "T4"]),
        lambda i: _ncu_number(rng), lambda i: rng.choice(["1,024", "", "n/a"]), lambda i: metric(),
        lambda i: rng.choice(["65,536", "-0", "0"]), lambda i: rng.choice(["true", "false"]),
        lambda i: rng.choice(["0", "-0"]), lambda i: "CachePreferNone"]
    rows = [_HEADER, _UNITS, *([make(i) for make in columns] for i in range(launches))]
    return "".join(",".join('"' + c.replace('"', '""') + '"' for c in row) + "\n" for row in rows).encode()


@pytest.mark.parametrize("seed", range(12))
def test_tables_from_the_bytes_are_those_from_the_text(seed: int) -> None:
    """A line no CSV row ("x", a row pandas made and left out: its "ID" is no number) sends the same page to
    the csv module: the same table, and the same unusable values, either way."""
    rng = random.Random(seed)
    page = _page(rng, rng.randint(1, 60))

    def read(data: bytes, wanted: frozenset[str] | None) -> tuple[object, ...]:
        handle = io.BytesIO(data)
        header = header_fields(handle.readline())
        units = raw_units(handle, header)
        measurement = read_raw(handle.read(), header, units, "x.csv", wanted)
        frame = measurement.table.to_frame()
        return tuple(frame[c].tolist() for c in frame.columns), measurement.unusable

    assert rawcells._plain_columns(page.split(b"\n", 2)[2], len(_HEADER), [0]) is not None
    for wanted in (None, frozenset({"gpu__time_duration.sum", "smsp__pcsamp_sample_count"})):
        plain, text = read(page, wanted), read(page + b"x\n", wanted)
        assert repr(plain) == repr(text)


# ---------------------------------------------------------------- before the table


def test_profiling_lines_counted_or_split() -> None:
    rng = random.Random(5)
    prefixes = [b"", b"\n", b"==PROF== a\n==PROF== b\n", b"==PROF== a\nx", b"x\n==PROF== a\n", b"==PROF=="]
    parts = [b"==PROF== x", b"\n", b"==PROF==", b"a", b"==PR", b"OF==", b"\r"]
    prefixes += [b"".join(rng.choice(parts) for _ in range(rng.randint(0, 8))) for _ in range(2000)]
    for prefix in prefixes:
        lines = prefix.split(b"\n")
        others = [line for line in lines if not line.startswith(b"==PROF==")]
        assert _profiling_lines(prefix) == (len(others) < len(lines), others), prefix
