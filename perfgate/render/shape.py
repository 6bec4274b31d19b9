"""A compared report in the one in-memory shape every renderer reads (:class:`ComparedReport`).

The report (a fresh one from ``build_report``, a view ``build_view`` made, or one read back from JSON with
``load_report``) is wrapped once; what the formats read of it beside its own tables is made once from it, at first
use, and shared: its results as :class:`ResultArrays`, each launch's kernel (``launch_groups``), the kernel rows
(:class:`KernelRows`), the notes a human format lists and the counts by status it lists. Text, Markdown, HTML and
JSON take this object (or a report, which they wrap), so a report read back renders exactly like a fresh one.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Any

from perfgate.render.common import unmeasured_notes
from perfgate.render.kernels import KernelRows, kernels_of, launch_groups
from perfgate.render.result_arrays import ResultArrays
from perfgate.report import ReportView, listed_summary


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


def compared(report: ReportView | ComparedReport) -> ComparedReport:
    """``report`` in the shape the renderers read; the object itself when it is one already."""
    return report if isinstance(report, ComparedReport) else ComparedReport(report)


__all__ = ["ComparedReport", "compared"]
