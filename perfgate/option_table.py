"""Every option of both shells in one table: its ``[tool.perfgate]`` key, its pytest flag, its ``perfgate`` flags
and commands, how its value is parsed, its help. ``pytest_addoption`` and the commands' parsers are built from it,
and ``resolve`` merges the command line over ``[tool.perfgate]`` over the default, once, for both shells.

A setting's type and default are the ``perfgate.config.Settings`` field of its key; options without a key
(``--perfgate``, ``--config``, the history commands' ``--db``, ``--branch`` and ``--max-time``) belong to a shell,
not to the configuration. Options that only one command has and that no setting backs (``compare --format``,
``publish --repo``) stay with their command.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, Protocol

from perfgate.config import CACHE_CONTROLS, SOURCES, Settings
from perfgate.history.location import DEFAULT_URL
from perfgate.limits import HISTORY_WAIT_SECONDS
from perfgate.metrics import CATALOG
from perfgate.derived import REDUNDANT_WORK_RATIO
from perfgate.options import (
    clock_control_arg,
    metrics_arg,
    non_negative_seconds,
    positive_flop,
    positive_seconds,
    probability,
    resolve_metrics,
    sections_arg,
    threshold_arg,
)

DEFAULTS = Settings()
HISTORY_URL = "history URL: sqlite:///PATH or postgresql://USER@HOST/DB"
PLUGIN = "pytest"  # the shell a help text is for: the plugin's options ...
COMMAND = "perfgate"  # ... or the commands'


def _merge_thresholds(configured: Mapping[str, Any], given: Iterable[tuple[str, Any]]) -> dict[str, Any]:
    return {**configured, **dict(given)}


def _merge_metrics(configured: tuple[str, ...] | None, given: list[str]) -> tuple[str, ...] | None:
    return resolve_metrics(given, configured)


@dataclass(frozen=True)
class Option:
    """One option. ``help`` says what it does; the help text adds where its default comes from."""

    key: str  # [tool.perfgate] key, a Settings field; "" for an option of a shell only
    help: str
    plugin: str = ""  # pytest's flag; "" when the plugin has none
    cli: tuple[str, ...] = ()  # the perfgate commands' flags
    commands: tuple[str, ...] = ()  # the perfgate commands that take it
    cli_help: str = ""  # the commands' help, where their option means something narrower than the plugin's
    plugin_note: str = ""  # what the plugin's help adds (how a marker's argument combines with it)
    metavar: str | None = None
    parse: Callable[[str], Any] | None = None  # argparse's type=: a bad value is a usage error
    flag: bool = False  # takes no value (store_true)
    repeat: bool = False  # may be given more than once (append)
    choices: tuple[str, ...] | None = None
    default_text: str = ""  # how the default reads in help, where the setting's value does not say it
    anchor: str = ""  # "path": a path; "url": a history URL whose sqlite:/// path is relative
    combine: Callable[[Any, Any], Any] | None = None  # (configured, given) -> value; else given wins
    value: Any = None  # a shell option's value where the command line gives none (an option with a key: None)

    @property
    def dest(self) -> str:
        """The attribute a parsed value lands in: the key, else the shell's own name (``--config`` -> config)."""
        return self.key or self.cli[-1].lstrip("-").replace("-", "_")

    @property
    def plugin_dest(self) -> str:
        return self.plugin.lstrip("-").replace("-", "_")

    def default_phrase(self) -> str:
        if self.default_text:
            return self.default_text
        value = getattr(DEFAULTS, self.key)
        if isinstance(value, bool):
            return "on" if value else "off"
        return f"{value:g}" if isinstance(value, float) else repr(value)

    def help_for(self, shell: str) -> str:
        text = self.cli_help if shell == COMMAND and self.cli_help else self.help
        if shell == PLUGIN and self.plugin_note:
            text = f"{text}; {self.plugin_note}"
        where = f"[tool.perfgate] {self.key}, else " if self.key else ""
        return f"{text} (default: {where}{self.default_phrase()})"

    def argument(self, shell: str) -> dict[str, Any]:
        """``add_argument``'s (and pytest's ``addoption``'s) keywords. Unset, an option is None (False for a flag of
        a shell), so that ``resolve`` tells what the command line gave from what it did not."""
        unset = None if self.key else False if self.flag else self.value
        kwargs: dict[str, Any] = {"help": self.help_for(shell), "default": unset}
        if self.flag:
            kwargs["action"] = "store_true"
        else:
            kwargs["metavar"] = self.metavar
            if self.repeat:
                kwargs["action"] = "append"
            if self.parse is not None:
                kwargs["type"] = self.parse
            if self.choices is not None:
                kwargs["choices"] = self.choices
        return kwargs


