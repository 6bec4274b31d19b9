"""``perfgate compare BASELINE CURRENT``: the comparison, its report and its exit status."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from perfgate.cli.common import (
    add_selection_options,
    format_of,
    importing,
    output_path,
    project_path,
    report_status,
    report_stem,
    settings_of,
    usage_error,
    write_output,
)
from perfgate.errors import InputError
from perfgate.options import probability, resolve_metrics, threshold_arg
from perfgate.process import print_out
from perfgate.vocabulary import Verdict

if TYPE_CHECKING:
    from perfgate.cli.common import SubParsers


def add_parser(sub: SubParsers) -> None:
    compare = sub.add_parser("compare", help="compare two results and report regressions",
                             description="Compare CURRENT against BASELINE. Each is a .ncu-rep, ncu --csv output, a "
                                         "pytest-benchmark JSON or a perfgate baseline, optionally xz/gzip "
                                         "compressed. BASELINE may also be a baselines directory: CURRENT is then "
                                         "gated like pytest --perfgate does, against DIR/<gpu>/NAME.json for each "
                                         "GPU in it. Exit 0: no regression, 1: regression, 2: unusable input.")
    compare.add_argument("baseline", type=Path, metavar="BASELINE", nargs="?",
                         help="the reference (with --history it may be left out: the history is the reference)")
    compare.add_argument("current", type=Path, metavar="CURRENT")
    compare.add_argument("--format", choices=("text", "md", "html", "json"), default=None,
                         help="output format (default: from -o's extension .md/.html/.json, else text)")
    compare.add_argument("-o", "--output", type=output_path, metavar="FILE",
                         help="write the report to FILE instead of stdout; '-' is stdout (default: stdout)")
    compare.add_argument("--threshold", type=threshold_arg, action="append", default=[], metavar="METRIC=SPEC",
                         help="gate METRIC with SPEC: '5%%' relative, '1000' absolute (base unit), '5%%+1000' both, "
                              "'off' not gated; repeatable (default: the catalog's, see README)")
    compare.add_argument("--allow-device-mismatch", action="store_true", default=None,
                         help="compare results from different GPUs anyway (default: refuse)")
    compare.add_argument("--accept-unpaired-kernels", action="store_true", default=None,
                         help="kernels missing and new in the same region that no rule paired pass (default: the "
                              "comparison is 'not measured', exit 2: one may be a renamed kernel nobody judged)")
    compare.add_argument("--significance", type=probability, metavar="P",
                         help="p-value a benchmark slowdown must beat when raw timings exist on both sides "
                              "(default: [tool.perfgate] significance, else 0.01)")
    compare.add_argument("--name", metavar="NAME",
                         help="with a baselines directory: the baseline's name, e.g. the test's baseline name "
                              "'tests.test_x__test_y' (default: CURRENT's stem)")
    compare.add_argument("--strict", action="store_true", default=None,
                         help="with a baselines directory: a GPU with no baseline fails (default: reported as new)")
    compare.add_argument("--history", metavar="URL",
                         help="judge CURRENT against the median of this history's recent base-branch runs (BASELINE "
                              "where a series has too few) and size each metric's threshold from their spread, never "
                              "above the hand-set one (see docs/history.md; default: off)")
    compare.add_argument("--history-branch", default="main", metavar="NAME",
                         help="the base branch whose runs --history reads (default: main)")
    add_selection_options(compare)
    compare.set_defaults(func=cmd_compare)


def cmd_compare(args: argparse.Namespace) -> int:
    with importing():
        from perfgate.collect import read_table
        from perfgate.compare import compare_tables
        from perfgate.options import selection
        from perfgate.regions import with_region_totals
        from perfgate.render import LAUNCHES_SHOWN, render_parts, verdict_line
        from perfgate.report import build_report
        from perfgate.table import Measurement, empty_table
        from perfgate.verdict import verdict_of

    if args.baseline is None and not args.history:
        usage_error(add_parser, "compare", "BASELINE is required without --history (give BASELINE CURRENT, or CURRENT with "
                                "--history URL)")
    settings = settings_of(args)
    options = selection(
        metrics=resolve_metrics(args.metrics, settings.metrics),
        thresholds={**settings.thresholds, **dict(args.threshold)},
        significance=args.significance or settings.significance,
        allow_device_mismatch=bool(args.allow_device_mismatch or settings.allow_device_mismatch),
        kernel_aliases=settings.kernel_aliases,
        accept_unpaired_kernels=bool(args.accept_unpaired_kernels or settings.accept_unpaired_kernels),
    )
    wanted = options.wanted_metrics()
    current = with_region_totals(read_table(args.current, wanted))
    history_notes: list[str] = []
    reference = None
    if args.history:  # the base branch's recent runs: reference side and thresholds (perfgate.history)
        from perfgate.history.reference import compare_history

        options, reference, history_notes = compare_history(args.history, args.history_branch, options, current)
    fmt = args.format or format_of(args.output)
    if args.baseline is not None and args.baseline.is_dir():
        from perfgate.gate import Where, gate  # baselines, stores and their modules: only for a directory

        result = gate(current, baselines=args.baseline, where=Where(name=args.name or report_stem(args.current)),
                      options=options, settings={}, strict=bool(args.strict or settings.strict),
                      update_hint=f"perfgate baseline {args.current} -d {args.baseline}", reference=reference)
        if not result.found:
            # Nothing was compared: never a pass.
            raise InputError(args.baseline, "holds no baseline for "
                             f"{', '.join(str(p.relative_to(args.baseline)) for p in result.missing)}",
                             f"create it with 'perfgate baseline {args.current} -d {args.baseline}', or name the "
                             "baseline with --name")
        report, failed = result.report, result.failed
    else:
        baseline = with_region_totals(read_table(args.baseline, wanted)) if args.baseline is not None else \
            Measurement(empty_table())
        if reference is not None:
            baseline, referred = reference(baseline, current)
            history_notes[:0] = referred
            if baseline.table.empty:  # no BASELINE and nothing from the history: never a pass
                raise InputError(args.current, f"nothing to compare: the history holds no reference for its launches "
                                 f"on branch {args.history_branch!r} (at least 5 recent runs each) and no BASELINE "
                                 "was given", "record base-branch runs with 'perfgate history record', or give BASELINE")
        comparison = compare_tables(baseline, current, options)
        del baseline, current  # the tables are done with: their memory serves the report
        # Text and Markdown never list unchanged launches (text) or more than the first launches: skip those rows.
        report = build_report(comparison, unchanged_results=fmt != "text", results_of_first=LAUNCHES_SHOWN.get(fmt),
                              result_arrays=fmt == "json")
        del comparison
        # Nothing compared (an empty baseline: every launch new) is "not measured", as merge would say.
        report["verdict"] = verdict_of(report)
        failed = report["verdict"] == Verdict.FAIL.value
    report["notes"].extend(history_notes)
    templates = project_path(args, settings.templates) if settings.templates else None
    write_output(render_parts(report, fmt, templates=templates), args.output)
    if args.output is not None:
        print_out(f"{verdict_line(report)} (report: {args.output})\n")
    return report_status(report, failed)
