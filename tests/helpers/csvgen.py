"""Synthetic Nsight Compute CSV files for tests and benchmarks.

The files follow the layout of real ``ncu --csv`` output (see
``perfgate/collect/ncu_csv/`` for the sources): every field quoted, values with
thousands separators, ``==PROF==`` lines around the table, a handful of kernels
with many launches each, the device index in "Device" and the GPU's name in the
``device__attribute_display_name`` metric. The details and raw writers produce the
same launches and values for the same ``seed``, so their tables must be equal.
"""

from __future__ import annotations

import os
import random
from typing import NamedTuple

DEVICE_NAME = "NVIDIA H100 80GB HBM3"
CC = "9.0"
PROCESS_ID = "4242"
PROCESS_NAME = "python3.11"
HOST = "127.0.0.1"

# Demangled names as ncu prints them: templated ones carry commas, so they must stay quoted.
KERNELS: tuple[tuple[str, str, str, str], ...] = (
    # (demangled name, block, grid, function name)
    (
        "void gemm_kernel<float, 128, 8>(const float *, const float *, float *, int, int, int)",
        "(256, 1, 1)",
        "(64, 32, 1)",
        "gemm_kernel",
    ),
    (
        "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>, "
        "std::array<char *, 1UL>>(int, at::native::FillFunctor<float>, std::array<char *, 1UL>)",
        "(128, 1, 1)",
        "(1024, 1, 1)",
        "vectorized_elementwise_kernel",
    ),
    ("reduce_sum(const float *, float *, int)", "(512, 1, 1)", "(216, 1, 1)", "reduce_sum"),
    ("softmax_kernel(const float *, float *, int, int)", "(1024, 1, 1)", "(4096, 1, 1)", "softmax_kernel"),
    ("matrix_addition2D(float *, float *, float *, int, int)", "(16, 16, 1)", "(63, 63, 1)", "matrix_addition2D"),
)


class Metric(NamedTuple):
    name: str
    unit: str
    base: float  # typical magnitude
    integer: bool  # counters print without decimals


# The metrics perfgate gates on first, then real metric names as filler.
_NAMED: tuple[Metric, ...] = (
    Metric("gpu__time_duration.sum", "ns", 85_000.0, True),
    Metric("dram__bytes_read.sum", "byte", 48_000_000.0, True),
    Metric("dram__bytes_write.sum", "byte", 16_000_000.0, True),
    Metric("smsp__inst_executed.sum", "inst", 3_200_000.0, True),
    Metric("launch__registers_per_thread", "register/thread", 40.0, True),
    Metric("sm__throughput.avg.pct_of_peak_sustained_elapsed", "%", 55.0, False),
)
_FILLER: tuple[Metric, ...] = (
    Metric("lts__t_sectors.sum", "sector", 2_500_000.0, True),
    Metric("l1tex__t_bytes.sum", "byte", 90_000_000.0, True),
    Metric("sm__warps_active.avg.pct_of_peak_sustained_active", "%", 70.0, False),
    Metric("gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed", "%", 62.0, False),
    Metric("gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed", "%", 48.0, False),
    Metric("sm__cycles_elapsed.avg", "cycle", 150_000.0, False),
    Metric("smsp__cycles_active.avg", "cycle", 120_000.0, False),
    Metric("lts__t_sector_hit_rate.pct", "%", 35.0, False),
    Metric("sm__maximum_warps_per_active_cycle_pct", "%", 50.0, False),
    Metric("launch__grid_size", "", 4096.0, True),
    Metric("launch__block_size", "", 256.0, True),
    Metric("launch__shared_mem_per_block_static", "byte/block", 16_384.0, True),
    Metric("launch__occupancy_limit_blocks", "block", 32.0, True),
    Metric("dram__throughput.avg.pct_of_peak_sustained_elapsed", "%", 45.0, False),
    Metric("sm__inst_executed_pipe_tensor.sum", "inst", 800_000.0, True),
    Metric("smsp__sass_thread_inst_executed_op_ffma_pred_on.sum", "inst", 40_000_000.0, True),
    Metric("l1tex__t_sector_hit_rate.pct", "%", 60.0, False),
    Metric("sm__cycles_elapsed.avg.per_second", "hz", 1_755_000_000.0, False),
    Metric("dram__cycles_elapsed.avg.per_second", "hz", 2_619_000_000.0, False),
    Metric("profiler__replayer_passes", "pass", 9.0, True),
)


