"""The prepare stage, between reading and comparing: one place for what both shells did at each of their call sites.

``prepare`` takes what a reader returned and gives what the compare stage takes: kernel launches outside every
region dropped (``scoped``: ncu profiled only inside regions, so one outside slipped through), per-region totals
added (``perfgate.regions``; not again where a stored baseline has them), and how many launches were dropped.
``read_prepared`` reads a file keeping the metrics a comparison wants (the readers' hint) and prepares it:
``perfgate compare`` and ``perfgate baseline`` read every input through it, the plugin prepares what ncu left.

``with_derived`` adds the derived metrics (``perfgate.derived``) that a comparison compares, computed from each
side's raw counters: ``compare_tables`` applies it to both sides, so a stored baseline, which keeps raw counters
only, is judged by today's formulas. A region total's ``derived.roofline_pct`` is its kernels' FLOP over the FLOP
their roofs allowed in their durations (``region_roofline_pct``): the peaks do not add across launches.
"""

from __future__ import annotations

import math
import os
from typing import TYPE_CHECKING, Any, Collection, NamedTuple

import numpy as np

from perfgate.columns import Columns, Gather, first_rows, objects
from perfgate.derived import DERIVED, DERIVED_BY_NAME, DURATION, NS_PER_S, derived_inputs, is_derived
from perfgate.metrics import LAUNCH_CONFIG_METRICS
from perfgate.regions import add_region_totals, drop_unscoped_launches
from perfgate.vocabulary import REGION_SEPARATOR
from perfgate.table import Measurement, normalized
from perfgate.vocabulary import KIND_KERNEL, KIND_REGION

if TYPE_CHECKING:
    from perfgate.compare.options import CompareOptions


class Prepared(NamedTuple):
    measurement: Measurement
    unplaced: int  # kernel launches dropped for lying outside every region (``scoped``)


def _launch_count(measurement: Measurement) -> int:
    return len(set(measurement.table["launch"].tolist()))


def prepare(measurement: Measurement, *, scoped: bool = False, totals: bool = True) -> Prepared:
    """``measurement`` ready to compare: with ``scoped``, its kernel launches outside every region dropped (a
    report without region information is kept whole); with ``totals``, its per-region totals added unless it has
    them already (a baseline the plugin wrote)."""
    unplaced = 0
    if scoped:
        read = _launch_count(measurement)
        measurement = drop_unscoped_launches(measurement)
        unplaced = read - _launch_count(measurement)
    if totals and not measurement.table.equals("kind", KIND_REGION).any():
        measurement = add_region_totals(measurement)
    return Prepared(measurement, unplaced)


def read_prepared(path: str | os.PathLike[str], options: CompareOptions, code: bool = False) -> Measurement:
    """A file read keeping the metrics ``options`` want (what the comparison shows, the launch facts its notes
    use, the inputs of its derived metrics), prepared: region totals added. ``code``: the kernels' machine code
    read too (``--code-identity``)."""
    from perfgate.collect import read_table  # the readers: a shell's command loads them when it runs

    return prepare(read_table(path, options.wanted_metrics(), code=code)).measurement


class _LaunchValues:
    """Per launch of one table, the value of a metric (its first row's; NaN where a launch lacks it): what a
    derived metric's formula reads (``perfgate.derived.Values``)."""

    def __init__(self, table: Columns, launch_index: np.ndarray, count: int, declared_flops: float | None = None
                 ) -> None:
        self._declared = declared_flops
        self.metric_codes, self.metric_names = table.coded("metric")
        self._position = {str(name): code for code, name in enumerate(self.metric_names.tolist())}
        self._values, self._launch, self._count = table["value"], launch_index, count
        # Every launch's metric codes, where each launch's rows hold the same ones in the same order; else None.
        self.block = _block_pattern(self.metric_codes, launch_index, count)
        self.computed: dict[str, Any] = {}
        self._read: dict[str, Any] = {}  # the counters read so far, by name (a formula never changes one)

    def __call__(self, metric: str) -> Any:
        if metric in self.computed:
            return self.computed[metric]
        if metric in self._read:  # formulas read a counter more than once (the duration, each FP32 counter)
            return self._read[metric]
        code = self._position.get(metric)
        if code is None:
            return None
        if self.block is not None:  # every launch's rows hold the same metrics in the same order: a grid's column
            at = np.flatnonzero(self.block == code)
            if len(at):
                values = np.full(self._count, math.nan)
                values[:] = self._values.reshape(self._count, len(self.block))[:, at[0]]
                self._read[metric] = values
                return values
        return self._read_rows(metric, code)

    def _read_rows(self, metric: str, code: int) -> Any:
        rows = np.flatnonzero(self.metric_codes == code)
        rows = rows[first_rows(self._launch[rows])]  # a launch's first row of it
        values = np.full(self._count, math.nan)
        values[self._launch[rows]] = self._values[rows]
        self._read[metric] = values
        return values

    def minimum(self, a: Any, b: Any) -> Any:
        return np.minimum(a, b)

    def where_finite(self, a: Any, b: Any) -> Any:
        return np.where(np.isfinite(a), a, b)

    def where(self, condition: Any, a: Any, b: Any) -> Any:
        return np.where(condition, a, b)

    @property
    def declared_flops(self) -> float | None:
        return self._declared


