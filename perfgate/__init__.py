"""perfgate: a CI performance-regression gate for GPU kernels.

The public API is ``__all__`` below, documented in ``docs/api.md``: read a measurement, a baseline or a report,
compare two measurements, gate a measurement against its stored baselines, render a report, and the words and
errors those use. Every other module and name is private by convention: it may change in any release.

``import perfgate`` loads only the standard library: pytest imports this package whenever the plugin is
installed, and a run without ``--perfgate`` must not pay for pandas or numpy. So the names whose modules need
them are imported on first use (PEP 562 ``__getattr__``); type checkers read them from the imports under
``TYPE_CHECKING``.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from perfgate.errors import (
    EXIT_OK,
    EXIT_REGRESSION,
    EXIT_USAGE,
    ConfigError,
    DeviceMismatchError,
    InputError,
    NcuError,
    PerfgateError,
)
from perfgate.version import __version__
from perfgate.vocabulary import Status, Verdict

if TYPE_CHECKING:
    from perfgate.collect import read_table
    from perfgate.collect.baseline_json import read_baseline
    from perfgate.compare import CompareOptions, Comparison, compare_tables
    from perfgate.gate import GateResult, Where
    from perfgate.gate import gate as gate_measurement
    from perfgate.metrics import Threshold, parse_threshold
    from perfgate.plugin.fixture import PerfgateFixture
    from perfgate.plugin.marker import PerfMarker
    from perfgate.render import render as render_report
    from perfgate.report import Report, build_report
    from perfgate.report.validate import load_report
    from perfgate.table import Measurement
    from perfgate.verdict import GateStatus, exit_status


__all__ = [
    "EXIT_OK",
    "EXIT_REGRESSION",
    "EXIT_USAGE",
    "CompareOptions",
    "Comparison",
    "ConfigError",
    "DeviceMismatchError",
    "GateResult",
    "GateStatus",
    "InputError",
    "Measurement",
    "NcuError",
    "PerfMarker",
    "PerfgateError",
    "PerfgateFixture",
    "Report",
    "Status",
    "Threshold",
    "Verdict",
    "Where",
    "__version__",
    "build_report",
    "compare_tables",
    "exit_status",
    "gate_measurement",
    "load_report",
    "parse_threshold",
    "read_baseline",
    "read_table",
    "render_report",
]

# Public name -> (module, name there). ``gate`` and ``render`` are also submodules of this package, and importing
# a submodule sets the package attribute of its name, so those two functions are exported under other names.
_LAZY = {
    "CompareOptions": ("perfgate.compare", "CompareOptions"),
    "Comparison": ("perfgate.compare", "Comparison"),
    "GateResult": ("perfgate.gate", "GateResult"),
    "GateStatus": ("perfgate.verdict", "GateStatus"),
    "Measurement": ("perfgate.table", "Measurement"),
    "PerfMarker": ("perfgate.plugin.marker", "PerfMarker"),
    "PerfgateFixture": ("perfgate.plugin.fixture", "PerfgateFixture"),
    "Report": ("perfgate.report", "Report"),
    "Threshold": ("perfgate.metrics", "Threshold"),
    "Where": ("perfgate.gate", "Where"),
    "build_report": ("perfgate.report", "build_report"),
    "compare_tables": ("perfgate.compare", "compare_tables"),
    "exit_status": ("perfgate.verdict", "exit_status"),
    "gate_measurement": ("perfgate.gate", "gate"),
    "load_report": ("perfgate.report.validate", "load_report"),
    "parse_threshold": ("perfgate.metrics", "parse_threshold"),
    "read_baseline": ("perfgate.collect.baseline_json", "read_baseline"),
    "read_table": ("perfgate.collect", "read_table"),
    "render_report": ("perfgate.render", "render"),
}


def __getattr__(name: str) -> Any:
    """Import a public name's module on first use, and keep the name here for the next lookup."""
    if name not in _LAZY:
        raise AttributeError(f"module 'perfgate' has no attribute {name!r}")
    module, attribute = _LAZY[name]
    value = getattr(importlib.import_module(module), attribute)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
