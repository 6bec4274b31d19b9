"""The normalized measurement table every reader produces and every later stage consumes.

One row per (launch, metric), long format. Kernel launches and pytest-benchmark benchmarks share
the same shape so that compare and render never care where a number came from:

=========  =======  ==================================================================
column     dtype    meaning
=========  =======  ==================================================================
kind       str      ``"kernel"`` (an ncu launch), ``"benchmark"`` (pytest-benchmark) or ``"region"`` (a total)
kernel     str      kernel function name (ncu ``NameBase_FUNCTION``) or benchmark fullname
demangled  str      demangled kernel signature; benchmark name for benchmarks
region     str      NVTX push/pop range stack, outermost first, joined by ``" > "``; "" if none
ordinal    int      0-based index among launches with the same (kernel, region) in the report
launch     int      0-based index of the launch in the whole report (report order)
device     str      GPU display name (``"Tesla T4"``) or, for benchmarks, the CPU brand
cc         str      compute capability ``"7.5"``; "" for benchmarks
grid       str      ``"(x, y, z)"`` or "" when unknown
block      str      ``"(x, y, z)"`` or "" when unknown
metric     str      ncu metric name (``gpu__time_duration.sum``) or ``time.median`` etc.
unit       str      base unit as ncu reports it (``ns``, ``byte``, ``%``, ``s``...), "" if none
value      float    the value; NaN when the launch carries no value for it ("no data")
=========  =======  ==================================================================

A launch that ncu recorded without any measured metric still has rows (its launch attributes,
or a single ``gpu__time_duration.sum`` row with NaN), so it shows up as "no data", never vanishes.

The facts about a table that are not per row (where it came from, ncu settings, raw benchmark samples,
test locations, unusable values, rule findings) travel beside it in a :class:`Measurement`: typed and
frozen. The table itself is a :class:`perfgate.columns.Columns` (numpy arrays, no pandas).
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, NamedTuple, TypedDict

import numpy as np

from perfgate.columns import Columns, first_rows, objects
from perfgate.units import NANOSECOND, SECOND
from perfgate.vocabulary import KIND_BENCHMARK, KIND_KERNEL, KIND_REGION, KINDS, NO_ENTRIES, total_label  # noqa: F401 (re-exported)

COLUMNS: tuple[str, ...] = (
    "kind",
    "kernel",
    "demangled",
    "region",
    "ordinal",
    "launch",
    "device",
    "cc",
    "grid",
    "block",
    "metric",
    "unit",
    "value",
)

# The columns that identify one launch; together with ``metric`` they identify a row.
LAUNCH_KEY: tuple[str, ...] = ("kind", "kernel", "region", "ordinal")


class Unusable(TypedDict):
    """A value the input held that is no measurement ("n/a", "nan", "inf", "1e400", text, a negative byte
    count...). Its row is kept with value NaN, so the compare stage sees "no value" and can say why
    (``unusable_notes``): it never vanishes from the table."""

    launch: int
    metric: str
    reason: str


class Location(TypedDict, total=False):
    """Where the test that measured a kernel or benchmark lives."""

    test: str
    path: str
    line: int


class KernelCode(NamedTuple):
    """A kernel's machine code, as far as a comparison needs it: its identity (a hash of the SASS with addresses
    relative to the function's start, ``perfgate.collect.sass``) and its instruction mix (opcode -> count)."""

    code_id: str
    opcodes: Mapping[str, int]


CODE_ID = re.compile(r"^[0-9a-f]{16}$")
MAX_OPCODES = 2000  # distinct opcodes of one kernel's instruction mix (SASS has a few hundred)
CODE_SHAPE = f'{{"id": 16 hex digits, "opcodes": {{opcode: count}}}} (at most {MAX_OPCODES} opcodes)'


def code_document(code: KernelCode) -> dict[str, Any]:
    """A kernel's code as files keep it (a baseline entry's ``code``, a trace's codes file): ``CODE_SHAPE``."""
    return {"id": code.code_id, "opcodes": dict(code.opcodes)}


def code_of_document(value: Any) -> KernelCode | None:
    """The code a file kept (``code_document``'s shape, checked); None where it is not that shape."""
    opcodes = value.get("opcodes") if isinstance(value, dict) else None
    if not (isinstance(value, dict) and set(value) == {"id", "opcodes"} and isinstance(value["id"], str)
            and CODE_ID.match(value["id"]) and isinstance(opcodes, dict) and len(opcodes) <= MAX_OPCODES
            and all(isinstance(op, str) and 0 < len(op) <= 64 and isinstance(count, int)
                    and not isinstance(count, bool) and count >= 0 for op, count in opcodes.items())):
        return None
    return KernelCode(value["id"], dict(opcodes))


