"""What the reader is told besides statuses: launch configuration changes, what was not compared, the
renamed kernels paired (or not), and the repeated kernels whose change is inconclusive."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from perfgate.columns import Columns, factorize, filled, first_rows, objects
from perfgate.compare.arrays import Bools, Floats, Ints, Objects, StatusCodes
from perfgate.compare.codes import is_status
from perfgate.compare.joining import SideValues
from perfgate.compare.matching import MatchedLaunches
from perfgate.compare.identity import shown
from perfgate.demangled import short_name
from perfgate.derived import POINT_METRICS
from perfgate.compare.renames import BY_CONFIG, BY_TEMPLATE, RULE_WORDS, Renames
from perfgate.compare.repeats import GroupVerdicts
from perfgate.metrics import (
    CATALOG_BY_NAME,
    LAUNCH_CONFIG_METRICS,
    RELEVANCE_FLOOR_METRICS,
    TRAFFIC_FLOOR_SHARE,
    Threshold,
)
from perfgate.quantities import limit_text
from perfgate.vocabulary import (
    KIND_BENCHMARK,
    KIND_KERNEL,
    KIND_REGION,
    Status,
    is_benchmark_metric,
    some_of,
)

_CONFIG_LABELS = (("launch__registers_per_thread", "registers"),
                  ("launch__shared_mem_per_block_static", "static shared mem"),
                  ("launch__shared_mem_per_block_dynamic", "dynamic shared mem"))


def launch_facts(launches: MatchedLaunches, base: SideValues, cur: SideValues,
                 codes: Mapping[str, int]) -> Columns:
    """Per launch id, grid and block and the launch configuration metrics of both sides (``_b``/``_c``)."""
    facts = launches.frame.select(["kind", "grid_b", "grid_c", "block_b", "block_c", "demangled_b", "demangled_c",
                                   "kernel", "baseline_kernel"])
    for metric in LAUNCH_CONFIG_METRICS:
        facts = facts.assign(**{f"{metric}_b": base.per_launch(codes[metric], launches.count),
                                f"{metric}_c": cur.per_launch(codes[metric], launches.count)})
    return facts


def _part_codes(mask: Bools, before: npt.NDArray[Any], after: npt.NDArray[Any], label: str,
                spec: str = "") -> tuple[Ints, list[str]]:
    """Per launch, the index of its text (``label before → after``, values formatted with ``spec``) in the list
    returned, -1 where ``mask`` is False: each distinct pair is formatted once (floats told apart by their bits,
    so -0.0 stays apart from 0.0)."""
    codes = np.full(len(mask), -1, dtype=np.int64)
    where = np.flatnonzero(mask)
    if not where.size:
        return codes, []
    keys = [before[where], after[where]]
    if keys[0].dtype.kind == "f":
        keys = [k.astype(np.float64).view(np.int64) for k in keys]
    b_codes, b_uniques = factorize(keys[0])
    a_codes, a_uniques = factorize(keys[1])
    _, first, inverse = np.unique(b_codes.astype(np.int64) * len(a_uniques) + a_codes, return_index=True,
                                  return_inverse=True)
    codes[where] = inverse.reshape(-1)
    return codes, [f"{label} {format(before[where[i]], spec)} → {format(after[where[i]], spec)}" for i in first]


def launch_change_notes(facts: Columns) -> Objects:
    """Per launch, a note like 'grid (2016, 1, 1) → (504, 1, 1); registers 16 → 18' or ''. Launches with the same
    changes share one note, built once."""
    parts: list[tuple[Ints, list[str]]] = []
    before, after = facts["demangled_b"], facts["demangled_c"]
    # Kernels only: a total's "demangled" text says how many launches it sums (``regions``), not a template.
    template: Bools = ((before != "") & (after != "") & (before != after)
                       & (facts["kernel"] == facts["baseline_kernel"]) & (facts["kind"] == KIND_KERNEL))
    if template.any():  # the same function, other template arguments: gemm_tiled<128, 64, 8> → gemm_tiled<64, 64, 8>
        names = {name: short_name(name) for name in {*before[template].tolist(), *after[template].tolist()}}
        before, after = before.copy(), after.copy()
        before[template] = objects([names[n] for n in before[template].tolist()])
        after[template] = objects([names[n] for n in after[template].tolist()])
        parts.append(_part_codes(template & (before != after), before, after, "template"))
    for what in ("grid", "block"):
        before, after = facts[f"{what}_b"], facts[f"{what}_c"]
        mask: Bools = (before != "") & (after != "") & (before != after)
        parts.append(_part_codes(mask, before, after, what))
    for metric, label in _CONFIG_LABELS:
        before, after = facts[f"{metric}_b"], facts[f"{metric}_c"]
        mask = ~np.isnan(before) & ~np.isnan(after) & (before != after)
        parts.append(_part_codes(mask, before, after, label, "g"))
    notes = filled(len(facts), "")
    changed = np.flatnonzero(np.logical_or.reduce([codes >= 0 for codes, _ in parts]))
    if changed.size:
        combo = np.zeros(changed.size, dtype=np.int64)  # a code per distinct combination of the parts' codes
        for codes, texts in parts:
            combo = factorize(combo * (len(texts) + 1) + codes[changed] + 1)[0]
        _, first, inverse = np.unique(combo, return_index=True, return_inverse=True)
        notes_of = ["; ".join(texts[codes[i]] for codes, texts in parts if codes[i] >= 0) for i in changed[first]]
        notes[changed] = np.asarray(notes_of, dtype=object)[inverse.reshape(-1)]
    return notes


def comparison_notes(base_name: str, cur_name: str, unnamed_device: bool, compared: Sequence[str],
                     thresholds: Mapping[str, Threshold], codes: Mapping[str, int], base: SideValues,
                     cur: SideValues, launch_kinds: Objects, launch_statuses: StatusCodes,
                     replaced: Bools | None = None) -> list[str]:
    """Say what was not compared and why (``replaced``: per launch, a replaced kernel judged through a total,
    which its own note covers)."""
    notes: list[str] = []
    if unnamed_device:
        notes.append("a GPU is not named in an input (ncu's CSV details page gives the device index, not its name; a "
                     "trace may name no device): compared on compute capability alone, where it is given")
    in_base, in_cur = base.codes_present(), cur.codes_present()
    kinds = set(launch_kinds.tolist())
    # Where a gated metric is not (and whether perfgate knows its name): one note per place, naming each such metric.
    absent: dict[tuple[str, bool], list[str]] = {}
    for metric in compared:
        threshold = thresholds.get(metric)
        if threshold is None or not threshold.gating:
            continue
        if not kinds & ({KIND_BENCHMARK} if is_benchmark_metric(metric) else {KIND_KERNEL, KIND_REGION}):
            continue  # a benchmark statistic means nothing for kernels (and region totals), and the other way round
        code = codes[metric]
        if code not in in_base and code not in in_cur:
            place = ("in neither input", metric not in CATALOG_BY_NAME)
        elif code not in in_base:
            place = (f"only in {cur_name}", False)
        elif code not in in_cur:
            place = (f"only in {base_name}", False)
        else:
            continue
        absent.setdefault(place, []).append(metric)
    for (where, unknown), metrics in absent.items():
        one = len(metrics) == 1
        what = f"gated metric {metrics[0]} is" if one else f"gated metrics {_listed(metrics)} are"
        hint = f" (check {'its' if one else 'their'} spelling)" if unknown else ""
        notes.append(f"{what} {where}: not compared{hint}")
    unexplained = ~replaced if replaced is not None else np.ones(len(launch_statuses), dtype=bool)
    missing = int((is_status(launch_statuses, Status.MISSING) & unexplained).sum())
    new = int((is_status(launch_statuses, Status.NEW) & unexplained).sum())
    if missing and new:
        notes.append(f"{missing} missing and {new} new: a renamed kernel that no rule paired shows as one of each and "
                     "is not compared; pair it with a [tool.perfgate] kernel_aliases rule, or review it by hand and "
                     "update the baseline")
    return notes


_MAX_LISTED = 10  # notes of one kind listed one by one; the rest are counted
_NAMED_KERNELS = 4  # kernels an ambiguous-rename note names on each side, as a replacement's note does


def _listed(names: Sequence[str]) -> str:
    """``a, b and c``."""
    return ", ".join(names[:-1]) + f" and {names[-1]}" if len(names) > 1 else "".join(names)


def _where(region: str) -> str:
    return f" in region {region!r}" if region else ""


def _where_all(regions: list[str]) -> str:
    """`` in region 'a'``, `` in regions 'a', 'b' and 2 more``; nothing where no region is named."""
    named = [repr(region) for region in regions if region]
    if len(named) == 1:
        return f" in region {named[0]}"
    return f" in regions {some_of(named, _NAMED_KERNELS)}" if named else ""


def _once(lines: list[str]) -> list[str]:
    """``lines`` of kernels named by their function name, each said once: kernels of one name that differ only in
    their launch configuration or template arguments can come to the same figures (sevit A4000: two
    ``index_elementwise_kernel`` of two launches each, both +18.2% [+0.0%, +36.4%], were two identical notes)."""
    counts = Counter(lines)
    return [line if counts[line] == 1 else f"{counts[line]} kernels of this name, each: {line}"
            for line in dict.fromkeys(lines)]


def _capped(lines: list[str], what: str) -> list[str]:
    if len(lines) <= _MAX_LISTED:
        return lines
    return [*lines[:_MAX_LISTED], f"… and {len(lines) - _MAX_LISTED} more {what}"]


def _names(identities: tuple[str, ...]) -> str:
    """The first kernels by name, with their launch configuration where names alone do not tell them apart."""
    names = [shown(identity) for identity in identities]
    detailed = len(set(names)) < len(names)
    return some_of([shown(identity, detailed) for identity in identities], _NAMED_KERNELS)


def rename_notes(renames: Renames) -> list[str]:
    """The renamed kernels paired (old → new, and by which rule), and the ones left ambiguous. A kernel paired
    across a launch configuration change is not listed: its "launch config changed" line says so."""
    regions: dict[tuple[str, str, str], list[str]] = {}  # one rename in many regions (each layer's GEMM) is one note
    for (region, new), (old, rule) in renames.pairs.items():
        if rule != BY_CONFIG:
            regions.setdefault((old, new, rule), []).append(region)
    paired = [f"{'template arguments changed' if rule == BY_TEMPLATE else 'renamed kernel'}, compared under its "
              f"new name: {shown(old)} → {shown(new)}{_where_all(where)} ({RULE_WORDS[rule]})"
              for (old, new, rule), where in regions.items()]
    unclear = [f"renamed kernels not paired{_where(a.region)}: {_names(a.baseline)} "
               f"(baseline) and {_names(a.current)} (current) all come to "
               f"{shown(a.known_as)} ({RULE_WORDS[a.rule]}) and their positions do not tell them apart; pair them "
               "with [tool.perfgate] kernel_aliases rules"
               for a in renames.ambiguous]
    return [*_capped(paired, "renamed kernels paired"), *_capped(unclear, "ambiguous renames")]


def _settle(row: dict[str, object], resolution: float) -> str:
    """What can settle an inconclusive group: more launches or a quieter machine, or, where the interval is a few
    steps of a trace's coarse clock (whole microseconds), a trace that records finer time: no launch count
    averages rounding out."""
    median = row.get("median_baseline")
    low, high = row.get("ci_low"), row.get("ci_high")
    if resolution > 0 and isinstance(median, float) and isinstance(low, float) and isinstance(high, float) and \
            (high - low) * median <= 2 * resolution:
        return (f"the trace's time stamps are whole steps of {resolution / 1000:g} µs, and the interval is two of "
                "them: record a trace with nanosecond time stamps (a current torch.profiler, Nsight Systems) to "
                "settle it")
    return "more launches or a quieter machine can settle it"


def inconclusive_notes(results: Columns, groups: GroupVerdicts, confidence: float,
                       order: Ints | None = None, resolution: float = 0.0) -> list[str]:
    """One line per repeatedly launched kernel whose change could be neither confirmed nor ruled out, in join
    order (``order``: the joined row of each row of ``results``, when they are in another order); ``resolution``:
    the traces' time step in ns (``compare.sources.time_resolution``), 0 where none is known."""
    if not groups.inconclusive:
        return []
    picked = np.flatnonzero(results.equals("status", Status.INCONCLUSIVE.value) & (results["group"] >= 0))
    if order is not None:
        picked = picked[np.argsort(order[picked], kind="stable")]
    rows = results[picked]
    lines = []
    for row in rows[first_rows(rows["group"], rows["metric"])].rows():
        lines.append(
            f"{row['kernel']}{_where(str(row['region']))} ×{row['n_current']}: {row['label']} {row['estimate']:+.1%} "
            f"[{row['ci_low']:+.1%}, {row['ci_high']:+.1%}] ({confidence:.0%} interval over {row['n_baseline']} and "
            f"{row['n_current']} launches) reaches beyond its limit {_limit(row)} without lying beyond it: "
            f"inconclusive, not failed; {_settle(row, resolution)}")
    return _capped(_once(lines), "inconclusive kernels")


