"""The details page (``ncu --csv --page details``): one row per launch x metric.

Current ncu writes ``"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream",
"Block Size","Grid Size","Device","CC","Section Name","Metric Name","Metric Unit","Metric Value"``
followed (in recent ncu; the version that added them is not known here) by ``"Rule Name","Rule
Type","Rule Description","Estimated Speedup Type","Estimated Speedup"``. Metric rows then end right
after the value with a trailing comma (16 cells under a 20-cell header) and rule rows have an empty
metric name: see the captured ncu output in microsoft/superbenchmark ``tests/data/cublaslt_ncu.log``,
read by ``tests/benchmarks/micro_benchmarks/test_cublaslt_function.py`` (CC 10.0, application output
before the header, ``hz``/``ns`` units, string values like ``CachePreferNone``, ``PolicySpread``,
``all``). The older layout (rodinia cfd logs quoted in a public README, a CUTLASS example parser's
docstring) has ``"Kernel Time"`` after "Kernel Name" and no launch dimensions, device or CC. Rows of
one launch are contiguous. "Metric Name" may hold a section's label instead of a metric name
(``labels``). The page comes parsed by pandas (``parsing.read_details_csv``), the one part of perfgate that
imports it; everything from here on works on numpy arrays.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from perfgate.collect.ncu_csv.arrays import BoolArray, FloatArray, IntArray, ObjectArray
from perfgate.collect.ncu_csv.framing import FIX_CSV, launch_mask
from perfgate.collect.ncu_csv.labels import map_section_labels, qualify_duplicates
from perfgate.collect.ncu_csv.launches import (
    Attribute,
    Coded,
    MetricRows,
    attribute_cells,
    build_table,
    is_attribute_column,
    launch_attributes,
)
from perfgate.collect.ncu_csv.parsing import is_metric_column
from perfgate.collect.ncu_csv.values import flag_unusable, numbers, unit_scale
from perfgate.errors import InputError
from perfgate.metrics import CATALOG_BY_NAME, LAUNCH_CONFIG_METRICS
from perfgate.table import Measurement
from perfgate.vocabulary import IDENTITY_METRICS

if TYPE_CHECKING:
    import pandas as pd  # type: ignore[import-untyped, unused-ignore]

TEXT_METRICS = frozenset({"device__attribute_display_name"})  # string-valued by nature


def read_details(df: pd.DataFrame, source: str, wanted: frozenset[str] | None = None) -> Measurement:
    """The table from the parsed details page (categorical columns but the text ones).

    ``wanted``: the metrics asked for, when known; a cell of one of them that holds no number is kept
    as NaN with its reason even when nothing else says the metric is numeric.
    """
    for needed in ("ID", "Metric Name", "Metric Value"):
        if needed not in df.columns:
            raise InputError(source, f'the details CSV has no "{needed}" column', FIX_CSV)
    df = _launch_rows(df, source)
    starts = _launch_starts(df)
    row_launch = np.cumsum(starts) - 1
    _refuse_merged_launches(df, starts, row_launch, source)
    first_rows = df[starts]
    count = len(first_rows)

    metric = df["Metric Name"]
    metric_codes: IntArray = metric.cat.codes.to_numpy()
    metric_names = [str(m) for m in metric.cat.categories]  # str: a label could parse as a number
    units, factors, unit_codes = _row_units(df)
    cells: ObjectArray = df["Metric Value"].to_numpy(dtype=object)
    no_unit = unit_codes == len(units) - 1
    values, keep = numbers(cells, suspects=no_unit, groups=metric_codes)
    if (factors != 1.0).any():
        values = values * factors[unit_codes]
    keep &= metric_codes >= 0  # rule rows have no metric name
    keep, reasons = flag_unusable(cells, values, keep, _numeric_rows(metric_names, metric_codes, values, keep,
                                                                     no_unit, wanted))
    extra = _details_attributes(metric_names, metric_codes, cells, row_launch, count)

    if not all(is_metric_column(m) for m in metric_names) and "Section Name" in df.columns:
        # Labels of ncu's sections become metric names; labels left over can repeat across
        # sections (an unknown section's, an older ncu's), so those are qualified by section.
        sections: ObjectArray = df["Section Name"].to_numpy(dtype=object)
        metric_codes, metric_names, keep = map_section_labels(sections, row_launch, metric_codes, metric_names,
                                                              unit_codes, units, keep)
        metric_codes, metric_names = qualify_duplicates(sections, row_launch, metric_codes, metric_names, keep)

    attributes = {name: first_rows[name].to_numpy(dtype=object) for name in first_rows.columns
                  if is_attribute_column(name)}
    launches = launch_attributes(attributes, count, extra)
    rows = MetricRows(row_launch[keep], metric_codes[keep], metric_names, unit_codes[keep], units, values[keep],
                      None if reasons is None else reasons[keep])
    return build_table(source, launches, rows)


def _launch_rows(df: pd.DataFrame, source: str) -> pd.DataFrame:
    """The rows that are launches (``framing.launch_mask``), judged on the few distinct "ID" cells."""
    ids = df["ID"].astype("category")  # as parsed, but for a page without rows
    categories = [str(c) for c in ids.cat.categories]  # categories are inferred: maybe int
    if not all(map(str.isdecimal, categories)) and "Process ID" in df.columns:
        processes = df["Process ID"].astype(object).fillna("").astype(str)
        launch_mask([str(c) for c in df["ID"].astype(object).fillna("")], source, processes.tolist())
    good = launch_mask(categories, source)
    codes = ids.cat.codes.to_numpy()
    mask = np.where(codes >= 0, good[np.maximum(codes, 0)], False)
    return df if mask.all() else df[mask]


def _numeric_rows(names: list[str], codes: IntArray, values: FloatArray, keep: BoolArray, no_unit: BoolArray,
                  wanted: frozenset[str] | None) -> BoolArray:
    """Rows whose metric holds numbers: it has a unit (ncu gives string metrics none), another row of it is a
    number, or it is a metric perfgate knows or was asked for (the device's name excepted: it is text)."""
    valid = codes >= 0
    safe = np.where(valid, codes, 0)
    with np.errstate(invalid="ignore"):
        counted = keep & valid & np.isfinite(values)
    has_number = np.bincount(safe[counted], minlength=len(names)) > 0
    known = np.array([_known_numeric(n, wanted) for n in names], dtype=bool)
    numeric: BoolArray = valid & (~no_unit | (has_number | known)[safe])
    return numeric


def _known_numeric(name: str, wanted: frozenset[str] | None) -> bool:
    if name in TEXT_METRICS:
        return False
    return name in CATALOG_BY_NAME or name in LAUNCH_CONFIG_METRICS or (wanted is not None and name in wanted)


def _launch_starts(df: pd.DataFrame) -> BoolArray:
    """Rows that start a launch: rows of one launch are contiguous, a new one starts where ID (or process) changes."""
    starts = np.zeros(len(df), dtype=bool)
    starts[0] = True
    for column in ("ID", "Process ID"):
        if column in df.columns:
            codes = df[column].cat.codes.to_numpy()
            starts[1:] |= codes[1:] != codes[:-1]
    return starts


def _refuse_merged_launches(df: pd.DataFrame, starts: BoolArray, row_launch: IntArray, source: str) -> None:
    """Refuse a page whose IDs do not separate its launches (every ID 0, say): rows of several launches would
    read as one launch and its metrics' values, all but one, be lost. A launch lists each metric once, so a
    launch whose first (section, metric) comes again is several launches: O(rows), no sort."""
    metric = df["Metric Name"].cat.codes.to_numpy()
    key = metric.astype(np.int64)
    if "Section Name" in df.columns:
        section = df["Section Name"].astype("category").cat.codes.to_numpy().astype(np.int64)
        key = key + (section + 1) * (int(key.max(initial=0)) + 2)
    repeated = (key == key[starts][row_launch]) & ~starts & (metric >= 0)  # rule rows name no metric
    if repeated.any():
        row = int(np.flatnonzero(repeated)[0])
        raise InputError(source, f'launch ID {df["ID"].iloc[row]} lists metric {df["Metric Name"].iloc[row]!s} '
                                 "twice: the rows of several launches share one ID, so their values would be lost",
                         "export the CSV again from ncu (each launch has its own ID), or use the .ncu-rep")


def _row_units(df: pd.DataFrame) -> tuple[list[str], FloatArray, IntArray]:
    """(base units, their factors, each row's code into them); the last unit is "" (no unit, or none given)."""
    if "Metric Unit" not in df.columns:
        return [""], np.ones(1), np.zeros(len(df), dtype=np.int64)
    unit = df["Metric Unit"]
    unit_codes = unit.cat.codes.to_numpy()
    units, factors = unit_scale([str(u) for u in unit.cat.categories] + [""])
    return units, factors, np.where(unit_codes < 0, len(units) - 1, unit_codes)


def _details_attributes(names: list[str], codes: IntArray, cells: ObjectArray, row_launch: IntArray,
                        count: int) -> dict[str, Attribute]:
    """Device name, CC and launch dimensions given as metric rows (``--metrics device__...``)."""
    extra: dict[str, Attribute] = {}
    for name in IDENTITY_METRICS:
        if name not in names:
            continue
        rows = np.flatnonzero(codes == names.index(name))
        found = attribute_cells(name, cells[rows])
        launch_of = row_launch[rows]
        _, last_from_end = np.unique(launch_of[::-1], return_index=True)
        last = len(launch_of) - 1 - last_from_end  # a launch's last row of the metric, as a later row wins
        per_launch = np.full(count, len(found.distinct), dtype=np.int64)  # None: the launch has no row of it
        per_launch[launch_of[last]] = found.codes[last]
        extra[name] = Coded(per_launch, [*found.distinct, None])
    return extra
