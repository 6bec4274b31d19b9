"""The raw page (``ncu --csv --page raw``): one row per launch, one column per metric.

The same leading columns as the details page (``"Kernel Time"`` and no dimensions in the older
layout, as in the NVIDIA forum answer quoted by public parsers), then one column per metric, then
ONE row of units (empty under the leading columns), then one row per launch, as the fixtures of
several public parsers show it. Metric columns are told apart by name (a ``__`` and no space), never
by position. pandas parses the page (``parsing.read_raw_csv``): a metric column of plain numbers as numbers;
the cells of any other become numbers here, column by column, from the text of its distinct cells; the leading
columns and the identity metrics are read as their distinct cells and a code per launch.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import IO, TYPE_CHECKING

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
from perfgate.collect.ncu_csv.values import column_numbers, flag_unusable
from perfgate.errors import InputError
from perfgate.metrics import CATALOG_BY_NAME, LAUNCH_CONFIG_METRICS
from perfgate.table import Measurement
from perfgate.units import to_base
from perfgate.vocabulary import IDENTITY_METRICS

if TYPE_CHECKING:
    import pandas as pd  # type: ignore[import-untyped, unused-ignore]


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


def unread_columns(header: Sequence[str], units: Sequence[str], wanted: frozenset[str] | None) -> list[str]:
    """The metric columns ``read_raw`` will not read: with ``wanted``, those of other metrics that have a unit (a
    number's; the identity metrics are always read)."""
    if wanted is None:
        return []
    return [name for name, unit in zip(header, units, strict=False)
            if unit and is_metric_column(name) and name not in wanted and name not in IDENTITY_METRICS]


def number_columns(header: Sequence[str], units: Sequence[str], wanted: frozenset[str] | None) -> list[str]:
    """The metric columns ``read_raw`` reads as numbers alone: those with a unit (a number's), but the identity
    metrics (read as text: launch facts)."""
    return [name for name, unit in zip(header, units, strict=False)
            if unit and is_metric_column(name) and (wanted is None or name in wanted) and name not in IDENTITY_METRICS]


def coded_columns(header: Sequence[str]) -> list[str]:
    """The columns parsed as categories (pandas makes each distinct cell once and a code per launch): the leading
    columns the launches' attributes come from, and the identity metrics."""
    return [name for name in header if is_attribute_column(name) or name in IDENTITY_METRICS]


def read_raw(frame: pd.DataFrame, header: Sequence[str], units: Sequence[str], source: str,
             wanted: frozenset[str] | None = None) -> Measurement:
    """The table from the raw page's rows (``frame``: every cell as text, from ``parsing.read_raw_csv``);
    ``wanted`` (when given) skips other metric columns."""
    if "ID" not in frame.columns:
        raise InputError(source, 'the raw CSV has no "ID" column', FIX_CSV)
    metric_columns = [c for c in header if is_metric_column(c)
                      and (wanted is None or c in wanted or c in IDENTITY_METRICS)]
    processes = frame["Process ID"].tolist() if "Process ID" in frame.columns else None
    launches = launch_mask(frame["ID"].tolist(), source, processes)
    if not launches.all():
        frame = _launch_rows(frame, launches)
    count = int(launches.sum())
    unit_of = dict(zip(header, units, strict=False))  # a units row longer than the header: extra cells unused

    extra: dict[str, Attribute] = {}
    value_blocks: list[FloatArray] = []
    keep_blocks: list[BoolArray] = []
    reason_blocks: list[ObjectArray | None] = []
    numeric_names: list[str] = []
    numeric_units: list[str] = []
    for name in metric_columns:
        if frame[name].dtype == np.float64:  # parsed as numbers (``parsing.read_raw_csv``): every cell a plain one
            values, keep, reasons = frame[name].to_numpy(), np.ones(count, dtype=bool), None
        else:
            column: Coded | ObjectArray
            if name in IDENTITY_METRICS or _is_category(frame[name]):
                column = _coded(frame[name])
            else:
                cells = frame[name].to_numpy(dtype=object)
                column = _coded(frame[name]) if _repeats(cells) else cells
            if name in IDENTITY_METRICS:
                extra[name] = attribute_cells(name, column)
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
    attributes = {name: _coded(frame[name]) for name in frame.columns if is_attribute_column(name)}
    return build_table(source, launch_attributes(attributes, count, extra), rows)


def _launch_rows(frame: pd.DataFrame, launches: BoolArray) -> pd.DataFrame:
    """The rows of ``frame`` that are launches: a slice (no copy) where they are one run, as where ncu's lines
    come only before and after the table."""
    at = np.flatnonzero(launches)
    rows: pd.DataFrame = frame.iloc[at[0]:at[-1] + 1] if at[-1] - at[0] + 1 == at.size else frame[launches]
    return rows


def _coded(cells: pd.Series) -> Coded:
    """A column's cells as codes into its distinct cells: a category column's own (``coded_columns``), else
    ``pandas.factorize``'s. The parse leaves no NaN, every cell is text."""
    import pandas as pd  # type: ignore[import-untyped, unused-ignore]  # as in ``parsing``: a .ncu-rep does without

    if _is_category(cells):
        return Coded(cells.cat.codes.to_numpy().astype(np.int64), cells.cat.categories.tolist())
    codes, distinct = pd.factorize(cells.to_numpy(dtype=object), sort=False)
    return Coded(codes.astype(np.int64, copy=False), distinct.tolist())


def _is_category(cells: pd.Series) -> bool:
    return str(cells.dtype) == "category"


_SAMPLE = 1024


def _repeats(cells: ObjectArray) -> bool:
    """Whether a column repeats its cells (an enum, a count that is the same for each launch of a kernel), judged
    on its first cells: such a column is read once per distinct cell, one of numbers that differ cell by cell."""
    sample = cells[:_SAMPLE].tolist()
    return len(set(sample)) <= len(sample) // 2


def _metric_values(column: ObjectArray | Coded, name: str, unit: str,
                   wanted: frozenset[str] | None) -> tuple[FloatArray, BoolArray, ObjectArray | None]:
    """(values, keep, reasons) of a metric's cells (``values.column_numbers``, ``values.flag_unusable``), or of its
    distinct cells spread to the launches by their codes: each cell is read the same either way."""
    codes, texts = (column.codes, objects(column.distinct)) if isinstance(column, Coded) else (None, column)
    values, keep = column_numbers(texts)
    reasons = None
    if np.isnan(values).any() and _numeric(name, unit, values, keep, wanted):
        # n/a, and text where a number belongs ("fast", "0x1F"), are kept as NaN with their reason.
        keep, reasons = flag_unusable(texts, values, keep, np.ones(len(texts), dtype=bool))
    if codes is None:
        return values, keep, reasons
    return values[codes], keep[codes], None if reasons is None else reasons[codes]


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
    kept = np.column_stack(keep_blocks).reshape(-1)
    present = slice(None) if kept.all() else kept  # every cell kept: no copy through the mask
    m = len(value_blocks)
    launch = np.repeat(np.arange(count), m)[present]
    metric_codes = np.tile(np.arange(m), count)[present]
    reasons: ObjectArray | None = None
    if any(block is not None for block in reason_blocks):
        reasons = np.column_stack([np.full(count, None, dtype=object) if block is None else block
                                   for block in reason_blocks]).reshape(-1)[present]
    return launch, metric_codes, matrix.reshape(-1)[present], reasons
