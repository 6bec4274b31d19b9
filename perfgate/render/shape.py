"""A compared report in the one in-memory shape every renderer reads (:class:`ComparedReport`).

The report (a fresh one from ``build_report``, its results as lists or as numpy arrays, or one read back from JSON
with ``load_report``) is wrapped once; what the formats read of it beside its own tables is made once from it, at
first use, and shared: its results as :class:`ResultArrays`, each launch's kernel (``launch_groups``), the kernel
rows (:class:`KernelRows`), a listed launch's rows (:meth:`ComparedReport.launch`), the notes a human format lists
and the counts by status it lists. Text, Markdown, HTML and JSON take this object (or a report, which they wrap),
so a report read back renders exactly like a fresh one.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from perfgate.render.common import Shown, unmeasured_notes
from perfgate.render.kernels import KernelRows, kernels_of, launch_groups
from perfgate.render.result_arrays import ResultArrays
from perfgate.report import ReportView, launch_row, listed_summary, result_span
from perfgate.report.contract import METRIC_COLUMNS, RESULT_VALUES, ROW_LAUNCH_FIELDS

_FLOAT_VALUES = frozenset(("baseline", "current", "change", "delta"))


@dataclass(frozen=True, eq=False)
class ComparedReport:
    """A report and what every renderer reads of it, each made once (at first use: the terminal's text of a view
    reads none of the arrays). Frozen: a renderer reads it, never changes it."""

    report: ReportView

    @cached_property
    def arrays(self) -> ResultArrays | None:
        """The results as arrays; None for a report without launches."""
        return ResultArrays(self.report) if self.report["launches"]["status"] else None

    @cached_property
    def groups(self) -> Any:
        """Each launch's kernel (:func:`launch_groups`); None for a report without launches."""
        return launch_groups(self.report) if self.arrays is not None else None

    @cached_property
    def kernels(self) -> KernelRows:
        """The report's kernels, each summarized over its launches (a row per kernel)."""
        groups = self.groups
        return KernelRows(self.report, kernels_of(self.report, groups) if groups is not None else None, self.arrays)

    @cached_property
    def unmeasured(self) -> list[str]:
        """The gated values one side lacks, as note lines (:func:`unmeasured_notes`)."""
        return unmeasured_notes(self.report)

    @cached_property
    def notes(self) -> list[str]:
        """The notes a human format lists: what was not measured, then the report's own."""
        return [*self.unmeasured, *self.report["notes"]]

    @cached_property
    def summary(self) -> dict[str, int]:
        """Launch counts by status as the human formats list them (:func:`listed_summary`)."""
        return listed_summary(self.report)

    def launch(self, index: int) -> Shown:
        """Launch ``index`` as a human format lists it: its launch row and its result rows (v1-shaped), their values
        as a report read back holds them (None for NaN and ±inf) whether its results are lists or numpy arrays. Reads
        that launch's rows only (found by bisection): the terminal lists 50 of 500,000 launches."""
        report = self.report
        start, stop = result_span(report, index)
        results: Any = report["results"]
        values = {name: _listed(results[name][start:stop], name in _FLOAT_VALUES) for name in RESULT_VALUES}
        launch = launch_row(report, index)
        facts = {name: launch[name] for name in ROW_LAUNCH_FIELDS}
        metrics: Any = report["metrics"]
        rows = [{**facts, **{name: metrics[name][code] for name in METRIC_COLUMNS},
                 **{name: values[name][at] for name in RESULT_VALUES}}
                for at, code in enumerate(_listed(results["metric"][start:stop], False))]
        return Shown(index, launch, rows)


def _listed(values: Any, floats: bool) -> list[Any]:
    """A slice of a results column as the report's lists hold it: a numpy slice as Python values, a float one with
    NaN and ±inf as None (JSON has neither)."""
    if not hasattr(values, "tolist"):
        return list(values)
    listed: list[Any] = values.tolist()
    return [value if value is None or math.isfinite(value) else None for value in listed] if floats else listed


def compared(report: ReportView | ComparedReport) -> ComparedReport:
    """``report`` in the shape the renderers read; the object itself when it is one already."""
    return report if isinstance(report, ComparedReport) else ComparedReport(report)


__all__ = ["ComparedReport", "compared"]
