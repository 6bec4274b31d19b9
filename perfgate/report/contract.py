"""The report contract, declared once: its tables' columns (the type and meaning of each), its fields, its
limits, and the verdict a report allows.

The JSON Schema ``perfgate/schemas/report-v2.schema.json`` is made from these declarations
(:func:`perfgate.report.schema.report_schema`; a test asserts the shipped file is its output), the reader
(``validate``) checks a report against them, and the TypedDicts below give the same shape to mypy (a test
asserts they agree).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any, Iterable, Optional, Sequence, TypedDict, cast

from perfgate.version import __version__
from perfgate.errors import InputError
from perfgate.limits import MAX_FINDINGS
from perfgate.verdict import COMPARED_STATUSES as COMPARED_STATUSES
from perfgate.verdict import compared_launches as compared_launches
from perfgate.verdict import verdict_of as verdict_of
from perfgate.vocabulary import KINDS, STATUS_ORDER, Status, Verdict

FORMAT_NAME = "perfgate-report"
FORMAT_VERSION = 2
READ_VERSIONS = (1, 2)

# What an untrusted report may hold: a crafted artifact must not exhaust the publishing job.
MAX_REPORT_BYTES = 256 * 1024 * 1024
MAX_ROWS = 4_000_000
UNMEASURED_LIMIT = 10_000  # entries of "unmeasured" read from a report

STATUSES = tuple(s.value for s in STATUS_ORDER)
LAUNCH_STATUSES = tuple(s.value for s in STATUS_ORDER if s is not Status.INFO)  # "info" is a metric row's only
VERDICTS = tuple(v.value for v in Verdict)

# The kinds of column, each with the words the reader's error line uses for it.
COLUMN_KINDS = {
    "str": "a string",
    "str?": "a string or null",
    "int": "an integer",
    "int?": "an integer or null",
    "row": "a row number of another table",  # an integer >= 0; the reader checks that the row exists
    "number?": "a number or null",  # finite: JSON has no NaN or infinity
    "bool?": "true, false or null",
    "strs?": f"a list of at most {MAX_FINDINGS} short strings, or null",
}


@dataclass(frozen=True)
class Column:
    """One column of a report table: the kind of its values, what they mean, and the values it allows (a
    string column whose ``values`` is empty takes any string)."""

    kind: str
    about: str
    values: tuple[str, ...] = ()


# ---------------------------------------------------------------- the tables

LAUNCHES: dict[str, Column] = {
    "kind": Column("str?", "What was measured.", KINDS),
    "kernel": Column("str", "The kernel's function name, the benchmark's full name, or the region's name."),
    "demangled": Column("str?", "The kernel's demangled name, when known."),
    "region": Column("str?", "The NVTX push/pop range stack around the launch, outermost first, joined by ' > '; "
                             "'' when none."),
    "ordinal": Column("int", "0-based index among the launches of the same kernel in the same region."),
    "status": Column("str", "The launch's status: the worst of its gated metrics'. Launches come worst first.",
                     LAUNCH_STATUSES),
    "device": Column("str?", "The GPU (or, for a benchmark, the machine) it ran on."),
    "launch_change": Column("str?", "A change of the launch's grid or block between the sides ('' or null: none)."),
    "test": Column("str?", "The pytest node id of the test it belongs to; null for a report compared by hand."),
    "path": Column("str?", "The test's source file, for annotations."),
    "line": Column("int?", "The test's line in that file."),
}
# Added within version 2 (a report without them reads as all null): the kernel's name in the baseline when a
# rename rule paired it, its repeated-launch group, the Nsight Compute rule findings that appeared or
# disappeared (null: not known, because a side carries no rule results), its code, and its launch configuration.
OPTIONAL_LAUNCHES: dict[str, Column] = {
    "baseline_kernel": Column("str?", "The kernel's name in the baseline when a rename rule paired it with another "
                                      "name (shown 'old → new'); else null."),
    "group": Column("int?", "The repeated-launch group the launch was judged in, as one sample (rows of 'groups' "
                            "name it); null when judged alone. Ids are per report: merge renumbers them."),
    "findings_appeared": Column("strs?", "Nsight Compute rule findings ('Rule: Title') the current side has and the "
                                         "baseline has not; null when not known (a side carries no rule results)."),
    "findings_gone": Column("strs?", "Nsight Compute rule findings the baseline has and the current side has not; "
                                     "null when not known."),
    "code_id": Column("str?", "A hash of the kernel's machine code in the current run (its SASS, addresses relative "
                              "to the function's start; never its name); null when not known (read with --code-identity "
                              "from .ncu-rep files and from the codes file beside a trace)."),
    "baseline_code_id": Column("str?", "The same hash of the kernel's machine code in the baseline; null when not "
                                       "known."),
    "code_why": Column("str?", "What the code says about the change: 'same code ... judged unchanged' (its timing "
                               "metrics cannot regress), or 'code changed' with the instruction mix's largest "
                               "changes; null when not known."),
    "grid": Column("str?", "The kernel's grid size, '(x, y, z)', in the current run (the baseline's for a missing "
                           "launch); null when not known. With 'block', what the history keys a kernel's series by."),
    "block": Column("str?", "The kernel's block size, '(x, y, z)', as 'grid'; null when not known."),
}
METRICS: dict[str, Column] = {
    "metric": Column("str", "The metric's name (an ncu metric, or a pytest-benchmark statistic like 'time.min')."),
    "label": Column("str?", "Its name for people."),
    "unit": Column("str?", "The unit its values are in."),
    "threshold": Column("str?", "The limit a change must pass to count ('5%+2000'); null when not gated."),
    "direction": Column("str?", "Which way is better: 'lower' or 'higher'."),
}
RESULTS: dict[str, Column] = {
    "launch": Column("row", "The row of 'launches' this result belongs to; results are grouped by launch, in "
                            "launch order."),
    "metric": Column("row", "The row of 'metrics' it measures."),
    "baseline": Column("number?", "The baseline's value, in the metric's unit; null when that side has none."),
    "current": Column("number?", "The current value; null when that side has none."),
    "change": Column("number?", "(current - baseline) / baseline: 0.05 is +5%; null when it cannot be computed "
                                "(no data, or a zero baseline)."),
    "delta": Column("number?", "current - baseline."),
    "status": Column("str", "The metric's status ('info': shown to explain, not gated).", STATUSES),
    "gated": Column("bool?", "Whether this metric can fail the gate."),
}
# One row per (repeated-launch group, time-like metric) judged as one sample; added within version 2.
GROUPS: dict[str, Column] = {
    "group": Column("int", "The group, as the launches' 'group' column names it."),
    "metric": Column("row", "The row of 'metrics' judged."),
    "n_baseline": Column("int", "How many baseline launches the group holds."),
    "n_current": Column("int", "How many current launches the group holds."),
    "median_baseline": Column("number?", "The median of the baseline launches' values."),
    "median_current": Column("number?", "The median of the current launches' values."),
    "estimate": Column("number?", "The relative change (0.05 is +5%) the Hodges-Lehmann shift between the sides "
                                  "gives."),
    "ci_low": Column("number?", "The low end of the change's 95% confidence interval."),
    "ci_high": Column("number?", "The high end of the change's 95% confidence interval."),
}
TABLES: dict[str, dict[str, Column]] = {"launches": LAUNCHES, "metrics": METRICS, "results": RESULTS,
                                        "groups": GROUPS}

LAUNCH_COLUMNS = tuple(LAUNCHES)
OPTIONAL_LAUNCH_COLUMNS = tuple(OPTIONAL_LAUNCHES)
METRIC_COLUMNS = tuple(METRICS)
RESULT_COLUMNS = tuple(RESULTS)
GROUP_COLUMNS = tuple(GROUPS)
# The per-result fields of a v1 result row (the rest comes from its launch and its metric).
RESULT_VALUES = ("baseline", "current", "change", "delta", "status", "gated")
# The launch facts a v1 result row repeats.
ROW_LAUNCH_FIELDS = ("kind", "kernel", "demangled", "region", "ordinal", "device", "test", "path", "line")

# The report's fields in the order perfgate writes them; "unmeasured" and "groups" were added within version 2
# (a report without them reads as empty).
REPORT_FIELDS = ("format", "version", "generator", "verdict", "summary", "comparisons", "launches", "metrics",
                 "results", "notes", "unmeasured", "groups")
OPTIONAL_REPORT_FIELDS = ("unmeasured", "groups")
# An entry of "unmeasured": a perf test (or one launch of it) that could not be measured, and why.
UNMEASURED_FIELDS = {"test": "The perf test's pytest node id.", "cause": "Why it could not be measured.",
                     "launch": "The launch that could not be judged, when one of the test's was (optional)."}


# ---------------------------------------------------------------- the shape, for mypy

class ComparisonInfo(TypedDict):
    """One comparison the report holds (a merged report holds several)."""

    baseline: Optional[str]
    current: Optional[str]
    baseline_devices: list[str]
    current_devices: list[str]
    settings: dict[str, Any]
    test: Optional[str]


class LaunchTable(TypedDict, total=False):
    kind: list[Optional[str]]
    kernel: list[str]
    demangled: list[Optional[str]]
    region: list[Optional[str]]
    ordinal: list[int]
    status: list[str]
    device: list[Optional[str]]
    launch_change: list[Optional[str]]
    test: list[Optional[str]]
    path: list[Optional[str]]
    line: list[Optional[int]]
    baseline_kernel: list[Optional[str]]
    group: list[Optional[int]]
    findings_appeared: list[Optional[list[str]]]
    findings_gone: list[Optional[list[str]]]
    code_id: list[Optional[str]]
    baseline_code_id: list[Optional[str]]
    code_why: list[Optional[str]]
    grid: list[Optional[str]]
    block: list[Optional[str]]


class MetricTable(TypedDict):
    metric: list[str]
    label: list[Optional[str]]
    unit: list[Optional[str]]
    threshold: list[Optional[str]]
    direction: list[Optional[str]]


class ResultTable(TypedDict):
    launch: list[int]
    metric: list[int]
    baseline: list[Optional[float]]
    current: list[Optional[float]]
    change: list[Optional[float]]
    delta: list[Optional[float]]
    status: list[str]
    gated: list[Optional[bool]]


class GroupTable(TypedDict):
    group: list[int]
    metric: list[int]
    n_baseline: list[int]
    n_current: list[int]
    median_baseline: list[Optional[float]]
    median_current: list[Optional[float]]
    estimate: list[Optional[float]]
    ci_low: list[Optional[float]]
    ci_high: list[Optional[float]]


class ReportView(TypedDict):
    """What the human formats read of a report: its tables, notes and verdict without the file format's fields
    ("format", "version", "generator"); every ``Report`` is one."""

    verdict: str
    summary: dict[str, int]
    comparisons: list[ComparisonInfo]
    launches: LaunchTable
    metrics: MetricTable
    results: ResultTable
    notes: list[str]
    unmeasured: list[dict[str, str]]  # each {"test", "cause"[, "launch"]} (UNMEASURED_FIELDS)
    groups: GroupTable


class Report(ReportView):
    """A report that keeps the contract: what ``perfgate compare --format json`` and ``pytest --perfgate`` write,
    what ``load_report`` returns (checked, as version 2), and what ``merge_reports`` makes: a view with its file
    format's name, version and generator."""

    format: str
    version: int
    generator: Optional[str]


