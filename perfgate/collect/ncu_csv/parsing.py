"""The CSV table itself: its columns, its header, and the parse of both pages by pandas' C parser.

pandas is imported in this package only, when a table is parsed. Every column is parsed (with ``usecols``
pandas silently accepts rows with too many cells, and a cell inserted mid-row would shift the others
unnoticed): on the details page the columns whose text matters exactly as strings, the rest as categories
(cheap, and codes to group by); on the raw page the metric columns as numbers where every launch's cell is a
plain number, else every cell as its text, which ``values`` turns into numbers the one way both pages share.
A parse that fails raises :class:`Unparsed`, and the reader falls back to filtering lines in Python. The
pyarrow engine was measured and not taken: it refuses the ``==PROF==`` lines ncu writes between and after the
rows, which every stdout export has (see docs/performance.md).
"""

from __future__ import annotations

import csv
import warnings
from collections.abc import Collection, Sequence
from typing import IO, TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from perfgate.collect.ncu_csv.framing import FIX_CSV, FIX_REEXPORT
from perfgate.errors import InputError

if TYPE_CHECKING:
    import pandas as pd  # type: ignore[import-untyped, unused-ignore]

# Details-page columns read as exact text; the others are parsed as categories.
TEXT_COLUMNS = ("Kernel Name", "Block Size", "Grid Size", "Device", "CC", "Section Name", "Metric Value")


class Unparsed(Exception):
    """The fast path could not parse the table; the filtered path gets a try."""


def is_metric_column(name: str) -> bool:
    """A metric's name (``gpu__time_duration.sum``), as opposed to a leading column or a section label."""
    return "__" in name and " " not in name


def is_push_pop(name: str) -> bool:
    """The ``--nvtx`` column of push/pop range stacks (``thread Domain:Push/Pop_Range:...``)."""
    return "Push/Pop_Range" in name


def header_fields(line: bytes) -> list[str]:
    """The cells of one CSV line (the header or the raw page's units row)."""
    text = line.decode("utf-8", errors="replace").rstrip("\r\n")
    return next(csv.reader([text]), [])


def is_details(header: Sequence[str]) -> bool:
    """The details page (one row per launch x metric) rather than the raw page (one row per launch)."""
    return "Metric Name" in header and "Metric Value" in header


DETAILS_COLUMNS = ("Section Name", "Metric Name", "Metric Unit", "Metric Value")


def check_header(header: Sequence[str], source: str) -> None:
    if "Kernel Name" not in header:
        raise InputError(source, 'the CSV header has no "Kernel Name" column', FIX_CSV)
    if any(column in header for column in DETAILS_COLUMNS) and not is_details(header):
        # A details page without its value or name column holds no measurement at all; read as a raw
        # page it would turn into launches with "no data".
        lacking = " and ".join(f'"{c}"' for c in ("Metric Name", "Metric Value") if c not in header)
        raise InputError(source, f"the details CSV has no {lacking} column", FIX_REEXPORT)
    if len(set(header)) != len(header):
        duplicates = sorted({h for h in header if header.count(h) > 1})
        raise InputError(source, f"the CSV header repeats columns {duplicates}", FIX_REEXPORT)


def read_details_csv(handle: IO[bytes], header: list[str]) -> pd.DataFrame:
    """Parse the details page from ``handle``'s position (its header)."""
    # Exact strings where the text matters, categories (cheap, and codes) for everything else.
    dtype = {c: object if c in TEXT_COLUMNS or is_push_pop(c) else "category" for c in header}
    return _read_csv(handle, header, dtype=dtype, na_values=[""])


