"""Derived metrics: the table of them, one row each (name, inputs, formula, unit, direction, default threshold).

A derived metric is computed from a launch's raw counters when two measurements are compared, on both sides
(``perfgate.prepare.with_derived``), never stored: a baseline keeps the raw counters only, so a corrected
formula never invalidates one. Its name begins with ``derived.`` in every output and in the JSON report. It
exists for a launch only where its inputs do; a report without them has no row of it.

The formulas follow Nsight Compute's roofline sections (``SpeedOfLight*.section``; ``docs/roofline.md``):
achieved FLOP/s from the SASS thread-instruction counters (FP32 ``fadd + fmul + 2 ffma``, FP64 ``dadd + dmul +
2 dfma``, FP16 ``2 hadd + 2 hmul + 4 hfma``), either as counts (``.sum``) over the launch's duration or as ncu's
sections collect them (``.sum.per_cycle_elapsed`` times the SM sub-partitions' clock); the FLOP roof is the FP32
peak (2 x the ``ffma`` peak rate x the SM clock), the memory roof the DRAM peak (bytes per cycle x the DRAM clock).
The tensor-core rates sum the aggregate tensor counters a report holds (``perfgate.tensor_counters``), dense and
sparse apart; their names differ per compute capability, so only the opt-in ``tensor-ccXY`` groups ask for them.

Stdlib only (the plugin's start imports the catalog): a formula does arithmetic on whatever array type it is
given (numpy's, per launch) and reads its inputs through ``Values``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple, Protocol

from perfgate.tensor_counters import DENSE, SPARSE, SPARSE_TYPES, TENSOR_AGGREGATES, TENSOR_TYPES, group_name, \
    is_tensor_counter, tensor_counter


DERIVED_PREFIX = "derived."


class Values(Protocol):
    """A formula's view of one side's launches: per launch, a metric's value (NaN where a launch lacks it), or
    None where no launch holds it; ``minimum`` is numpy's elementwise one."""

    def __call__(self, metric: str) -> Any: ...

    def minimum(self, a: Any, b: Any) -> Any: ...

    def where_finite(self, a: Any, b: Any) -> Any:
        """Per launch, ``a`` where it is finite, else ``b``."""

    def where(self, condition: Any, a: Any, b: Any) -> Any:
        """Per launch, ``a`` where ``condition`` holds, else ``b`` (numpy's ``where``)."""

    @property
    def declared_flops(self) -> float | None:
        """The useful work the test declares (``@pytest.mark.perfgate(flops=…)``, ``perfgate compare --flops``);
        None where none is."""


class DerivedMetric(NamedTuple):
    """One derived metric; ``perfgate.metrics`` makes its catalog entry (``MetricInfo``) from the first fields."""

    name: str
    label: str
    direction: str  # ``perfgate.metrics.Direction``'s value: lower, higher, neutral
    threshold: str  # the default threshold's spec (``5`` is 5 in the metric's unit; ``off``: shown, not gated)
    why: str
    time_like: bool  # jitters with the launch's duration: repeated launches judged as a sample
    unit: str
    inputs: tuple[str, ...]  # the counters ncu is asked for (``+roofline``), valid names on every CC since 7.0
    formula: Callable[[Values], Any]  # per launch, the value (NaN where it cannot be computed); None: no launch
    also_reads: tuple[str, ...] = ()  # other forms of them reports hold (ncu's sections'): read, never asked for


_SASS = "smsp__sass_thread_inst_executed_op_{}_pred_on"
# FLOP per thread instruction, as ncu's roofline sections weigh them (a packed half2 FMA is 4).
FLOP_PER_INSTRUCTION: dict[str, int] = {"fadd": 1, "fmul": 1, "ffma": 2, "dadd": 1, "dmul": 1, "dfma": 2,
                                        "hadd": 2, "hmul": 2, "hfma": 4}
FP32_OPS = ("fadd", "fmul", "ffma")
DURATION = "gpu__time_duration.sum"
SM_SUBPARTITION_CLOCK = "smsp__cycles_elapsed.avg.per_second"
SM_CLOCK = "sm__cycles_elapsed.avg.per_second"
FFMA_PEAK = "sm__sass_thread_inst_executed_op_ffma_pred_on.sum.peak_sustained"
DRAM_PEAK = "dram__bytes.sum.peak_sustained"
DRAM_CLOCK = "dram__cycles_elapsed.avg.per_second"
DRAM_READ, DRAM_WRITE, DRAM_BYTES = "dram__bytes_read.sum", "dram__bytes_write.sum", "dram__bytes.sum"
DRAM_RATE = "dram__bytes.sum.per_second"
NS_PER_S = 1e9
# Counted FLOP above this multiple of the declared useful work is a finding: redundant work (docs/roofline.md).
REDUNDANT_WORK_RATIO = 1.5