def _catalog_thresholds() -> str:
    return ", ".join(f"{m.label} {m.threshold.spec}" for m in CATALOG if m.threshold.gating).replace("%", "%%")


OPTIONS: tuple[Option, ...] = (
    Option("", "run perf tests (@pytest.mark.perfgate or the perfgate fixture) under Nsight Compute, gate them and "
               "pytest-benchmark results against the stored baselines, and write a session report",
           plugin="--perfgate", flag=True, default_text="off: perf tests run as plain tests"),
    Option("", "write or update the baselines from this run instead of failing on regressions; implies --perfgate",
           plugin="--perfgate-update", flag=True, default_text="off"),
    Option("baselines", "baseline directory, one subfolder per GPU or CPU model; relative to the current directory",
           plugin="--perfgate-baselines", cli=("-d", "--dir"), commands=("baseline", "baselines"), metavar="DIR",
           default_text=f"{DEFAULTS.baselines!r}, relative to the pyproject.toml's folder", anchor="path"),
    Option("strict", "fail instead of skip when ncu, a GPU or counter permission is missing, and fail tests that "
                     "have no baseline",
           plugin="--perfgate-strict", cli=("--strict",), commands=("compare",), flag=True,
           cli_help="with a baselines directory: a GPU with no baseline fails instead of being reported as new"),
    Option("report", "session report (JSON; .md and .html written beside it); relative to the current directory",
           plugin="--perfgate-report", metavar="PATH", anchor="path",
           default_text=f"{DEFAULTS.report!r}, relative to the pyproject.toml's folder"),
    Option("ncu", "the Nsight Compute CLI to run", plugin="--perfgate-ncu", metavar="PATH",
           default_text=f"{DEFAULTS.ncu!r} found on PATH"),
    Option("clock_control", "ncu --clock-control, recorded in the baseline: base locks clocks for repeatable "
                            "numbers, none leaves them free",
           plugin="--perfgate-clock-control", metavar="MODE", parse=clock_control_arg),
    Option("cache_control", "ncu --cache-control, recorded in the baseline: all flushes caches before each pass",
           plugin="--perfgate-cache-control", metavar="MODE", choices=CACHE_CONTROLS),
    Option("timeout", "seconds one perf test may run under ncu before it is killed and failed",
           plugin="--perfgate-timeout", metavar="SECONDS", parse=positive_seconds),
    Option("keep_artifacts", "keep ncu's report, log, command line and the test's output of every perf test in "
                             "perfgate-artifacts/ beside the session report, not only of failed ones",
           plugin="--perfgate-keep-artifacts", flag=True),
    Option("isolate", "profile each perf test in its own child process under its own ncu, instead of one child per "
                      "group of perf tests that share ncu's options",
           plugin="--perfgate-isolate", flag=True),
    Option("metrics", "comma-separated metrics to compare, replacing the configured set; prefix each with '+' to add "
                      "to it",
           plugin="--perfgate-metrics", cli=("--metrics",), commands=("compare", "baseline", "bisect"), metavar="NAMES",
           parse=metrics_arg, default_text="the curated set", combine=_merge_metrics),
    Option("sections", "comma-separated ncu sections to collect besides the metrics (ncu --section; `ncu "
                       "--list-sections` names them), so that ncu's rule findings such as 'Uncoalesced Global "
                       "Accesses' explain a regression; costs replay passes; 'none' for none",
           plugin="--perfgate-sections", metavar="IDS", parse=sections_arg, default_text="none"),
    Option("significance", "p-value a benchmark slowdown must beat when raw timings exist on both sides",
           plugin="--perfgate-significance", cli=("--significance",), commands=("compare", "bisect"), metavar="P",
           parse=probability),
    Option("source", "what measures the perf tests: ncu (Nsight Compute's counters), timeline (a CUPTI activity "
                     "trace: region wall time, GPU idle, kernel durations; no counter permission needed), both, or "
                     "auto (ncu, and the timeline where counters are refused)",
           plugin="--perfgate-source", metavar="SOURCE", choices=SOURCES),
    Option("history", "record each session in this history: sqlite:///PATH or postgresql://...",
           plugin="--perfgate-history", cli=("--history",), commands=("baseline",), metavar="URL", anchor="url",
           cli_help="say which regressions the update carries are accepted in this history",
           default_text="off; see docs/history.md"),
    Option("history_thresholds", "judge each test against the median of the history's recent base-branch runs (its "
                                 "baseline where a series has too few) and size each metric's threshold from their "
                                 "spread, never above the hand-set one",
           plugin="--perfgate-history-thresholds", flag=True),
    Option("history_fallback", "judge each test without a committed baseline against the median of the history's "
                               "recent base-branch runs, with thresholds learned from their spread; committed "
                               "baselines win (perfgate init's setting)",
           plugin="--perfgate-history-fallback", flag=True),
    Option("history_branch", "the base branch whose runs --history reads", cli=("--history-branch",),
           commands=("compare", "publish"), metavar="NAME"),
    # The history commands' own options. A command given no --db uses $PERFGATE_HISTORY, and those that read
    # [tool.perfgate] its history (perfgate.history.location.resolve_history_url): three defaults, three rows.
    Option("", HISTORY_URL, cli=("--db",), commands=("history record", "accept"), metavar="URL",
           default_text=f"$PERFGATE_HISTORY, else {DEFAULT_URL}"),
    Option("", HISTORY_URL, cli=("--db",), commands=("history changes", "history dashboard"), metavar="URL",
           default_text=f"$PERFGATE_HISTORY, else [tool.perfgate] history, else {DEFAULT_URL}"),
    Option("", HISTORY_URL, cli=("--db",), commands=("bisect",), metavar="URL",
           default_text="$PERFGATE_HISTORY, else [tool.perfgate] history; none: no commit is seeded from a history"),
    Option("", "branch whose runs to read", cli=("--branch",),
           commands=("history changes", "history dashboard", "bisect"), metavar="NAME",
           default_text="[tool.perfgate] history_branch, else main"),
    Option("", "give up (exit 2) when the history database keeps this command waiting longer: connecting, another "
               "writer's lock, one statement",
           cli=("--max-time",), commands=("history record", "history changes", "history dashboard", "accept", "bisect",
                                           "compare"),
           metavar="SECONDS", parse=non_negative_seconds, value=HISTORY_WAIT_SECONDS,
           default_text=f"{HISTORY_WAIT_SECONDS:g}"),
    Option("history_max_time", "seconds to wait on the history database (connecting, another writer's lock, one "
                               "statement) before giving up: reading the reference and learned thresholds stops "
                               "pytest with a usage error, recording the session says so in one line",
           plugin="--perfgate-history-max-time", cli=("--max-time",), commands=("baseline",), metavar="SECONDS",
           parse=non_negative_seconds,
           cli_help="give up (exit 2) when the history database of --history keeps the update waiting longer: "
                    "connecting, another writer's lock, one statement"),
    Option("thresholds", "gate METRIC with SPEC: '5%%' relative, '1000' absolute (base unit), '5%%+1000' both, "
                         "'off' not gated; repeatable",
           plugin="--perfgate-threshold", cli=("--threshold",), commands=("compare", "bisect"), metavar="METRIC=SPEC",
           parse=threshold_arg, repeat=True, combine=_merge_thresholds,
           plugin_note="a marker's thresholds= wins for its test",
           default_text=f"the catalog's: {_catalog_thresholds()}"),
    Option("allow_device_mismatch", "compare results from different GPUs anyway", cli=("--allow-device-mismatch",),
           commands=("compare",), flag=True),
    Option("accept_unpaired_kernels", "kernels missing and new in the same region that no rule paired and no total "
                                      "holds pass",
           cli=("--accept-unpaired-kernels",), commands=("compare",), flag=True,
           default_text="off: the comparison is 'not measured', exit 2: one may be a renamed kernel nobody judged "
                        "(where a total holds them, it judges them either way: docs/matching.md)"),
    Option("code_identity", "read each kernel's machine code (its code_id) from .ncu-rep files and the codes file "
                            "beside a trace, and with the timeline source from the cubins the traced process loads: "
                            "a kernel whose code and launch configuration are the same on both sides cannot regress "
                            "in time",
           plugin="--perfgate-code-identity", cli=("--code-identity",), commands=("compare", "baseline"), flag=True,
           default_text="off: reading the code costs about a second per large library kernel"),
    Option("kernel_thresholds", "a table of glob pattern = a table of thresholds: the kernels matching a pattern are "
                                "gated by its thresholds instead of the metrics' (the first pattern that matches)",
           default_text="none"),
    Option("kernel_aliases", "a table of glob pattern = name: kernels matching a pattern pair under that name, as a "
                             "renamed kernel", default_text="none"),
    Option("templates", "a folder of jinja2 templates overriding perfgate's by file name, relative to the "
                        "pyproject.toml's folder", default_text="perfgate's own", anchor="path"),
    Option("", "the useful work the compared test does, in FLOP (a GEMM's 2*M*N*K): the counted FLOP are compared "
               f"with it, and counted FLOP above {REDUNDANT_WORK_RATIO:g} x it are redundant work, said in the Why (the "
               "marker's flops=)",
           cli=("--flops",), commands=("compare",), metavar="FLOP", parse=positive_flop, default_text="none"),
    Option("", "pyproject.toml whose [tool.perfgate] to use", cli=("--config",),
           commands=("compare", "baseline", "baselines", "history changes", "history dashboard", "bisect"),
           metavar="PYPROJECT",
           parse=Path,
           default_text="the nearest one above the current directory"),
)

