"""``perfgate init``: the workflows, the configuration and an example perf test, written into a repository."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from perfgate.process import print_out
from perfgate.text import inert

if TYPE_CHECKING:
    from perfgate.cli.common import SubParsers

EXIT_EXISTS = 2


def add_parser(sub: SubParsers) -> None:
    from perfgate.init import InitOptions

    default = InitOptions()
    init = sub.add_parser(
        "init", help="set a repository up: workflows, [tool.perfgate], an example perf test",
        description="Write the pull request gate, its fork-safe publisher and the workflow recording the main "
                    "branch's runs (.github/workflows), actionlint's runner label, a [tool.perfgate] table in "
                    "pyproject.toml and an example perf test. Refuses to overwrite anything that exists.")
    init.add_argument("--dir", type=Path, default=Path("."), metavar="PATH",
                      help="the repository's root (default: the current directory)")
    init.add_argument("--runner-label", default=default.runner_label, metavar="LABEL",
                      help=f"the self-hosted GPU runner's label (default: {default.runner_label})")
    init.add_argument("--branch", default=default.branch, metavar="NAME",
                      help=f"the branch whose runs are recorded and judge pull requests (default: {default.branch})")
    init.add_argument("--tests", default=default.tests, metavar="PATH",
                      help=f"where the perf tests live; the example goes there (default: {default.tests})")
    init.add_argument("--perfgate-spec", default=None, metavar="REQUIREMENT",
                      help="what the workflows pip-install perfgate from (default: the git commit this perfgate was "
                           "installed from, else the main branch, which init says to pin: perfgate has no release "
                           "tag yet)")
    init.add_argument("--install", default=None, metavar="COMMAND",
                      help="the workflows' command installing the project under test (default: pip install -e . "
                           "for a package, -r requirements.txt where there is one)")
    init.add_argument("--example", choices=("auto", "torch", "cupy", "cpu"), default="auto",
                      help="the example perf test: auto (torch or CuPy where it imports, else a pytest-benchmark "
                           "test)")
    init.add_argument("--force", action="store_true", help="overwrite files that exist")
    init.set_defaults(func=cmd_init)


def cmd_init(args: argparse.Namespace) -> int:
    from perfgate.errors import InputError
    from perfgate.init import InitOptions, conflicts, next_steps, plan, refuse_folders_in_the_way, write

    root: Path = args.dir
    if not root.is_dir():
        raise InputError(root, "is not a directory", "give the repository's root with --dir")
    options = InitOptions(runner_label=args.runner_label, branch=args.branch, tests=args.tests,
                          perfgate_spec=args.perfgate_spec, install=args.install, example=args.example,
                          force=args.force)
    planned = plan(root, options)
    refuse_folders_in_the_way(root, planned)
    existing = conflicts(root, planned)
    if existing and not options.force:
        # pyproject.toml itself is kept: only its [tool.perfgate] table is in the way.
        names = ", ".join(f"{p}'s [tool.perfgate]" if p.name == "pyproject.toml" else str(p) for p in existing)
        sys.stderr.write(f"perfgate: error: init: {names} already exist{'s' if len(existing) == 1 else ''} "
                         "(nothing written; --force overwrites)\n")
        return EXIT_EXISTS
    write(root, planned)
    width = max(len(str(p.path)) for p in planned)
    lines = [inert(f"perfgate init: wrote {len(planned)} files in {root.resolve()}")]
    lines += [f"  {str(p.path):<{width}}  {p.purpose}" for p in planned]
    print_out("\n".join([*lines, next_steps(options, planned)]) + "\n")
    return 0
