"""``perfgate compare BASELINE CURRENT``: the comparison, its report and its exit status."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING, Iterable

from perfgate.cli.common import (
    format_of,
    output_path,
    report_status,
    report_stem,
    settings_for,
    usage_error,
    write_output,
)
from perfgate.errors import ConfigError, InputError
from perfgate.option_table import add_arguments
from perfgate.process import print_out
from perfgate.text import inert
from perfgate.verdict import verdict_of
from perfgate.vocabulary import READABLE_INPUTS, Verdict

if TYPE_CHECKING:
    from perfgate.cli.common import SubParsers
    from perfgate.compare import CompareOptions, Comparison
    from perfgate.gate import Reference
    from perfgate.report import Report
    from perfgate.table import Measurement


def add_parser(sub: SubParsers) -> None:
    compare = sub.add_parser("compare", help="compare two results and report regressions",
                             description=f"Compare CURRENT against BASELINE. Each is {READABLE_INPUTS}, "
                                         "optionally xz/gzip compressed (a trace is compared only with a trace or "
                                         "its baseline). BASELINE may also be a baselines directory: CURRENT is then "
                                         "gated like pytest --perfgate does, against DIR/<gpu>/NAME.json for each "
                                         "GPU in it. Exit 0: no regression, 1: regression, 2: unusable input.")
    compare.add_argument("baseline", type=Path, metavar="BASELINE", nargs="?",
                         help="the reference (with --history it may be left out: the history is the reference)")
    compare.add_argument("current", type=Path, metavar="CURRENT")
    compare.add_argument("--format", choices=("text", "md", "html", "json"), default=None,
                         help="output format (default: from -o's extension .md/.html/.json, else text)")
    compare.add_argument("-o", "--output", type=output_path, metavar="FILE",
                         help="write the report to FILE instead of stdout; '-' is stdout (default: stdout)")
    compare.add_argument("--name", metavar="NAME",
                         help="with a baselines directory: the baseline's name, e.g. the test's baseline name "
                              "'tests.test_x__test_y' (default: CURRENT's stem)")
    compare.add_argument("--history", metavar="URL",
                         help="judge CURRENT against the median of this history's recent base-branch runs (BASELINE "
                              "where a series has too few) and size each metric's threshold from their spread, never "
                              "above the hand-set one (see docs/history.md; default: off)")
    add_arguments(compare, "compare")
    compare.set_defaults(func=cmd_compare)


def cmd_compare(args: argparse.Namespace) -> int:
    from perfgate.options import selection
    from perfgate.prepare import read_prepared
    from perfgate.render import render_parts, verdict_line
    from perfgate.render.templates import team_templates

    if args.baseline is None and not args.history:
        usage_error(add_parser, "compare", "BASELINE is required without --history (give BASELINE CURRENT, or "
                                           "CURRENT with --history URL)")
    settings = settings_for(args, "compare")
    options = selection(metrics=settings.metrics, thresholds=settings.thresholds, significance=settings.significance,
                        allow_device_mismatch=settings.allow_device_mismatch, kernel_aliases=settings.kernel_aliases,
                        kernel_thresholds=settings.kernel_thresholds,
                        accept_unpaired_kernels=settings.accept_unpaired_kernels, declared_flops=args.flops)
    args.read_code = settings.code_identity  # the same-code rule: _comparison reads the baseline's code alike
    current = read_prepared(args.current, options, code=args.read_code)
    _refuse_unknown_threshold_names(args.thresholds, current)
    history_notes: list[str] = []
    reference = None
    if args.history:  # the base branch's recent runs: reference side and thresholds (perfgate.history)
        from perfgate.history.reference import compare_history  # the history's database modules

        options, reference, history_notes = compare_history(args.history, settings.history_branch, options, current,
                                                             args.max_time)
    fmt = args.format or format_of(args.output)
    templates = team_templates(settings.templates)
    if args.baseline is not None and args.baseline.is_dir():
        report, failed = _gate_against_directory(args, current, options, settings.strict, reference)
        report["notes"].extend(history_notes)
        shown: Report = report
        parts = render_parts(report, fmt, templates=templates)
    else:
        handed = [current]  # the comparison lets it go once its derived table is made
        del current
        shown, parts = _compare_files(args, handed, options, reference, history_notes, settings.history_branch,
                                      fmt, templates)
        failed = shown["verdict"] == Verdict.FAIL.value
    write_output(parts, args.output)
    if args.output is not None:
        # inert: the line can quote a report's text (a cause of "not measured") and names a file
        print_out(f"{inert(verdict_line(shown))} (report: {inert(args.output)})\n")
    return report_status(shown, failed)


def _refuse_unknown_threshold_names(given: list[tuple[str, object]] | None, current: Measurement) -> None:
    """A ``--threshold`` for a metric that neither perfgate's catalog nor CURRENT holds is a misspelling: the gate
    would run on the default threshold it was given to replace (a threshold in ``[tool.perfgate]``, written for many
    tests, may name a metric some do not collect: a note says so)."""
    import difflib

    from perfgate.metrics import CATALOG_BY_NAME

    if not given:
        return
    held = current.table.coded("metric")[1].tolist() if not current.table.empty else []  # names once, not per row
    known = set(CATALOG_BY_NAME) | {str(name) for name in held}
    for name, _ in given:
        if name not in known:
            close = difflib.get_close_matches(name, sorted(known), n=1)
            fix = f"did you mean {close[0]}?" if close else "name a metric CURRENT holds or perfgate's catalog has"
            raise ConfigError(f"--threshold {inert(name)}=SPEC: no such metric in {inert(current.source or 'CURRENT')} "
                              f"or perfgate's catalog: {fix}")


def _gate_against_directory(args: argparse.Namespace, current: Measurement, options: CompareOptions, strict: bool,
                            reference: Reference | None) -> tuple[Report, bool]:
    """CURRENT judged as ``pytest --perfgate`` judges a test: against DIR/<gpu>/NAME.json for each of its GPUs."""
    from perfgate.gate import Where, gate

    result = gate(current, baselines=args.baseline, where=Where(name=args.name or report_stem(args.current)),
                  options=options, settings={}, strict=strict,
                  update_hint=f"perfgate baseline {args.current} -d {args.baseline}", reference=reference)
    if not result.found:  # nothing was compared: never a pass
        raise InputError(args.baseline, "holds no baseline for "
                         f"{', '.join(str(p.relative_to(args.baseline)) for p in result.missing)}",
                         f"create it with 'perfgate baseline {args.current} -d {args.baseline}', or name the "
                         "baseline with --name")
    return result.report, result.failed


def _compare_files(args: argparse.Namespace, handed: list[Measurement], options: CompareOptions,
                   reference: Reference | None, history_notes: list[str], history_branch: str, fmt: str,
                   templates: Path | None) -> tuple[Report, Iterable[str | bytes]]:
    """CURRENT (``handed``: [CURRENT], which the comparison empties) against the BASELINE file (or the history's
    reference where BASELINE is left out): the report and its text in ``fmt`` (in parts, as ``render_parts`` gives
    them). The report's results are numpy arrays (``render.result_arrays``: no list of 400,000 rows is made); every
    format reads it through one ``ComparedReport``, text only the rows of the launches it lists."""
    from perfgate.render import render_parts
    from perfgate.report import build_report

    comparison = _comparison(args, handed, options, reference, history_notes, history_branch)
    report = build_report(comparison, result_arrays=True)
    del comparison  # done with: its memory serves the rendering
    _settle(report, history_notes)
    return report, render_parts(report, fmt, templates=templates)


def _comparison(args: argparse.Namespace, handed: list[Measurement], options: CompareOptions,
                reference: Reference | None, history_notes: list[str], history_branch: str) -> Comparison:
    """CURRENT (``handed``: [CURRENT]) compared with BASELINE, or with the history's reference (its notes put before
    ``history_notes``'s). Both sides are handed to the comparison (``compare_handed``), which frees each table as
    read once its derived one is made: no frame here holds them."""
    from perfgate.compare.flow import compare_handed

    handed.insert(0, _baseline(args, handed[0], options, reference, history_notes, history_branch))
    return compare_handed(handed, options)


def _baseline(args: argparse.Namespace, current: Measurement, options: CompareOptions, reference: Reference | None,
              history_notes: list[str], history_branch: str) -> Measurement:
    """The BASELINE file read, or the history's reference for CURRENT (its notes put before ``history_notes``'s)."""
    from perfgate.prepare import read_prepared
    from perfgate.table import Measurement, empty_table

    code = bool(getattr(args, "read_code", False))
    baseline = read_prepared(args.baseline, options, code=code) if args.baseline is not None \
        else Measurement(empty_table())
    if reference is not None:
        baseline, referred = reference(baseline, current)
        history_notes[:0] = referred
        if baseline.table.empty:  # no BASELINE and nothing from the history: never a pass
            raise InputError(args.current, f"nothing to compare: the history holds no reference for its launches "
                             f"on branch {history_branch!r} (at least 5 recent runs each) and no BASELINE was given",
                             "record base-branch runs with 'perfgate history record', or give BASELINE")
    return baseline


def _settle(report: Report, notes: list[str]) -> None:
    """The verdict the report's contents allow (nothing compared, an empty baseline: every launch new, is "not
    measured", as merge would say), then ``notes`` after the comparison's own."""
    report["verdict"] = verdict_of(report)
    report["notes"].extend(notes)
