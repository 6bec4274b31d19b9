"""The gate: one measurement against the baselines stored for it, per GPU; no pytest.

Both shells use it: ``pytest --perfgate`` for each perf test or benchmark, and ``perfgate compare
BASELINES_DIR CURRENT`` by hand. For every GPU (or CPU) in the measurement it reads
``<baselines>/<device slug>/<name>.json``, compares, and, when updating, writes the new baseline.
The outcome says what happened on every device; the worst of them decides (a regression on one GPU
is not hidden by a missing baseline on another).
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from perfgate.baseline import (
    baseline_documents,
    baseline_file,
    file_stem,
    save_baselines,
)
from perfgate.collect.baseline_json import read_baseline
from perfgate.carried import carried_lines, carried_regressions, with_carried
from perfgate.carried_item import AcceptanceCheck
from perfgate.compare import CompareOptions, Comparison, compare_tables
from perfgate.errors import PerfgateError
from perfgate.limits import parse_json_or_none
from perfgate.render import render_text
from perfgate.report import Report, build_report, merge_reports
from perfgate.table import Measurement, device_label, devices, empty_table
from perfgate.verdict import GateStatus, gated_verdict, worst_gate_status

# The side to compare with, from the stored baseline (an empty table where there is none) and the current run;
# and notes saying where it came from.
Reference = Callable[[Measurement, Measurement], tuple[Measurement, list[str]]]

_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


def baseline_name(test_id: str) -> str:
    """File name (no extension) of a test's baseline: ``tests/gpu/test_x.py::test_y[a]`` ->
    ``tests.gpu.test_x__test_y_a``. The path part avoids clashes between same-named files; ids
    with characters a file name cannot keep get a short hash of the test id."""
    path, _, rest = test_id.partition("::")
    stem = path.removesuffix(".py")
    raw = stem.replace("/", ".") + "__" + rest.replace("::", ".")
    name = _UNSAFE.sub("_", raw).strip("._") or "baseline"
    digest = hashlib.sha1(test_id.encode()).hexdigest()
    if _UNSAFE.search(raw.replace("[", "").replace("]", "")):
        name += "-" + digest[:8]  # parameter ids like [α] and [β] would otherwise share one file
    if len(name) > 150:  # stay far below file-name limits; the hash keeps long ids distinct
        name = name[:130].rstrip("._") + "-" + digest[:12]
    return name


def own_name(directory: Path, name: str, test: str | None) -> str:
    """The baseline name of ``test``: ``name`` (``baseline_name(test)``), unless a baseline of that name
    records another test as its source (``test_y[.]``, ``test_y[..]`` and ``test_y`` all read ``..._test_y``):
    then ``name`` and a hash of the test id. The first test to write a name keeps it; each other gets its own."""
    if not test:
        return name
    for file in directory.glob(f"*/{file_stem(name)}.json"):
        try:
            document = parse_json_or_none(file.read_bytes())
        except OSError:
            continue  # unreadable: read_baseline says why, once it is this test's
        source = document.get("source") if isinstance(document, dict) else None
        if isinstance(source, str) and "::" in source and source != test:
            return f"{name}-{hashlib.sha1(test.encode()).hexdigest()[:12]}"
    return name


@dataclass(frozen=True)
class Where:
    """Who the measurement belongs to: shown in the report and in its notes."""

    name: str  # the baseline file name (see baseline_name)
    test: str | None = None  # pytest node id; None for a report compared by hand
    path: str | None = None  # source file of the test, for annotations
    line: int | None = None


@dataclass(frozen=True)
class GateResult:
    report: Report  # merged over the devices
    status: GateStatus  # the worst over the devices
    regressions: list[str] = field(default_factory=list)  # the text diff of each regressed device
    problems: list[str] = field(default_factory=list)  # what else fails the gate (strict: a missing baseline)
    written: list[Path] = field(default_factory=list)
    missing: list[Path] = field(default_factory=list)  # baseline files looked for and not found
    found: int = 0  # devices that had a baseline

    @property
    def failed(self) -> bool:
        return bool(self.regressions or self.problems)


def _settings_note(who: str, before: Mapping[str, Any], current: Mapping[str, Any]) -> str | None:
    changed = [f"{k} {before[k]!r} → {current[k]!r}" for k in ("clock_control", "cache_control")
               if k in before and k in current and before[k] != current[k]]
    if not changed:
        return None
    return f"{who}: measured with different ncu settings than the baseline ({'; '.join(changed)}): numbers may " \
           "not be comparable"


def gate(current: Measurement, *, baselines: Path, where: Where, options: CompareOptions,
         settings: Mapping[str, Any], update: bool = False, strict: bool = False, notes: Sequence[str] = (),
         shown: Callable[[Path], str] = str, update_hint: str = "perfgate baseline",
         strict_flag: str = "--strict", reference: Reference | None = None,
         acceptances: AcceptanceCheck | None = None) -> GateResult:
    """Compare ``current`` with its stored baseline on each of its devices; with ``update``, store it.
    ``reference`` (not when updating) turns the stored baseline, or its absence, into the side compared with
    (``perfgate.history.reference``: the base branch's recent runs) and gives its notes. An update that carries
    a regression says so (``perfgate.carried``), with who accepted it when ``acceptances`` is given.

    Raises PerfgateError for an unreadable baseline or a comparison that cannot be made.
    """
    run = _Run(baselines=baselines, where=where, name=own_name(baselines, where.name, where.test), options=options,
               settings=settings, update=update, strict=strict, notes=notes, shown=shown, update_hint=update_hint,
               strict_flag=strict_flag, reference=reference, acceptances=acceptances)
    found = _Found()
    table = current.table
    for device, cc in devices(table):
        _gate_device(run, current.with_table(table[(table["device"] == device) & (table["cc"] == cc)]), device, cc,
                     found)
    merged = merge_reports(found.reports) if len(found.reports) != 1 else found.reports[0]
    return GateResult(report=merged, status=worst_gate_status(found.statuses), regressions=found.regressions,
                      problems=found.problems, written=found.written, missing=found.missing,
                      found=len(found.statuses) - len(found.missing))


@dataclass(frozen=True)
class _Run:
    """What one ``gate`` call asked for (its arguments), the same for each device."""

    baselines: Path
    where: Where
    name: str  # the baseline file name: own_name's
    options: CompareOptions
    settings: Mapping[str, Any]
    update: bool
    strict: bool
    notes: Sequence[str]
    shown: Callable[[Path], str]
    update_hint: str
    strict_flag: str
    reference: Reference | None
    acceptances: AcceptanceCheck | None

    @property
    def who(self) -> str:
        return self.where.test or self.where.name


@dataclass
class _Found:
    """What the devices gated so far came to: their reports and gate statuses, and what ``GateResult`` lists."""

    reports: list[Report] = field(default_factory=list)
    statuses: list[GateStatus] = field(default_factory=list)
    regressions: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    written: list[Path] = field(default_factory=list)
    missing: list[Path] = field(default_factory=list)


def _gate_device(run: _Run, current: Measurement, device: str, cc: str, found: _Found) -> None:
    """Gate the launches of one device against its baseline file; the outcome goes to ``found``."""
    file = baseline_file(run.baselines, (device, cc), run.name)
    notes = list(run.notes)
    baseline = _stored_baseline(run, file, notes)
    if run.reference is not None and not run.update:
        baseline, referred = run.reference(baseline, current)
        notes.extend(referred)
    status = GateStatus.UPDATED if run.update else GateStatus.COMPARED
    if not file.is_file() and (run.update or baseline.table.empty):
        found.missing.append(file)
        if not run.update:
            status = GateStatus.NEW
            where = f"{device_label(device, cc)} at {run.shown(file)}"
            notes.append(f"{run.who}: no baseline for {where}: reported as new (create it with {run.update_hint})")
            if run.strict:
                found.problems.append(f"no baseline for {where} ({run.strict_flag}); create it with {run.update_hint}")
    comparison = _compared(baseline, current, run.options, run.update, run.who, notes)
    if run.update:
        found.written.extend(_write_baseline(run, current, comparison, device, notes))
    elif run.strict and comparison.unmeasured:
        found.problems.append(_unmeasured_problem(comparison.unmeasured, run.strict_flag))
    report = build_report(comparison, test=run.where.test, path=run.where.path, line=run.where.line, notes=notes)
    found.statuses.append(_judge(report, comparison.regressed, status, run.update, bool(found.problems),
                                 found.regressions))
    found.reports.append(report)


def _stored_baseline(run: _Run, file: Path, notes: list[str]) -> Measurement:
    """The baseline stored in ``file`` (an empty one where there is none); an update replaces an unreadable one
    (it is what the update is for), and ``notes`` says so, or that it was measured with other ncu settings."""
    empty = Measurement(empty_table(), source=run.shown(file))
    if not file.is_file():
        return empty
    try:
        baseline = read_baseline(file)._replace(source=run.shown(file))
    except PerfgateError as exc:
        if not run.update:
            raise
        notes.append(f"{run.who}: the baseline at {run.shown(file)} could not be read ({exc}): replaced")
        return empty
    note = _settings_note(run.who, baseline.settings, run.settings)
    if note:
        notes.append(note)
    return baseline


def _write_baseline(run: _Run, current: Measurement, comparison: Comparison, device: str,
                    notes: list[str]) -> list[Path]:
    """Store ``current`` as the device's baseline, with the regressions it carries (and who accepted them)."""
    # The compared metrics and launch facts, not the identity attributes ncu was asked for.
    documents = baseline_documents(current, run.options.wanted_metrics(), settings=dict(run.settings),
                                   source=run.who)
    carried = carried_regressions(comparison)
    if carried and run.acceptances is not None:
        carried = run.acceptances(carried, device)
    documents = {key: with_carried(document, carried) for key, document in documents.items()}
    notes.extend(carried_lines(carried, run.who, run.acceptances is not None))
    paths = save_baselines(documents, run.baselines, run.name)
    notes.append(f"{run.who}: baseline written to {', '.join(run.shown(p) for p in paths)}")
    return paths


def _compared(baseline: Measurement, current: Measurement, options: CompareOptions, update: bool, who: str,
              notes: list[str]) -> Comparison:
    """The comparison with the stored baseline; when updating, one the baseline cannot give is made against
    nothing (every kernel renamed, say: the new baseline replaces it), and ``notes`` says so."""
    try:
        return compare_tables(baseline, current, options)
    except PerfgateError as exc:
        if not update:
            raise
        notes.append(f"{who}: the previous baseline could not be compared ({exc}); replaced")
        return compare_tables(Measurement(empty_table(), source=baseline.source), current, options)


def _unmeasured_problem(unmeasured: Sequence[tuple[str, str]], strict_flag: str) -> str:
    launch, cause = unmeasured[0]
    more = f" (and {len(unmeasured) - 1} more)" if len(unmeasured) > 1 else ""
    return f"{launch}: {cause}{more} ({strict_flag}: a gated value not judged fails)"


def _judge(report: Report, regressed: bool, status: GateStatus, update: bool, problems: bool,
           regressions: list[str]) -> GateStatus:
    """Set the device's report verdict and return its status; a regression's text diff goes to ``regressions``."""
    if regressed and not update:
        regressions.append(render_text(report).rstrip())
        status = GateStatus.REGRESSION
    report["verdict"] = gated_verdict(report["verdict"], update=update, problems=problems)
    return status
