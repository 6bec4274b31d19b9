"""``@pytest.mark.perfgate(...)``: parsing and validation. Stdlib only (imported by the plugin).

Unknown keys are errors, like pytest-benchmark and pytest-codspeed do for their markers, so a
typo (``kernel=`` for ``kernels=``) fails loudly instead of profiling everything.
"""

from __future__ import annotations

import math
from typing import Any, Mapping, NamedTuple, Sequence

from perfgate.errors import ConfigError
from perfgate.metrics import Threshold, parse_threshold
from perfgate.plugin.fixture import check_region_name
from perfgate.vocabulary import NO_ENTRIES

MARKER_NAME = "perfgate"
MARKER_KEYS = ("kernels", "metrics", "thresholds", "regions", "timeout", "accept_unpaired_kernels", "flops")
MARKER_HELP = (
    "perfgate(kernels=None, metrics=(), thresholds={}, regions=(), timeout=None, accept_unpaired_kernels=False, "
    "flops=None): "
    "a performance test. "
    "Runs as a plain test; with --perfgate its body runs under Nsight Compute and the kernels launched "
    "inside perfgate.region(...) are compared with the stored baseline."
)


class PerfMarker(NamedTuple):
    """A perf test's own settings, layered over ``[tool.perfgate]`` and the command line."""

    kernels: str | None = None  # ncu --kernel-name: exact function name, or "regex:EXPR"
    metrics: tuple[str, ...] = ()  # extra ncu metrics to collect and compare
    thresholds: Mapping[str, Threshold] = NO_ENTRIES  # per-metric overrides
    regions: tuple[str, ...] = ()  # profile only these top-level regions (default: all)
    timeout: float | None = None  # seconds for this test under ncu (default: --perfgate-timeout)
    accept_unpaired_kernels: bool = False  # kernels missing and new in one region pass (else: not measured)
    flops: float | None = None  # the test's useful work in FLOP: counted FLOP well above it is redundant work


def _names(value: Any, key: str, where: str) -> tuple[str, ...]:
    if isinstance(value, str):
        value = [v for v in (p.strip() for p in value.split(",")) if v]
    if not isinstance(value, Sequence) or not all(isinstance(v, str) and v for v in value):
        raise ConfigError(f"{where}: perfgate marker {key}= must be a list of names, got {value!r}")
    return tuple(value)


def parse_marker(args: Sequence[Any], kwargs: Mapping[str, Any], where: str) -> PerfMarker:
    """Validate a ``perfgate`` marker's arguments; ``where`` names the test in error messages."""
    if args:
        raise ConfigError(f"{where}: the perfgate marker takes keyword arguments only "
                          f"({', '.join(MARKER_KEYS)}), got positional {list(args)!r}")
    unknown = sorted(set(kwargs) - set(MARKER_KEYS))
    if unknown:
        raise ConfigError(f"{where}: unknown perfgate marker argument(s) {', '.join(unknown)}; "
                          f"known: {', '.join(MARKER_KEYS)}")
    kernels = kwargs.get("kernels")
    if kernels is not None and (not isinstance(kernels, str) or not kernels.strip()):
        raise ConfigError(f"{where}: perfgate marker kernels= must be a kernel name or 'regex:EXPR', got {kernels!r}")
    metrics = _names(kwargs.get("metrics", ()), "metrics", where)
    raw_thresholds = kwargs.get("thresholds", {})
    if not isinstance(raw_thresholds, Mapping):
        raise ConfigError(f"{where}: perfgate marker thresholds= must be a dict like "
                          '{"gpu__time_duration.sum": "5%"}')
    try:
        thresholds = {str(k): parse_threshold(str(v)) for k, v in raw_thresholds.items()}
    except ConfigError as exc:
        raise ConfigError(f"{where}: {exc}") from None
    regions = _names(kwargs.get("regions", ()), "regions", where)
    for region in regions:
        try:
            check_region_name(region)
        except ValueError as exc:
            raise ConfigError(f"{where}: {exc}") from None
    timeout = kwargs.get("timeout")
    if timeout is not None and (isinstance(timeout, bool) or not isinstance(timeout, (int, float))
                                or not math.isfinite(timeout) or timeout <= 0):
        # nan and inf would switch the kill of a hung ncu off.
        raise ConfigError(f"{where}: perfgate marker timeout= must be a positive number of seconds (finite: nan or "
                          f"inf would never stop a hung ncu), got {timeout!r}")
    accept = kwargs.get("accept_unpaired_kernels", False)
    if not isinstance(accept, bool):
        raise ConfigError(f"{where}: perfgate marker accept_unpaired_kernels= must be True or False, got {accept!r}")
    flops = kwargs.get("flops")
    if flops is not None and (isinstance(flops, bool) or not isinstance(flops, (int, float))
                              or not math.isfinite(flops) or flops <= 0):
        raise ConfigError(f"{where}: perfgate marker flops= must be the test's useful work, a positive number of "
                          f"FLOP (such as 2 * M * N * K for a GEMM), got {flops!r}")
    return PerfMarker(kernels=kernels.strip() if kernels else None, metrics=metrics, thresholds=thresholds,
                      regions=regions, timeout=float(timeout) if timeout is not None else None,
                      accept_unpaired_kernels=accept, flops=float(flops) if flops is not None else None)