class Measurement(NamedTuple):
    """A normalized table and the facts about it that are not per row: what every reader returns and every
    later stage (regions, compare, gate, baseline) takes."""

    table: Columns
    source: str = ""  # the file the table was read from, as shown to the user
    settings: Mapping[str, Any] = NO_ENTRIES  # how it was measured (clock_control, ncu version...)
    samples: Mapping[str, Sequence[float]] = NO_ENTRIES  # benchmark name -> raw timings (s)
    locations: Mapping[str, Location] = NO_ENTRIES  # kernel or benchmark name -> its test
    unusable: tuple[Unusable, ...] = ()
    findings: Mapping[int, tuple[str, ...]] | None = None  # launch -> Nsight Compute rule findings; None: not known
    code: Mapping[int, KernelCode] | None = None  # launch -> its machine code (.ncu-rep only); None: not known
    # Benchmarks whose value is the median of recorded runs (the history's reference side): no raw timings exist
    # to save for them, so no note asks for --benchmark-save-data.
    run_medians: frozenset[str] = frozenset()

    def with_table(self, table: Columns) -> Measurement:
        """The same facts beside another table (a subset, or the table with more rows)."""
        return self._replace(table=table)


_STR_COLUMNS = ("kind", "kernel", "demangled", "region", "device", "cc", "grid", "block", "metric", "unit")
_INT_COLUMNS = ("ordinal", "launch")


