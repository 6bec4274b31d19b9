"""Read Nsight Compute ``.ncu-rep`` files through NVIDIA's ``ncu_report`` module.

``ncu_report`` happily "loads" an empty, random or truncated file and returns zero or only the
first few launches, so before trusting it we walk the file's framing ourselves: a report is the
magic ``NVR\\0``, a u32 version, a u16 tag and a u32-length header, then u32-length-prefixed
blocks that end exactly at end of file (checked on every report in the corpus, ncu 2019-2025).
A file cut anywhere fails that walk, so a truncated upload never turns into "kernels missing".
"""

from __future__ import annotations

import importlib
import math
import os
import struct
import sys
from pathlib import Path
from types import ModuleType
from typing import Any, Collection

import pandas as pd

from perfgate.errors import InputError
from perfgate.table import KIND_KERNEL, REGION_SEPARATOR, assign_ordinals, format_dim, make_table

MAGIC = b"NVR\x00"
PERFGATE_NVTX_DOMAIN = "perfgate"

_DEVICE_METRICS = (
    "device__attribute_display_name",
    "device__attribute_compute_capability_major",
    "device__attribute_compute_capability_minor",
)
_DIM_METRICS = tuple(f"launch__{what}_dim_{axis}" for what in ("grid", "block") for axis in "xyz")


def find_ncu_report_module() -> ModuleType:
    """Import ``ncu_report``, preferring the copy in the user's Nsight Compute install.

    The install's ``extras/python`` matches the ncu that wrote the report; the PyPI wheel is the
    fallback that works on machines with no Nsight Compute at all.
    """
    for folder in _nsight_python_dirs():
        if (folder / "ncu_report.py").is_file() and str(folder) not in sys.path:
            sys.path.insert(0, str(folder))
            break
    try:
        return importlib.import_module("ncu_report")
    except ImportError as exc:  # pragma: no cover - the wheel is a hard dependency
        raise InputError("ncu_report", f"cannot import NVIDIA's report reader ({exc})",
                         "pip install ncu-report, or install Nsight Compute") from exc


def _nsight_python_dirs() -> list[Path]:
    roots: list[Path] = []
    if os.environ.get("PERFGATE_NCU_PYTHON"):
        roots.append(Path(os.environ["PERFGATE_NCU_PYTHON"]))
    import shutil

    ncu = shutil.which("ncu")
    if ncu:
        roots.append(Path(ncu).resolve().parent / "extras" / "python")
    return roots


def check_framing(path: Path) -> None:
    """Raise InputError unless ``path`` is a complete Nsight Compute report."""
    try:
        size = path.stat().st_size
        with path.open("rb") as fh:
            data = fh.read()
    except OSError as exc:
        raise InputError(path, f"cannot read ({exc.strerror})") from exc
    if size == 0:
        raise InputError(path, "empty file, not an Nsight Compute report", "re-run ncu with -o/--export")
    if data[:4] != MAGIC:
        raise InputError(path, "not an Nsight Compute report (no NVR header)",
                         "pass a .ncu-rep written by ncu -o, an ncu --csv output, a pytest-benchmark JSON "
                         "or a perfgate baseline")
    if len(data) < 14:
        raise InputError(path, "truncated Nsight Compute report (header cut short)", "copy or download it again")
    version = struct.unpack_from("<I", data, 4)[0]
    if version != 2:
        return  # an unknown layout: let ncu_report judge it rather than refuse a valid newer file
    offset = 8 + 6 + struct.unpack_from("<I", data, 10)[0]
    while offset < len(data):
        if offset + 4 > len(data):
            break
        offset += 4 + struct.unpack_from("<I", data, offset)[0]
    if offset != len(data):
        raise InputError(path, f"truncated Nsight Compute report ({len(data):,} bytes, the last block is cut short)",
                         "the file was not fully written or copied; copy or download it again, or re-run ncu")