def _flop_per_s(values: Values) -> Any:
    """Achieved FLOP/s: from the counts over the duration where a launch has them, else from ncu's per-cycle
    rates times the SM sub-partitions' clock. The FP32 counters must be there; FP64 and FP16 add where held."""
    per_form = []
    for suffix, scale in ((".sum", None), (".sum.per_cycle_elapsed", SM_SUBPARTITION_CLOCK)):
        if any(values(_SASS.format(op) + suffix) is None for op in FP32_OPS):
            continue
        total: Any = 0.0
        for op, weight in FLOP_PER_INSTRUCTION.items():
            counter = values(_SASS.format(op) + suffix)
            if counter is not None:
                total = total + weight * counter
        over = values(DURATION) if scale is None else values(scale)
        if over is None:
            continue
        per_form.append(total / (over / NS_PER_S) if scale is None else total * over)
    return _first_finite(values, per_form)


def _dram_bytes_per_s(values: Values) -> Any:
    """DRAM bytes read and written per second: the byte counts over the duration, else ncu's own rate."""
    duration = values(DURATION)
    read, write, both, rate = values(DRAM_READ), values(DRAM_WRITE), values(DRAM_BYTES), values(DRAM_RATE)
    forms = []
    if duration is not None and read is not None and write is not None:
        forms.append((read + write) / (duration / NS_PER_S))
    if duration is not None and both is not None:
        forms.append(both / (duration / NS_PER_S))
    if rate is not None:
        forms.append(rate)
    return _first_finite(values, forms)


def _tensor_ops_per_s(values: Values, sparse: bool) -> Any:
    """Tensor-core operations per second, summed over the input types whose aggregate counters a launch's report
    holds (``perfgate.tensor_counters``): dense, each type's ``_sparsity_off`` aggregate where held, else its
    unsplit one; sparse, the ``_sparsity_on`` aggregates alone. The counts over the duration, else ncu's per-cycle
    rates times the SM clock (as its tensor roofline section draws them)."""
    names = [(kind + SPARSE,) for kind in SPARSE_TYPES] if sparse else [(kind + DENSE, kind) for kind in TENSOR_TYPES]
    per_form = []
    for suffix, scale in ((".sum", None), (".sum.per_cycle_elapsed", SM_CLOCK)):
        over = values(DURATION) if scale is None else values(scale)
        total: Any = None
        for forms in names:
            held = [found for found in (values(tensor_counter(name, suffix)) for name in forms) if found is not None]
            if not held or over is None:
                continue
            count = held[0] if len(held) == 1 else values.where_finite(held[0], held[1])
            total = count if total is None else total + count
        if total is not None:
            per_form.append(total / (over / NS_PER_S) if scale is None else total * over)
    return _first_finite(values, per_form)


def _first_finite(values: Values, forms: list[Any]) -> Any:
    """Per launch, the first form that has a finite value there (NaN where none has); None without any form."""
    if not forms:
        return None
    found = forms[0]
    for form in forms[1:]:
        found = values.where_finite(found, form)
    return found


def _product(values: Values, *names: str, factor: float = 1.0) -> Any:
    parts = [values(name) for name in names]
    if any(part is None for part in parts):
        return None
    result: Any = factor
    for part in parts:
        result = result * part
    return result


def _ratio(a: Any, b: Any) -> Any:
    return None if a is None or b is None else a / b


def _flop(values: Values) -> Any:
    """Counted FLOP of the launch: its FLOP/s over its duration (a region total's: its kernels', summed by
    ``perfgate.prepare.with_derived``)."""
    rate, duration = values("derived.flop_per_s"), values(DURATION)
    return None if rate is None or duration is None else rate * (duration / NS_PER_S)


def _declared_work(values: Values) -> Any:
    declared = values.declared_flops
    return None if declared is None else _ratio(values("derived.flop"), declared)


def _peak_flop_per_s(values: Values) -> Any:
    return _product(values, FFMA_PEAK, SM_CLOCK, factor=2.0)


def _peak_dram_bytes_per_s(values: Values) -> Any:
    return _product(values, DRAM_PEAK, DRAM_CLOCK)


def _intensity(values: Values) -> Any:
    return _ratio(values("derived.flop_per_s"), values("derived.dram_bytes_per_s"))


