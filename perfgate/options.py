"""Option helpers both shells share: argparse types and the one metric selection.

``perfgate compare`` and ``pytest --perfgate`` take the same kinds of values (metric lists,
``METRIC=SPEC`` thresholds, seconds) and choose what to compare the same way, so both parse and
select here, as pytest-benchmark shares its option helpers between its plugin and its CLI. The options
themselves are declared once, in ``perfgate.option_table``.
"""

from __future__ import annotations

import argparse
import math
from typing import TYPE_CHECKING, Mapping, Sequence

from perfgate.config import check_clock_control, check_sections
from perfgate.errors import ConfigError
from perfgate.metrics import (
    DEFAULT_BENCHMARK_METRICS,
    DEFAULT_KERNEL_METRICS,
    MULTI_PASS_METRICS,
    Threshold,
    parse_threshold_assignment,
)

if TYPE_CHECKING:
    from perfgate.compare import CompareOptions


def metrics_arg(text: str) -> list[str]:
    """``a,b`` (replace the compared set) or ``+a,+b`` (add to it)."""
    names = [n.strip() for n in text.split(",") if n.strip()]
    if not names:
        raise argparse.ArgumentTypeError("expected comma-separated metric names")
    return names


def sections_arg(text: str) -> tuple[str, ...]:
    """``SpeedOfLight,SourceCounters``; ``none`` for none."""
    names = [n.strip() for n in text.split(",") if n.strip()]
    if names == ["none"]:
        return ()
    try:
        return check_sections(names, "--perfgate-sections")
    except ConfigError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def clock_control_arg(text: str) -> str:
    """``base`` or ``none``."""
    try:
        return check_clock_control(text, "--perfgate-clock-control")
    except ConfigError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def threshold_arg(text: str) -> tuple[str, Threshold]:
    """``METRIC=SPEC``."""
    try:
        return parse_threshold_assignment(text)
    except ConfigError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def positive_flop(text: str) -> float:
    """A declared useful work: a positive, finite number of FLOP (``2e9``)."""
    return _positive_finite(text, "a positive number of FLOP such as 2e9")


def positive_seconds(text: str) -> float:
    """A timeout: positive and finite (``nan`` and ``inf`` would switch the kill off)."""
    return _positive_finite(text, "a positive, finite number of seconds")


def _positive_finite(text: str, expected: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not math.isfinite(value) or value <= 0:
        raise argparse.ArgumentTypeError(f"expected {expected}, got {text!r}")
    return value


def positive_int(text: str) -> int:
    """A count or number: a positive integer (``--pr``)."""
    try:
        value = int(text.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"{text!r} is not a positive number")
    return value


def non_negative_seconds(text: str) -> float:
    """A wait or deadline in seconds: 0 or more (``--max-time``, ``--retry-backoff``)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not value >= 0:
        raise argparse.ArgumentTypeError(f"{text!r} must be 0 or more")
    return value


def non_negative_fraction(text: str) -> float:
    """A relative change: 0 or more and finite (``--min-change``; -1 or nan would keep every change point)."""
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not (math.isfinite(value) and value >= 0):
        raise argparse.ArgumentTypeError(f"expected a fraction of 0 or more, e.g. 0.01, got {text!r}")
    return value


def probability(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0 < value < 1:  # false for nan too
        raise argparse.ArgumentTypeError(f"expected a p-value between 0 and 1, got {text!r}")
    return value


def resolve_metrics(requested: Sequence[str] | None, configured: Sequence[str] | None) -> tuple[str, ...] | None:
    """``a,b`` replaces the configured (or default) set; ``+a,+b`` adds to it; None keeps it."""
    if not requested:
        return tuple(configured) if configured is not None else None
    if all(name.startswith("+") for name in requested):
        base = list(configured) if configured is not None else [*DEFAULT_KERNEL_METRICS, *DEFAULT_BENCHMARK_METRICS]
        return tuple(dict.fromkeys([*base, *(n[1:] for n in requested)]))
    return tuple(n.lstrip("+") for n in requested)


def selection(*, metrics: Sequence[str] | None, thresholds: Mapping[str, Threshold], significance: float,
              allow_device_mismatch: bool, extra_metrics: Sequence[str] = (),
              extra_thresholds: Mapping[str, Threshold] | None = None, collecting: bool = False,
              kernel_aliases: Mapping[str, str] | None = None,
              accept_unpaired_kernels: bool = False,
              kernel_thresholds: Mapping[str, Mapping[str, Threshold]] | None = None,
              declared_flops: float | None = None) -> CompareOptions:
    """What to compare, and how strictly: the configured (or default) metrics plus ``extra_metrics`` (a
    marker's), the configured thresholds under ``extra_thresholds``.

    ``collecting``: the metrics will be collected by ncu now, so the multi-pass "why" metrics
    (``MULTI_PASS_METRICS``) stay out unless asked for by name; measured on an H100 they turn one replay
    pass per kernel into ten. Comparing reports that already hold them costs nothing, so then they stay.
    """
    from perfgate.compare import CompareOptions  # numpy: the plugin imports this module when pytest starts

    merged = {**thresholds, **(extra_thresholds or {})}
    chosen = tuple(metrics) if metrics is not None else (*DEFAULT_KERNEL_METRICS, *DEFAULT_BENCHMARK_METRICS)
    if extra_metrics:
        chosen = tuple(dict.fromkeys([*chosen, *extra_metrics]))
    if collecting:
        asked = {*(metrics or ()), *extra_metrics, *merged,
                 *(metric for table in (kernel_thresholds or {}).values() for metric in table)}
        chosen = tuple(m for m in chosen if m not in MULTI_PASS_METRICS or m in asked)
    return CompareOptions(thresholds=merged, metrics=chosen, significance=significance,
                          allow_device_mismatch=allow_device_mismatch, kernel_aliases=dict(kernel_aliases or {}),
                          accept_unpaired_kernels=accept_unpaired_kernels,
                          kernel_thresholds=dict(kernel_thresholds or {}), declared_flops=declared_flops)