# What the roofline's derived metrics read (``perfgate.derived``; ``--metrics +roofline``): the FP32 SASS counts, the
# FP32 peak rate and SM clock, the DRAM peak and its clock, at an A10G's magnitudes.
ROOFLINE: tuple[Metric, ...] = (
    Metric("smsp__sass_thread_inst_executed_op_fadd_pred_on.sum", "inst", 2_000_000.0, True),
    Metric("smsp__sass_thread_inst_executed_op_fmul_pred_on.sum", "inst", 1_000_000.0, True),
    Metric("smsp__sass_thread_inst_executed_op_ffma_pred_on.sum", "inst", 40_000_000.0, True),
    Metric("sm__sass_thread_inst_executed_op_ffma_pred_on.sum.peak_sustained", "inst/cycle", 10_240.0, True),
    Metric("sm__cycles_elapsed.avg.per_second", "hz", 1_320_000_000.0, False),
    Metric("dram__bytes.sum.peak_sustained", "byte/cycle", 96.0, True),
    Metric("dram__cycles_elapsed.avg.per_second", "hz", 6_250_000_000.0, False),
)


def metrics(n_metrics: int, roofline: bool = False) -> list[Metric]:
    """The first ``n_metrics`` metric definitions (named ones first, then filler); ``roofline``: the roofline's
    counters in the last places, instead of filler (the same count of metrics)."""
    catalog = list(_NAMED) + [m for m in _FILLER if not (roofline and m.name in {r.name for r in ROOFLINE})]
    extra = [Metric(f"smsp__filler_{i:03d}.sum", "inst", 1_000.0 * (i + 1), True) for i in range(n_metrics)]
    chosen = (catalog + extra)[:n_metrics]
    return chosen[:n_metrics - len(ROOFLINE)] + list(ROOFLINE) if roofline else chosen


_JITTER = (0.99, 1.01)
_COUNTER_JITTER = (0.999, 1.001)


def _jitter(metric: Metric) -> tuple[float, float]:
    if metric.name.startswith(("launch__", "profiler__")):
        return (1.0, 1.0)  # launch configuration does not change between runs of the same code
    return _COUNTER_JITTER if metric.integer else _JITTER


def _format(value: float, integer: bool) -> str:
    # ncu prints counters as integers and everything else with two decimals, both grouped.
    return f"{round(value):,}" if integer else f"{value:,.2f}"


def _launches(
    n_launches: int, n_metrics: int, seed: int, scale: float, run: int | None = None, roofline: bool = False
) -> tuple[list[Metric], list[tuple[int, list[str]]]]:
    """(metric definitions, [(kernel index, formatted values)]) for every launch, deterministic.

    ``seed`` picks each kernel's typical values (the "code"); ``run`` (default: the seed) picks the
    ~1% run-to-run jitter, so the same seed with two runs is the same code measured twice.
    """
    rng = random.Random(seed)
    defs = metrics(n_metrics, roofline)
    # Each kernel has its own typical magnitude per metric; launches jitter around it by ~1%.
    typical = [[m.base * rng.uniform(0.5, 2.0) for m in defs] for _ in KERNELS]
    if run is not None:
        rng = random.Random(f"{seed}/{run}")
    launches: list[tuple[int, list[str]]] = []
    for i in range(n_launches):
        k = i % len(KERNELS)
        # Run-to-run noise as seen on the corpus: work counters move < 0.1%, the rest ~1%.
        values = [_format(t * rng.uniform(*_jitter(m)) * scale, m.integer) for m, t in zip(defs, typical[k])]
        launches.append((k, values))
    return defs, launches


def _q(*fields: str) -> str:
    return ",".join('"' + f.replace('"', '""') + '"' for f in fields) + "\n"


def _prof_head(n_launches: int) -> list[str]:
    lines = [f"==PROF== Connected to process {PROCESS_ID} (/usr/bin/{PROCESS_NAME})\n"]
    for i in range(n_launches):
        name = KERNELS[i % len(KERNELS)][3]
        lines.append(f'==PROF== Profiling "{name}" - {i}: 0%....50%....100% - 9 passes\n')
    return lines


_PROF_TAIL = f"==PROF== Disconnected from process {PROCESS_ID}\n"

DETAILS_HEADER = (
    "ID", "Process ID", "Process Name", "Host Name", "Kernel Name", "Context", "Stream",
    "Block Size", "Grid Size", "Device", "CC", "Section Name", "Metric Name", "Metric Unit", "Metric Value",
)  # fmt: skip
RAW_FIXED = ("ID", "Process ID", "Process Name", "Host Name", "Kernel Name", "Context", "Stream",
             "Block Size", "Grid Size", "Device", "CC")  # fmt: skip


