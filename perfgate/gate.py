"""The gate: one measurement against the baselines stored for it, per GPU; no pytest.

Both shells use it: ``pytest --perfgate`` for each perf test or benchmark, and ``perfgate compare
BASELINES_DIR CURRENT`` by hand. For every GPU (or CPU) in the measurement it reads
``<baselines>/<device slug>/<name>.json``, compares, and, when updating, writes the new baseline.
The outcome says what happened on every device; the worst of them decides (a regression on one GPU
is not hidden by a missing baseline on another).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from perfgate.baseline import (
    baseline_documents,
    device_slug,
    file_stem,
    read_baseline,
    save_baselines,
)
from perfgate.carried import AcceptanceCheck, carried_lines, carried_regressions, with_carried
from perfgate.compare import CompareOptions, Comparison, compare_tables
from perfgate.errors import PerfgateError
from perfgate.render import render_text
from perfgate.report import Report, build_report, merge_reports
from perfgate.table import Measurement, device_label, devices, empty_table
from perfgate.vocabulary import Verdict

# What one gate run came to, worst first: the plugin's per-test status.
REGRESSION, NEW, UPDATED, COMPARED = "regression", "new", "updated", "compared"
_RANK = {REGRESSION: 0, NEW: 1, UPDATED: 2, COMPARED: 3}
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
    import hashlib  # here: ~4 ms of start-up that a compare of two files never needs

    digest = hashlib.sha1(test_id.encode()).hexdigest()
    if _UNSAFE.search(raw.replace("[", "").replace("]", "")):
        name += "-" + digest[:8]  # parameter ids like [α] and [β] would otherwise share one file
    if len(name) > 150:  # stay far below file-name limits; the hash keeps long ids distinct
        name = name[:130].rstrip("._") + "-" + digest[:12]
    return name


def baseline_path(directory: Path, device: str, cc: str, name: str) -> Path:
    return directory / device_slug(device, cc) / f"{file_stem(name)}.json"


def own_name(directory: Path, name: str, test: str | None) -> str:
    """The baseline name of ``test``: ``name`` (``baseline_name(test)``), unless a baseline of that name
    records another test as its source (``test_y[.]``, ``test_y[..]`` and ``test_y`` all read ``..._test_y``):
    then ``name`` and a hash of the test id. The first test to write a name keeps it; each other gets its own."""
    if not test:
        return name
    import json

    for file in directory.glob(f"*/{file_stem(name)}.json"):
        try:
            source = json.loads(file.read_bytes()).get("source")
        except (OSError, ValueError, AttributeError):
            continue  # unreadable: read_baseline says why, once it is this test's
        if isinstance(source, str) and "::" in source and source != test:
            import hashlib

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
    status: str  # REGRESSION, NEW, UPDATED or COMPARED: the worst over the devices
    regressions: list[str] = field(default_factory=list)  # the text diff of each regressed device
    problems: list[str] = field(default_factory=list)  # what else fails the gate (strict: a missing baseline)
    written: list[Path] = field(default_factory=list)
    missing: list[Path] = field(default_factory=list)  # baseline files looked for and not found
    found: int = 0  # devices that had a baseline

    @property
    def failed(self) -> bool:
        return bool(self.regressions or self.problems)


def _settings_note(who: str, before: Mapping[str, Any], now: Mapping[str, Any]) -> str | None:
    changed = [f"{k} {before[k]!r} → {now[k]!r}" for k in ("clock_control", "cache_control")
               if k in before and k in now and before[k] != now[k]]
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
    who = where.test or where.name
    name = own_name(baselines, where.name, where.test)
    reports: list[Report] = []
    regressions: list[str] = []
    problems: list[str] = []
    written: list[Path] = []
    statuses: list[str] = []
    missing: list[Path] = []
    table = current.table
    for device, cc in devices(table):
        sub = current.with_table(table[(table["device"] == device) & (table["cc"] == cc)])
        file = baseline_path(baselines, device, cc, name)
        device_notes = list(notes)
        status = UPDATED if update else COMPARED
        unreadable = None
        if file.is_file():
            try:
                baseline = read_baseline(file)._replace(source=shown(file))
            except PerfgateError as exc:
                if not update:
                    raise
                unreadable = exc  # an update replaces a corrupt baseline: it is what the update is for
        if file.is_file() and unreadable is None:
            note = _settings_note(who, baseline.settings, settings)
            if note:
                device_notes.append(note)
        elif unreadable is not None:
            baseline = Measurement(empty_table(), source=shown(file))
            device_notes.append(f"{who}: the baseline at {shown(file)} could not be read ({unreadable}): replaced")
        else:
            baseline = Measurement(empty_table(), source=shown(file))
        if reference is not None and not update:
            baseline, referred = reference(baseline, sub)
            device_notes.extend(referred)
        if not file.is_file() and (update or baseline.table.empty):
            missing.append(file)
            if not update:
                status = NEW
                device_notes.append(f"{who}: no baseline for {device_label(device, cc)} at {shown(file)}: reported "
                                    f"as new (create it with {update_hint})")
                if strict:
                    problems.append(f"no baseline for {device_label(device, cc)} at {shown(file)} ({strict_flag}); "
                                    f"create it with {update_hint}")
        comparison = _compared(baseline, sub, options, update, who, device_notes)
        if update:
            # The compared metrics and launch facts, not the identity attributes ncu was asked for.
            documents = baseline_documents(sub, options.wanted_metrics(), settings=dict(settings), source=who)
            carried = carried_regressions(comparison)
            if carried and acceptances is not None:
                carried = acceptances(carried, device)
            documents = {key: with_carried(document, carried) for key, document in documents.items()}
            device_notes.extend(carried_lines(carried, who, acceptances is not None))
            paths = save_baselines(documents, baselines, name)
            written.extend(paths)
            device_notes.append(f"{who}: baseline written to {', '.join(shown(p) for p in paths)}")
        elif strict and comparison.unmeasured:
            problems.append(_unmeasured_problem(comparison.unmeasured, strict_flag))
        report = build_report(comparison, test=where.test, path=where.path, line=where.line, notes=device_notes)
        status = _judge(report, comparison.regressed, status, update, bool(problems), regressions)
        statuses.append(status)
        reports.append(report)
    merged = merge_reports(reports) if len(reports) != 1 else reports[0]
    worst = min(statuses, key=_RANK.__getitem__) if statuses else COMPARED
    return GateResult(report=merged, status=worst, regressions=regressions, problems=problems, written=written,
                      missing=missing, found=len(statuses) - len(missing))


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


def _judge(report: Report, regressed: bool, status: str, update: bool, problems: bool, regressions: list[str]) -> str:
    """Set the device's report verdict and return its status; a regression's text diff goes to ``regressions``."""
    if update:
        report["verdict"] = Verdict.PASS.value  # the new baseline is this run; changes are shown, not failed
    elif regressed:
        regressions.append(render_text(report).rstrip())
        status = REGRESSION
    if problems and not update:
        report["verdict"] = Verdict.FAIL.value
    return status
