"""Measurements of one kernel launched many times, with run-to-run noise: the inputs of the repeated-launch
tests (a kernel judged as one sample of many launches)."""

from __future__ import annotations

from typing import Any

import numpy as np

from perfgate.table import Measurement, make_table

TIME, INST, READ = "gpu__time_duration.sum", "smsp__inst_executed.sum", "dram__bytes_read.sum"
LAUNCHES, NOISE, TYPICAL = 40, 0.015, 85_000.0  # launches per run, run-to-run noise (sd), duration in ns


def repeated_launches(durations: Any, source: str, *, kernel: str = "gemm_kernel", grid: str = "(64, 1, 1)",
                      instructions: Any = None, reads: Any = None, region: str = "loop",
                      start: int = 0) -> Measurement:
    """One launch of ``kernel`` per duration, in ``region``; instructions 1,000,000 and DRAM reads 4 MB each unless
    given."""
    counts = instructions if instructions is not None else [1_000_000.0] * len(durations)
    read = reads if reads is not None else [4_000_000.0] * len(durations)
    rows: list[dict[str, Any]] = []
    for ordinal, (duration, count, byte_count) in enumerate(zip(durations, counts, read, strict=True)):
        for metric, value in ((TIME, duration), (INST, count), (READ, byte_count)):
            rows.append({"kind": "kernel", "kernel": kernel, "demangled": f"{kernel}()", "region": region,
                         "ordinal": ordinal, "launch": start + ordinal, "device": "NVIDIA H100", "cc": "9.0",
                         "grid": grid, "block": "(256, 1, 1)", "metric": metric, "unit": "", "value": float(value)})
    return Measurement(make_table(rows), source=source)


def noisy(rng: np.random.Generator, shift: float = 0.0, n: int = LAUNCHES) -> Any:
    """``n`` durations around :data:`TYPICAL` moved by ``shift`` (0.08: +8%), with :data:`NOISE`."""
    return TYPICAL * (1.0 + shift) * (1.0 + NOISE * rng.standard_normal(n))