def _limit(row: Mapping[str, Any]) -> str:
    """A row's limit as the rows of every format show it: ``10% + 2 µs``, not the spec ``10%+2000``."""
    return limit_text(row["threshold"], row["unit"])


def _picked(results: Columns, mask: Bools, order: Ints | None) -> Columns:
    """The rows of ``results`` where ``mask`` (per joined row) holds, in join order."""
    if order is None:
        return results[np.flatnonzero(mask)]
    picked = np.flatnonzero(mask[order])
    return results[picked[np.argsort(order[picked], kind="stable")]]


def alone_notes(results: Columns, groups: GroupVerdicts, order: Ints | None = None) -> list[str]:
    """One line per launch that moved alone among its repeated launches at a call site that moved (``alone``),
    naming the launch."""
    if not groups.alone.any():
        return []
    lines = []
    for row in _picked(results, groups.alone, order).rows():
        lines.append(
            f"{row['kernel']} #{row['ordinal']}{_where(str(row['region']))}: {row['label']} "
            f"{row['change']:+.1%} on its own, past its limit {_limit(row)}, while its kernel's "
            f"{row['n_current']} launches moved {row['estimate']:+.1%}: this launch moved alone, beyond the spread of "
            "its kernel's launches, and not once (its call site moved in most iterations, or an exact count moved): "
            "regression")
    return _capped(lines, "launches that moved alone")