PLUGIN_OPTIONS = tuple(option for option in OPTIONS if option.plugin)


def command_options(command: str) -> tuple[Option, ...]:
    return tuple(option for option in OPTIONS if command in option.commands)


def add_arguments(parser: argparse.ArgumentParser | argparse._ArgumentGroup, command: str) -> None:
    """The table's options of ``command`` (``compare``, ``baselines`` ...) on its parser."""
    for option in command_options(command):
        parser.add_argument(*option.cli, dest=option.dest, **option.argument(COMMAND))


class OptionGroup(Protocol):
    """pytest's option group (``pytest.OptionGroup``), as far as the table uses it."""

    def addoption(self, *opts: str, **attrs: Any) -> None: ...


def add_plugin_options(group: OptionGroup) -> None:
    for option in PLUGIN_OPTIONS:
        group.addoption(option.plugin, **option.argument(PLUGIN))


def given_to_command(args: argparse.Namespace, command: str) -> dict[str, Any]:
    """The command line's values of ``command``'s settings, by key (None: not given)."""
    return {option.key: getattr(args, option.dest) for option in command_options(command) if option.key}


def _given(value: Any) -> bool:
    """Whether the command line set a value: an empty word (``--perfgate-ncu=``) keeps the configured one, as an
    empty list does (no ``--threshold``); ``--perfgate-sections=none``'s empty tuple is a value."""
    return value is not None and value != "" and value != []


