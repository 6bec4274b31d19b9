"""The ``perfgate`` command line: one module per command (``compare``, ``baseline``, ``merge``, ``baselines``,
``publish``, ``history``, ``accept`` and ``init``), each holding its parser and what it runs; ``parser`` puts them together,
``shell`` runs one. Each command computes with library functions, then prints.

Exit status: 0 = no regression, 1 = regression, 2 = unusable input or usage (one line on stderr).
"""

from __future__ import annotations

from perfgate.cli.parser import COMMANDS, build_parser
from perfgate.cli.shell import entry, main

__all__ = ["COMMANDS", "build_parser", "entry", "main"]