def lone_notes(results: Columns, groups: GroupVerdicts, order: Ints | None = None) -> list[str]:
    """One line per launch that moved alone once (``lone``): no other iteration of its call site moved with it."""
    if not groups.lone.any():
        return []
    lines = []
    for row in _picked(results, groups.lone, order).rows():
        lines.append(
            f"{row['kernel']} #{row['ordinal']}{_where(str(row['region']))}: {row['label']} "
            f"{row['change']:+.1%} on its own, past its limit {_limit(row)}, while its kernel's "
            f"{row['n_current']} launches moved {row['estimate']:+.1%}: it moved alone once, with no other iteration "
            "of its call site moving with it, which another process on the GPU can do too: inconclusive, not "
            "failed; rerun to confirm")
    return _capped(lines, "launches that moved alone once")


def _floor_reading(metric: str) -> str:
    if metric in POINT_METRICS:
        return "a share that moved fewer points than it did not move, however many launches measured it"
    if metric in RELEVANCE_FLOOR_METRICS:
        return "a change under it cannot move the kernel's memory time, however many launches measured it"
    return "divided by the square root of the launch count"


def floor_notes(results: Columns, groups: GroupVerdicts, order: Ints | None = None) -> list[str]:
    """One line per group whose change reaches beyond its relative limit but was excused by the absolute floor."""
    if not groups.excused.any():
        return []
    rows = _picked(results, groups.excused[groups.series], order)
    lines = []
    for row in rows[first_rows(rows["group"], rows["metric"])].rows():
        lines.append(
            f"{row['kernel']}{_where(str(row['region']))} ×{row['n_current']}: {row['label']} {row['estimate']:+.1%} "
            f"[{row['ci_low']:+.1%}, {row['ci_high']:+.1%}] reaches beyond the relative part of its limit "
            f"{_limit(row)} but not beyond its absolute floor ({_floor_reading(str(row['metric']))}): "
            "not failed, excused by the floor")
    return _capped(_once(lines), "changes excused by a floor")