def _anchored(option: Option, value: Any, folder: Path) -> Any:
    if option.anchor == "path" and value:
        path = Path(value).expanduser()
        return str(path if path.is_absolute() else folder / path)
    prefix = "sqlite:///"
    if option.anchor == "url" and value.startswith(prefix) and not Path(value[len(prefix):]).is_absolute():
        return prefix + str(folder / value[len(prefix):])
    return value


def resolve(configured: Settings, given: Mapping[str, Any], project: Path | None, here: Path | None = None) -> Settings:
    """Each setting from the first of: the command line (``given``, by key), ``[tool.perfgate]`` (``configured``),
    the default. Paths from ``[tool.perfgate]`` and their defaults are made relative to ``project`` (the
    pyproject.toml's folder; None: left as they are); paths from the command line to ``here`` (None: left as given,
    relative to the current directory)."""
    values: dict[str, Any] = {}
    for option in OPTIONS:
        if not option.key:
            continue
        setting, value = getattr(configured, option.key), given.get(option.key)
        if not _given(value):
            values[option.key] = setting if project is None else _anchored(option, setting, project)
        elif option.combine is not None:
            values[option.key] = option.combine(setting, value)
        else:
            values[option.key] = value if here is None or option.anchor != "path" else _anchored(option, value, here)
    return Settings(**values)