def empty_columns(names: Sequence[str]) -> dict[str, list[Any]]:
    return {name: [] for name in names}


def empty_report(notes: Iterable[str] = ()) -> Report:
    """A report of nothing: its verdict is "not measured", never "pass"."""
    return {"format": FORMAT_NAME, "version": FORMAT_VERSION, "generator": f"perfgate {__version__}",
            "verdict": Verdict.NOT_MEASURED.value, "summary": summarize([]), "comparisons": [],
            "launches": cast(LaunchTable, empty_columns((*LAUNCH_COLUMNS, *OPTIONAL_LAUNCH_COLUMNS))),
            "metrics": cast(MetricTable, empty_columns(METRIC_COLUMNS)),
            "results": cast(ResultTable, empty_columns(RESULT_COLUMNS)),
            "notes": list(notes), "unmeasured": [], "groups": cast(GroupTable, empty_columns(GROUP_COLUMNS))}


def summarize(statuses: Iterable[str]) -> dict[str, int]:
    """Launches counted by status, every launch status present (0 when none)."""
    found = Counter(statuses)
    return {status: found.get(status, 0) for status in LAUNCH_STATUSES}


def refuse(source: str, message: str, hint: str = "") -> InputError:
    """The error for a report that breaks the contract."""
    return InputError(source, message, hint) if hint else InputError(source, message)

