"""``perfgate baseline REPORT``: a report's metrics written as baseline files, one per GPU."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Sequence

from perfgate.cli.common import report_stem, settings_for
from perfgate.errors import EXIT_OK, InputError
from perfgate.option_table import add_arguments
from perfgate.process import print_out
from perfgate.text import inert
from perfgate.vocabulary import KIND_REGION, READABLE_INPUTS

if TYPE_CHECKING:
    from perfgate.cli.common import SubParsers
    from perfgate.table import Measurement


def add_parser(sub: SubParsers) -> None:
    baseline = sub.add_parser("baseline", help="write or update baselines from a report",
                              description="Write REPORT's metrics as baseline JSON under DIR/<gpu>/NAME.json, one "
                                          f"file per GPU found in the report, atomically. REPORT is {READABLE_INPUTS}"
                                          " (a trace's baseline records it: settings.source is 'timeline').")
    baseline.add_argument("report", type=Path, metavar="REPORT")
    baseline.add_argument("--name", metavar="NAME", help="baseline file name (default: REPORT's stem)")
    add_arguments(baseline, "baseline")
    baseline.set_defaults(func=cmd_baseline)


def cmd_baseline(args: argparse.Namespace) -> int:
    from perfgate.baseline import baseline_documents, baseline_file, save_baselines
    from perfgate.carried import carried_in_update  # regressions the update carries (docs/history.md)
    from perfgate.compare import CompareOptions
    from perfgate.compare.sources import for_measurement
    from perfgate.prepare import read_prepared

    settings = settings_for(args, "baseline")
    options = CompareOptions(thresholds=settings.thresholds, metrics=settings.metrics)
    measurement = read_prepared(args.report, options, code=settings.code_identity)
    options = for_measurement(options, measurement)  # a trace is kept with the timeline metrics
    if (measurement.table["device"] == "").any():
        raise InputError(args.report, "names no GPU (ncu's CSV details page gives only the device index), so its "
                                      "baseline could not be kept per GPU",
                         "make the baseline from the .ncu-rep, or export CSV with --page raw and "
                         "device__attribute_display_name among --metrics")
    gated = options.gated_metrics()
    _refuse_unusable(args.report, measurement, gated)
    documents = baseline_documents(measurement, options.wanted_metrics(), source=args.report.name)
    directory = Path(settings.baselines)
    name = args.name or report_stem(args.report)
    if not documents:
        raise InputError(args.report, "holds no launch or benchmark: its baseline would gate nothing",
                         "make the baseline from a run that measured something")
    if not any(_gates(document, gated) for document in documents.values()):
        files = ", ".join(str(baseline_file(directory, key, name)) for key in sorted(documents))
        raise _gates_nothing(files, args.report, gated, options.compared_metrics(), set(measurement.table["metric"]))
    documents, carried = carried_in_update(documents, directory, name, measurement, options, settings.history or None,
                                           settings.history_max_time)
    for path in save_baselines(documents, directory, name):
        print_out(f"wrote {inert(path)}\n")
    for line in carried:  # on stderr: stdout lists the files written, one per line
        sys.stderr.write(line + "\n")
    return EXIT_OK


def _gates(document: dict[str, object], gated: Sequence[str]) -> bool:
    """Whether a baseline document holds a value of a gated metric for at least one entry."""
    from perfgate.baseline_entries import BaselineEntries

    entries = document.get("entries")
    if isinstance(entries, BaselineEntries):  # from its columns: its entries are built only as they are written
        return entries.holds_value_of(gated)
    return isinstance(entries, Sequence) and not isinstance(entries, str) and any(
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
