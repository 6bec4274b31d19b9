"""The plugin's effective options: command line over ``[tool.perfgate]`` over defaults, built once.

Import-light (pytest and stdlib, perfgate's settings and option helpers): the plugin resolves these
before any heavy module loads, so a bad option is a usage error before the first test.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping, NamedTuple

import pytest

from perfgate.config import (
    Settings,
    check_clock_control,
    check_timeout,
    find_pyproject,
    load_settings,
)
from perfgate.errors import ConfigError
from perfgate.metrics import Threshold
from perfgate.options import resolve_metrics, selection
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
    accept_unpaired_kernels: bool = False
    sections: tuple[str, ...] = ()  # ncu --section IDs: their rules' findings explain regressions
    source: str = "ncu"  # what measures perf tests: ncu, timeline, both, auto (docs/timeline.md)
    history: str = ""  # history URL each session is recorded in ("" = none)
    history_notes: tuple[str, ...] = ()  # what learning thresholds from the history said (insufficient data...)
    history_reference: Reference | None = None  # the base branch's recent runs each test is judged against
    templates: Path | None = None  # [tool.perfgate] templates: a team's templates (None: perfgate's)


def _anchor(value: str, base: Path) -> Path:
    path = Path(value).expanduser()
    return path if path.is_absolute() else base / path


def find_plugin_pyproject(config: pytest.Config) -> Path | None:
    """The pyproject.toml whose ``[tool.perfgate]`` the plugin reads: pytest's own config file when that
    is a pyproject.toml, else the nearest pyproject.toml in the rootdir or above it."""
    inipath = config.inipath
    if inipath is not None and inipath.name == "pyproject.toml":
        return inipath
    return find_pyproject(config.rootpath)


def report_files(target: Path) -> list[Path]:
    """The session report's files: JSON at ``target`` (or beside it, for a .md or .html target), .md, .html."""
    json_file = target.with_suffix(".json") if target.suffix in (".md", ".html") else target
    return [json_file, target.with_suffix(".md"), target.with_suffix(".html")]


def _report_path_problem(label: str, value: str, target: Path) -> str | None:
    """Why the session report cannot be written at ``target``, found before any test runs; else None.

    ``label`` says where the path came from (``--perfgate-report=out``), ``value`` is the path given."""
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
    settings = load_settings(pyproject) if pyproject is not None else Settings()
    here = config.invocation_params.dir
    root = pyproject.parent if pyproject is not None else config.rootpath

    def opt(name: str) -> Any:
        return config.getoption(name)

    thresholds = dict(settings.thresholds)
    thresholds.update(dict(opt("perfgate_threshold") or []))
    clock = check_clock_control(opt("perfgate_clock_control") or settings.clock_control, "--perfgate-clock-control")
    cache = opt("perfgate_cache_control") or settings.cache_control
    if cache not in ("all", "none"):
        raise ConfigError(f"cache_control must be 'all' or 'none', got {cache!r}")
    if opt("perfgate_report"):
        value = opt("perfgate_report")
        report = _anchor(value, here)
        problem = _report_path_problem(f"--perfgate-report={value}", value, report)
    else:
        report = _anchor(settings.report, root)
        configured = settings.report != Settings().report
        label = f"[tool.perfgate] report = {settings.report!r}" if configured else f"the default report path {report}"
        problem = _report_path_problem(label, settings.report if configured else str(report), report)
    if problem:
        raise ConfigError(f"cannot write the session report: {problem}")
    history = opt("perfgate_history") or _anchored_history(settings.history, root)
    notes: tuple[str, ...] = ()
    reference = None
    if history and (opt("perfgate_history_thresholds") or settings.history_thresholds):
        from perfgate.history.noise import plugin_thresholds
        from perfgate.history.reference import plugin_reference

        learned = plugin_thresholds(history, settings.history_branch, thresholds,
                                    resolve_metrics(opt("perfgate_metrics"), settings.metrics))
        notes = tuple(learned.notes)
        reference = plugin_reference(history, settings.history_branch)._replace(thresholds=learned.series)
    return PluginOptions(
        update=bool(opt("perfgate_update")),
        strict=bool(opt("perfgate_strict")) or settings.strict,
        baselines=_anchor(opt("perfgate_baselines"), here) if opt("perfgate_baselines") else _anchor(
            settings.baselines, root),
        report=report,
        ncu=opt("perfgate_ncu") or settings.ncu,
        clock_control=clock,
        cache_control=cache,
        timeout=check_timeout(float(opt("perfgate_timeout") or settings.timeout), "--perfgate-timeout"),
        thresholds=thresholds,
        metrics=resolve_metrics(opt("perfgate_metrics"), settings.metrics),
        significance=opt("perfgate_significance") or settings.significance,
        allow_device_mismatch=settings.allow_device_mismatch,
        keep_artifacts=bool(opt("perfgate_keep_artifacts")) or settings.keep_artifacts,
        isolate=bool(opt("perfgate_isolate")) or settings.isolate,
        kernel_aliases=settings.kernel_aliases,
        accept_unpaired_kernels=settings.accept_unpaired_kernels,
        sections=settings.sections if opt("perfgate_sections") is None else opt("perfgate_sections"),
        source=opt("perfgate_source") or settings.source,
        history=history,
        history_notes=notes,
        history_reference=reference,
        templates=_templates(settings.templates, root),
    )


def _templates(folder: str, root: Path) -> Path | None:
    """A team's templates folder, each of its templates compiled now: a syntax error stops the session before
    any test runs, not after."""
    if not folder:
        return None
    from perfgate.render.templates import check_templates

    return check_templates(_anchor(folder, root))


def _anchored_history(url: str, root: Path) -> str:
    """A relative ``sqlite:///path`` from ``[tool.perfgate] history`` is relative to the pyproject.toml's folder."""
    prefix = "sqlite:///"
    if url.startswith(prefix) and not Path(url[len(prefix):]).is_absolute():
        return prefix + str(root / url[len(prefix):])
    return url


def compare_options_for(options: PluginOptions, marker: PerfMarker | None = None,
                        collecting: bool = True) -> CompareOptions:
    """What one test compares (and ncu collects): see ``perfgate.options.selection``."""
    return selection(metrics=options.metrics, thresholds=options.thresholds, significance=options.significance,
                     allow_device_mismatch=options.allow_device_mismatch,
                     extra_metrics=marker.metrics if marker else (),
                     extra_thresholds=marker.thresholds if marker else None, collecting=collecting,
                     kernel_aliases=options.kernel_aliases,
                     accept_unpaired_kernels=options.accept_unpaired_kernels
                     or bool(marker and marker.accept_unpaired_kernels))