def write_details_csv(
    path: str | os.PathLike[str], n_launches: int, n_metrics: int, seed: int = 0, scale: float = 1.0,
    run: int | None = None, roofline: bool = False,
) -> None:
    """Write ``ncu --csv --page details --metrics ...`` output: one row per launch x metric."""
    defs, launches = _launches(n_launches, n_metrics, seed, scale, run, roofline)
    out = _prof_head(n_launches)
    out.append(_q(*DETAILS_HEADER))
    section = "Command line profiler metrics"
    for launch_id, (k, values) in enumerate(launches):
        demangled, block, grid, _ = KERNELS[k]
        prefix = _q(str(launch_id), PROCESS_ID, PROCESS_NAME, HOST, demangled, "1", "7", block, grid, "0", CC)[:-1]
        # Rows sorted by metric name, like the raw page's columns; the string metric is among them.
        rows = [(m.name, m.unit, v) for m, v in zip(defs, values)]
        rows.append(("device__attribute_display_name", "", DEVICE_NAME))
        for name, unit, value in sorted(rows):
            out.append(prefix + "," + _q(section, name, unit, value))
    out.append(_PROF_TAIL)
    with open(path, "w", encoding="utf-8", newline="") as handle:
        handle.writelines(out)


def write_raw_csv(
    path: str | os.PathLike[str], n_launches: int, n_metrics: int, seed: int = 0, scale: float = 1.0,
    run: int | None = None, roofline: bool = False,
) -> None:
    """Write ``ncu --csv --page raw`` output: header, one units row, one row per launch."""
    defs, launches = _launches(n_launches, n_metrics, seed, scale, run, roofline)
    columns = sorted([(m.name, m.unit, i) for i, m in enumerate(defs)] + [("device__attribute_display_name", "", -1)])
    out = _prof_head(n_launches)
    out.append(_q(*RAW_FIXED, *(c[0] for c in columns)))
    out.append(_q(*([""] * len(RAW_FIXED)), *(c[1] for c in columns)))
    for launch_id, (k, values) in enumerate(launches):
        demangled, block, grid, _ = KERNELS[k]
        cells = [values[i] if i >= 0 else DEVICE_NAME for _, _, i in columns]
        fixed = (str(launch_id), PROCESS_ID, PROCESS_NAME, HOST, demangled, "1", "7", block, grid, "0", CC)
        out.append(_q(*fixed, *cells))
    out.append(_PROF_TAIL)
    with open(path, "w", encoding="utf-8", newline="") as handle:
        handle.writelines(out)


class Launch(NamedTuple):
    """One launch written by ``write_raw_launches``: the kernel's demangled name and launch configuration, its NVTX
    region ("" none) and its values (metric -> value, in the catalog's unit)."""

    demangled: str
    grid: str
    block: str
    values: dict[str, float]
    region: str = ""


PUSH_POP = "thread Domain:Push/Pop_Range:PL_Type:PL_Value:CLR_Type:Color:Msg_Type:Msg"


def write_raw_launches(path: str | os.PathLike[str], launches: list[Launch]) -> None:
    """Write ``ncu --csv --page raw --nvtx`` output of the given launches: any kernel names, launch configurations,
    regions and values (``write_raw_csv`` writes the fixed ``KERNELS``)."""
    from perfgate.demangled import kernel_function_name

    known = {m.name: m for m in (*_NAMED, *_FILLER)}
    names = sorted({name for launch in launches for name in launch.values} | {"device__attribute_display_name"})
    fixed = (*RAW_FIXED[:4], PUSH_POP, *RAW_FIXED[4:])
    out = [f"==PROF== Connected to process {PROCESS_ID} (/usr/bin/{PROCESS_NAME})\n"]
    out += [f'==PROF== Profiling "{kernel_function_name(launch.demangled)}" - {i}: 0%....50%....100% - 9 passes\n'
            for i, launch in enumerate(launches)]
    out.append(_q(*fixed, *names))
    out.append(_q(*([""] * len(fixed)), *(known[name].unit if name in known else "" for name in names)))
    for launch_id, launch in enumerate(launches):
        region = f'1  "<default domain>:{launch.region}:none:none:none:none:none:none"' if launch.region else "1"
        cells = [DEVICE_NAME if name == "device__attribute_display_name" else
                 _format(launch.values[name], known[name].integer if name in known else False) for name in names]
        out.append(_q(str(launch_id), PROCESS_ID, PROCESS_NAME, HOST, region, launch.demangled, "1", "7", launch.block,
                      launch.grid, "0", CC, *cells))
    out.append(_PROF_TAIL)
    with open(path, "w", encoding="utf-8", newline="") as handle:
        handle.writelines(out)
