"""Section labels: the details page's "Metric Name" when ncu prints a section's *label*, not its metric.

By default (no ``--print-metric-name name``) "Metric Name" holds the label a section gives a metric,
not its name: ``"GPU Speed Of Light Throughput","Duration","usecond","67.78"``, ``"Launch
Statistics","Registers Per Thread","register/thread","16"``, as in the captured ncu output in
microsoft/superbenchmark ``tests/data/cublaslt_ncu.log`` (metric rows name the section by its
display name, rule rows by its identifier: ``"SpeedOfLight"``, ``"LaunchStats"``). Only metrics
from ``--metrics`` (section "Command line profiler metrics") come by name. The labels of ncu's own
sections are mapped back to metric names (``SECTION_LABELS``: Duration -> ``gpu__time_duration.sum``,
Elapsed Cycles -> ``gpc__cycles_elapsed.max``, Registers Per Thread ->
``launch__registers_per_thread``, Executed Instructions -> ``smsp__inst_executed.sum``...), keyed on
(section display name, label) because one label can sit in two sections ("Memory Throughput" is
``gpu__compute_memory_throughput...`` in % under GPU Speed Of Light Throughput and
``dram__bytes.sum.per_second`` under Memory Workload Analysis), and only where the unit, reduced to
its base unit, is the metric's. A name (anything with ``__``) is never remapped; a label of an
unknown section, of an older ncu (2019-2021 named the first section "GPU Speed Of Light"; its
mapping is not verified here) or with another unit stays as it is, and such a label that repeats
within a launch is named "Section: Label". When a launch then has one metric twice (``--metrics
gpu__time_duration.sum`` next to the section's "Duration", or "SM Active Cycles" next to "Average SM
Active Cycles"), the row ncu named by name is kept (its value is not rounded to two decimals of a
display unit), else the first.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from perfgate.collect.ncu_csv.arrays import BoolArray, IntArray, ObjectArray
from perfgate.columns import factorize

# What a section *label* in the details page's "Metric Name" column stands for, per section display
# name (ncu's "Section Name" of metric rows): label -> (metric name, the metric's base unit). A label
# is replaced only where its section and its unit (reduced to the base unit) agree: a label of
# another ncu version that means something else keeps its label. Labels and names: the Header blocks
# of NVIDIA's section files (xingxerx/Qallow sections/{SpeedOfLight,LaunchStatistics,Occupancy,
# MemoryWorkloadAnalysis,ComputeWorkloadAnalysis,InstructionStatistics,WarpStateStatistics,
# WorkloadDistribution}.section, copies of current ncu's) and, for every entry with its unit, the
# section definitions stored inside the Tesla T4 reports of the test corpus (ncu_report
# ``IAction.sections()`` -> ``header_metrics()``: label, name, unit), which the tests check this
# table against. String-valued labels (Function Cache Configuration) are left out.
SECTION_LABELS: dict[str, dict[str, tuple[str, str]]] = {
    "GPU Speed Of Light Throughput": {
        "Compute (SM) Throughput": ("sm__throughput.avg.pct_of_peak_sustained_elapsed", "%"),
        "Duration": ("gpu__time_duration.sum", "ns"),
        "Memory Throughput": ("gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed", "%"),
        "Elapsed Cycles": ("gpc__cycles_elapsed.max", "cycle"),
        "L1/TEX Cache Throughput": ("l1tex__throughput.avg.pct_of_peak_sustained_active", "%"),
        "SM Active Cycles": ("sm__cycles_active.avg", "cycle"),
        "L2 Cache Throughput": ("lts__throughput.avg.pct_of_peak_sustained_elapsed", "%"),
        "SM Frequency": ("gpc__cycles_elapsed.avg.per_second", "hz"),
        "DRAM Throughput": ("gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed", "%"),
        "DRAM Frequency": ("dram__cycles_elapsed.avg.per_second", "hz"),
    },
    "Launch Statistics": {
        "Grid Size": ("launch__grid_size", ""),
        "Registers Per Thread": ("launch__registers_per_thread", "register/thread"),
        "Static Shared Memory Per Block": ("launch__shared_mem_per_block_static", "byte/block"),
        "Block Size": ("launch__block_size", ""),
        "Dynamic Shared Memory Per Block": ("launch__shared_mem_per_block_dynamic", "byte/block"),
        "Threads": ("launch__thread_count", "thread"),
        "Driver Shared Memory Per Block": ("launch__shared_mem_per_block_driver", "byte/block"),
        "Waves Per SM": ("launch__waves_per_multiprocessor", ""),
        "Shared Memory Configuration Size": ("launch__shared_mem_config_size", "byte"),
        "Uses Green Context": ("launch__uses_green_context", ""),
        "# SMs": ("launch__sm_count", "SM"),
    },
    "Occupancy": {
        "Theoretical Occupancy": ("sm__maximum_warps_per_active_cycle_pct", "%"),
        "Block Limit Registers": ("launch__occupancy_limit_registers", "block"),
        "Theoretical Active Warps per SM": ("sm__maximum_warps_avg_per_active_cycle", "warp"),
        "Block Limit Shared Mem": ("launch__occupancy_limit_shared_mem", "block"),
        "Achieved Occupancy": ("sm__warps_active.avg.pct_of_peak_sustained_active", "%"),
        "Block Limit Warps": ("launch__occupancy_limit_warps", "block"),
        "Achieved Active Warps Per SM": ("sm__warps_active.avg.per_cycle_active", "warp"),
        "Block Limit SM": ("launch__occupancy_limit_blocks", "block"),
    },
    "Memory Workload Analysis": {
        "Memory Throughput": ("dram__bytes.sum.per_second", "byte/s"),
        "Mem Busy": ("gpu__compute_memory_access_throughput.avg.pct_of_peak_sustained_elapsed", "%"),
        "L1/TEX Hit Rate": ("l1tex__t_sector_hit_rate.pct", "%"),
        "Max Bandwidth": ("gpu__compute_memory_request_throughput.avg.pct_of_peak_sustained_elapsed", "%"),
        "L2 Hit Rate": ("lts__t_sector_hit_rate.pct", "%"),
        "Mem Pipes Busy": ("sm__memory_throughput.avg.pct_of_peak_sustained_elapsed", "%"),
        "L2 Compression Success Rate": ("lts__average_gcomp_input_sector_success_rate.pct", "%"),
    },
    "Compute Workload Analysis": {
        "Executed Ipc Elapsed": ("sm__inst_executed.avg.per_cycle_elapsed", "inst/cycle"),
        "SM Busy": ("sm__instruction_throughput.avg.pct_of_peak_sustained_active", "%"),
        "Executed Ipc Active": ("sm__inst_executed.avg.per_cycle_active", "inst/cycle"),
        "Issue Slots Busy": ("sm__inst_issued.avg.pct_of_peak_sustained_active", "%"),
        "Issued Ipc Active": ("sm__inst_issued.avg.per_cycle_active", "inst/cycle"),
    },
    "Instruction Statistics": {
        "Executed Instructions": ("smsp__inst_executed.sum", "inst"),
        "Avg. Executed Instructions Per Scheduler": ("smsp__inst_executed.avg", "inst"),
        "Issued Instructions": ("smsp__inst_issued.sum", "inst"),
        "Avg. Issued Instructions Per Scheduler": ("smsp__inst_issued.avg", "inst"),
    },
    "Scheduler Statistics": {
        "Active Warps Per Scheduler": ("smsp__warps_active.avg.per_cycle_active", "warp"),
        "No Eligible": ("smsp__issue_inst0.avg.pct_of_peak_sustained_active", "%"),
        "Eligible Warps Per Scheduler": ("smsp__warps_eligible.avg.per_cycle_active", "warp"),
        "One or More Eligible": ("smsp__issue_active.avg.pct_of_peak_sustained_active", "%"),
        "Issued Warp Per Scheduler": ("smsp__issue_active.avg.per_cycle_active", ""),
    },
    "Warp State Statistics": {
        "Warp Cycles Per Issued Instruction": ("smsp__average_warp_latency_per_inst_issued.ratio", "cycle"),
        "Avg. Active Threads Per Warp": ("smsp__thread_inst_executed_per_inst_executed.ratio", ""),
        "Warp Cycles Per Executed Instruction": ("smsp__average_warps_active_per_inst_executed.ratio", "cycle"),
        "Avg. Not Predicated Off Threads Per Warp": ("smsp__thread_inst_executed_pred_on_per_inst_executed.ratio", ""),
    },
    "GPU and Memory Workload Distribution": {
        "Average SM Active Cycles": ("sm__cycles_active.avg", "cycle"),
        "Average L1 Active Cycles": ("l1tex__cycles_active.avg", "cycle"),
        "Average L2 Active Cycles": ("lts__cycles_active.avg", "cycle"),
        "Average SMSP Active Cycles": ("smsp__cycles_active.avg", "cycle"),
        "Average DRAM Active Cycles": ("dram__cycles_active.avg", "cycle"),
        "Total SM Elapsed Cycles": ("sm__cycles_elapsed.sum", "cycle"),
        "Total L1 Elapsed Cycles": ("l1tex__cycles_elapsed.sum", "cycle"),
        "Total L2 Elapsed Cycles": ("lts__cycles_elapsed.sum", "cycle"),
        "Total SMSP Elapsed Cycles": ("smsp__cycles_elapsed.sum", "cycle"),
        "Total DRAM Elapsed Cycles": ("dram__cycles_elapsed.sum", "cycle"),
    },
}
LABELS = frozenset(label for labels in SECTION_LABELS.values() for label in labels)


def map_section_labels(sections: ObjectArray, row_launch: IntArray, codes: IntArray, names: list[str],
                       unit_codes: IntArray, units: Sequence[str],
                       keep: BoolArray) -> tuple[IntArray, list[str], BoolArray]:
    """Rename rows whose metric is a known (section, label) with a matching unit to the metric's name.

    ``sections`` is the "Section Name" column (text, NaN where empty). Works on the distinct (section, label,
    unit) triples, never per row. When a launch then holds a metric twice (``--metrics gpu__time_duration.sum`` next
    to the section's "Duration", or two sections showing the same metric), one row is kept: the one
    ncu named by its metric name (its value is not rounded to a display unit), else the first.
    """
    label_codes = [i for i, name in enumerate(names) if name in LABELS]
    if not label_codes:
        return codes, names, keep
    rows = np.flatnonzero(np.isin(codes, label_codes) & keep)
    if not rows.size:
        return codes, names, keep
    names = list(names)
    new_codes = _label_targets(sections[rows], codes[rows], unit_codes[rows], names, units)
    changed = rows[new_codes != codes[rows]]
    if not changed.size:
        return codes, names, keep
    codes = codes.astype(np.int64)  # category codes can be int8: room for the names added
    codes[rows] = new_codes
    return codes, names, _one_row_per_metric(row_launch, codes, len(names), changed, keep)


def _label_targets(sections: ObjectArray, codes: IntArray, unit_codes: IntArray, names: list[str],
                   units: Sequence[str]) -> IntArray:
    """The metric code of each label row: its metric's name (appended to ``names``) or its own label."""
    section_codes, section_names = factorize(sections)
    triples, inverse = np.unique(np.column_stack([section_codes, codes, unit_codes]), axis=0, return_inverse=True)
    index = {name: i for i, name in enumerate(names)}
    targets = triples[:, 1].copy()
    for j, (section, label, unit) in enumerate(triples):
        if not isinstance(section_names[section], str):
            continue  # an empty cell
        entry = SECTION_LABELS.get(section_names[section].strip(), {}).get(names[label])
        if entry is None or units[unit] != entry[1]:
            continue  # unknown here, or a unit that says it is another quantity: keep the label
        if entry[0] not in index:
            index[entry[0]] = len(names)
            names.append(entry[0])
        targets[j] = index[entry[0]]
    result: IntArray = targets[inverse.reshape(-1)]
    return result


def _one_row_per_metric(row_launch: IntArray, codes: IntArray, count: int, changed: IntArray,
                        keep: BoolArray) -> BoolArray:
    """Drop repeats of a (launch, metric) among the renamed metrics: rows ncu named by name first, then file order."""
    mapped = np.zeros(len(codes), dtype=bool)
    mapped[changed] = True
    candidates = np.flatnonzero(keep & np.isin(codes, np.unique(codes[changed])))
    order = candidates[np.lexsort((candidates, mapped[candidates]))]
    repeated = _repeats(row_launch[order] * (count + 1) + codes[order])
    if repeated.any():
        keep = keep.copy()
        keep[order[repeated]] = False
    return keep


def qualify_duplicates(sections: ObjectArray, row_launch: IntArray, codes: IntArray, names: list[str],
                       keep: BoolArray) -> tuple[IntArray, list[str]]:
    """Name a label that occurs twice in one launch "Section: Label", so (launch, metric) is a key."""
    # Only rows that stay count: a dropped row (string value, a repeat already resolved) is no clash.
    kept = np.flatnonzero(keep & (codes >= 0))
    _, inverse, counts = np.unique(row_launch[kept] * (len(names) + 1) + codes[kept], return_inverse=True,
                                   return_counts=True)
    duplicated = np.zeros(len(codes), dtype=bool)
    duplicated[kept[counts[inverse.reshape(-1)] > 1]] = True
    if not duplicated.any():
        return codes, names
    names = list(names)
    codes = codes.astype(np.int64)  # category codes can be int8: room for the names added
    index = {name: i for i, name in enumerate(names)}
    for row in np.flatnonzero(duplicated):
        qualified = f"{sections[row]}: {names[codes[row]]}"
        if qualified not in index:
            index[qualified] = len(names)
            names.append(qualified)
        codes[row] = index[qualified]
    return codes, names


def _repeats(keys: IntArray) -> BoolArray:
    """Each key after its first occurrence (what pandas' ``duplicated`` marks)."""
    _, first = np.unique(keys, return_index=True)
    repeated = np.ones(len(keys), dtype=bool)
    repeated[first] = False
    return repeated
