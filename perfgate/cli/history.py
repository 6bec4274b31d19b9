"""``perfgate history record|changes|dashboard`` and ``perfgate accept``: their parsers and what each runs.

Exit status: 0 = done, 2 = bad input (a report that fails validation, a history that cannot be opened or that
kept the command waiting past ``--max-time``, a branch with no runs).
``history changes`` exits 0 whatever it finds: it reports, the gate is ``compare``'s and the plugin's.

``history changes`` and ``history dashboard`` read ``[tool.perfgate]`` (of ``--config``, else of the nearest
pyproject.toml): the history is ``--db``, else ``$PERFGATE_HISTORY``, else ``history``, else the default file; the
branch is ``--branch``, else ``history_branch`` (default main).

Each command imports the history's machinery when it runs (the shell's edge), as every command does: every
other command builds this parser, and the history's modules bring numpy, the change-point search scipy, the
dashboard jinja2.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from perfgate.cli.common import output_path, settings_for
from perfgate.errors import EXIT_OK, InputError
from perfgate.files import write_file
from perfgate.history.location import resolve_history_url
from perfgate.option_table import add_arguments
from perfgate.options import non_negative_fraction, probability
from perfgate.process import print_out
from perfgate.text import inert

if TYPE_CHECKING:
    from perfgate.cli.common import SubParsers


def add_parser(sub: SubParsers) -> None:
    """Add ``history`` (with its subcommands) to perfgate's command line."""
    history = sub.add_parser("history", help="record runs, find change points, write the trend dashboard",
                             description="perfgate's memory of every run (see docs/history.md).")
    commands = history.add_subparsers(dest="history_command", metavar="SUBCOMMAND")
    commands.required = True
    _add_record(commands)
    _add_changes(commands)
    _add_dashboard(commands)


def add_accept_parser(sub: SubParsers) -> None:
    """Add ``accept``: who accepted which change, and why."""
    accept = sub.add_parser("accept", help="record that a change was accepted, by whom and why",
                            description="Record in the history that the change at COMMIT of the series matching "
                                        "the filters was accepted; history changes, the dashboard and the next PR "
                                        "comment show it with its reason.")
    accept.add_argument("--reason", required=True, metavar="TEXT", help="why the change is accepted")
    accept.add_argument("--commit", metavar="SHA", help="the commit that made the change (default: as for record)")
    accept.add_argument("--by", metavar="NAME", help="who accepts it (default: $GITHUB_ACTOR, else git user.name, "
                                                     "else $USER)")
    for field in ("gpu", "test", "kernel", "region", "metric"):
        accept.add_argument(f"--{field}", metavar="NAME", help=f"only series of this {field} (default: any)")
    add_arguments(accept, "accept")
    accept.set_defaults(func=cmd_accept)


def _add_record(commands: SubParsers) -> None:
    record = commands.add_parser("record", help="record the current side of JSON reports",
                                 description="Record the current side of perfgate JSON reports (a pytest --perfgate "
                                             "session report or a compare --format json report) in the history. "
                                             "Recording the same run twice adds nothing.")
    record.add_argument("reports", nargs="+", type=Path, metavar="REPORT")
    add_arguments(record, "history record")
    record.add_argument("--commit", metavar="SHA", help="measured commit (default: GitHub Actions' head sha, else "
                                                        "git rev-parse HEAD)")
    record.add_argument("--branch", metavar="NAME", help="branch (default: GITHUB_HEAD_REF, GITHUB_REF_NAME, else "
                                                         "the checked-out branch)")
    record.add_argument("--when", metavar="ISO-8601", help="when it was measured (default: now)")
    record.set_defaults(func=cmd_record)


