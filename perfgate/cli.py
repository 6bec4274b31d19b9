"""The ``perfgate`` command line. Each ``cmd_*`` computes with library functions, then prints.

Exit status: 0 = no regression, 1 = regression, 2 = unusable input or usage (one line on stderr).
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterable, Iterator, NoReturn, Sequence, cast

from perfgate import __version__
from perfgate.config import Settings
from perfgate.errors import (
    EXIT_OK,
    EXIT_REGRESSION,
    EXIT_USAGE,
    InputError,
    PerfgateError,
)
from perfgate.options import metrics_arg, probability, resolve_metrics, threshold_arg
from perfgate.process import Terminated, print_out, stdout_gone, terminating_unwinds
from perfgate.text import inert

if TYPE_CHECKING:
    from perfgate.report import Report
    from perfgate.table import Measurement

    _SubParsers = argparse._SubParsersAction[argparse.ArgumentParser]


def _add_selection_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--metrics", type=metrics_arg, metavar="NAMES",
                        help="comma-separated metrics to compare, replacing the defaults; prefix each with '+' to "
                             "add to the defaults (default: the curated set, see README)")
    parser.add_argument("--config", type=Path, metavar="PYPROJECT",
                        help="pyproject.toml whose [tool.perfgate] to use (default: the nearest one above the "
                             "current directory)")


class _HelpFormatter(argparse.HelpFormatter):
    """argparse's help, as wide as the terminal as argparse would make it, found without importing ``shutil``
    (with ``bz2`` and ``lzma``: 2-3 ms of every run's start-up): argparse makes a formatter for each argument
    it adds, and a run that prints no help needs no width."""

    def __init__(self, prog: str) -> None:  # shutil.get_terminal_size's rules, and argparse's 2 columns less
        try:
            columns = int(os.environ.get("COLUMNS", "0"))
        except ValueError:
            columns = 0
        if columns <= 0:
            try:
                columns = os.get_terminal_size(sys.__stdout__.fileno()).columns  # type: ignore[union-attr]
            except (AttributeError, ValueError, OSError):  # no stdout, or not a terminal
                columns = 0
        super().__init__(prog, width=(columns if columns > 0 else 80) - 2)


class _Parser(argparse.ArgumentParser):
    """``argparse.ArgumentParser`` with ``_HelpFormatter``; its subcommands' parsers are of this class too."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("formatter_class", _HelpFormatter)
        super().__init__(*args, **kwargs)


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The command line's parser; with ``only`` (one of ``COMMANDS``), the parser of that command alone, all a
    run of it needs: the other commands' parsers and modules cost 3-6 ms of a compare's start-up."""
    parser = _Parser(prog="perfgate", description="CI performance-regression gate for GPU kernels.")
    parser.add_argument("--version", action="version", version=f"perfgate {__version__}")
    sub = cast("_SubParsers", parser.add_subparsers(dest="command", metavar="COMMAND"))  # of _Parser: ArgumentParsers
    sub.required = True
    for name, add in _COMMAND_PARSERS.items():
        if only in (None, name):
            add(sub)
    return parser


def _add_compare(sub: _SubParsers) -> None:
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
    compare.add_argument("-o", "--output", type=_output_path, metavar="FILE",
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
    _add_selection_options(compare)
    compare.set_defaults(func=cmd_compare)


def _add_baseline(sub: _SubParsers) -> None:
    baseline = sub.add_parser("baseline", help="write or update baselines from a report",
                              description="Write REPORT's metrics as baseline JSON under DIR/<gpu>/NAME.json, one "
                                          "file per GPU found in the report, atomically.")
    baseline.add_argument("report", type=Path, metavar="REPORT")
    baseline.add_argument("-d", "--dir", type=Path, metavar="DIR",
                          help="baseline directory (default: [tool.perfgate] baselines, else 'baselines')")
    baseline.add_argument("--name", metavar="NAME", help="baseline file name (default: REPORT's stem)")
    baseline.add_argument("--history", metavar="URL",
                          help="say which regressions the update carries are accepted in this history (default: "
                               "[tool.perfgate] history; see docs/history.md)")
    _add_selection_options(baseline)
    baseline.set_defaults(func=cmd_baseline)


def _add_merge(sub: _SubParsers) -> None:
    merge = sub.add_parser("merge", help="combine JSON reports (a job matrix) into one",
                           description="Merge perfgate JSON reports into one; it fails if any input failed.")
    merge.add_argument("reports", type=Path, nargs="+", metavar="REPORT")
    merge.add_argument("-o", "--output", type=_output_path, metavar="FILE",
                       help="merged JSON; '-' is stdout (default: stdout)")
    merge.set_defaults(func=cmd_merge)


def _add_publish(sub: _SubParsers) -> None:
    from perfgate.publish.command import register  # publishing lives in its own module

    register(sub)


def _add_baselines(sub: _SubParsers) -> None:
    from perfgate.store import register  # as does the baselines store

    register(sub)


def _add_history(sub: _SubParsers) -> None:
    from perfgate.history.command import register  # the history store, change points and dashboard

    register(sub)


def _add_accept(sub: _SubParsers) -> None:
    from perfgate.history.command import register_accept

    register_accept(sub)


# Each command and what adds its parser, in the order --help lists them.
_COMMAND_PARSERS: dict[str, Callable[[_SubParsers], None]] = {
    "compare": _add_compare, "baseline": _add_baseline, "merge": _add_merge, "publish": _add_publish,
    "baselines": _add_baselines, "history": _add_history, "accept": _add_accept}
COMMANDS = tuple(_COMMAND_PARSERS)


def _settings(args: argparse.Namespace) -> Settings:
    from perfgate.config import load_settings

    return load_settings(args.config)


def _configured_path(args: argparse.Namespace, value: str) -> Path:
    """A path from [tool.perfgate] is relative to the pyproject.toml's folder, as in the plugin."""
    from perfgate.config import find_pyproject

    pyproject = args.config if args.config is not None else find_pyproject()
    return Path(value) if pyproject is None else pyproject.resolve().parent / value


def _configured_history(args: argparse.Namespace, url: str) -> str:
    """A relative ``sqlite:///path`` from [tool.perfgate] history is relative to the pyproject.toml's folder."""
    prefix = "sqlite:///"
    if url.startswith(prefix) and not Path(url[len(prefix):]).is_absolute():
        return prefix + str(_configured_path(args, url[len(prefix):]))
    return url


_REPORT_SUFFIXES = (".ncu-rep", ".csv", ".json", ".log", ".txt")


def report_stem(path: Path) -> str:
    """``resnet.fp16.ncu-rep`` -> ``resnet.fp16``: only a known report suffix (and .xz/.gz) is dropped."""
    name = path.name
    for packed in (".xz", ".gz"):
        if name.lower().endswith(packed) and len(name) > len(packed):
            name = name[: -len(packed)]
    for suffix in _REPORT_SUFFIXES:
        if name.lower().endswith(suffix) and len(name) > len(suffix):
            return name[: -len(suffix)]
    return name


def _output_path(text: str) -> Path | None:
    """``-o FILE``; ``-o -`` is stdout, as for most tools (not a file named "-")."""
    return None if text == "-" else Path(text)


def _write_output(parts: Iterable[str], output: Path | None) -> None:
    """Write a report's text, in parts (``render_parts``), to ``output`` or to stdout."""
    if output is None:
        print_out(*parts)
        return
    from perfgate.files import write_atomically

    try:
        write_atomically(output, parts)
    except OSError as exc:
        raise InputError(output, f"cannot write report ({exc.strerror})", "check the directory exists and is "
                                                                          "writable") from None


def _format_of(output: Path | None) -> str:
    suffix = output.suffix.lower() if output is not None else ""
    return {".md": "md", ".markdown": "md", ".html": "html", ".htm": "html", ".json": "json"}.get(suffix, "text")


@contextlib.contextmanager
def _importing() -> Iterator[None]:
    """Where a command imports its modules. In perfgate's own process (``entry``) they are imported with the
    cyclic garbage collector off, and what they made is frozen after (``gc.freeze``: never examined again):
    importing numpy and perfgate makes ~100,000 objects that live as long as the process, and collecting among
    them found nothing and cost 8-10 ms of a small compare's CPU (a twentieth). Not when ``main`` is called by
    another program: freezing its objects would keep its cyclic garbage alive."""
    if not _own_process:
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.freeze()
        gc.enable()


def cmd_compare(args: argparse.Namespace) -> int:
    with _importing():
        from perfgate.collect import read_table
        from perfgate.compare import compare_tables
        from perfgate.options import selection
        from perfgate.regions import with_region_totals
        from perfgate.render import LAUNCHES_SHOWN, render_parts, verdict_line
        from perfgate.report import build_report, verdict_of
        from perfgate.table import Measurement, empty_table

    if args.baseline is None and not args.history:
        _usage_error("compare", "BASELINE is required without --history (give BASELINE CURRENT, or CURRENT with "
                                "--history URL)")
    settings = _settings(args)
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
    fmt = args.format or _format_of(args.output)
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
        failed = report["verdict"] == "fail"
    report["notes"].extend(history_notes)
    templates = _configured_path(args, settings.templates) if settings.templates else None
    _write_output(render_parts(report, fmt, templates=templates), args.output)
    if args.output is not None:
        print_out(f"{verdict_line(report)} (report: {args.output})\n")
    return EXIT_REGRESSION if failed else _not_measured_status(report)


def _usage_error(command: str, message: str) -> NoReturn:
    """A usage error found after parsing (one argument needs another): as argparse reports its own, exit 2."""
    sub = next(a for a in build_parser(command)._actions if isinstance(a, argparse._SubParsersAction))
    parser: argparse.ArgumentParser = sub.choices[command]
    parser.error(message)


def _not_measured_status(report: "Report") -> int:
    """Exit 2 when the report was written but could not vouch for what it was asked (gated values on one side
    only, nothing compared): unmeasured is not passed. 0 otherwise."""
    from perfgate.render import headline

    if report["verdict"] != "not measured":
        return EXIT_OK
    sys.stderr.write(inert(f"perfgate: error: not measured: {headline(report)}", 400) + "\n")
    return EXIT_USAGE


def cmd_baseline(args: argparse.Namespace) -> int:
    with _importing():
        from perfgate.baseline import baseline_documents, baseline_file, save_baselines
        from perfgate.collect import read_table
        from perfgate.compare import CompareOptions
        from perfgate.regions import with_region_totals

    settings = _settings(args)
    options = CompareOptions(thresholds=settings.thresholds, metrics=resolve_metrics(args.metrics, settings.metrics))
    measurement = with_region_totals(read_table(args.report, options.wanted_metrics()))
    from perfgate.compare.sources import for_measurement

    options = for_measurement(options, measurement)  # a trace is kept with the timeline metrics
    if (measurement.table["device"] == "").any():
        raise InputError(args.report, "names no GPU (ncu's CSV details page gives only the device index), so its "
                                      "baseline could not be kept per GPU",
                         "make the baseline from the .ncu-rep, or export CSV with --page raw and "
                         "device__attribute_display_name among --metrics")
    gated = options.gated_metrics()
    _refuse_unusable(args.report, measurement, gated)
    documents = baseline_documents(measurement, options.wanted_metrics(), source=args.report.name)
    directory = args.dir if args.dir is not None else _configured_path(args, settings.baselines)
    name = args.name or report_stem(args.report)
    if not documents:
        raise InputError(args.report, "holds no launch or benchmark: its baseline would gate nothing",
                         "make the baseline from a run that measured something")
    if not any(_gates(document, gated) for document in documents.values()):
        files = ", ".join(str(baseline_file(directory, key, name)) for key in sorted(documents))
        raise _gates_nothing(files, args.report, gated, options.compared_metrics(), set(measurement.table["metric"]))
    from perfgate.carried import carried_in_update  # regressions the update carries (docs/history.md)

    history = args.history or (settings.history and _configured_history(args, settings.history))
    documents, carried = carried_in_update(documents, directory, name, measurement, options, history or None)
    for path in save_baselines(documents, directory, name):
        print_out(f"wrote {inert(path)}\n")
    for line in carried:  # on stderr: stdout lists the files written, one per line
        sys.stderr.write(line + "\n")
    return EXIT_OK


def _gates(document: dict[str, object], gated: Sequence[str]) -> bool:
    """Whether a baseline document holds a value of a gated metric for at least one entry."""
    entries = document.get("entries")
    return isinstance(entries, list) and any(
        (entry["metrics"].get(metric) or {}).get("value") is not None for entry in entries for metric in gated)


def _gates_nothing(files: str, report: Path, gated: Sequence[str], compared: Sequence[str],
                   present: set[str]) -> InputError:
    absent = [m for m in compared if m not in present]
    spelling = f" ({', '.join(absent)} not in {report}: check the spelling)" if absent else ""
    if not gated:
        return InputError(files, f"would gate nothing: none of the compared metrics ({', '.join(compared)}) has a "
                                 f"gating threshold, so no change of them could fail{spelling}",
                          "use --metrics +NAME to add to the gated defaults instead of replacing them, or give a "
                          "metric a threshold in [tool.perfgate.thresholds]")
    return InputError(files, f"would gate nothing: {report} has no value for any gated metric "
                             f"({', '.join(gated)}){spelling}",
                      "check the metric names in --metrics or [tool.perfgate] metrics (a misspelled name matches "
                      "nothing); the report must hold them (ncu --metrics, or the .ncu-rep of a full run)")


def _refuse_unusable(report: Path, measurement: "Measurement", gated: Sequence[str]) -> None:
    """Refuse a gated value that is broken (text, infinite, negative...): the baseline would keep null for it and
    never gate that launch again. A value ncu recorded as none (``n/a``, a launch with no data) is kept as
    null, as ncu said: real reports do that, and compare then shows the launch as having no value."""
    from perfgate.collect.screen import is_no_value
    from perfgate.table import unusable_records
    from perfgate.vocabulary import KIND_REGION

    bad = [r for r in unusable_records(measurement)
           if r["metric"] in gated and r["kind"] != KIND_REGION and not is_no_value(r["reason"])]
    if not bad:
        return
    first = bad[0]
    where = first["kernel"] + (f" [{first['region']}]" if first["region"] else "") + f" #{first['ordinal']}"
    more = f" (and {len(bad) - 1} more)" if len(bad) > 1 else ""
    raise InputError(report, f"{where}: {first['metric']} has no usable value ({first['reason']}){more}; a "
                             "baseline made from it would never gate that",
                     "profile again; to keep such a metric out of the baseline, leave it out of --metrics or set "
                     "its threshold to off")


def cmd_merge(args: argparse.Namespace) -> int:
    with _importing():
        from perfgate.render import render_parts, verdict_line
        from perfgate.report import load_report, merge_reports

    # The same strict reading as publish: reports from other jobs are artifacts, not trusted data.
    reports = [load_report(path) for path in args.reports]
    merged = merge_reports(reports)
    _write_output(render_parts(merged, "json"), args.output)
    if args.output is not None:
        print_out(verdict_line(merged) + "\n")
    return EXIT_REGRESSION if merged["verdict"] == "fail" else _not_measured_status(merged)


def _tolerant_output() -> None:
    """Never die on a console that cannot print '→' or 'µ' (cp1252 on Windows, LANG=C)."""
    for stream in (sys.stdout, sys.stderr):
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None:
            try:
                reconfigure(errors="replace")
            except (ValueError, OSError):  # pragma: no cover - a detached or closed stream
                pass


_own_process = False  # set by ``entry``: this process is perfgate's, and its start-up may set process-wide things


def entry() -> NoReturn:
    """The ``perfgate`` console script and ``python -m perfgate``: ``main`` in a process of its own."""
    global _own_process
    _own_process = True
    sys.exit(main())


def main(argv: Sequence[str] | None = None) -> int:
    # perfgate does no linear algebra, but numpy's OpenBLAS starts a thread per core at import, which costs
    # ~0.1 s of CPU (a sixth of a small compare). Only for this process: the plugin leaves the user's alone.
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    _tolerant_output()
    words = list(sys.argv[1:] if argv is None else argv)
    # A run names its command first: only that one's parser is built. Anything else (--help, a typo) gets them all.
    parser = build_parser(words[0] if words and words[0] in COMMANDS else None)
    args = parser.parse_args(words)
    try:
        with terminating_unwinds():
            return int(args.func(args))
    except Terminated as exc:
        sys.stderr.write("perfgate: terminated\n")
        return 128 + exc.signum
    except PerfgateError as exc:
        # inert: the line can quote a file or kernel name, which must not act on the terminal.
        sys.stderr.write(f"perfgate: error: {inert(exc)}\n")
        return exc.exit_status
    except BrokenPipeError:  # the reader of a listing went away (| head); verdicts are printed by print_out
        stdout_gone()
        return EXIT_OK
    except KeyboardInterrupt:
        sys.stderr.write("perfgate: interrupted\n")
        return 130
    except Exception as exc:  # the last line of defence for CI, see below
        # An input perfgate did not foresee (a RecursionError, an AttributeError on a shape nobody expected):
        # still one line and exit 2, never a traceback and exit 1, which CI would read as "regression".
        # PERFGATE_DEBUG=1 re-raises so a bug report can carry the traceback.
        if os.environ.get("PERFGATE_DEBUG"):
            raise
        message = inert(exc, max_chars=300)
        sys.stderr.write(f"perfgate: error: {type(exc).__name__}: {message} (rerun with PERFGATE_DEBUG=1 for "
                         "details and please report it)\n")
        return EXIT_USAGE


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
