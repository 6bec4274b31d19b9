"""Per-region totals: "runtime and metrics of each layer of my model".

A test marks layers with ``perfgate.region("layer1")`` ...; every kernel row carries its region
stack (``"layer1 > attention"``). Before comparing, ``add_region_totals`` appends one launch of
kind ``region`` per top-level region (kernel = the region's name, region = the same) and, when
there are several, one overall ``total`` (region ""), each summing the additive metrics of the
launches inside. They are gated like kernels, so a slower layer fails even when each of its
many kernels moved less than its own threshold.

The overall total compares like with like: where the two runs hold different top-level regions (a layer added,
one NVTX range per layer), ``like_for_like_totals`` makes each side's total the sum over the regions both hold,
and a note names the regions added and removed; an added region is judged on its own (``new``), never as a
regression of the total.

Kernels replaced among the launches outside every region (an ncu report without NVTX ranges) are held by no region
total: ``add_outside_total`` makes one at compare time where such a replacement needs it (``compare.outside``), the
sum of the launches outside every region, named ``total`` where the report has no region at all (the whole report)
and ``outside any region`` beside regions.
"""

from __future__ import annotations

import math
from typing import Any, Callable

import numpy as np

from perfgate.columns import Columns, Gather, first_rows, objects
from perfgate.table import Measurement, Unusable, make_table, normalized
from perfgate.vocabulary import KIND_KERNEL, KIND_REGION, REGION_SEPARATOR, TOTAL, some_of



def is_additive(metric: str) -> bool:
    """ncu's ``.sum`` rollups (time, bytes, instructions, sectors) add up across launches.

    Percentages, averages and per-launch facts do not.
    """
    return metric.endswith(".sum") and not metric.startswith(("launch__", "device__"))


def drop_unscoped_launches(measurement: Measurement) -> Measurement:
    """Drop kernel launches outside every region.

    ``--nvtx-include`` already keeps ncu from profiling them; this guards against a launch that
    slipped through. A report with no region information at all (ncu recorded no NVTX state) is
    kept whole: ncu's filter chose those launches.
    """
    table = measurement.table
    kernels = table.equals("kind", KIND_KERNEL)
    scoped = ~table.equals("region", "")
    if not (kernels & scoped).any():
        return measurement
    return measurement.with_table(table[~kernels | scoped])


def add_region_totals(measurement: Measurement) -> Measurement:
    """Append per-top-level-region totals (and an overall one when there are several regions)."""
    table = measurement.table
    scoped = ~table.equals("region", "")
    if not scoped.any():  # no region at all (most reports): the kinds need no reading
        return measurement
    kernels = table[table.equals("kind", KIND_KERNEL) & scoped]
    if kernels.empty:
        return measurement
    top = np.array([region.split(REGION_SEPARATOR, 1)[0] for region in kernels["region"].tolist()], dtype=object)
    order = list(dict.fromkeys(top.tolist()))  # first-entered first
    groups: list[tuple[str, str, Columns]] = [(name, name, kernels[top == name]) for name in order]
    if len(order) > 1:
        groups.append((TOTAL, "", kernels))
    next_launch = int(table["launch"].max()) + 1 if not table.empty else 0
    rows: list[dict[str, Any]] = []
    unusable: list[Unusable] = []
    for offset, (name, region, launches) in enumerate(groups):
        rows.extend(_total_rows(name, region, launches, next_launch + offset, unusable))
    if not rows:
        return measurement
    # The table is normalized already: only the few total rows need normalizing, not its rows again.
    combined = Columns.concat([normalized(table), make_table(rows)])
    return measurement._replace(table=combined, unusable=(*measurement.unusable, *unusable))


def scoped_top_regions(table: Columns) -> set[str]:
    """The top-level regions that hold kernel launches."""
    regions = table.picked("region", np.flatnonzero(table.equals("kind", KIND_KERNEL) & ~table.equals("region", "")))
    return {str(region).split(REGION_SEPARATOR, 1)[0] for region in set(regions.tolist())}