def _add_changes(commands: SubParsers) -> None:
    changes = commands.add_parser("changes", help="list change points per series",
                                  description="Find change points in every series of a branch (E-divisive means "
                                              "with a t-test, as Apache Otava/Hunter).")
    add_arguments(changes, "history changes")
    changes.add_argument("--format", choices=("text", "json", "md"), default="text", help="output (default: text)")
    changes.add_argument("--p-value", type=probability, default=0.0001, metavar="P",
                         help="a change point must beat this t-test p-value (default: 0.0001)")
    changes.add_argument("--min-change", type=non_negative_fraction, default=0.0, metavar="FRACTION",
                         help="ignore change points smaller than this relative change, e.g. 0.01 (default: 0)")
    changes.add_argument("-o", "--output", type=output_path, metavar="FILE",
                         help="write to FILE; '-' is stdout (default: stdout)")
    changes.set_defaults(func=cmd_changes)


def _add_dashboard(commands: SubParsers) -> None:
    dashboard = commands.add_parser("dashboard", help="write the static trend dashboard",
                                    description="Write a static site (GitHub Pages ready, works offline): an index "
                                                "of series, one page per kernel with charts over commits.")
    add_arguments(dashboard, "history dashboard")
    dashboard.add_argument("-o", "--output", type=Path, required=True, metavar="DIR", help="folder to write")
    dashboard.set_defaults(func=cmd_dashboard)


def cmd_record(args: argparse.Namespace) -> int:
    from perfgate.history.db import open_history
    from perfgate.history.record import provenance, record_files

    when = provenance(os.environ, args.commit, args.branch, args.when)
    with open_history(args.db, max_time=args.max_time) as history:
        recorded = record_files(history, [str(p) for p in args.reports], when)
    for item in recorded:
        state = "recorded" if item.added else "already recorded"
        print_out(inert(f"{state}: {item.source} ({item.points} series) at {when.commit[:12]} on "
                               f"{when.branch}") + "\n")
    return EXIT_OK


def history_to_read(args: argparse.Namespace, command: str) -> tuple[str | None, str]:
    """The history URL (None: open_history's default) and the branch ``history changes|dashboard`` read."""
    settings = settings_for(args, command)
    return resolve_history_url(args.db, settings.history), args.branch or settings.history_branch


def cmd_changes(args: argparse.Namespace) -> int:
    from perfgate.history.db import open_history
    from perfgate.history.detect import changes_and_notes, render_changes

    url, branch = history_to_read(args, "history changes")
    with open_history(url, create=False, max_time=args.max_time) as history:
        found, notes = changes_and_notes(history, branch, p_value=args.p_value, min_change=args.min_change)
    text = render_changes(found, args.format, notes)
    _write(text, args.output)
    if args.format == "json":  # the JSON stays a list of change points
        for note in notes:
            sys.stderr.write(inert(f"perfgate: note: {note}", 600) + "\n")
    return EXIT_OK


def cmd_dashboard(args: argparse.Namespace) -> int:
    from perfgate.history.dashboard import write_dashboard
    from perfgate.history.db import open_history

    url, branch = history_to_read(args, "history dashboard")
    with open_history(url, create=False, max_time=args.max_time) as history:
        pages = write_dashboard(history, branch, args.output)
    print_out(inert(f"wrote {pages} pages to {args.output}") + "\n")
    return EXIT_OK


def cmd_accept(args: argparse.Namespace) -> int:
    from perfgate.history.accept import Acceptance, accepted_by, record_acceptance
    from perfgate.history.db import open_history
    from perfgate.history.record import iso_time, provenance

    commit = provenance(os.environ, args.commit, branch="-", when=None).commit
    acceptance = Acceptance(commit=commit.lower(), gpu=args.gpu, test=args.test, kernel=args.kernel,
                            region=args.region, metric=args.metric, reason=args.reason,
                            by=args.by or accepted_by(os.environ), when=iso_time(None))
    with open_history(args.db, max_time=args.max_time) as history:
        matched = record_acceptance(history, acceptance, given_commit=args.commit is not None)
    print_out(inert(f"accepted the change at {commit[:12]} for {matched} series: {args.reason}", 400) + "\n")
    return EXIT_OK


def _write(text: str, output: Path | None) -> None:
    if output is None:
        print_out(text)
        return
    try:
        write_file(output, [text])
    except OSError as exc:
        raise InputError(output, f"cannot write ({exc.strerror or exc})", "give a file in a writable folder with space "
                                                                            "left, or - for stdout") from None
