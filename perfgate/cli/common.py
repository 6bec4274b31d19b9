"""What the commands of the command line share: the help's width, settings and paths from [tool.perfgate],
where a report is written, the exit status of a report that measured nothing, where modules are imported."""

from __future__ import annotations

import argparse
import contextlib
import gc
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterable, Iterator, NoReturn, cast

from perfgate.config import Settings
from perfgate.errors import EXIT_USAGE, InputError
from perfgate.options import metrics_arg
from perfgate.process import print_out
from perfgate.text import inert

if TYPE_CHECKING:
    from perfgate.report import Report

    SubParsers = argparse._SubParsersAction[argparse.ArgumentParser]


def add_selection_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--metrics", type=metrics_arg, metavar="NAMES",
                        help="comma-separated metrics to compare, replacing the defaults; prefix each with '+' to "
                             "add to the defaults (default: the curated set, see README)")
    parser.add_argument("--config", type=Path, metavar="PYPROJECT",
                        help="pyproject.toml whose [tool.perfgate] to use (default: the nearest one above the "
                             "current directory)")


class HelpFormatter(argparse.HelpFormatter):
    """argparse's help, as wide as the terminal as argparse would make it, found without importing ``shutil``
    (with ``bz2`` and ``lzma``: 2-3 ms of every run's start-up): argparse makes a formatter for each argument
    it adds, and a run that prints no help needs no width."""

    def __init__(self, prog: str) -> None:  # shutil.get_terminal_size's rules, and argparse's 2 columns less
        try:
            columns = int(os.environ.get("COLUMNS", "0"))
        except ValueError:
            columns = 0
        if columns <= 0:
            try:
                columns = os.get_terminal_size(sys.__stdout__.fileno()).columns  # type: ignore[union-attr]
            except (AttributeError, ValueError, OSError):  # no stdout, or not a terminal
                columns = 0
        super().__init__(prog, width=(columns if columns > 0 else 80) - 2)


class Parser(argparse.ArgumentParser):
    """``argparse.ArgumentParser`` with ``HelpFormatter``; its subcommands' parsers are of this class too."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("formatter_class", HelpFormatter)
        super().__init__(*args, **kwargs)


def usage_error(add_parser: Callable[[SubParsers], None], command: str, message: str) -> NoReturn:
    """A usage error found after parsing (one argument needs another): as argparse reports its own, exit 2."""
    parser = Parser(prog="perfgate")
    sub = cast("SubParsers", parser.add_subparsers(dest="command", metavar="COMMAND"))  # of Parser: ArgumentParsers
    add_parser(sub)
    sub.choices[command].error(message)


def settings_of(args: argparse.Namespace) -> Settings:
    from perfgate.config import load_settings

    return load_settings(args.config)


def project_path(args: argparse.Namespace, value: str) -> Path:
    from perfgate.config import configured_path

    return configured_path(args.config, value)


def project_history(args: argparse.Namespace, url: str) -> str:
    """A relative ``sqlite:///path`` from [tool.perfgate] history is relative to the pyproject.toml's folder."""
    prefix = "sqlite:///"
    if url.startswith(prefix) and not Path(url[len(prefix):]).is_absolute():
        return prefix + str(project_path(args, url[len(prefix):]))
    return url


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


def write_output(parts: Iterable[str], output: Path | None) -> None:
    """Write a report's text, in parts (``render_parts``), to ``output`` or to stdout."""
    if output is None:
        print_out(*parts)
        return
    from perfgate.files import write_atomically

    try:
        write_atomically(output, parts)
    except OSError as exc:
        raise InputError(output, f"cannot write report ({exc.strerror})", "check the directory exists and is "
                                                                          "writable") from None


def format_of(output: Path | None) -> str:
    suffix = output.suffix.lower() if output is not None else ""
    return {".md": "md", ".markdown": "md", ".html": "html", ".htm": "html", ".json": "json"}.get(suffix, "text")


_own_process = False  # set by ``entry``: this process is perfgate's, and its start-up may set process-wide things


def run_as_own_process() -> None:
    """Say that this process is perfgate's own (the console script), not another program's that calls ``main``."""
    global _own_process
    _own_process = True


@contextlib.contextmanager
def importing() -> Iterator[None]:
    """Where a command imports its modules. In perfgate's own process (``entry``) they are imported with the
    cyclic garbage collector off, and what they made is frozen after (``gc.freeze``: never examined again):
    importing numpy and perfgate makes ~100,000 objects that live as long as the process, and collecting among
    them found nothing and cost 8-10 ms of a small compare's CPU (a twentieth). Not when ``main`` is called by
    another program: freezing its objects would keep its cyclic garbage alive."""
    if not _own_process:
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.freeze()
        gc.enable()


def report_status(report: "Report", failed: bool) -> int:
    """The exit status for a written report (``perfgate.verdict.exit_status``); a report that could not vouch
    for what it was asked (gated values on one side only, nothing compared) also says why on stderr."""
    from perfgate.verdict import exit_status

    status = exit_status(failed, report["verdict"])
    if status == EXIT_USAGE:
        from perfgate.render import headline

        sys.stderr.write(inert(f"perfgate: error: not measured: {headline(report)}", 400) + "\n")
    return status
