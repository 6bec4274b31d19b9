"""``perfgate history record|changes|dashboard`` and ``perfgate accept``: their parsers; ``perfgate.history.command``
runs them (exit statuses there)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from perfgate.history.command import cmd_accept, cmd_changes, cmd_dashboard, cmd_record
from perfgate.options import probability

if TYPE_CHECKING:
    from perfgate.cli.common import SubParsers


DB_HELP = ("history URL: sqlite:///PATH or postgresql://USER@HOST/DB (default: $PERFGATE_HISTORY, else "
           "sqlite:///.perfgate/history.sqlite)")


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
    accept.add_argument("--db", metavar="URL", help=DB_HELP)
    accept.set_defaults(func=cmd_accept)


def _add_record(commands: SubParsers) -> None:
    record = commands.add_parser("record", help="record the current side of JSON reports",
                                 description="Record the current side of perfgate JSON reports (a pytest --perfgate "
                                             "session report or a compare --format json report) in the history. "
                                             "Recording the same run twice adds nothing.")
    record.add_argument("reports", nargs="+", type=Path, metavar="REPORT")
    record.add_argument("--db", metavar="URL", help=DB_HELP)
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
    changes.add_argument("--db", metavar="URL", help=DB_HELP)
    changes.add_argument("--branch", default="main", metavar="NAME", help="branch whose runs to read (default: main)")
    changes.add_argument("--format", choices=("text", "json", "md"), default="text", help="output (default: text)")
    changes.add_argument("--p-value", type=probability, default=0.0001, metavar="P",
                         help="a change point must beat this t-test p-value (default: 0.0001)")
    changes.add_argument("--min-change", type=float, default=0.0, metavar="FRACTION",
                         help="ignore change points smaller than this relative change, e.g. 0.01 (default: 0)")
    changes.add_argument("-o", "--output", type=Path, metavar="FILE", help="write to FILE (default: stdout)")
    changes.set_defaults(func=cmd_changes)


def _add_dashboard(commands: SubParsers) -> None:
    dashboard = commands.add_parser("dashboard", help="write the static trend dashboard",
                                    description="Write a static site (GitHub Pages ready, works offline): an index "
                                                "of series, one page per kernel with charts over commits.")
    dashboard.add_argument("--db", metavar="URL", help=DB_HELP)
    dashboard.add_argument("--branch", default="main", metavar="NAME", help="branch to chart (default: main)")
    dashboard.add_argument("-o", "--output", type=Path, required=True, metavar="DIR", help="folder to write")
    dashboard.set_defaults(func=cmd_dashboard)
