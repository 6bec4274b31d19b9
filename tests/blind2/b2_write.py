"""Blind set 2: measured runs written as a user's tools write them.

ncu: `ncu --csv --page raw --print-units base --nvtx` (fixed columns, the NVTX push/pop column as real H100
exports print it, one row of units, one row per launch, thousands separators). pytest-benchmark:
`--benchmark-json` with its own Stats (pytest_benchmark.stats), raw rounds kept when saved with data.
"""
from __future__ import annotations

import csv
import io
import json
import math
from typing import Any

import numpy as np
from pytest_benchmark.stats import Stats

DEVICE = "NVIDIA H100 80GB HBM3"
FIXED = ["ID", "Process ID", "Process Name", "Host Name",
         "thread Domain:Push/Pop_Range:PL_Type:PL_Value:CLR_Type:Color:Msg_Type:Msg",
         "Id:Domain:Start/Stop_Range:PL_Type:PL_Value:CLR_Type:Color:Msg_Type:Msg",
         "Kernel Name", "Context", "Stream", "Block Size", "Grid Size", "Device", "CC"]
METRICS = [("device__attribute_display_name", ""), ("dram__bytes_read.sum", "byte"),
           ("dram__bytes_write.sum", "byte"), ("gpu__time_duration.sum", "ns"), ("launch__block_size", ""),
           ("launch__grid_size", ""), ("launch__registers_per_thread", "register/thread"),
           ("launch__shared_mem_per_block_dynamic", "byte/block"),
           ("launch__shared_mem_per_block_static", "byte/block"),
           ("sm__warps_active.avg.pct_of_peak_sustained_active", "%"), ("smsp__inst_executed.sum", "inst")]


def _nvtx_cell(region: str, tid: int) -> str:
    if not region:
        return ""
    ranges = [f'"<default domain>:{r}:none:none:none:none:none:none"' for r in region.split(" > ")]
    return f"{tid}  " + "  ".join(ranges) + " "


def _dims(d: tuple[int, int, int]) -> str:
    return f"({d[0]}, {d[1]}, {d[2]})"


def ncu_raw_csv(rows: list[dict[str, Any]], drop: tuple[str, ...] = ()) -> str:
    """The raw page of these measured launches; `drop` leaves metric columns out (a narrower --metrics)."""
    metrics = [m for m in METRICS if m[0] not in drop]
    buf = io.StringIO()
    w = csv.writer(buf, quoting=csv.QUOTE_ALL, lineterminator="\n")
    w.writerow(FIXED + [m for m, _ in metrics])
    w.writerow([""] * len(FIXED) + [u for _, u in metrics])
    for i, r in enumerate(rows):
        values = {
            "device__attribute_display_name": DEVICE, "dram__bytes_read.sum": f"{r['rd']:,}",
            "dram__bytes_write.sum": f"{r['wr']:,}", "gpu__time_duration.sum": f"{r['t']:,}",
            "launch__block_size": f"{math.prod(r['block']):,}", "launch__grid_size": f"{math.prod(r['grid']):,}",
            "launch__registers_per_thread": str(r["regs"]), "launch__shared_mem_per_block_dynamic": f"{r['smem']:,}",
            "launch__shared_mem_per_block_static": "0", "sm__warps_active.avg.pct_of_peak_sustained_active":
            f"{r['occ']:.2f}", "smsp__inst_executed.sum": f"{r['inst']:,}",
        }
        fixed = [str(i), "48213", "python3.12", "127.0.0.1", _nvtx_cell(r["region"], 48213), "", r["name"], "1",
                 str(r["stream"]), _dims(r["block"]), _dims(r["grid"]), "0", "9.0"]
        w.writerow(fixed + [values[m] for m, _ in metrics])
    return "==PROF== Connected to process 48213 (/usr/bin/python3.12)\n" + buf.getvalue() + \
        "==PROF== Disconnected from process 48213\n"


MACHINE = {"node": "ci-runner-07", "processor": "x86_64", "machine": "x86_64", "python_compiler": "GCC 13.2.0",
           "python_implementation": "CPython", "python_implementation_version": "3.12.3",
           "python_version": "3.12.3", "python_build": ["main", "Apr 10 2024 05:33:47"], "release": "6.8.0-49-generic",
           "system": "Linux", "cpu": {"python_version": "3.12.3.final.0 (64 bit)", "arch": "X86_64", "bits": 64,
                                      "count": 16, "arch_string_raw": "x86_64",
                                      "brand_raw": "AMD EPYC 7763 64-Core Processor", "hz_advertised_friendly":
                                      "2.4500 GHz"}}
BENCH_OPTIONS = {"disable_gc": False, "timer": "perf_counter", "min_rounds": 5, "max_time": 1.0,
                 "min_time": 5e-06, "warmup": False}


def bench_rounds(t: float, rounds: int, rng: np.random.Generator, clock: float, load_p: float) -> list[float]:
    """One benchmark's rounds, in seconds: the machine's speed this run, a one-sided spread, rounds hit by load."""
    out = []
    for _ in range(rounds):
        v = t * clock * (1.0 + abs(rng.normal(0.0, 0.015)))
        if rng.random() < load_p:
            v *= rng.uniform(1.05, 1.6)
        out.append(float(v))
    return out


def bench_json(benches: list[tuple[str, list[float], int]], save_data: bool) -> str:
    """A --benchmark-json file: (name, rounds in seconds, iterations) per benchmark."""
    out = []
    for name, data, iterations in benches:
        st = Stats()
        for v in data:
            st.update(v)
        stats = st.as_dict()
        if save_data:
            stats["data"] = data
        stats["iterations"] = iterations
        out.append({"group": None, "name": name, "fullname": f"tests/perf/test_host.py::{name}", "params": None,
                    "param": None, "extra_info": {}, "options": BENCH_OPTIONS, "stats": stats})
    doc = {"machine_info": MACHINE, "commit_info": {"id": "0" * 40, "time": "2026-12-08T10:00:00+00:00",
                                                    "author_time": "2026-12-08T10:00:00+00:00", "dirty": False,
                                                    "project": "app", "branch": "main"},
           "benchmarks": out, "datetime": "2026-12-08T10:00:00+00:00", "version": "5.3.1"}
    return json.dumps(doc, indent=2)
