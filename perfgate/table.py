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
frozen, never in ``DataFrame.attrs`` (untyped, and deep-copied by pandas on many operations).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, TypedDict

import pandas as pd  # type: ignore[import-untyped, unused-ignore]

from perfgate.units import NANOSECOND, SECOND
from perfgate.vocabulary import KIND_BENCHMARK, KIND_KERNEL, KIND_REGION, KINDS  # noqa: F401 (re-exported)

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


@dataclass(frozen=True, eq=False)  # eq=False: a DataFrame has no truth value to compare by
class Measurement:
    """A normalized table and the facts about it that are not per row: what every reader returns and every
    later stage (regions, compare, gate, baseline) takes."""

    table: pd.DataFrame
    source: str = ""  # the file the table was read from, as shown to the user
    settings: Mapping[str, Any] = field(default_factory=dict)  # how it was measured (clock_control, ncu version...)
    samples: Mapping[str, Sequence[float]] = field(default_factory=dict)  # benchmark name -> raw timings (s)
    locations: Mapping[str, Location] = field(default_factory=dict)  # kernel or benchmark name -> its test
    unusable: tuple[Unusable, ...] = ()
    findings: Mapping[int, tuple[str, ...]] | None = None  # launch -> Nsight Compute rule findings; None: not known

    def with_table(self, table: pd.DataFrame) -> Measurement:
        """The same facts beside another table (a subset, or the table with more rows)."""
        return replace(self, table=table)


_STR_COLUMNS = ("kind", "kernel", "demangled", "region", "device", "cc", "grid", "block", "metric", "unit")


def make_table(rows: Iterable[Mapping[str, Any]] | pd.DataFrame) -> pd.DataFrame:
    """Build a normalized table from row dicts (or a frame with these columns), fixing dtypes."""
    frame = rows if isinstance(rows, pd.DataFrame) else pd.DataFrame.from_records(list(rows), columns=list(COLUMNS))
    missing = [c for c in COLUMNS if c not in frame.columns]
    if missing:
        raise ValueError(f"table is missing columns {missing}")
    frame = frame.loc[:, list(COLUMNS)]
    for col in _STR_COLUMNS:
        frame[col] = _str_column(frame[col])
    frame["ordinal"] = frame["ordinal"].astype("int64")
    frame["launch"] = frame["launch"].astype("int64")
    frame["value"] = pd.to_numeric(frame["value"], errors="coerce").astype("float64")
    return frame.reset_index(drop=True)


@functools.cache
def _normalized_dtypes() -> pd.Series:
    return empty_table().dtypes


def normalized(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` itself when it is a normalized table already (the columns in order, their dtypes, a default
    index), else ``make_table(frame)``: a table a stage made need not pay for normalizing again."""
    reference = _normalized_dtypes()
    if (tuple(frame.columns) == COLUMNS and isinstance(frame.index, pd.RangeIndex) and frame.index.start == 0
            and frame.index.step == 1 and frame.dtypes.equals(reference)):
        return frame
    return make_table(frame)


def _str_column(column: pd.Series) -> pd.Series:
    """A column as strings, "" where missing. A categorical converts its few categories, not its rows (the
    readers hand over per-launch attributes as categoricals): the same strings, in a fraction of the time."""
    if isinstance(column.dtype, pd.CategoricalDtype):
        categories = pd.Series(column.cat.categories.to_numpy(dtype=object)).fillna("").astype(str).array
        strings = pd.api.extensions.take(categories, column.cat.codes.to_numpy(), allow_fill=True, fill_value="")
        return pd.Series(strings, index=column.index, name=column.name)
    return column.fillna("").astype(str)


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


def empty_table() -> pd.DataFrame:
    return make_table([])


def assign_ordinals(frame: pd.DataFrame) -> pd.DataFrame:
    """Number launches of the same (kind, kernel, region) 0, 1, 2... in report order."""
    launches = frame.drop_duplicates("launch")[["launch", "kind", "kernel", "region"]].sort_values("launch")
    launches["ordinal"] = launches.groupby(["kind", "kernel", "region"], sort=False).cumcount()
    ordinal_of = dict(zip(launches["launch"], launches["ordinal"], strict=True))
    frame = frame.copy()
    frame["ordinal"] = frame["launch"].map(ordinal_of).astype("int64")
    return frame


def restrict_metrics(measurement: Measurement, metrics: Iterable[str]) -> Measurement:
    """Keep only ``metrics``; a launch left with none keeps one NaN row so it stays visible."""
    frame = measurement.table
    keep = frame["metric"].isin(list(metrics)).to_numpy()
    if keep.all():
        return measurement
    kept = frame[keep]
    lost = frame.loc[~frame["launch"].isin(kept["launch"]).to_numpy()].drop_duplicates("launch")
    if not lost.empty:
        placeholder = lost.assign(metric="gpu__time_duration.sum", unit="ns", value=float("nan"))
        kept = pd.concat([kept, placeholder]).sort_values("launch", kind="stable")
    wanted = set(metrics)
    return replace(measurement, table=kept.reset_index(drop=True),
                   unusable=tuple(record for record in measurement.unusable if record["metric"] in wanted))


def devices(frame: pd.DataFrame) -> list[tuple[str, str]]:
    """The distinct (device name, compute capability) pairs in a table, sorted."""
    if frame.empty:
        return []
    pairs = frame[["launch", "device", "cc"]].drop_duplicates("launch")[["device", "cc"]].drop_duplicates()
    return sorted((str(d), str(c)) for d, c in pairs.itertuples(index=False))


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
    launches = frame.drop_duplicates("launch").set_index("launch")[["kind", "kernel", "region", "ordinal"]]
    present = set(launches.index.tolist())
    found = []
    for record in sorted(records, key=lambda r: (int(r["launch"]), str(r["metric"]))):
        if record["launch"] in present:
            launch = launches.loc[record["launch"]]
            found.append({"kind": str(launch["kind"]), "kernel": str(launch["kernel"]), "region": str(launch["region"]),
                          "ordinal": int(launch["ordinal"]), "metric": str(record["metric"]),
                          "reason": str(record["reason"])})
    return found


def unusable_notes(measurement: Measurement, metrics: Iterable[str] | None = None, limit: int = 5) -> list[str]:
    """One line per unusable value of ``metrics`` (all when None) in ``measurement``, at most ``limit`` and a count
    of the rest: ``cur.csv: vector_add [layer1] #0: gpu__time_duration.sum has no usable value ('n/a': ncu
    recorded no value)``. The compare stage adds these to its notes."""
    wanted = None if metrics is None else set(metrics)
    records = [r for r in unusable_records(measurement) if wanted is None or r["metric"] in wanted]
    source = measurement.source or "input"
    lines = []
    for record in records[:limit]:
        total = record["kind"] == KIND_REGION
        where = (f"region total {record['kernel']}" if total else
                 record["kernel"] + (f" [{record['region']}]" if record["region"] else "") + f" #{record['ordinal']}")
        lines.append(f"{source}: {where}: {record['metric']} has no usable value ({record['reason']})")
    if len(records) > limit:
        lines.append(f"{source}: {len(records) - limit} more value{'s' if len(records) - limit != 1 else ''} "
                     "without a usable value")
    return lines
