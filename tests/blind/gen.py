"""Writers of synthetic `ncu --csv --page raw` pages and pytest-benchmark JSON files, with noise.

Written for the blind comparison set (README.md) without reading perfgate's engine: the layout copies the
real H100/H200 raw pages in tests/data (base units, thousands separators, `perfgate` NVTX domain), the
noise model is stated in README.md.
"""

from __future__ import annotations

import csv
import io
import json
import math
import random
from dataclasses import dataclass, replace

DEVICE = "NVIDIA H100 80GB HBM3"
CC = "9.0"
TIMER_NS = 32  # gpu__time_duration on Hopper is a multiple of 32 ns
SECTOR = 32  # DRAM bytes are counted in 32-byte sectors
OUTLIER_RATE = 0.002  # chance that another process on the GPU slows one launch down
RUN_SIGMA = 0.003  # clock/thermal state shared by all launches of one run


@dataclass(frozen=True)
class Launch:
    """One kernel launch as its true (noise-free) cost; the noise is added when the page is written."""

    kernel: str
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    t_ns: float
    dram_r: float
    dram_w: float
    inst: int
    regs: int = 32
    smem_dyn: int = 0
    smem_static: int = 0
    occ: float = 60.0
    region: tuple[str, ...] = ()
    stream: int = 7
    slow: float = 1.0  # extra factor on duration only, applied after noise (interference, drift)


@dataclass
class Side:
    launches: list[Launch]
    drift: float = 0.0  # duration grows linearly to (1 + drift) at the last launch
    quiet: bool = False  # no random outliers (the case places its own)


def kernel(name: str, grid: tuple[int, int, int], block: tuple[int, int, int], t_us: float, **kw: float) -> Launch:
    """A launch with counters scaled from its time unless given (bytes ~ 0.6 B/ns read, 0.3 B/ns written)."""
    t_ns = t_us * 1000.0
    r = kw.pop("dram_r", t_ns * 600.0)
    w = kw.pop("dram_w", t_ns * 300.0)
    inst = int(kw.pop("inst", t_ns * 310.0))
    return Launch(name, grid, block, t_ns, r, w, inst, **kw)  # type: ignore[arg-type]


def scaled(launch: Launch, time: float = 1.0, inst: float = 1.0, dram_r: float = 1.0, **kw: object) -> Launch:
    """The same launch with its true cost scaled (a code change)."""
    return replace(launch, t_ns=launch.t_ns * time, inst=int(round(launch.inst * inst)),
                   dram_r=launch.dram_r * dram_r, **kw)  # type: ignore[arg-type]


def _sigma(t_ns: float) -> float:
    """Per-launch relative jitter of the duration: short kernels jitter more."""
    if t_ns < 10_000:
        return 0.015
    if t_ns < 100_000:
        return 0.008
    return 0.004


def _noisy(launch: Launch, rng: random.Random, run_factor: float, drift: float, quiet: bool) -> dict[str, float]:
    t = launch.t_ns * run_factor * math.exp(rng.gauss(0.0, _sigma(launch.t_ns))) + rng.gauss(0.0, 40.0)
    if not quiet and rng.random() < OUTLIER_RATE:
        t *= rng.uniform(1.1, 1.5)
    t *= (1.0 + drift) * launch.slow
    t = max(TIMER_NS, round(t / TIMER_NS) * TIMER_NS)
    r = launch.dram_r * rng.gauss(1.0, 0.002) + abs(rng.gauss(0.0, 1024.0))
    w = max(0.0, launch.dram_w * rng.gauss(1.0, 0.02) + rng.gauss(0.0, 8192.0))
    return {
        "t": t,
        "r": round(r / SECTOR) * SECTOR,
        "w": round(w / SECTOR) * SECTOR,
        "occ": min(100.0, launch.occ * rng.gauss(1.0, 0.01)),
    }


def _num(value: float) -> str:
    return f"{int(value):,}"


def _dim(d: tuple[int, int, int]) -> str:
    return f"({d[0]}, {d[1]}, {d[2]})"


def _nvtx(region: tuple[str, ...], tid: int) -> str:
    if not region:
        return ""
    ranges = "  ".join(f'"perfgate:{name}:none:none:RGB:0xff:REGISTERED:{name}"' for name in region)
    return f"{tid}  {ranges} "


HEADER = [
    "ID", "Process ID", "Process Name", "Host Name",
    "thread Domain:Push/Pop_Range:PL_Type:PL_Value:CLR_Type:Color:Msg_Type:Msg",
    "Id:Domain:Start/Stop_Range:PL_Type:PL_Value:CLR_Type:Color:Msg_Type:Msg",
    "Kernel Name", "Context", "Stream", "Block Size", "Grid Size", "Device", "CC",
    "device__attribute_display_name", "dram__bytes_read.sum", "dram__bytes_write.sum", "gpu__time_duration.sum",
    "launch__block_size", "launch__grid_size", "launch__registers_per_thread",
    "launch__shared_mem_per_block_dynamic", "launch__shared_mem_per_block_static",
    "sm__warps_active.avg.pct_of_peak_sustained_active", "smsp__inst_executed.sum",
]
UNITS = ["" for _ in range(14)] + ["byte", "byte", "ns", "", "", "register/thread", "byte/block", "byte/block",
                                   "%", "inst"]


