"""What the commands of the command line share: their settings, where a report is written, the exit status of a
report that measured nothing."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Iterable, NoReturn

from perfgate.config import Settings, find_pyproject, load_settings
from perfgate.errors import EXIT_USAGE, InputError
from perfgate.files import write_file
from perfgate.option_table import given_to_command, resolve
from perfgate.process import print_out
from perfgate.text import inert
from perfgate.verdict import exit_status

if TYPE_CHECKING:
    from perfgate.report import ReportView

    SubParsers = argparse._SubParsersAction["OneLineParser"]


class OneLineParser(argparse.ArgumentParser):
    """argparse's parser, its usage errors in one line: the cause and where the usage is (a usage block of 2-10
    lines above the cause buries it in a CI log)."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message} (usage: {self.prog} --help)\n")


def usage_error(add_parser: Callable[[SubParsers], None], command: str, message: str) -> NoReturn:
    """A usage error found after parsing (one argument needs another): as argparse reports its own, exit 2."""
    parser = OneLineParser(prog="perfgate")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    add_parser(sub)
    sub.choices[command].error(message)


def settings_for(args: argparse.Namespace, command: str) -> Settings:
    """``command``'s settings: its command line over ``[tool.perfgate]`` (of ``--config``, else of the nearest
    pyproject.toml above the current directory) over the defaults. Paths from ``[tool.perfgate]`` are relative to
    that pyproject.toml's folder, as in the plugin; paths given on the command line to the current directory."""
    pyproject = getattr(args, "config", None) or find_pyproject()
    configured = load_settings(pyproject) if pyproject is not None else Settings()
    project = pyproject.resolve().parent if pyproject is not None else None
    return resolve(configured, given_to_command(args, command), project)


_REPORT_SUFFIXES = (".ncu-rep", ".csv", ".json", ".log", ".txt")


def report_stem(path: Path) -> str:
    """``resnet.fp16.ncu-rep`` -> ``resnet.fp16``: only a known report suffix (and .xz/.gz) is dropped."""
    name = path.name
    for packed in (".xz", ".gz"):
        if name.lower().endswith(packed) and len(name) > len(packed):
            name = name[: -len(packed)]
    for suffix in _REPORT_SUFFIXES:
        if name.lower().endswith(suffix) and len(name) > len(suffix):
            return name[: -len(suffix)]
    return name


def output_path(text: str) -> Path | None:
    """``-o FILE``; ``-o -`` is stdout, as for most tools (not a file named "-")."""
    return None if text == "-" else Path(text)


WRITE_FIX = "give a file in a writable folder with space left, or - for stdout"


def write_output(parts: Iterable[str | bytes], output: Path | None) -> None:
    """Write a report's text, in parts (``render_parts``), to ``output`` or to stdout."""
    if output is None:
        print_out(*parts)
        return
    try:
        write_file(output, parts)
    except OSError as exc:
        raise InputError(output, f"cannot write report ({exc.strerror or exc})", WRITE_FIX) from None


def format_of(output: Path | None) -> str:
    suffix = output.suffix.lower() if output is not None else ""
    return {".md": "md", ".markdown": "md", ".html": "html", ".htm": "html", ".json": "json"}.get(suffix, "text")


def report_status(report: "ReportView", failed: bool) -> int:
    """The exit status for a written report (``perfgate.verdict.exit_status``); a report that could not vouch
    for what it was asked (gated values on one side only, nothing compared) also says why on stderr."""
    status = exit_status(failed, report["verdict"])
    if status == EXIT_USAGE:
        from perfgate.render import headline  # jinja2 and the renderers: a command that reports imports them

        sys.stderr.write(inert(f"perfgate: error: not measured: {headline(report)}", 400) + "\n")
    return status
