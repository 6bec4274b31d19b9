"""Tensor-core operation counters per compute capability: the aggregate ``sm__ops_path_tensor_src_*`` counters, one
per input type, from which Nsight Compute's tensor roofline section draws a kernel's tensor work
(``SpeedOfLight_HierarchicalTensorRooflineChart.section``: its rooflines' achieved work is
``<aggregate>.sum.per_cycle_elapsed`` x ``sm__cycles_elapsed.avg.per_second``, and its metrics table lists each
aggregate with the ``.sum`` and ``.sum.per_cycle_elapsed`` suffixes; the names below are that file's, ncu 2025.x,
one block per architecture). The per-instruction ``sm__ops_path_tensor_op_*`` breakdown the same file lists beside
them counts the same operations again, so it is never read.

The names come from the section file, not from a device: no report perfgate was tested on holds them, so
``perfgate.derived`` computes the tensor rates only where a report holds them, and the ``tensor-ccXY`` groups,
which ask ncu for one compute capability's set, are opt-in (``docs/roofline.md``). Stdlib only.
"""

from __future__ import annotations

TENSOR_PREFIX = "sm__ops_path_tensor_src_"
SPARSE, DENSE = "_sparsity_on", "_sparsity_off"


def _split(*types: str) -> tuple[str, ...]:
    """Each input type's dense and sparse aggregates (the section's ``_sparsity_off`` / ``_sparsity_on`` pair)."""
    return tuple(name for kind in types for name in (kind + DENSE, kind + SPARSE))


_AMPERE = ("src_fp64", "src_int1", *_split("src_bf16_dst_fp32", "src_fp16_dst_fp16", "src_fp16_dst_fp32",
                                           "src_int4", "src_int8", "src_tf32_dst_fp32"))
_BLACKWELL = ("src_bf16_dst_fp32", "src_fp16_dst_fp16", "src_fp16_dst_fp32", "src_fp4_dst_fp32", "src_fp64",
              "src_int8", "src_tf32_dst_fp32")
_BLACKWELL_12 = ("src_bf16_dst_fp32", "src_fp16_dst_fp16", "src_fp16_dst_fp32", "src_fp64", "src_int8",
                 "src_tf32_dst_fp32", *_split("src_fp4_dst_fp32", "src_fp4_fp6_dst_fp16", "src_fp4_fp6_dst_fp32",
                                              "src_fp8_dst_fp16", "src_fp8_dst_fp32"))

# Compute capability -> its aggregates, without the ``sm__ops_path_tensor_`` prefix (the section's block names:
# TU10x, GA100, GA10x, GA10y, AD10x, GH100, GB100, GB11x, GB10b, GB20x, GB20y).
TENSOR_AGGREGATES: dict[str, tuple[str, ...]] = {
    "7.5": ("src_fp16_bf16_tf32_dst_fp32", "src_fp16_dst_fp16", "src_int1", "src_int4", "src_int8"),
    "8.0": _AMPERE,
    "8.6": _AMPERE,
    "8.7": _AMPERE,
    "8.9": (*_AMPERE, *_split("src_fp8")),
    "9.0": ("src_bf16_dst_fp32", "src_fp16", "src_fp64", "src_int1", "src_int8", "src_tf32_dst_fp32",
            *_split("src_fp8")),
    "10.0": (*_BLACKWELL, "src_fp4_fp6_fp8_dst_fp16", "src_fp4_fp6_fp8_dst_fp32"),
    "10.3": (*_BLACKWELL, "src_fp4_fp6_dst_fp16", "src_fp4_fp6_dst_fp32"),
    "11.0": (*_BLACKWELL, "src_fp4_fp6_fp8_dst_fp16", "src_fp4_fp6_fp8_dst_fp32"),
    "12.0": _BLACKWELL_12,
    "12.1": _BLACKWELL_12,
}


def _input_type(aggregate: str) -> str:
    for suffix in (DENSE, SPARSE):
        if aggregate.endswith(suffix):
            return aggregate[:-len(suffix)]
    return aggregate


# Every input type of any compute capability, and those with a sparse aggregate of their own.
TENSOR_TYPES: tuple[str, ...] = tuple(sorted({_input_type(a) for names in TENSOR_AGGREGATES.values() for a in names}))
SPARSE_TYPES: tuple[str, ...] = tuple(sorted({_input_type(a) for names in TENSOR_AGGREGATES.values()
                                              for a in names if a.endswith(SPARSE)}))


def tensor_counter(aggregate: str, suffix: str = ".sum") -> str:
    """The full counter name of an aggregate (``src_fp16_dst_fp32_sparsity_off``) in one form (``.sum``)."""
    return "sm__ops_path_tensor_" + aggregate + suffix


def is_tensor_counter(metric: str) -> bool:
    """Whether ``metric`` is a tensor aggregate counter (any form), never the per-instruction breakdown."""
    return metric.startswith(TENSOR_PREFIX)


def group_name(capability: str) -> str:
    """The metric group asking ncu for one compute capability's aggregates: ``9.0`` -> ``tensor-cc90``."""
    return "tensor-cc" + capability.replace(".", "")
