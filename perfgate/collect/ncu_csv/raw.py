"""The raw page (``ncu --csv --page raw``): one row per launch, one column per metric.

The same leading columns as the details page (``"Kernel Time"`` and no dimensions in the older
layout, as in the NVIDIA forum answer quoted by public parsers), then one column per metric, then
ONE row of units (empty under the leading columns), then one row per launch, as the fixtures of
several public parsers show it. Metric columns are told apart by name (a ``__`` and no space), never
by position. Only the cells of the columns needed are read (``rawcells``), where they lie in the page's
bytes: a metric's cells become numbers here, column by column, from their bytes where they are numbers as
ncu prints them (``values.plain_decimals``), else from the text of the column's distinct cells; the leading
columns and the identity metrics are read as their distinct cells and a code per launch.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import IO

import numpy as np

from perfgate.columns import objects
from perfgate.collect.ncu_csv.arrays import BoolArray, FloatArray, IntArray, ObjectArray
from perfgate.collect.ncu_csv.details import TEXT_METRICS
from perfgate.collect.ncu_csv.framing import FIX_CSV, launch_mask
from perfgate.collect.ncu_csv.launches import (
    Attribute,
    Coded,
    MetricRows,
    attribute_cells,
    build_table,
    is_attribute_column,
    launch_attributes,
)
from perfgate.collect.ncu_csv.parsing import header_fields, is_metric_column
from perfgate.collect.ncu_csv.rawcells import CellColumn, read_raw_columns
from perfgate.collect.ncu_csv.values import column_numbers, flag_unusable, plain_decimals
from perfgate.errors import InputError
from perfgate.metrics import CATALOG_BY_NAME, LAUNCH_CONFIG_METRICS
from perfgate.table import Measurement
from perfgate.units import to_base
from perfgate.vocabulary import IDENTITY_METRICS


def raw_units(handle: IO[bytes], header: Sequence[str]) -> list[str]:
    """Consume the raw page's units row (empty ID cell), if the row after the header is one."""
    while True:
        position = handle.tell()
        line = handle.readline()
        if not line.startswith(b"=="):
            break
    fields = header_fields(line) if line else []
    if fields and fields[0] == "" and line.strip():
        return fields + [""] * (len(header) - len(fields))
    handle.seek(position)
    return [""] * len(header)


def read_raw(data: bytes, header: Sequence[str], units: Sequence[str], source: str,
             wanted: frozenset[str] | None = None) -> Measurement:
    """The table from the raw page's rows (``data``: the bytes after the units row); ``wanted`` (when given) skips
    other metric columns: they are never made text."""
    metric_columns = [c for c in header if is_metric_column(c)
                      and (wanted is None or c in wanted or c in IDENTITY_METRICS)]
    needed = [c for c in header if c in ("ID", "Process ID") or is_attribute_column(c)] + metric_columns
    by_name = dict(zip(needed, read_raw_columns(data, len(header), [header.index(c) for c in needed]), strict=True))
    if "ID" not in by_name:
        raise InputError(source, 'the raw CSV has no "ID" column', FIX_CSV)
    launches = _launch_rows(by_name["ID"], source, by_name.get("Process ID"))
    if not launches.all():
        by_name = {name: cells.where(launches) for name, cells in by_name.items()}
    count = int(launches.sum())
    unit_of = dict(zip(header, units, strict=False))  # a units row longer than the header: extra cells unused

    extra: dict[str, Attribute] = {}
    value_blocks: list[FloatArray] = []
    keep_blocks: list[BoolArray] = []
    reason_blocks: list[ObjectArray | None] = []
    numeric_names: list[str] = []
    numeric_units: list[str] = []
    for name in metric_columns:
        column = by_name[name]
        if name in IDENTITY_METRICS:
            extra[name] = attribute_cells(name, Coded(*column.distinct()))
        values, keep, reasons = _metric_values(column, name, unit_of.get(name, ""), wanted)
        if not keep.any():
            continue  # a string-valued (or entirely empty) metric
        base, factor = to_base(unit_of.get(name, ""))
        value_blocks.append(values * factor if factor != 1.0 else values)
        keep_blocks.append(keep)
        reason_blocks.append(reasons)
        numeric_names.append(name)
        numeric_units.append(base)

    launch, metric_codes, values, reasons = _launch_major(value_blocks, keep_blocks, reason_blocks, count)
    rows = MetricRows(launch, metric_codes, numeric_names, metric_codes, numeric_units, values, reasons)
    attributes = {name: Coded(*cells.distinct()) for name, cells in by_name.items() if is_attribute_column(name)}
    return build_table(source, launch_attributes(attributes, count, extra), rows)