def ncu_raw_page(side: Side, seed: int) -> str:
    """`ncu --csv --page raw --print-units base --nvtx` stdout for the side's launches, noise drawn from seed."""
    rng = random.Random(seed)
    pid = rng.randrange(1000, 60000)
    run_factor = rng.gauss(1.0, RUN_SIGMA)
    out = io.StringIO()
    out.write(f"==PROF== Connected to process {pid} (/usr/bin/python3.12)\n")
    writer = csv.writer(out, quoting=csv.QUOTE_ALL, lineterminator="\n")
    writer.writerow(HEADER)
    writer.writerow(UNITS)
    last = max(1, len(side.launches) - 1)
    for i, launch in enumerate(side.launches):
        v = _noisy(launch, rng, run_factor, side.drift * i / last, side.quiet)
        writer.writerow([
            str(i), str(pid), "python3.12", "127.0.0.1", _nvtx(launch.region, pid), "", launch.kernel, "1",
            str(launch.stream), _dim(launch.block), _dim(launch.grid), "0", CC, DEVICE,
            _num(v["r"]), _num(v["w"]), _num(v["t"]),
            _num(math.prod(launch.block)), _num(math.prod(launch.grid)), str(launch.regs),
            _num(launch.smem_dyn), _num(launch.smem_static), f"{v['occ']:.2f}", _num(launch.inst),
        ])
    out.write(f"==PROF== Disconnected from process {pid}\n")
    return out.getvalue()


@dataclass(frozen=True)
class Bench:
    """One pytest-benchmark test: its true time per round in seconds."""

    name: str
    seconds: float
    slow: float = 1.0


def _rounds(bench: Bench, rounds: int, rng: random.Random) -> list[float]:
    """Host timings: log-normal 2% jitter, and one round in eight hit by load (+5% to +60%); load only adds."""
    times = []
    for _ in range(rounds):
        t = bench.seconds * bench.slow * math.exp(rng.gauss(0.0, 0.02))
        if rng.random() < 0.125:
            t *= rng.uniform(1.05, 1.6)
        times.append(t)
    return times


def _stats(data: list[float]) -> dict[str, float | int]:
    ordered = sorted(data)
    n = len(ordered)
    mean = sum(ordered) / n
    sd = math.sqrt(sum((x - mean) ** 2 for x in ordered) / (n - 1)) if n > 1 else 0.0
    median = ordered[n // 2] if n % 2 else (ordered[n // 2 - 1] + ordered[n // 2]) / 2
    q1, q3 = ordered[n // 4], ordered[(3 * n) // 4]
    return {"min": ordered[0], "max": ordered[-1], "mean": mean, "stddev": sd, "rounds": n, "median": median,
            "iqr": q3 - q1, "q1": q1, "q3": q3, "iqr_outliers": 0, "stddev_outliers": 0, "outliers": "0;0",
            "ld15iqr": ordered[0], "hd15iqr": ordered[-1], "ops": 1.0 / mean, "total": sum(ordered),
            "iterations": 1}


def benchmark_json(benches: list[Bench], rounds: int, save_data: bool, seed: int) -> str:
    """`pytest --benchmark-json` output (pytest-benchmark 4.0) for the benches, noise drawn from seed."""
    rng = random.Random(seed)
    items = []
    for bench in benches:
        data = _rounds(bench, rounds, rng)
        stats: dict[str, object] = dict(_stats(data))
        if save_data:
            stats["data"] = data
        items.append({
            "group": None, "name": bench.name, "fullname": f"tests/perf/test_host.py::{bench.name}",
            "params": None, "param": None, "extra_info": {},
            "options": {"disable_gc": False, "timer": "perf_counter", "min_rounds": rounds, "max_time": 1.0,
                        "min_time": 5e-06, "warmup": False},
            "stats": stats,
        })
    doc = {
        "machine_info": {
            "node": "ci-runner-3", "processor": "x86_64", "machine": "x86_64", "python_compiler": "GCC 12.2.0",
            "python_implementation": "CPython", "python_implementation_version": "3.11.2",
            "python_version": "3.11.2", "python_build": ["main", "Mar 13 2023 12:18:29"],
            "release": "6.1.0-13-amd64", "system": "Linux",
            "cpu": {"python_version": "3.11.2", "cpuinfo_version": [9, 0, 0], "arch": "X86_64", "bits": 64,
                    "count": 8, "arch_string_raw": "x86_64", "vendor_id_raw": "AuthenticAMD",
                    "brand_raw": "AMD EPYC 7B13", "hz_actual_friendly": "2.4500 GHz"},
        },
        "commit_info": {"id": "0" * 40, "time": "2026-12-01T10:00:00+00:00", "author_time": "2026-12-01T10:00:00+00:00",
                        "dirty": False, "project": "app", "branch": "main"},
        "benchmarks": items,
        "datetime": "2026-12-01T10:00:00.000000+00:00",
        "version": "4.0.0",
    }
    return json.dumps(doc, indent=2)
