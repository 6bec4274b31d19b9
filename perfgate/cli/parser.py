"""The command line's parser: one subcommand per command, each added by its module in ``perfgate.cli``."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Callable

from perfgate.version import __version__
from perfgate.cli.baseline import add_parser as add_baseline
from perfgate.cli.baselines import add_parser as add_baselines
from perfgate.cli.bisect import add_parser as add_bisect
from perfgate.cli.codes import add_parser as add_codes
from perfgate.cli.common import OneLineParser
from perfgate.cli.compare import add_parser as add_compare
from perfgate.cli.history import add_accept_parser, add_parser as add_history
from perfgate.cli.init import add_parser as add_init
from perfgate.cli.merge import add_parser as add_merge
from perfgate.cli.publish import add_parser as add_publish

if TYPE_CHECKING:
    from perfgate.cli.common import SubParsers

# Each command and what adds its parser, in the order --help lists them.
_COMMAND_PARSERS: dict[str, Callable[[SubParsers], None]] = {
    "compare": add_compare, "baseline": add_baseline, "merge": add_merge, "publish": add_publish,
    "baselines": add_baselines, "history": add_history, "accept": add_accept_parser, "bisect": add_bisect,
    "codes": add_codes, "init": add_init}
COMMANDS = tuple(_COMMAND_PARSERS)


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineParser(prog="perfgate", description="CI performance-regression gate for GPU kernels.")
    parser.add_argument("--version", action="version", version=f"perfgate {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    for add in _COMMAND_PARSERS.values():
        add(sub)
    return parser
