"""Blind set 4: one side's measured launches written as `ncu --csv --page raw --print-units base --nvtx` prints them.

The fixed columns, the NVTX cell and the launch dimensions are blind set 2's (tests/blind2/b2_write.py, imported);
the metric columns are this set's: the curated set and the counters `+roofline` asks for in their `.sum` form
(docs/roofline.md), named as ncu's roofline sections name them, with the units ncu prints in base units.
"""
from __future__ import annotations

import csv
import io
import math
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "blind2"))

from b2_write import FIXED, _dims, _nvtx_cell  # noqa: E402

from b4_model import DEVICES, OPS  # noqa: E402

CURATED = [("dram__bytes_read.sum", "byte"), ("dram__bytes_write.sum", "byte"), ("gpu__time_duration.sum", "ns"),
           ("launch__block_size", ""), ("launch__grid_size", ""),
           ("launch__registers_per_thread", "register/thread"),
           ("launch__shared_mem_per_block_dynamic", "byte/block"), ("launch__shared_mem_per_block_static", "byte/block"),
           ("sm__warps_active.avg.pct_of_peak_sustained_active", "%"), ("smsp__inst_executed.sum", "inst")]
FLOP_COUNTERS = [(f"smsp__sass_thread_inst_executed_op_{op}_pred_on.sum", "inst") for op in OPS]
PEAKS = [("dram__bytes.sum.peak_sustained", "byte/cycle"), ("dram__cycles_elapsed.avg.per_second", "hz"),
         ("sm__cycles_elapsed.avg.per_second", "hz"),
         ("sm__sass_thread_inst_executed_op_ffma_pred_on.sum.peak_sustained", "inst/cycle")]
TENSOR_CC90 = ["src_bf16_dst_fp32", "src_fp16", "src_fp64", "src_int1", "src_int8", "src_tf32_dst_fp32",
               "src_fp8_sparsity_off", "src_fp8_sparsity_on"]
TENSOR = [(f"sm__ops_path_tensor_{t}.sum", "") for t in TENSOR_CC90]

# Which counters a side's metric set collected: `roofline` (perfgate's +roofline), `default` (the curated set
# only: an older run, or one without +roofline), `no_peaks` (FLOP counters, no peaks or clocks), `fp32_only`
# (fadd/fmul/ffma and the peaks: a hand-picked set), `tensor` (+roofline and +tensor-cc90).
COLUMN_SETS = {
    "roofline": CURATED + FLOP_COUNTERS + PEAKS,
    "default": CURATED,
    "no_peaks": CURATED + FLOP_COUNTERS,
    "fp32_only": CURATED + [c for c in FLOP_COUNTERS if c[0].split("_op_")[1][0] == "f"] + PEAKS,
    "tensor": CURATED + FLOP_COUNTERS + PEAKS + TENSOR,
}


def _num(v: float, name: str) -> str:
    if name.endswith("per_second"):
        return f"{v:,.0f}"
    if name.startswith("sm__warps_active"):
        return f"{v:.2f}"
    return f"{int(round(v)):,}"


def ncu_raw_csv(rows: list[dict[str, Any]], columns: str = "roofline", clock_unit: str = "hz") -> str:
    """The raw page of these launches (`rows`: name, region, dev, grid, block, regs, smem, occ, measured values;
    `na`: metric names printed `n/a` on that launch)."""
    metrics = sorted(COLUMN_SETS[columns])
    metrics = [(m, clock_unit if u == "hz" else u) for m, u in metrics]
    buf = io.StringIO()
    w = csv.writer(buf, quoting=csv.QUOTE_ALL, lineterminator="\n")
    w.writerow(FIXED + ["device__attribute_display_name"] + [m for m, _ in metrics])
    w.writerow([""] * (len(FIXED) + 1) + [u for _, u in metrics])
    for i, r in enumerate(rows):
        dev = DEVICES[r["dev"]]
        values = {"dram__bytes_read.sum": r["rd"], "dram__bytes_write.sum": r["wr"], "gpu__time_duration.sum": r["t"],
                  "launch__block_size": math.prod(r["block"]), "launch__grid_size": math.prod(r["grid"]),
                  "launch__registers_per_thread": r["regs"], "launch__shared_mem_per_block_dynamic": r["smem"],
                  "launch__shared_mem_per_block_static": 0,
                  "sm__warps_active.avg.pct_of_peak_sustained_active": r["occ"], "smsp__inst_executed.sum": r["inst"],
                  "dram__bytes.sum.peak_sustained": dev["dram_peak"], "dram__cycles_elapsed.avg.per_second":
                  r["dram_clk"], "sm__cycles_elapsed.avg.per_second": r["sm_clk"],
                  "sm__sass_thread_inst_executed_op_ffma_pred_on.sum.peak_sustained": dev["ffma_peak"]}
        for op in OPS:
            values[f"smsp__sass_thread_inst_executed_op_{op}_pred_on.sum"] = r[op]
        for t in TENSOR_CC90:
            values[f"sm__ops_path_tensor_{t}.sum"] = r["tensor"] if t == "src_fp16" else 0.0
        cells = ["n/a" if m in r.get("na", ()) else _num(values[m], m) for m, _ in metrics]
        fixed = [str(i), "48213", "python3.12", "127.0.0.1", _nvtx_cell(r["region"], 48213), "", r["name"], "1", "7",
                 _dims(r["block"]), _dims(r["grid"]), "0", dev["cc"]]
        w.writerow(fixed + [dev["name"]] + cells)
    return "==PROF== Connected to process 48213 (/usr/bin/python3.12)\n" + buf.getvalue() + \
        "==PROF== Disconnected from process 48213\n"
