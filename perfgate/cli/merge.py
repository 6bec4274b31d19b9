"""``perfgate merge REPORT...``: the JSON reports of a job matrix combined into one."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from perfgate.cli.common import output_path, report_status, write_output
from perfgate.process import print_out
from perfgate.text import inert
from perfgate.vocabulary import Verdict

if TYPE_CHECKING:
    from perfgate.cli.common import SubParsers


def add_parser(sub: SubParsers) -> None:
    merge = sub.add_parser("merge", help="combine JSON reports (a job matrix) into one",
                           description="Merge perfgate JSON reports into one; it fails if any input failed.")
    merge.add_argument("reports", type=Path, nargs="+", metavar="REPORT")
    merge.add_argument("-o", "--output", type=output_path, metavar="FILE",
                       help="merged JSON; '-' is stdout (default: stdout)")
    merge.set_defaults(func=cmd_merge)


def cmd_merge(args: argparse.Namespace) -> int:
    from perfgate.render import render_parts, verdict_line
    from perfgate.report import load_report, merge_reports

    # The same strict reading as publish: reports from other jobs are artifacts, not trusted data.
    reports = [load_report(path) for path in args.reports]
    merged = merge_reports(reports)
    write_output(render_parts(merged, "json"), args.output)
    if args.output is not None:
        print_out(inert(verdict_line(merged)) + "\n")  # it can quote a report's text: an artifact's, untrusted
    return report_status(merged, merged["verdict"] == Verdict.FAIL.value)
