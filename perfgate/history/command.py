"""``perfgate history record|changes|dashboard`` and ``perfgate accept``: what each runs (``perfgate.cli.history``
holds their parsers).

Exit status: 0 = done, 2 = bad input (a report that fails validation, a history that cannot be opened).
``history changes`` exits 0 whatever it finds: it reports, the gate is ``compare``'s and the plugin's.

The change-point search (scipy) and the dashboard (jinja2) are imported by the command that uses them, so that
``perfgate history record`` in a CI job pays for neither.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from perfgate.errors import EXIT_OK, InputError
from perfgate.files import write_atomically
from perfgate.history.accept import Acceptance, accepted_by, record_acceptance
from perfgate.history.db import open_history
from perfgate.history.record import iso_time, provenance, record_files
from perfgate.process import print_out
from perfgate.text import inert


def cmd_record(args: argparse.Namespace) -> int:
    when = provenance(os.environ, args.commit, args.branch, args.when)
    with open_history(args.db) as history:
        recorded = record_files(history, [str(p) for p in args.reports], when)
    for item in recorded:
        state = "recorded" if item.added else "already recorded"
        print_out(inert(f"{state}: {item.source} ({item.points} series) at {when.commit[:12]} on "
                               f"{when.branch}") + "\n")
    return EXIT_OK


def cmd_changes(args: argparse.Namespace) -> int:
    from perfgate.history.detect import find_changes, render_changes

    with open_history(args.db, create=False) as history:
        found = find_changes(history, args.branch, p_value=args.p_value, min_change=args.min_change)
    text = render_changes(found, args.format)
    _write(text, args.output)
    return EXIT_OK


def cmd_dashboard(args: argparse.Namespace) -> int:
    from perfgate.history.dashboard import write_dashboard

    with open_history(args.db, create=False) as history:
        pages = write_dashboard(history, args.branch, args.output)
    print_out(inert(f"wrote {pages} pages to {args.output}") + "\n")
    return EXIT_OK


def cmd_accept(args: argparse.Namespace) -> int:
    commit = args.commit or provenance(os.environ, branch="-", when=None).commit
    acceptance = Acceptance(commit=commit.lower(), gpu=args.gpu, test=args.test, kernel=args.kernel,
                            region=args.region, metric=args.metric, reason=args.reason,
                            by=args.by or accepted_by(os.environ), when=iso_time(None))
    with open_history(args.db) as history:
        matched = record_acceptance(history, acceptance)
    print_out(inert(f"accepted the change at {commit[:12]} for {matched} series: {args.reason}", 400) + "\n")
    return EXIT_OK


def _write(text: str, output: Path | None) -> None:
    if output is None:
        print_out(text)
        return
    try:
        write_atomically(output, [text])
    except OSError as exc:
        raise InputError(output, f"cannot write ({exc.strerror})", "check the folder exists and is writable") from None