def read_raw_csv(handle: IO[bytes], header: list[str], unread: Collection[str] = (),
                 numeric: Collection[str] = (), coded: Collection[str] = ()) -> pd.DataFrame:
    """Parse the raw page's rows from ``handle``'s position (after its units row): every cell as its text, "" where
    empty. Blank lines are skipped; ncu's own lines between rows become rows whose "ID" is no number.

    ``unread``: metric columns whose cells nobody reads. They are still parsed (a row's width is checked against
    the header's), as numbers where every cell is one, which makes no string per cell. ``numeric``: metric columns
    that are read, parsed as numbers (``float``'s, correctly rounded) where every cell of them is a plain number:
    no cell empty, ``n/a`` or ``-0`` (those the text path reads, ``values.column_numbers``). Where a cell is not,
    the page is parsed again with those columns as text, then all as text. ``coded``: columns parsed as
    categories (each distinct cell made once, a code per row), in the first two parses."""
    import pandas as pd  # type: ignore[import-untyped, unused-ignore]

    start = handle.tell()
    attempts = [(unread, numeric), (unread, ())] if numeric else [(unread, ())]
    for parsed_unread, parsed_read in attempts:
        if not parsed_unread and not parsed_read:
            break
        try:
            frame = _read_csv(handle, header, dtype=_number_types(header, [*parsed_unread, *parsed_read], coded),
                              names=header, na_values={name: ["", "n/a", "N/A"] for name in parsed_unread}
                              | {name: [""] for name in parsed_read}, thousands=",", **_correctly_rounded(pd))
            ids = frame["ID"].to_numpy(dtype=object) if "ID" in frame.columns else None
            if all(_plain_numbers(frame[name].to_numpy(), ids) for name in parsed_read):
                return frame
        except Unparsed:
            pass
        handle.seek(start)
    return _read_csv(handle, header, dtype=object, names=header, na_filter=False)


def _correctly_rounded(pd: Any) -> dict[str, str]:
    """The option that has pandas read a number as Python's ``float`` does (correctly rounded): its one converter
    from pandas 3.1 (fast_float), ``round_trip`` before (Python's own)."""
    major, minor = (int(part) for part in pd.__version__.split(".")[:2])
    return {} if (major, minor) >= (3, 1) else {"float_precision": "round_trip"}


def _number_types(header: Sequence[str], numbers: Collection[str], coded: Collection[str] = ()) -> dict[str, Any]:
    chosen, categories = set(numbers), set(coded)
    return {name: np.float64 if name in chosen else "category" if name in categories else object for name in header}


def _plain_numbers(values: npt.NDArray[np.float64], ids: npt.NDArray[np.object_] | None) -> bool:
    """A column parsed as numbers that the text path reads the same in every launch's row (an "ID" that is a
    number, of ``ids``; ncu's lines between rows have none, and no value): no empty or NaN cell (which the text
    path tells apart), no ``-0`` (which it reads as 0 in a column of integers)."""
    unread = np.flatnonzero(np.isnan(values))
    if unread.size and (ids is None or any(str(cell).isdecimal() for cell in ids[unread].tolist())):
        return False
    return not np.signbit(values[values == 0]).any()


def _read_csv(handle: IO[bytes], columns: list[str], **options: Any) -> pd.DataFrame:
    """``pandas.read_csv`` of one page with the C parser; :class:`Unparsed` with pandas' words where it fails."""
    import pandas as pd  # type: ignore[import-untyped, unused-ignore]  # here only: a .ncu-rep compare does without

    try:
        with warnings.catch_warnings():
            # A first row longer than the header makes pandas drop cells with only a warning.
            warnings.simplefilter("error", pd.errors.ParserWarning)
            frame: pd.DataFrame = pd.read_csv(handle, engine="c", index_col=False, keep_default_na=False,
                                              encoding="utf-8", encoding_errors="replace", **options)
            return frame
    except (pd.errors.ParserError, pd.errors.ParserWarning, ValueError) as exc:
        raise Unparsed(str(exc).replace("Error tokenizing data. C error: ", "").strip()) from None
    except pd.errors.EmptyDataError:
        empty: pd.DataFrame = pd.DataFrame({name: [] for name in columns}, dtype=object)
        return empty