def _roofline_pct(values: Values) -> Any:
    """Achieved performance as a share of the roof at the launch's intensity, min(peak FLOP/s, intensity x peak DRAM
    B/s). Below the ridge, achieved FLOP/s over intensity x peak DRAM B/s is achieved DRAM B/s over its peak: the
    bandwidth share, which a launch that does no floating-point work (a copy, a fill: intensity 0, on the memory
    roof) has too, as the formula's limit when its FLOP go to 0. A launch that moves neither has none (NaN)."""
    achieved, moved = values("derived.flop_per_s"), values("derived.dram_bytes_per_s")
    peak, bandwidth = values("derived.peak_flop_per_s"), values("derived.peak_dram_bytes_per_s")
    if achieved is None or moved is None or peak is None or bandwidth is None:
        return None
    memory_bound = achieved * bandwidth < peak * moved  # intensity x bandwidth < peak, without dividing by 0
    share = values.where(memory_bound, moved / bandwidth, achieved / peak) * 100.0
    return values.where((achieved == 0) & (moved == 0), float("nan"), share)


def _ridge_ratio(values: Values) -> Any:
    """Intensity over the ridge point (peak FLOP/s / peak DRAM B/s): below 1 memory-bound, above compute-bound."""
    peak, bandwidth = values("derived.peak_flop_per_s"), values("derived.peak_dram_bytes_per_s")
    return _ratio(values("derived.arithmetic_intensity"), _ratio(peak, bandwidth))


_FLOP_INPUTS = tuple(_SASS.format(op) + ".sum" for op in FLOP_PER_INSTRUCTION)
_FLOP_SECTION_FORMS = (*(_SASS.format(op) + ".sum.per_cycle_elapsed" for op in FLOP_PER_INSTRUCTION),
                       SM_SUBPARTITION_CLOCK)
_RATE_INFO = ("Rates come from the launch's duration, so they jitter with it: judged as time is.")

# In order: a formula may read the derived metrics above it.
DERIVED: tuple[DerivedMetric, ...] = (
    DerivedMetric(
        "derived.flop_per_s", "FLOP/s", "higher", "off",
        "Achieved FP32 + FP64 + FP16 FLOP/s (non-tensor), from the SASS counters as ncu's roofline counts them. "
        + _RATE_INFO, True, "FLOP/s", (*_FLOP_INPUTS, DURATION), _flop_per_s, _FLOP_SECTION_FORMS),
    DerivedMetric(
        "derived.dram_bytes_per_s", "DRAM B/s", "neutral", "off",
        "DRAM bytes read and written per second: how hard the kernel drives device memory. " + _RATE_INFO,
        True, "byte/s", (DRAM_READ, DRAM_WRITE, DURATION), _dram_bytes_per_s, (DRAM_BYTES, DRAM_RATE)),
    DerivedMetric(
        "derived.arithmetic_intensity", "arithmetic intensity", "neutral", "off",
        "FLOP per DRAM byte: where the kernel sits on the roofline's x axis.", False, "FLOP/byte", (), _intensity),
    DerivedMetric(
        "derived.flop", "FLOP", "neutral", "off",
        "FLOP counted (FP32 + FP64 + FP16, non-tensor): the FLOP rate over the launch's duration; a region total's is "
        "its kernels' sum.", False, "FLOP", (), _flop),
    DerivedMetric(
        "derived.declared_work", "FLOP / declared", "neutral", "off",
        "Counted FLOP over the FLOP the test declares as its useful work (flops=, --flops): above "
        f"{REDUNDANT_WORK_RATIO:g} x it is a finding in the Why: redundant work.", False, "", (), _declared_work),
    DerivedMetric(
        "derived.peak_flop_per_s", "FP32 peak", "neutral", "off",
        "The device's FP32 roof at the clocks measured: 2 x the ffma peak rate x the SM clock.", False, "FLOP/s",
        (FFMA_PEAK, SM_CLOCK), _peak_flop_per_s),
    DerivedMetric(
        "derived.peak_dram_bytes_per_s", "DRAM peak", "neutral", "off",
        "The device's DRAM roof at the clocks measured: peak bytes per cycle x the DRAM clock.", False, "byte/s",
        (DRAM_PEAK, DRAM_CLOCK), _peak_dram_bytes_per_s),
    DerivedMetric(
        "derived.roofline_pct", "roofline %", "higher", "5",
        "Achieved FLOP/s as a share of the roof at the kernel's intensity. A bounded share is judged in "
        "percentage points: a fall of more than 5 points is a regression.", True, "%", (), _roofline_pct),
    DerivedMetric(
        "derived.ridge_ratio", "intensity / ridge", "neutral", "off",
        "Arithmetic intensity over the ridge point: below 1 the kernel is memory-bound, above 1 compute-bound; a "
        "crossing is a regime change, said in the why.", False, "", (), _ridge_ratio),
    DerivedMetric(
        "derived.tensor_ops_per_s", "tensor OP/s", "higher", "off",
        "Dense tensor-core operations per second, over the input types whose sm__ops_path_tensor_src_* aggregates "
        "the report holds (collect one compute capability's set with +tensor-ccXY). " + _RATE_INFO, True, "OP/s",
        (DURATION, SM_CLOCK), lambda values: _tensor_ops_per_s(values, sparse=False)),
    DerivedMetric(
        "derived.sparse_tensor_ops_per_s", "sparse tensor OP/s", "higher", "off",
        "Sparse tensor-core operations per second (the _sparsity_on aggregates), apart from the dense: a sparse "
        "operation is not a dense one. " + _RATE_INFO, True, "OP/s", (DURATION, SM_CLOCK),
        lambda values: _tensor_ops_per_s(values, sparse=True)),
)
DERIVED_BY_NAME: dict[str, DerivedMetric] = {d.name: d for d in DERIVED}