def add_outside_total(measurement: Measurement, name: str, adds: Callable[[str], bool] = is_additive) -> Measurement:
    """``measurement`` with one more launch, ``name`` (kind region, region ""), summing the metrics that ``adds``
    says add up of its kernel launches outside every region; unchanged where it has none, or none such metric. A
    metric some launch inside lacks or holds no number for is NaN, and why is said (as ``_total_rows`` does)."""
    table = measurement.table
    outside = np.flatnonzero(table.equals("kind", KIND_KERNEL) & table.equals("region", ""))
    codes, names = table.coded("metric")
    summed = outside[np.array([adds(str(metric)) for metric in names.tolist()], dtype=bool)[codes[outside]]]
    if not summed.size:
        return measurement
    count, launch = len(np.unique(table["launch"][outside])), int(table["launch"].max()) + 1
    firsts = summed[first_rows(table["launch"][summed], codes[summed])]  # of repeated rows of a launch, its first
    base = {"kind": KIND_REGION, "kernel": name, "region": "", "ordinal": 0, "launch": launch,
            "demangled": f"sum over {count} kernel launch{'es' if count != 1 else ''}",
            "device": table.picked("device", outside[:1])[0], "cc": table.picked("cc", outside[:1])[0],
            "grid": "", "block": ""}
    rows: list[dict[str, Any]] = []
    unusable: list[Unusable] = []
    for code, first in sorted(zip(*np.unique(codes[firsts], return_index=True)), key=lambda c: str(names[c[0]])):
        values = table["value"][firsts[codes[firsts] == code]]
        lacking = int(np.isnan(values).sum())
        if lacking:
            unusable.append(Unusable(launch=launch, metric=str(names[code]), reason=(
                f"{lacking} of the {count} launch{'es' if count != 1 else ''} in it "
                f"{'have' if lacking != 1 else 'has'} no usable value")))
        rows.append({**base, "metric": str(names[code]), "unit": str(table.picked("unit", firsts[first:first + 1])[0]),
                     "value": float(values.sum()) if len(values) == count and not lacking else math.nan})
    added = make_table(rows)  # its text columns as Gathers, so that the table's are not made a row each to join them
    gathered = Columns({column: Gather(added[column], np.arange(len(added))) if added.dtype(column).kind == "O"
                        else added[column] for column in added.columns}, len(added))
    return measurement._replace(table=Columns.concat([normalized(table), gathered]),
                                unusable=(*measurement.unusable, *unusable))


def with_region_totals(measurement: Measurement) -> Measurement:
    """The measurement with per-region totals, unless it has them already (a baseline the plugin wrote).

    ``perfgate compare`` and ``perfgate baseline`` apply it too, so a report compared by hand is judged
    like the plugin judges it: the same launches, the same totals.
    """
    has_totals = measurement.table.equals("kind", KIND_REGION).any()
    return measurement if has_totals else add_region_totals(measurement)


def _total_rows(name: str, region: str, launches: Columns, launch: int,
                unusable: list[Unusable]) -> list[dict[str, Any]]:
    """The total's rows; a total that cannot be made is NaN, and why is appended to ``unusable``."""
    count = len(set(launches["launch"].tolist()))
    base = {"kind": KIND_REGION, "kernel": name, "region": region, "ordinal": 0, "launch": launch,
            "demangled": f"sum over {count} kernel launch{'es' if count != 1 else ''}",
            "device": launches["device"][0], "cc": launches["cc"][0], "grid": "", "block": ""}
    rows = []
    metrics = launches["metric"]
    for metric in sorted(set(metrics.tolist())):
        if not is_additive(str(metric)):
            continue
        values = launches[metrics == metric]
        per_launch = values[first_rows(values["launch"])]  # of repeated rows of a launch, its first
        # A total over launches that lack the metric would silently shrink: call it "no data", and say why
        # when a launch inside held a value that was no number (``perfgate.collect.screen``).
        lacking = int(np.isnan(per_launch["value"]).sum())
        complete = len(per_launch) == count and not lacking
        value = float(per_launch["value"].sum()) if complete else math.nan
        if lacking:
            unusable.append({"launch": launch, "metric": str(metric),
                             "reason": f"{lacking} of the {count} launch{'es' if count != 1 else ''} in it "
                                       f"{'have' if lacking != 1 else 'has'} no usable value"})
        rows.append({**base, "metric": str(metric), "unit": str(per_launch["unit"][0]), "value": value})
    return rows


