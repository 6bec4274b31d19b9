"""Launches: their attributes from the leading columns, and the normalized table built from rows of them.

Both pages start each launch's row(s) with the same columns: ``"ID","Process ID","Process Name",
"Host Name","Kernel Name","Context","Stream","Block Size","Grid Size","Device","CC"`` in current ncu,
``"ID","Process ID","Process Name","Host Name","Kernel Name","Kernel Time","Context","Stream"`` in
logs from 2020 to 2024 (no launch dimensions, device or CC). "Device" is the device *index* ("0")
in every export seen, so ``device`` is "" unless the launch also carries the string metric
``device__attribute_display_name`` (``--metrics device__attribute_display_name``); "CC" is
``"7.5"``. Where a column is missing, the identity metrics (``perfgate.vocabulary.IDENTITY_METRICS``:
device name, CC major/minor, grid and block dimensions), if measured, fill it in.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from perfgate.columns import Array, Columns, Gather, combined_key, factorize, first_rows, objects
from perfgate.demangled import kernel_function_name
from perfgate.errors import InputError
from perfgate.limits import check_name_length
from perfgate.collect.ncu_csv.arrays import FloatArray, IntArray, ObjectArray
from perfgate.collect.ncu_csv.names import nvtx_region
from perfgate.collect.ncu_csv.parsing import is_push_pop
from perfgate.table import (
    COLUMNS,
    NO_DATA_METRIC,
    Measurement,
    Unusable,
    format_dim,
    normalized,
)
from perfgate.vocabulary import KIND_KERNEL

@dataclass(frozen=True)
class Coded:
    """A column's cells per launch as codes into its distinct cells (the raw page's, told apart in its bytes)."""

    codes: IntArray
    distinct: Sequence[object]


# Per launch, the cell of one identity metric as the parser gave it (text without thousands separators), None
# where the launch has none: as codes into the distinct cells.
Attribute = Coded


# A column's cells per launch: text, and None, NaN (pandas' empty cell) or "" where empty; or coded.
Cells = Sequence[object] | ObjectArray | Coded

# The leading columns the attributes come from (and the NVTX push/pop column, ``is_push_pop``).
ATTRIBUTE_COLUMNS = frozenset({"Kernel Name", "Device", "CC", "Grid Size", "Block Size"})


def is_attribute_column(name: str) -> bool:
    """A leading column ``launch_attributes`` reads."""
    return name in ATTRIBUTE_COLUMNS or is_push_pop(name)


@dataclass
class Launches:
    """Per-launch attributes, one entry per launch in report order, each as codes into its distinct texts (a
    report's 500,000 launches name a few kernels, regions and configurations)."""

    demangled: Coded
    region: Coded
    device: Coded
    cc: Coded
    grid: Coded
    block: Coded


@dataclass(frozen=True)
class MetricRows:
    """The table's rows as arrays, one entry per row: launch index, metric and unit (codes into the
    name lists; two names may be equal), value (in the base unit) and, for values that are no number
    (NaN), the reason (``perfgate.collect.screen``; None elsewhere, or no array when there is none)."""

    launch: IntArray
    metric_codes: IntArray
    metric_names: Sequence[str]
    unit_codes: IntArray
    unit_names: Sequence[str]
    values: FloatArray
    reasons: ObjectArray | None = None

    def unusable(self) -> list[Unusable]:
        """``{"launch", "metric", "reason"}`` of each row with a reason (``perfgate.table.Unusable``)."""
        if self.reasons is None:
            return []
        return [{"launch": int(self.launch[i]), "metric": str(self.metric_names[self.metric_codes[i]]),
                 "reason": str(self.reasons[i])} for i in np.flatnonzero(self.reasons.astype(bool))]


def _dims(text: str) -> str:
    numbers = re.findall(r"\d+", text)
    if len(numbers) == 3:
        return format_dim(*numbers)
    if len(numbers) == 1:
        return format_dim(numbers[0])
    return text.strip()


def _whole(cell: object) -> int:
    """An identity metric's cell as an int: text without separators ("1024"), or a number."""
    if not isinstance(cell, (str, int, float, np.number)):
        raise TypeError(f"not a number: {cell!r}")  # what float() would say: attribute_cells gives no other type
    return int(float(cell))


def _missing(cell: object) -> bool:
    """An empty cell: None, pandas' NaN or ""."""
    return cell is None or cell != cell or cell == ""


def per_launch(cells: Cells | None, count: int, convert: Callable[[str], str] | None = None) -> Coded:
    """A column's value per launch (one row per launch) as codes into strings, "" where empty, converted once
    per distinct value (two cells may convert to one string: a code each, one string twice)."""
    if cells is None:
        return Coded(np.zeros(count, dtype=np.int64), [""])
    codes, uniques = _factorized(cells)
    return Coded(codes, ["" if _missing(u) else str(u) if convert is None else convert(str(u)) for u in uniques])


def _factorized(cells: Cells) -> tuple[IntArray, Sequence[object]]:
    """Each cell's index into the distinct cells, and those."""
    if isinstance(cells, Coded):
        return cells.codes, cells.distinct
    codes, uniques = factorize(np.asarray(cells, dtype=object))
    return codes, uniques.tolist()


def attribute_cells(name: str, cells: Cells) -> Attribute:
    """Clean identity metric cells: None when empty; numbers without thousands separators."""
    codes, uniques = _factorized(cells)
    cleaned: list[object] = []
    for cell in uniques:
        if isinstance(cell, str):
            text = cell.strip() if name == "device__attribute_display_name" else cell.strip().replace(",", "")
            cleaned.append(text or None)
        else:
            cleaned.append(None if _missing(cell) else cell)
    return Coded(codes, cleaned)


def combined(parts: Sequence[Coded], make: Callable[..., object]) -> Coded:
    """A column made launch by launch from several coded ones: ``make`` is called once per distinct combination
    of their values (a few), not once per launch."""
    key = combined_key(*((part.codes.astype(np.int64, copy=False), len(part.distinct)) for part in parts))
    codes, _ = factorize(key)
    made = [make(*(part.distinct[part.codes[row]] for part in parts)) for row in first_rows(key).tolist()]
    return Coded(codes, made)


def launch_attributes(columns: Mapping[str, Cells], count: int, extra: dict[str, Attribute]) -> Launches:
    """Attributes from the leading columns of each launch's first row, completed by metrics.

    ``columns`` maps the leading columns' names (``is_attribute_column``; others are not read) to their cells
    per launch (``count`` launches). ``extra`` maps identity metric names (device name, CC major/minor, launch
    dimensions) to their value per launch (None when absent) for files without the "Device"/"CC"/"Grid Size"
    columns.
    """
    demangled = per_launch(columns.get("Kernel Name"), count)
    push_pop = next((c for c in columns if is_push_pop(c)), None)
    region = per_launch(columns[push_pop] if push_pop else None, count, nvtx_region)
    # "Device" is the index in every real export; a name there (hand-made files) is still a name.
    device = per_launch(columns.get("Device"), count, lambda d: "" if d.strip().isdigit() else d.strip())
    names = extra.get("device__attribute_display_name")
    if names is not None:
        device = combined([names, device], lambda name, index: str(name) if name else index)
    cc = _cc_with_fallback(per_launch(columns.get("CC"), count, str.strip), extra)
    grid = _dims_with_fallback(per_launch(columns.get("Grid Size"), count, _dims), extra, "grid")
    block = _dims_with_fallback(per_launch(columns.get("Block Size"), count, _dims), extra, "block")
    return Launches(demangled, region, device, cc, grid, block)


def _cc_with_fallback(cc: Coded, extra: dict[str, Attribute]) -> Coded:
    """Fill launches without a "CC" cell from ``device__attribute_compute_capability_{major,minor}``."""
    major = extra.get("device__attribute_compute_capability_major")
    minor = extra.get("device__attribute_compute_capability_minor")
    if major is None or minor is None or "" not in cc.distinct:
        return cc
    return combined([cc, major, minor], lambda c, a, b: c or ("" if a is None or b is None else
                                                             f"{_whole(a)}.{_whole(b)}"))


def _dims_with_fallback(dims: Coded, extra: dict[str, Attribute], what: str) -> Coded:
    """Fill launches without a "Grid Size"/"Block Size" cell from ``launch__{what}_dim_{x,y,z}``."""
    x, y, z = (extra.get(f"launch__{what}_dim_{axis}") for axis in "xyz")
    if "" not in dims.distinct or x is None or y is None or z is None:
        return dims
    return combined([dims, x, y, z], lambda d, *xyz: d or ("" if None in xyz else
                                                         format_dim(*(_whole(v) for v in xyz))))


def _ordinals(kernel_codes: IntArray, region_codes: IntArray) -> IntArray:
    """Per launch (in report order), its 0-based index among the launches of the same (kernel, region): what
    ``perfgate.table.assign_ordinals`` gives, counted on integer codes instead of grouping strings (``region_codes``
    tell each distinct region apart)."""
    key = kernel_codes * (int(region_codes.max(initial=0)) + 1) + region_codes
    order = np.argsort(key, kind="stable")
    ordered = key[order]
    starts = np.r_[True, ordered[1:] != ordered[:-1]] if len(ordered) else np.zeros(0, dtype=bool)
    position = np.arange(len(ordered), dtype=np.int64)
    first = np.maximum.accumulate(np.where(starts, position, 0)) if len(ordered) else position
    ordinals = np.empty(len(ordered), dtype=np.int64)
    ordinals[order] = position - first
    return ordinals


def with_no_data_rows(rows: MetricRows, count: int) -> MetricRows:
    """Add the "no data" row (``perfgate.table.NO_DATA_METRIC``) of each launch left with no row."""
    missing = np.flatnonzero(np.bincount(rows.launch, minlength=count) == 0)
    if not missing.size:
        return rows
    metric, unit = NO_DATA_METRIC[KIND_KERNEL]
    metric_names = [*rows.metric_names, metric]
    unit_names = [*rows.unit_names, unit]
    launch = np.concatenate([rows.launch, missing])
    metric_codes = np.concatenate([rows.metric_codes, np.full(missing.size, len(metric_names) - 1)])
    unit_codes = np.concatenate([rows.unit_codes, np.full(missing.size, len(unit_names) - 1)])
    values = np.concatenate([rows.values, np.full(missing.size, np.nan)])
    reasons = None if rows.reasons is None else np.concatenate([rows.reasons, np.full(missing.size, None)])
    order = np.argsort(launch, kind="stable")
    return MetricRows(launch[order], metric_codes[order], metric_names, unit_codes[order], unit_names, values[order],
                      None if reasons is None else reasons[order])


def _distinct(column: Coded) -> tuple[IntArray, ObjectArray]:
    """A coded column's codes into its distinct strings (two cells may have converted to one), in order of first
    appearance among the launches: what ``factorize`` of the per-launch strings gives, without making them."""
    value_codes, values = factorize(objects(list(column.distinct)))
    codes, appearing = factorize(value_codes[column.codes])  # integers: renumbered by first appearance
    return codes, values[appearing.astype(np.int64)]


def build_table(source: str, launches: Launches, rows: MetricRows) -> Measurement:
    """Assemble the table from per-row arrays plus per-launch attributes (a launch without rows: "no data")."""
    count = len(launches.demangled.codes)
    rows = with_no_data_rows(rows, count)
    launch = rows.launch.astype(np.int64, copy=False)  # the rows' own array where it is int64: 88 MB at 500k launches
    demangled_codes, demangled = _distinct(launches.demangled)
    distinct = demangled.tolist()
    if any(not name.strip() for name in distinct):  # its baseline entry would match any nameless launch
        raise InputError(source, "a launch has no kernel name (an empty \"Kernel Name\" cell)",
                         "export the CSV again from ncu, or use the .ncu-rep")
    check_name_length(set(distinct), source)
    region_codes, regions = _distinct(launches.region)
    check_name_length(set(regions.tolist()), source, "NVTX region")
    bare_codes, bare = factorize(objects([kernel_function_name(d) if d else "" for d in distinct]))
    kernel_codes = bare_codes[demangled_codes]  # each distinct name's function name made once

    def per_row(codes: IntArray, values: ObjectArray) -> Gather:
        return Gather(Gather(values, codes.astype(np.int64, copy=False)), launch)

    # A launch's columns repeat on each of its rows, a metric's name and unit on each of its: held as values and
    # codes (``columns.Gather``; a launch's texts as codes into their distinct values), made only if a later stage
    # reads the whole column.
    data: dict[str, Array | Gather] = {
        "kind": per_row(np.zeros(count, dtype=np.int64), objects([KIND_KERNEL])),
        "kernel": per_row(kernel_codes, bare),
        "demangled": per_row(demangled_codes, demangled),
        "region": per_row(region_codes, regions),
        "ordinal": Gather(_ordinals(kernel_codes, region_codes), launch),
        "launch": launch,
        **{name: per_row(*_distinct(getattr(launches, name))) for name in ("device", "cc", "grid", "block")},
        "metric": Gather(objects([str(m) for m in rows.metric_names]), rows.metric_codes.astype(np.int64, copy=False)),
        "unit": Gather(objects([str(u) for u in rows.unit_names]), rows.unit_codes.astype(np.int64, copy=False)),
        "value": np.asarray(rows.values, dtype=np.float64),
    }
    # Built with the table's types, so ``normalized`` hands it on without looking at every row.
    table = normalized(Columns({column: data[column] for column in COLUMNS}, len(launch)))
    return Measurement(table, source=source, unusable=tuple(rows.unusable()))