TENSOR_METRICS = ("derived.tensor_ops_per_s", "derived.sparse_tensor_ops_per_s")
# Metric groups: a name that stands for several (``--perfgate-metrics=+roofline``, ``metrics = ["roofline"]``).
METRIC_GROUPS: dict[str, tuple[str, ...]] = {
    "roofline": ("derived.roofline_pct", "derived.flop_per_s", "derived.dram_bytes_per_s",
                 "derived.arithmetic_intensity", "derived.ridge_ratio", "derived.peak_flop_per_s",
                 "derived.peak_dram_bytes_per_s"),
    # One compute capability's tensor aggregates (never asked by +roofline: ncu fails on a name its device lacks)
    # and the rates made of them.
    **{group_name(capability): (*TENSOR_METRICS, *(tensor_counter(name) for name in names))
       for capability, names in TENSOR_AGGREGATES.items()},
}
# What a declared useful work compares: the counted FLOP and its ratio to the declaration.
DECLARED_WORK_METRICS = ("derived.flop", "derived.declared_work")
# Shares judged and shown in percentage points, not percent.
POINT_METRICS = frozenset({"derived.roofline_pct"})


def is_derived(metric: str) -> bool:
    return metric.startswith(DERIVED_PREFIX)


def expand_groups(names: tuple[str, ...] | list[str]) -> tuple[str, ...]:
    """``names`` with each group name replaced by its metrics, in order, each once; the tensor rates added where a
    tensor aggregate counter is among them (a user who collects those gets the rates)."""
    out: list[str] = []
    for name in names:
        out.extend(METRIC_GROUPS.get(name, (name,)))
    if any(is_tensor_counter(name) for name in out):
        out.extend(TENSOR_METRICS)
    return tuple(dict.fromkeys(out))


def derived_inputs(metrics: tuple[str, ...] | list[str]) -> tuple[str, ...]:
    """The raw counters the derived metrics among ``metrics`` read, those of the derived metrics they read too."""
    wanted = [m for m in metrics if m in DERIVED_BY_NAME]
    if not wanted:
        return ()
    # A roofline metric reads those above it in the table: their inputs are needed as well. The tensor rates
    # read no other, so asking for them alone asks ncu for no roofline counter.
    roofline = [i for i, d in enumerate(DERIVED) if d.name in wanted and d.name not in TENSOR_METRICS]
    rows = [*(DERIVED[:max(roofline) + 1] if roofline else ()), *(DERIVED_BY_NAME[m] for m in TENSOR_METRICS
                                                                 if m in wanted)]
    names: list[str] = []
    for derived in rows:
        names.extend((*derived.inputs, *derived.also_reads))
    return tuple(dict.fromkeys(names))


# Input forms read where a report holds them but never asked of ncu (``plugin.ncu_run.profiling_metrics``).
READ_ONLY_INPUTS = frozenset(name for derived in DERIVED for name in derived.also_reads)


def read_forms(asked: tuple[str, ...] | list[str]) -> tuple[str, ...]:
    """What to keep of a report from an ncu run asked for ``asked``: those, and where the FLOP counters are among
    them (``+roofline``, a declared ``flops=``), the other forms of the derived metrics' inputs that ncu's roofline
    sections collect (a run with ``--section SpeedOfLight_RooflineChart``, or a report made by them)."""
    if not any(name in _FLOP_INPUTS for name in asked):
        return tuple(asked)
    return tuple(dict.fromkeys([*asked, *sorted(READ_ONLY_INPUTS)]))
