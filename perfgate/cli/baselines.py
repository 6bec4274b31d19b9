"""``perfgate baselines list|stale``: what a baselines directory holds, and the baselines of tests that are gone
(``perfgate.store`` finds them)."""

from __future__ import annotations

import argparse
import contextlib
import sys
from pathlib import Path
from typing import Any

from perfgate.errors import EXIT_OK
from perfgate.store import collect_test_ids, format_baseline, list_baselines, stale_baselines


def baselines_dir(args: argparse.Namespace) -> Path:
    """``--dir``, else [tool.perfgate] baselines (relative to its pyproject.toml's folder), as ``perfgate
    baseline`` writes them; shown relative to the current directory when it lies below it."""
    if args.dir is not None:
        return Path(args.dir)
    from perfgate.config import configured_path, load_settings

    directory = configured_path(args.config, load_settings(args.config).baselines)
    if directory.is_absolute():
        with contextlib.suppress(ValueError):  # not below the current directory: kept absolute
            return directory.relative_to(Path.cwd().resolve())
    return directory


def cmd_list(args: argparse.Namespace) -> int:
    args.dir = baselines_dir(args)
    stored = list_baselines(args.dir)
    for device in sorted({b.device for b in stored}):
        mine = [b for b in stored if b.device == device]
        sys.stdout.write(f"{device}: {len(mine)} baseline{'s' if len(mine) != 1 else ''}\n")
        for b in mine:
            sys.stdout.write(f"  {format_baseline(b)}\n")
    if not stored:
        sys.stdout.write(f"{args.dir}: no baselines\n")
    return EXIT_OK


def cmd_stale(args: argparse.Namespace) -> int:
    args.dir = baselines_dir(args)
    stored = list_baselines(args.dir)
    stale, unchecked = stale_baselines(stored, collect_test_ids(args.pytest_args))
    for b in stale:
        if args.delete:
            b.path.unlink(missing_ok=True)
        sys.stdout.write(f"{'deleted' if args.delete else 'stale'}: {b.path} (test {b.source} is gone)\n")
    for b in unchecked:
        sys.stdout.write(f"not checked: {b.path} (nothing of {b.source.split('::', 1)[0]} was collected here: "
                         "skipped, a collection error, or not among the paths given)\n")
    tested = sum(1 for b in stored if b.from_test)
    sys.stdout.write(f"{len(stale)} of {tested} test baselines under {args.dir} belong to tests that are gone"
                     + ("" if args.delete or not stale else "; pass --delete to remove them") + "\n")
    return EXIT_OK


def _add_dir_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("-d", "--dir", type=Path, metavar="DIR",
                        help="baselines directory (default: [tool.perfgate] baselines, else 'baselines')")
    parser.add_argument("--config", type=Path, metavar="PYPROJECT",
                        help="pyproject.toml whose [tool.perfgate] to use (default: the nearest one above the "
                             "current directory)")


def register(sub: Any) -> None:
    baselines = sub.add_parser("baselines", help="list stored baselines, or find those of tests that are gone",
                               description="Inspect a baselines directory (one folder per GPU or CPU model).")
    actions = baselines.add_subparsers(dest="action", metavar="ACTION")
    actions.required = True
    show = actions.add_parser("list", help="every baseline: GPU, name, size, how and when it was measured")
    _add_dir_options(show)
    show.set_defaults(func=cmd_list)
    stale = actions.add_parser(
        "stale", help="baselines of perf tests pytest no longer collects (renamed or deleted tests)",
        description="Collect the tests (python -m pytest --collect-only; arguments after -- go to pytest) and "
                    "list the baselines written for tests that are not collected any more.")
    _add_dir_options(stale)
    stale.add_argument("--delete", action="store_true", help="remove them (default: only list them)")
    stale.add_argument("pytest_args", nargs="*", metavar="PYTEST_ARGS",
                       help="what pytest collects, after -- (default: the project's testpaths)")
    stale.set_defaults(func=cmd_stale)
