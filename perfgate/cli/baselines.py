"""``perfgate baselines list|stale``: what a baselines directory holds, and the baselines of tests that are gone
(``perfgate.baseline`` finds them)."""

from __future__ import annotations

import argparse
import contextlib
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

from perfgate.cli.common import settings_for
from perfgate.errors import EXIT_OK, EXIT_USAGE, InputError
from perfgate.option_table import add_arguments
from perfgate.text import inert

if TYPE_CHECKING:
    from perfgate.baseline import StoredBaseline
    from perfgate.cli.common import SubParsers


def baselines_dir(args: argparse.Namespace) -> Path:
    """``--dir``, else [tool.perfgate] baselines (relative to its pyproject.toml's folder), as ``perfgate
    baseline`` writes them; shown relative to the current directory when it lies below it."""
    directory = Path(settings_for(args, "baselines").baselines)
    if args.baselines is None and directory.is_absolute():
        with contextlib.suppress(ValueError):  # not below the current directory: kept absolute
            return directory.relative_to(Path.cwd().resolve())
    return directory


def _age(seconds: float | None) -> str:
    if seconds is None:
        return "?"
    days = (time.time() - seconds) / 86400
    return "today" if days < 1 else f"{days:.0f} day{'s' if round(days) != 1 else ''} ago"


def _how_measured(settings: dict[str, object]) -> str:
    """What measured a baseline, from its settings: ncu's (the plugin's), a timeline trace, pytest-benchmark."""
    ncu = ", ".join(f"{k} {settings[k]}" for k in ("clock_control", "cache_control", "ncu_version") if k in settings)
    if ncu:
        return ncu
    if settings.get("source") == "timeline":
        return "a timeline trace"
    if "pytest_benchmark" in settings:
        return f"pytest-benchmark {settings['pytest_benchmark']}"
    return "no ncu settings recorded"


def format_baseline(b: StoredBaseline) -> str:
    entries = f"{b.entries} entr{'y' if b.entries == 1 else 'ies'}"
    metrics = f"{b.metrics} metric{'' if b.metrics == 1 else 's'}"
    return (f"{b.device}/{b.name}.json  {entries}, {metrics}; {_how_measured(b.settings)}; {_age(b.committed)}; "
            f"from {b.source or '?'}")


def _write(line: str) -> None:
    """One line of output: names and sources come from files a pull request may have written."""
    sys.stdout.write(inert(line) + "\n")


def _refuse_unreadable(directory: Path, stored: list[StoredBaseline]) -> int:
    """EXIT_USAGE with one error line when a baseline file cannot be read (each was listed): compare and
    pytest --perfgate would refuse it too."""
    unreadable = sum(1 for b in stored if b.problem)
    if not unreadable:
        return EXIT_OK
    files = f"{unreadable} baseline file{'s' if unreadable != 1 else ''}"
    error = InputError(directory, f"{files} cannot be read (listed above)",
                       "restore them from git, or record them again with pytest --perfgate --perfgate-update")
    sys.stderr.write(inert(f"perfgate: error: {error}") + "\n")
    return EXIT_USAGE


def cmd_list(args: argparse.Namespace) -> int:
    from perfgate.baseline import list_baselines  # the command's machinery, as every command imports its own

    directory = baselines_dir(args)
    stored = list_baselines(directory)
    for device in sorted({b.device for b in stored}):
        mine = [b for b in stored if b.device == device and not b.problem]
        broken = [b for b in stored if b.device == device and b.problem]
        _write(f"{device}: {len(mine)} baseline{'s' if len(mine) != 1 else ''}"
               + (f", {len(broken)} unreadable" if broken else ""))
        for b in mine:
            _write(f"  {format_baseline(b)}")
        for b in broken:
            _write(f"  {b.device}/{b.name}.json  unreadable: {b.problem}")
    if not stored:
        _write(f"{directory}: no baselines")
    return _refuse_unreadable(directory, stored)


def cmd_stale(args: argparse.Namespace) -> int:
    from perfgate.baseline import collect_test_ids, list_baselines, stale_baselines

    directory = baselines_dir(args)
    stored = list_baselines(directory)
    stale, unchecked = stale_baselines(stored, collect_test_ids(args.pytest_args))
    for b in stale:
        if args.delete:
            b.path.unlink(missing_ok=True)
        _write(f"{'deleted' if args.delete else 'stale'}: {b.path} (test {b.source} is gone)")
    for b in unchecked:
        _write(f"not checked: {b.path} (nothing of {b.source.split('::', 1)[0]} was collected here: "
               "skipped, a collection error, or not among the paths given)")
    for b in stored:
        if b.problem:
            _write(f"not checked: {b.path} (unreadable: {b.problem})")
    tested = sum(1 for b in stored if b.from_test)
    _write(f"{len(stale)} of {tested} test baselines under {directory} belong to tests that are gone"
           + ("" if args.delete or not stale else "; pass --delete to remove them"))
    return _refuse_unreadable(directory, stored)


def add_parser(sub: SubParsers) -> None:
    baselines = sub.add_parser("baselines", help="list stored baselines, or find those of tests that are gone",
                               description="Inspect a baselines directory (one folder per GPU or CPU model).")
    actions = baselines.add_subparsers(dest="action", metavar="ACTION")
    actions.required = True
    show = actions.add_parser("list", help="every baseline: GPU, name, size, how and when it was measured")
    add_arguments(show, "baselines")
    show.set_defaults(func=cmd_list)
    stale = actions.add_parser(
        "stale", help="baselines of perf tests pytest no longer collects (renamed or deleted tests)",
        description="Collect the tests (python -m pytest --collect-only; arguments after -- go to pytest) and "
                    "list the baselines written for tests that are not collected any more.")
    add_arguments(stale, "baselines")
    stale.add_argument("--delete", action="store_true", help="remove them (default: only list them)")
    stale.add_argument("pytest_args", nargs="*", metavar="PYTEST_ARGS",
                       help="what pytest collects, after -- (default: the project's testpaths)")
    stale.set_defaults(func=cmd_stale)