def _text(value: Any) -> str:
    """A cell as a string column holds it: "" for a missing one (None or NaN)."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    return value if isinstance(value, str) else str(value)


def _number(value: Any) -> float:
    """A cell as the value column holds it: NaN for anything that is not a number."""
    if isinstance(value, (bool, np.bool_)):
        return float(value)
    try:
        return float(value)
    except (TypeError, ValueError):
        return math.nan


def make_table(rows: Iterable[Mapping[str, Any]] | Columns | Any) -> Columns:
    """Build a normalized table from row dicts, a Columns or a pandas DataFrame with these columns (the CSV
    readers'), fixing types: strings ("" where missing), int64 ordinal and launch, float64 value."""
    if isinstance(rows, Columns) or hasattr(rows, "iloc"):
        return _from_columns(rows)
    records = list(rows)
    data: dict[str, Any] = {}
    for col in _STR_COLUMNS:
        data[col] = objects([_text(r.get(col)) for r in records])
    for col in _INT_COLUMNS:
        data[col] = np.array([int(r.get(col, 0)) for r in records], dtype=np.int64)
    data["value"] = np.array([_number(r.get("value")) for r in records], dtype=np.float64)
    return Columns({col: data[col] for col in COLUMNS}, len(records))


def _from_columns(frame: Any) -> Columns:
    missing = [c for c in COLUMNS if c not in frame.columns]
    if missing:
        raise ValueError(f"table is missing columns {missing}")
    data: dict[str, Any] = {}
    for col in COLUMNS:
        column = frame[col]
        if col in _STR_COLUMNS:
            data[col] = _str_column(column)
        elif col in _INT_COLUMNS:
            data[col] = np.asarray(column, dtype=np.int64)
        else:
            data[col] = _float_column(column)
    return Columns(data, len(frame))


def _str_column(column: Any) -> Any:
    """A column as an object array of strings, "" where missing."""
    values = np.asarray(column, dtype=object)
    if all(type(v) is str for v in values.tolist()):
        return values if values.dtype == object else objects(values.tolist())
    return objects([_text(v) for v in values.tolist()])


def _float_column(column: Any) -> Any:
    try:
        return np.asarray(column, dtype=np.float64)
    except (TypeError, ValueError):
        return np.array([_number(v) for v in np.asarray(column, dtype=object).tolist()], dtype=np.float64)


_TYPES = {**{col: np.dtype(object) for col in _STR_COLUMNS}, **{col: np.dtype(np.int64) for col in _INT_COLUMNS},
          "value": np.dtype(np.float64)}


def normalized(table: Columns | Any) -> Columns:
    """``table`` itself when it is a normalized table already (these columns in this order, of these types),
    else ``make_table(table)``: a table a stage made need not pay for normalizing again."""
    if (isinstance(table, Columns) and table.columns == COLUMNS
            and all(table.dtype(col) == _TYPES[col] for col in COLUMNS)):
        return table
    return make_table(table)


# The metric of the one row that keeps a launch with no value visible as "no data", per kind of launch.
NO_DATA_METRIC: Mapping[str, tuple[str, str]] = {
    KIND_KERNEL: ("gpu__time_duration.sum", NANOSECOND),
    KIND_BENCHMARK: ("time.min", SECOND),
}


def no_data_row(launch: Mapping[str, object]) -> dict[str, object]:
    """The row that keeps a launch with no value for the gated metrics in the table, shown as "no data".

    ``launch`` holds the launch's columns (kind, kernel, ..., block); the row adds its kind's
    placeholder metric (``NO_DATA_METRIC``; a kernel's for an unknown kind) with a NaN value.
    """
    metric, unit = NO_DATA_METRIC.get(str(launch.get("kind")), NO_DATA_METRIC[KIND_KERNEL])
    return {**launch, "metric": metric, "unit": unit, "value": math.nan}


def empty_table() -> Columns:
    return make_table([])


def assign_ordinals(frame: Columns) -> Columns:
    """Number launches of the same (kind, kernel, region) 0, 1, 2... in report order."""
    launch = frame["launch"]
    ordinal_of: dict[int, int] = {}
    seen: dict[tuple[str, str, str], int] = {}
    firsts = first_rows(launch)
    order = firsts[np.argsort(launch[firsts], kind="stable")]
    for at, kind, kernel, region in zip(launch[order].tolist(), frame["kind"][order].tolist(),
                                        frame["kernel"][order].tolist(), frame["region"][order].tolist(), strict=True):
        key = (kind, kernel, region)
        ordinal_of[at] = seen.get(key, 0)
        seen[key] = ordinal_of[at] + 1
    ordinals = np.fromiter(map(ordinal_of.__getitem__, launch.tolist()), dtype=np.int64, count=len(launch))
    return frame.assign(ordinal=ordinals)


def restrict_metrics(measurement: Measurement, metrics: Iterable[str]) -> Measurement:
    """Keep only ``metrics``; a launch left with none keeps one NaN row so it stays visible."""
    frame = measurement.table
    wanted = set(metrics)
    codes, names = frame.coded("metric")
    keep = np.array([name in wanted for name in names.tolist()], dtype=bool)[codes]
    if keep.all():
        return measurement
    kept = frame[keep]
    lost_rows = ~np.isin(frame["launch"], kept["launch"])
    if lost_rows.any():
        lost = frame[np.flatnonzero(lost_rows)[first_rows(frame["launch"][lost_rows])]]
        placeholder = lost.assign(metric=objects(["gpu__time_duration.sum"] * len(lost)),
                                  unit=objects(["ns"] * len(lost)), value=np.full(len(lost), math.nan))
        both = Columns.concat([kept, placeholder])
        kept = both[np.argsort(both["launch"], kind="stable")]
    return measurement._replace(table=kept,
                                unusable=tuple(record for record in measurement.unusable if record["metric"] in wanted))


def devices(frame: Columns) -> list[tuple[str, str]]:
    """The distinct (device name, compute capability) pairs in a table, sorted."""
    if frame.empty:
        return []
    firsts = first_rows(frame["launch"])
    pairs = set(zip(frame.picked("device", firsts).tolist(), frame.picked("cc", firsts).tolist(), strict=True))
    return sorted((str(d), str(c)) for d, c in pairs)


def device_label(name: str, cc: str) -> str:
    name = name or "unnamed GPU"
    return f"{name} (CC {cc})" if cc else name


def format_dim(x: Any, y: Any = 1, z: Any = 1) -> str:
    return f"({int(x)}, {int(y)}, {int(z)})"


def unusable_records(measurement: Measurement) -> list[dict[str, Any]]:
    """The unusable values of launches still in the measurement's table, with the launch's kind, kernel,
    region and ordinal added: one dict per value, in launch order."""
    frame, records = measurement.table, measurement.unusable
    if not records or frame.empty:
        return []
    firsts = frame.select(("launch", "kind", "kernel", "region", "ordinal"))[first_rows(frame["launch"])]
    launches = {at: (kind, kernel, region, ordinal) for at, kind, kernel, region, ordinal in zip(
        firsts["launch"].tolist(), firsts["kind"].tolist(), firsts["kernel"].tolist(),
        firsts["region"].tolist(), firsts["ordinal"].tolist(), strict=True)}
    found = []
    for record in sorted(records, key=lambda r: (int(r["launch"]), str(r["metric"]))):
        launch = launches.get(record["launch"])
        if launch is not None:
            kind, kernel, region, ordinal = launch
            found.append({"kind": str(kind), "kernel": str(kernel), "region": str(region), "ordinal": int(ordinal),
                          "metric": str(record["metric"]), "reason": str(record["reason"])})
    return found


def unusable_notes(measurement: Measurement, metrics: Iterable[str] | None = None, limit: int = 5) -> list[str]:
    """One line per launch with unusable values of ``metrics`` (all when None) in ``measurement``, for one reason,
    naming its metrics, at most ``limit`` and a count of the values of the rest: ``cur.csv: vector_add [layer1] #0:
    gpu__time_duration.sum has no usable value ('n/a': ncu recorded no value)``. The compare stage adds these to
    its notes."""
    wanted = None if metrics is None else set(metrics)
    records = [r for r in unusable_records(measurement) if wanted is None or r["metric"] in wanted]
    source = measurement.source or "input"
    by_launch: dict[tuple[str, str], list[str]] = {}  # (launch, reason) -> its metrics, in record order
    for record in records:
        total = record["kind"] == KIND_REGION
        where = (total_label(str(record["kernel"])) if total else
                 record["kernel"] + (f" [{record['region']}]" if record["region"] else "") + f" #{record['ordinal']}")
        by_launch.setdefault((where, str(record["reason"])), []).append(str(record["metric"]))
    lines = []
    for (where, reason), names in list(by_launch.items())[:limit]:
        what = f"{names[0]} has" if len(names) == 1 else f"{', '.join(names[:-1])} and {names[-1]} have"
        lines.append(f"{source}: {where}: {what} no usable value ({reason})")
    rest = sum(len(names) for names in list(by_launch.values())[limit:])
    if rest:
        lines.append(f"{source}: {rest} more value{'s' if rest != 1 else ''} without a usable value")
    return lines