def _top_region_names(table: Columns) -> list[str]:
    """The top-level regions with a total row (``add_region_totals``), first-entered first."""
    rows = table[table.equals("kind", KIND_REGION)]
    names = [str(name) for name, region in zip(rows["kernel"].tolist(), rows["region"].tolist())
             if name == region and region and REGION_SEPARATOR not in region]
    return list(dict.fromkeys(names))


def _overall(table: Columns) -> np.ndarray:
    """Per row: part of the overall total (kind region, region "", named ``TOTAL``)."""
    mask: np.ndarray = table.equals("kind", KIND_REGION) & table.equals("region", "") & table.equals("kernel", TOTAL)
    return mask


def _shared_total(measurement: Measurement, shared: list[str]) -> Measurement:
    """``measurement`` with its overall total made again as the sum of the region totals of ``shared``."""
    table = normalized(measurement.table)
    overall = _overall(table)
    launch = int(table["launch"][overall][0]) if overall.any() else int(table["launch"].max()) + 1
    kept = table[~overall]
    regions = kept[kept.equals("kind", KIND_REGION) & np.isin(kept["region"], objects(shared))]
    base = {"kind": KIND_REGION, "kernel": TOTAL, "region": "", "ordinal": 0, "launch": launch,
            "demangled": f"sum over the {len(shared)} regions both runs hold", "device": regions["device"][0],
            "cc": regions["cc"][0], "grid": "", "block": ""}
    rows: list[dict[str, Any]] = []
    unusable = [u for u in measurement.unusable if u["launch"] != launch]
    metrics = regions["metric"]
    for metric in sorted(set(metrics.tolist())):
        values = regions[metrics == metric]
        lacking = len(shared) - int((~np.isnan(values["value"])).sum())
        value = float(values["value"].sum()) if not lacking and len(values) == len(shared) else math.nan
        if lacking:
            unusable.append({"launch": launch, "metric": str(metric),
                             "reason": f"{lacking} of the {len(shared)} regions in it have no usable value"})
        rows.append({**base, "metric": str(metric), "unit": str(values["unit"][0]), "value": value})
    return measurement._replace(table=Columns.concat([kept, make_table(rows)]), unusable=tuple(unusable))


def like_for_like_totals(baseline: Measurement, current: Measurement) -> tuple[Measurement, Measurement, list[str]]:
    """Both sides with their overall total over the top-level regions both hold, and a note naming the regions
    one side lacks; unchanged where the regions agree. With fewer than two shared regions there is no total to
    compare (the shared one is compared as a region): both totals are dropped."""
    if not (_overall(baseline.table).any() or _overall(current.table).any()):
        return baseline, current, []
    in_base, in_cur = _top_region_names(baseline.table), _top_region_names(current.table)
    if set(in_base) == set(in_cur):
        return baseline, current, []
    shared = [name for name in in_base if name in set(in_cur)]
    added = [name for name in in_cur if name not in set(in_base)]
    removed = [name for name in in_base if name not in set(in_cur)]
    changes = [f"{len(names)} region{'s' if len(names) != 1 else ''} only in the {side} ({some_of(names, 8)}; {what})"
               for names, side, what in ((added, "current run", "new, judged on its own"),
                                         (removed, "baseline", "missing")) if names]
    if len(shared) < 2:
        sides = [m.with_table(m.table[~_overall(m.table)]) for m in (baseline, current)]
        return sides[0], sides[1], [f"regions differ: {'; '.join(changes)}; fewer than two regions are in both "
                                    "runs, so no total is compared"]
    note = (f"regions differ: {'; '.join(changes)}; the {TOTAL} compares the {len(shared)} regions both runs hold, "
            "like with like")
    return _shared_total(baseline, shared), _shared_total(current, shared), [note]