def _block_pattern(codes: np.ndarray, launch_index: np.ndarray, count: int) -> np.ndarray | None:
    """The metric codes of every launch's rows where each launch (rows in launch order) has the same ones in the
    same order, as a raw page's table has; None elsewhere."""
    if not count or len(codes) % count:
        return None
    block = len(codes) // count
    grid = codes.reshape(count, block)
    if not bool((launch_index.reshape(count, block) == np.arange(count)[:, None]).all()) or \
            not bool((grid == grid[0]).all()):
        return None
    pattern: np.ndarray = grid[0].copy()
    return pattern


ROOFLINE_PCT, FLOP, DECLARED_WORK = "derived.roofline_pct", "derived.flop", "derived.declared_work"


def region_totals_derived(heads: Columns, values: _LaunchValues) -> None:
    """Each region total's counted FLOP and roofline computed over its kernel launches (in ``values.computed``),
    not from its summed counters: the peaks do not add across launches (a total holds none), and ncu's roofline
    sections hold rates, not counts. ``derived.flop``: Σ FLOP_i; ``derived.roofline_pct``: their FLOP over the
    FLOP their roofs allowed in their durations, Σ FLOP_i / Σ (duration_i x roof_i) x 100, roof_i being min(peak
    FLOP/s, intensity x peak DRAM B/s) at launch i, so each launch's roof weighs by its duration. NaN where a
    launch inside lacks a FLOP rate or a roof (a total over part of its launches would flatter it)."""
    kinds = heads["kind"]
    totals = np.flatnonzero(kinds == KIND_REGION)
    rate, duration = values.computed.get("derived.flop_per_s"), values(DURATION)
    if not len(totals) or rate is None or duration is None:
        return
    seconds = duration / NS_PER_S
    intensity = values.computed.get("derived.arithmetic_intensity")
    peak, bandwidth = values.computed.get("derived.peak_flop_per_s"), values.computed.get(
        "derived.peak_dram_bytes_per_s")
    with np.errstate(invalid="ignore"):
        flop = rate * seconds
        allowed = (np.minimum(peak, intensity * bandwidth) * seconds
                   if intensity is not None and peak is not None and bandwidth is not None else None)
    regions = heads["region"]
    kernels = np.flatnonzero((kinds == KIND_KERNEL) & (regions != ""))
    top = np.array([str(r).split(REGION_SEPARATOR, 1)[0] for r in regions[kernels].tolist()], dtype=object)
    for name, parts in ((FLOP, (flop,)), (ROOFLINE_PCT, (flop, allowed))):
        if name not in values.computed or any(part is None for part in parts):
            continue
        found = np.array(values.computed[name], dtype=np.float64)
        for total in totals.tolist():
            region = str(regions[total])
            inside = kernels if not region else kernels[top == region]  # region "": the overall total
            sums = [part[inside] for part in parts if part is not None]
            complete = len(inside) and all(np.isfinite(s).all() for s in sums)
            if not complete:
                found[total] = math.nan
            elif name == FLOP:
                found[total] = float(sums[0].sum())
            else:
                found[total] = float(sums[0].sum() / sums[1].sum() * 100.0) if sums[1].sum() > 0 else math.nan
        values.computed[name] = found
    if DECLARED_WORK in values.computed and values.declared_flops:
        values.computed[DECLARED_WORK] = values.computed[FLOP] / values.declared_flops


