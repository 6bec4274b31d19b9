"""Baseline documents for the write tests, importable by the writer processes those tests kill."""

from __future__ import annotations

from perfgate.baseline import baseline_documents
from perfgate.table import Measurement, make_table

GPUS = ("NVIDIA A100", "NVIDIA H100")


def two_gpu_documents(duration: float) -> dict:
    """One kernel's duration baseline on each of two GPUs: a write that renames two files."""
    rows = [{"kind": "kernel", "kernel": "k", "demangled": "k()", "region": "", "ordinal": 0, "launch": i,
             "device": gpu, "cc": "9.0", "grid": "", "block": "", "metric": "gpu__time_duration.sum", "unit": "ns",
             "value": duration} for i, gpu in enumerate(GPUS)]
    return baseline_documents(Measurement(make_table(rows)), ["gpu__time_duration.sum"])