def _number(metric: Any) -> float | None:
    """The metric's value as float; NaN when it has none; None for string-valued metrics."""
    value = metric.value()
    if isinstance(value, bool):
        return float(value)
    if isinstance(value, (int, float)):
        return float(value)
    if value is None:
        return math.nan if metric.metric_type() in (1, 2, 3) else None  # counter, ratio, throughput
    return None


def _region(action: Any) -> str:
    state = action.nvtx_state()
    if state is None:
        return ""
    stacks: list[tuple[str, list[str]]] = []
    for domain_id in state.domains():
        domain = state.domain_by_id(domain_id)
        names = [str(r.name()) for r in domain.push_pop_ranges()]
        if names:
            stacks.append((str(domain.name()), names))
    own = [names for domain, names in stacks if domain == PERFGATE_NVTX_DOMAIN]
    if own:
        return REGION_SEPARATOR.join(own[0])
    return REGION_SEPARATOR.join(name for _, names in stacks for name in names)


# Known quirk of ncu_report (seen on the corpus): the units of ``derived__*`` metrics, which
# section scripts compute, depend on which reports the process loaded before (section definitions
# are process-wide). Measured metrics (time, bytes, instructions) are not affected; gate on those.


def read_ncu_rep(path: str | os.PathLike[str], metrics: Collection[str] | None = None) -> pd.DataFrame:
    """Read every profiled launch of a report into the normalized table.

    ``metrics`` limits which metrics are kept (launch facts and device are always read); None keeps
    every numeric metric.
    """
    report_path = Path(path)
    check_framing(report_path)
    ncu_report = find_ncu_report_module()
    try:
        context = ncu_report.load_report(str(report_path))
    except Exception as exc:  # ncu_report raises plain exceptions with its own text
        raise InputError(report_path, f"ncu_report could not load it: {exc}", "re-run ncu or copy the file again") \
            from exc
    wanted = None if metrics is None else set(metrics)
    rows: list[dict[str, Any]] = []
    launch = 0
    for range_index in range(context.num_ranges()):
        profiled_range = context.range_by_idx(range_index)
        for action_index in range(profiled_range.num_actions()):
            action = profiled_range.action_by_idx(action_index)
            rows.extend(_action_rows(action, launch, wanted))
            launch += 1
    if launch == 0:
        raise InputError(report_path, "the report holds no profiled launch",
                         "check ncu's --kernel-name / --nvtx-include filters matched something")
    frame = assign_ordinals(make_table(rows, source=str(report_path)))
    frame.attrs["source"] = str(report_path)
    return frame


def _action_rows(action: Any, launch: int, wanted: set[str] | None) -> list[dict[str, Any]]:
    def metric_value(name: str) -> Any:
        metric = action.metric_by_name(name)
        return None if metric is None else metric.value()

    device_name, cc_major, cc_minor = (metric_value(n) for n in _DEVICE_METRICS)
    dims = [metric_value(n) for n in _DIM_METRICS]
    grid = format_dim(*dims[:3]) if all(isinstance(d, (int, float)) for d in dims[:3]) else ""
    block = format_dim(*dims[3:]) if all(isinstance(d, (int, float)) for d in dims[3:]) else ""
    base = {
        "kind": KIND_KERNEL,
        "kernel": str(action.name()),
        "demangled": str(action.name(action.NameBase_DEMANGLED)),
        "region": _region(action),
        "ordinal": 0,
        "launch": launch,
        "device": "" if device_name is None else str(device_name),
        "cc": f"{cc_major}.{cc_minor}" if cc_major is not None and cc_minor is not None else "",
        "grid": grid,
        "block": block,
    }
    names = action.metric_names() if wanted is None else [n for n in wanted if action.metric_by_name(n) is not None]
    rows: list[dict[str, Any]] = []
    for name in names:
        metric = action.metric_by_name(name)
        value = _number(metric)
        if value is None:
            continue
        rows.append({**base, "metric": str(name), "unit": str(metric.unit()), "value": value})
    if not rows:
        # Keep the launch visible as "no data" even when none of the asked-for metrics exist.
        rows.append({**base, "metric": "gpu__time_duration.sum", "unit": "ns", "value": math.nan})
    return rows