def counted_flop(measurement: Measurement) -> float | None:
    """The FLOP its kernel launches counted (``derived.flop``, summed; ``with_derived`` must have added it); None
    where a launch lacks it or none has it."""
    table = measurement.table
    rows = table[table.equals("metric", FLOP) & table.equals("kind", KIND_KERNEL)]
    launches = len(set(table[table.equals("kind", KIND_KERNEL)]["launch"].tolist()))
    per_launch = rows[first_rows(rows["launch"])]["value"] if not rows.empty else None
    if per_launch is None or len(per_launch) != launches:
        return None
    return float(per_launch.sum())


def _launch_numbers(launch: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``np.unique(launch, return_inverse=True)``: the launch ids in order and each row's index into them; without
    a sort where the rows come in launch order already (a reader's table: 10M rows at 500k launches)."""
    if len(launch) and bool((launch[1:] >= launch[:-1]).all()):
        starts = np.concatenate(([True], launch[1:] != launch[:-1]))
        return launch[starts], np.cumsum(starts) - 1
    ids, index = np.unique(launch, return_inverse=True)
    return ids, index.reshape(-1)


def with_derived(measurement: Measurement, metrics: Collection[str], declared_flops: float | None = None,
                 keep_inputs: bool = True) -> Measurement:
    """``measurement`` with a row per kernel or region launch and derived metric among ``metrics`` that its raw
    counters let compute (none where they do not); a derived row it held already is replaced where one is
    computed (a formula's latest word), kept where none is. ``declared_flops``: the test's useful work, which
    ``derived.declared_work`` divides the counted FLOP by. ``keep_inputs=False``: where a derived row is added, the
    counters only the formulas read (neither among ``metrics`` nor launch facts) are left out of the table, which is
    then what a comparison judges (a raw page with ``+roofline``: 15 rows a launch, not 22)."""
    wanted = [name for name in metrics if name in DERIVED_BY_NAME]
    table = measurement.table
    if not wanted or table.empty:
        return measurement
    table = normalized(table)
    launch_ids, launch_index = _launch_numbers(table["launch"])
    values = _LaunchValues(table, launch_index, len(launch_ids), declared_flops)
    last = max(i for i, d in enumerate(DERIVED) if d.name in wanted)
    for derived in DERIVED[:last + 1]:
        with np.errstate(divide="ignore", invalid="ignore"):
            found = derived.formula(values)
        if found is not None:
            values.computed[derived.name] = np.asarray(found, dtype=np.float64)
    firsts = first_rows(table["launch"])
    head_rows = firsts[np.argsort(table["launch"][firsts], kind="stable")]  # one row per launch, by launch id
    launch_rows = table[head_rows]  # read by no one: its text columns stay codes, for the derived rows
    heads = launch_rows.assign()  # read (its columns made as read) by the region totals and the kinds
    region_totals_derived(heads, values)
    measured = np.isin(heads["kind"], objects([KIND_KERNEL, KIND_REGION]))
    parts: list[Columns] = []
    part_launches: list[np.ndarray] = []  # each part's rows' launches, as rows of ``heads``
    for name in wanted:
        found = values.computed.get(name)
        if found is None:
            continue
        keep = np.flatnonzero(np.isfinite(found) & measured)
        if len(keep):
            once = np.zeros(len(keep), dtype=np.int8)  # the one name and unit, as codes (no object a row)
            # Taken once for every derived metric where each launch has one (a 500k-launch page: 13 columns a take).
            taken = launch_rows if len(keep) == len(launch_rows) else launch_rows[keep]
            parts.append(taken.assign(metric=Gather(objects([name]), once),
                                      unit=Gather(objects([DERIVED_BY_NAME[name].unit]), once), value=found[keep]))
            part_launches.append(keep)
    if not parts:
        return measurement
    left_out = None if keep_inputs else _formula_only(values.metric_names.tolist(), wanted, metrics)
    keep_rows, kept = _kept(table, parts, values, left_out)
    if keep_rows is not None:
        table, launch_index = table[keep_rows], launch_index[keep_rows]
    if len(table) and not bool((launch_index[1:] >= launch_index[:-1]).all()):
        both = Columns.concat([table, *parts])
        return measurement.with_table(both[np.argsort(both["launch"], kind="stable")])
    return measurement.with_table(_in_launch_order(table, parts, launch_index, part_launches, len(launch_ids), kept))


def _kept(table: Columns, parts: list[Columns], values: _LaunchValues, left_out: np.ndarray | None
          ) -> tuple[np.ndarray | None, np.ndarray | None]:
    """Which of the table's rows stay beside the derived ``parts`` (None: all): not a derived row computed again
    (a formula's latest word replaces it), nor of a metric ``left_out`` (per metric code); where the table is a
    grid of the same metrics a launch and replaces none, all of them, and the places in a launch's rows kept
    instead (None: all), which ``Columns.interleaved`` copies."""
    codes, names = values.metric_codes, values.metric_names
    old = np.array([is_derived(str(m)) for m in names.tolist()], dtype=bool)[codes]
    keep_rows: np.ndarray | None = None
    if old.any():  # replace the (launch, metric) pairs computed again
        added = Columns.concat(parts)
        replaced = set(zip(added["launch"].tolist(), added["metric"].tolist()))
        rows = np.flatnonzero(old)
        drop = [row for row in rows.tolist() if (int(table["launch"][row]), str(table["metric"][row])) in replaced]
        keep_rows = np.ones(len(table), dtype=bool)
        keep_rows[drop] = False
    if left_out is None:
        return keep_rows, None
    if keep_rows is None and values.block is not None:
        return None, np.flatnonzero(~left_out[values.block])
    return ~left_out[codes] if keep_rows is None else keep_rows & ~left_out[codes], None


def _formula_only(names: list[Any], wanted: list[str], metrics: Collection[str]) -> np.ndarray | None:
    """Which of the metrics ``names`` are counters only the formulas of ``wanted`` read (not among ``metrics``, not
    a launch fact); None where none is."""
    kept = {*metrics, *LAUNCH_CONFIG_METRICS}
    inputs = {name for name in derived_inputs(wanted) if name not in kept}
    found = np.array([str(name) in inputs for name in names], dtype=bool)
    return found if found.any() else None


def _in_launch_order(table: Columns, parts: list[Columns], table_launches: np.ndarray,
                     part_launches: list[np.ndarray], count: int, kept: np.ndarray | None = None) -> Columns:
    """The table's rows (in launch order) and the derived parts' joined in launch order, as ``_by_launch`` places
    them. ``kept``: where every launch's rows hold the same metrics in the same order, the places in them of the
    rows kept (None: every row)."""
    block = len(table) // count if count else 0
    if all(len(launches) == count for launches in part_launches) and \
            bool((np.bincount(table_launches, minlength=count) == block).all()):
        # Every launch the same number of rows (a raw page's) and a derived row of each: a grid to fill.
        return Columns.interleaved([table, *parts], block, kept)
    if kept is not None:
        rows = (np.arange(count)[:, None] * block + kept).ravel()
        table, table_launches = table[rows], table_launches[rows]
    return Columns.placed([table, *parts], _by_launch(table_launches, part_launches, count))


def _by_launch(table_launches: np.ndarray, part_launches: list[np.ndarray], count: int) -> list[np.ndarray]:
    """Where each row of a table (rows in launch order, ``table_launches`` their launches numbered 0 to
    ``count``) and of the derived parts (at most a row per launch each) goes when they are joined in launch order,
    a launch's table rows first, then its derived rows part by part: the order a stable sort by launch gives,
    without sorting 11M rows."""
    added = np.zeros(count, dtype=np.int64)
    for launches in part_launches:
        added[launches] += 1
    table_rows = np.bincount(table_launches, minlength=count)
    ends = np.cumsum(table_rows + added)  # where each launch's rows end in the joined table
    before = np.concatenate(([0], np.cumsum(added)[:-1]))  # the derived rows of the launches before
    positions = [np.arange(len(table_launches)) + before[table_launches]]
    taken = ends - added  # each launch's next free place for a derived row
    for launches in part_launches:
        positions.append(taken[launches])
        taken[launches] += 1
    return positions
