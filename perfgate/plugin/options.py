"""The plugin's effective options: command line over ``[tool.perfgate]`` over defaults (``perfgate.option_table``),
built once when the session starts, so a bad option is a usage error before the first test.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Mapping, NamedTuple

import pytest

from perfgate.config import Settings, find_pyproject, load_settings
from perfgate.errors import ConfigError
from perfgate.files import written_through
from perfgate.limits import HISTORY_WAIT_SECONDS
from perfgate.metrics import Threshold
from perfgate.option_table import PLUGIN_OPTIONS, resolve
from perfgate.options import selection
from perfgate.vocabulary import NO_ENTRIES

if TYPE_CHECKING:
    from perfgate.compare import CompareOptions
    from perfgate.history.reference import Reference
    from perfgate.plugin.marker import PerfMarker


class PluginOptions(NamedTuple):
    """The effective settings: command line over ``[tool.perfgate]`` over defaults."""

    update: bool
    strict: bool
    baselines: Path
    report: Path
    ncu: str
    clock_control: str
    cache_control: str
    timeout: float
    thresholds: Mapping[str, Threshold] = NO_ENTRIES
    metrics: tuple[str, ...] | None = None
    significance: float = 0.01
    allow_device_mismatch: bool = False
    keep_artifacts: bool = False
    isolate: bool = False
    kernel_aliases: Mapping[str, str] = NO_ENTRIES
    kernel_thresholds: Mapping[str, Mapping[str, Threshold]] = NO_ENTRIES
    accept_unpaired_kernels: bool = False
    sections: tuple[str, ...] = ()  # ncu --section IDs: their rules' findings explain regressions
    code_identity: bool = False  # read each kernel's machine code from ncu's report: the same-code rule
    source: str = "ncu"  # what measures perf tests: ncu, timeline, both, auto (docs/timeline.md)
    history: str = ""  # history URL each session is recorded in ("" = none)
    history_notes: tuple[str, ...] = ()  # what learning thresholds from the history said (insufficient data...)
    history_reference: Reference | None = None  # the base branch's recent runs each test is judged against
    history_fallback: bool = False  # the reference judges only tests without a committed baseline
    history_max_time: float = HISTORY_WAIT_SECONDS  # seconds the history may keep the plugin waiting (each opening)
    templates: Path | None = None  # [tool.perfgate] templates: a team's templates (None: perfgate's)


def find_plugin_pyproject(config: pytest.Config) -> Path | None:
    """The pyproject.toml whose ``[tool.perfgate]`` the plugin reads: pytest's own config file when that
    is a pyproject.toml, else the nearest pyproject.toml in the rootdir or above it."""
    inipath = config.inipath
    if inipath is not None and inipath.name == "pyproject.toml":
        return inipath
    return find_pyproject(config.rootpath)


def report_files(target: Path) -> list[Path]:
    """The session report's files: JSON at ``target`` (or beside it, for a .md or .html target), .md, .html;
    only the JSON where ``target`` is no file but something written through (``/dev/null``, a FIFO,
    ``/dev/stdout``: ``perfgate.files.write_file``), beside which no .md or .html file belongs."""
    if written_through(target):
        return [target]
    json_file = target.with_suffix(".json") if target.suffix in (".md", ".html") else target
    return [json_file, target.with_suffix(".md"), target.with_suffix(".html")]


def _report_path_problem(label: str, value: str, target: Path) -> str | None:
    """Why the session report cannot be written at ``target``, found before any test runs; else None.

    ``label`` says where the path came from (``--perfgate-report=out``), ``value`` is the path given."""
    try:
        return _path_problem(label, value, target)
    except OSError as exc:  # the system refused to even look (a name too long): as the writer would say it
        return f"{label}: cannot use this path ({exc.strerror or exc})"


def _path_problem(label: str, value: str, target: Path) -> str | None:
    if value.endswith(("/", os.sep)) or target.is_dir():
        return f"{label} names a directory; give a file name, e.g. {os.path.join(value, 'perfgate-report.json')}"
    for path in report_files(target):
        if path.is_dir():
            return f"{label}: {path} is a directory (the report's {path.suffix} file goes there)"
    for parent in target.parents:
        if parent.exists():
            if not parent.is_dir():
                return f"{label}: {parent} is not a directory"
            break
    return None


def resolve_options(config: pytest.Config) -> PluginOptions:
    """Command-line paths are relative to the current directory. ``[tool.perfgate]`` paths, and the
    defaults of ``baselines`` and ``report``, are relative to that pyproject.toml's folder (the rootdir
    when there is no pyproject.toml)."""
    pyproject = find_plugin_pyproject(config)
    configured = load_settings(pyproject) if pyproject is not None else Settings()
    root = pyproject.parent if pyproject is not None else config.rootpath
    given = {option.key: config.getoption(option.plugin_dest) for option in PLUGIN_OPTIONS if option.key}
    settings = resolve(configured, given, root, config.invocation_params.dir)
    report = Path(settings.report)
    _check_report_path(given["report"], configured.report, report)
    notes: tuple[str, ...] = ()
    reference = None
    if settings.history and (settings.history_thresholds or settings.history_fallback):
        notes, reference = _history_reference(settings)
    return PluginOptions(
        update=bool(config.getoption("perfgate_update")), strict=settings.strict, baselines=Path(settings.baselines),
        report=report, ncu=settings.ncu, clock_control=settings.clock_control, cache_control=settings.cache_control,
        timeout=settings.timeout, thresholds=settings.thresholds, metrics=settings.metrics,
        significance=settings.significance, allow_device_mismatch=settings.allow_device_mismatch,
        keep_artifacts=settings.keep_artifacts, isolate=settings.isolate, kernel_aliases=settings.kernel_aliases,
        kernel_thresholds=settings.kernel_thresholds,
        accept_unpaired_kernels=settings.accept_unpaired_kernels, sections=settings.sections, source=settings.source,
        code_identity=settings.code_identity, history=settings.history, history_notes=notes, history_reference=reference,
        history_fallback=settings.history_fallback and not settings.history_thresholds,
        history_max_time=settings.history_max_time,
        templates=_templates(settings.templates))


def _history_reference(settings: Settings) -> tuple[tuple[str, ...], Reference]:
    """The base branch's recent runs every test is judged against, with their learned thresholds, and the notes.
    ``history_fallback`` (``perfgate init``'s setting): a history not made yet is an empty one (the first pull
    request of a repository, before its main branch recorded anything), and the notes say what to do while the
    branch has too few runs."""
    from perfgate.history.db import open_history
    from perfgate.history.noise import plugin_thresholds
    from perfgate.history.reference import MIN_REFERENCE_RUNS, plugin_reference

    branch = settings.history_branch
    if settings.history_fallback:
        # made (as the session's recording would) where new
        with open_history(settings.history, create=True, max_time=settings.history_max_time):
            pass
    learned = plugin_thresholds(settings.history, branch, settings.thresholds, settings.metrics,
                                settings.history_max_time)
    notes = tuple(learned.notes)
    reference = plugin_reference(settings.history, branch, settings.history_max_time)._replace(
        thresholds=learned.series)
    if settings.history_fallback and reference.commits < MIN_REFERENCE_RUNS:
        notes = (*notes, f"not gated yet: {branch} has {reference.commits} recorded run"
                         f"{'' if reference.commits == 1 else 's'} and a test without a committed baseline is judged "
                         f"against {branch}'s recent runs once {MIN_REFERENCE_RUNS} are recorded; each push to {branch} "
                         "records one (perfgate-main.yml), or gate at once: pytest --perfgate --perfgate-update on the "
                         "GPU runner, then commit baselines/")
    return notes, reference


def _check_report_path(given: str | None, configured: str, report: Path) -> None:
    """Refuse a session report path that cannot be written, naming where it came from, before any test runs."""
    if given:
        problem = _report_path_problem(f"--perfgate-report={given}", given, report)
    elif configured != Settings().report:
        problem = _report_path_problem(f"[tool.perfgate] report = {configured!r}", configured, report)
    else:
        problem = _report_path_problem(f"the default report path {report}", str(report), report)
    if problem:
        raise ConfigError(f"cannot write the session report: {problem}")


def _templates(folder: str) -> Path | None:
    """``render.templates.team_templates``: a syntax error stops the session before any test runs, not after."""
    if not folder:
        return None
    from perfgate.render.templates import team_templates  # jinja2: only when a team has templates

    return team_templates(folder)


def compare_options_for(options: PluginOptions, marker: PerfMarker | None = None,
                        collecting: bool = True) -> CompareOptions:
    """What one test compares (and ncu collects): see ``perfgate.options.selection``."""
    return selection(metrics=options.metrics, thresholds=options.thresholds, significance=options.significance,
                     allow_device_mismatch=options.allow_device_mismatch,
                     extra_metrics=marker.metrics if marker else (),
                     extra_thresholds=marker.thresholds if marker else None, collecting=collecting,
                     kernel_aliases=options.kernel_aliases, kernel_thresholds=options.kernel_thresholds,
                     declared_flops=marker.flops if marker else None,
                     accept_unpaired_kernels=options.accept_unpaired_kernels
                     or bool(marker and marker.accept_unpaired_kernels))