# Cells longer than this are no number ncu prints (18 digits with separators, a point and a sign fit).
_LONGEST_NUMBER = 32
_LONGEST_ID = 20


def _launch_rows(ids: CellColumn, source: str, processes: CellColumn | None) -> BoolArray:
    """``launch_mask`` of the "ID" cells: all rows at once when every cell is digits, as ncu writes them."""
    cells = ids.byte_rows(_LONGEST_ID)
    if cells is not None and len(ids):
        rows, lengths = cells
        inside = np.arange(rows.shape[1]) < lengths[:, None]
        if (lengths > 0).all() and ((rows - np.uint8(ord("0")) < 10) | ~inside).all():
            return np.ones(len(ids), dtype=bool)
    return launch_mask(ids.texts(), source, processes.texts() if processes is not None else None)


def _metric_values(column: CellColumn, name: str, unit: str,
                   wanted: frozenset[str] | None) -> tuple[FloatArray, BoolArray, ObjectArray | None]:
    """(values, keep, reasons) of a metric's column (``values.column_numbers``, ``values.flag_unusable``): from
    the cells' bytes where they are numbers as ncu prints them (only the empty ones are then no number, and
    nothing is unusable), else from the text of its distinct cells (a text metric repeats a few)."""
    cells = column.byte_rows(_LONGEST_NUMBER)
    plain = None if cells is None else plain_decimals(*cells)
    if plain is not None:
        return plain, ~np.isnan(plain), None
    # Both read a column cell by cell, but for what holds for all its cells or for one: the same on its distinct
    # cells.
    codes, distinct = column.distinct()
    texts = objects(distinct)
    values, keep = column_numbers(texts)
    if np.isnan(values).any() and _numeric(name, unit, values, keep, wanted):
        # n/a, and text where a number belongs ("fast", "0x1F"), are kept as NaN with their reason.
        keep, reasons = flag_unusable(texts, values, keep, np.ones(len(texts), dtype=bool))
        return values[codes], keep[codes], None if reasons is None else reasons[codes]
    return values[codes], keep[codes], None


def _numeric(name: str, unit: str, values: FloatArray, keep: BoolArray, wanted: frozenset[str] | None) -> bool:
    """Whether a metric column holds numbers: it has a unit, a cell of it is a number, or perfgate knows it
    (or was asked for it); the device's name is text."""
    if name in TEXT_METRICS:
        return False
    with np.errstate(invalid="ignore"):
        if bool(unit) or bool((keep & np.isfinite(values)).any()):
            return True
    return name in CATALOG_BY_NAME or name in LAUNCH_CONFIG_METRICS or (wanted is not None and name in wanted)


def _launch_major(value_blocks: list[FloatArray], keep_blocks: list[BoolArray],
                  reason_blocks: list[ObjectArray | None],
                  count: int) -> tuple[IntArray, IntArray, FloatArray, ObjectArray | None]:
    """(launch, metric code, value, reason or None) of the cells kept: launch-major, metrics in column order."""
    if not value_blocks:
        empty = np.zeros(0, dtype=np.int64)
        return empty, empty, np.zeros(0), None
    # (launches x metrics) flattened row by row.
    matrix = np.column_stack(value_blocks)
    present = np.column_stack(keep_blocks).reshape(-1)
    m = len(value_blocks)
    launch = np.repeat(np.arange(count), m)[present]
    metric_codes = np.tile(np.arange(m), count)[present]
    reasons: ObjectArray | None = None
    if any(block is not None for block in reason_blocks):
        reasons = np.column_stack([np.full(count, None, dtype=object) if block is None else block
                                   for block in reason_blocks]).reshape(-1)[present]
    return launch, metric_codes, matrix.reshape(-1)[present], reasons