def floor_hidden_notes(results: Columns, hidden: Bools, order: Ints | None = None) -> list[str]:
    """One line per launch judged alone whose change is past the relative part of its limit but not past its
    absolute floor (``hidden``, per joined row): a floor hid it, and the report says so."""
    if not hidden.any():
        return []
    lines = []
    for row in _picked(results, hidden, order).rows():
        lines.append(
            f"{row['kernel']} #{row['ordinal']}{_where(str(row['region']))}: {row['label']} {row['change']:+.1%} is "
            f"past the relative part of its limit {_limit(row)} but not past its absolute floor, which one "
            "launch's jitter can cross at this size: not failed, hidden by the floor; repeated launches of the "
            "kernel would be judged on their measured spread instead")
    return _capped(lines, "changes hidden by a floor")


def traffic_floor_notes(results: Columns, excused: Bools, floors: Floats, order: Ints | None = None) -> list[str]:
    """One line per launch whose DRAM bytes moved past the threshold's limit but within the floor its DRAM traffic
    sets (``policies.absolute_floors``): not failed, and said."""
    if not excused.any():
        return []
    picked = np.flatnonzero(excused[order] if order is not None else excused)
    if order is not None:
        picked = picked[np.argsort(order[picked], kind="stable")]
    floor_of = floors[order] if order is not None else floors
    lines = []
    for index in picked.tolist():
        row = results.row(index)
        lines.append(
            f"{row['kernel']} #{row['ordinal']}{_where(str(row['region']))}: {row['label']} {row['baseline']:,.0f} → "
            f"{row['current']:,.0f} bytes ({row['change']:+.1%}) is past its limit {_limit(row)} but within "
            f"{TRAFFIC_FLOOR_SHARE:.0%} of the launch's DRAM traffic ({floor_of[index] / TRAFFIC_FLOOR_SHARE:,.0f} "
            "bytes): not failed, excused by the traffic floor")
    return _capped(lines, "changes excused by the traffic floor")
