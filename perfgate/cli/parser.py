"""The command line's parser: one subcommand per command, each added by its module in ``perfgate.cli``."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Callable, cast

from perfgate import __version__
from perfgate.cli.baseline import add_parser as add_baseline
from perfgate.cli.compare import add_parser as add_compare
from perfgate.cli.merge import add_parser as add_merge
from perfgate.cli.common import Parser

if TYPE_CHECKING:
    from perfgate.cli.common import SubParsers


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The command line's parser; with ``only`` (one of ``COMMANDS``), the parser of that command alone, all a
    run of it needs: the other commands' parsers and modules cost 3-6 ms of a compare's start-up."""
    parser = Parser(prog="perfgate", description="CI performance-regression gate for GPU kernels.")
    parser.add_argument("--version", action="version", version=f"perfgate {__version__}")
    sub = cast("SubParsers", parser.add_subparsers(dest="command", metavar="COMMAND"))  # of Parser: ArgumentParsers
    sub.required = True
    for name, add in _COMMAND_PARSERS.items():
        if only in (None, name):
            add(sub)
    return parser


def _add_publish(sub: SubParsers) -> None:
    from perfgate.cli.publish import register  # imported for a run of its command alone

    register(sub)


def _add_baselines(sub: SubParsers) -> None:
    from perfgate.cli.baselines import register

    register(sub)


def _add_history(sub: SubParsers) -> None:
    from perfgate.cli.history import register

    register(sub)


def _add_accept(sub: SubParsers) -> None:
    from perfgate.cli.history import register_accept

    register_accept(sub)


# Each command and what adds its parser, in the order --help lists them.
_COMMAND_PARSERS: dict[str, Callable[[SubParsers], None]] = {
    "compare": add_compare, "baseline": add_baseline, "merge": add_merge, "publish": _add_publish,
    "baselines": _add_baselines, "history": _add_history, "accept": _add_accept}
COMMANDS = tuple(_COMMAND_PARSERS)
