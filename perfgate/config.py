"""Settings from ``[tool.perfgate]`` in pyproject.toml; command-line flags override them.

Unknown keys are rejected so a typo (``treshold``) is an error, not a silently ignored setting.
"""

from __future__ import annotations

import math
import os
import re
import sys
from pathlib import Path
from typing import Any, Mapping, NamedTuple

from perfgate.errors import ConfigError
from perfgate.limits import HISTORY_WAIT_SECONDS
from perfgate.metrics import DEFAULT_BENCHMARK_METRICS, DEFAULT_KERNEL_METRICS, Threshold, parse_threshold
from perfgate.vocabulary import NO_ENTRIES

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib  # type: ignore[import-not-found,unused-ignore]  # Python 3.10 only


class Settings(NamedTuple):
    """Every ``[tool.perfgate]`` key with its type and default; ``perfgate.option_table`` says which options set
    each one."""

    baselines: str = "baselines"  # directory of baseline files, one subfolder per GPU
    metrics: tuple[str, ...] | None = None  # compared metrics; None = the curated defaults
    thresholds: Mapping[str, Threshold] = NO_ENTRIES  # per-metric overrides
    allow_device_mismatch: bool = False
    ncu: str = "ncu"  # the Nsight Compute CLI to run
    clock_control: str = "base"  # ncu --clock-control: locked base clocks give repeatable numbers
    cache_control: str = "all"  # ncu --cache-control: flush caches before each pass
    timeout: float = 600.0  # seconds one profiled test may run under ncu
    strict: bool = False  # missing baseline / no GPU fails instead of skipping
    report: str = "perfgate-report.json"  # session report (JSON; .md and .html beside it)
    significance: float = 0.01  # p-value a benchmark slowdown must beat (raw timings on both sides)
    keep_artifacts: bool = False  # keep ncu's report, log and command of every perf test, not only failed ones
    isolate: bool = False  # one profiled child per perf test instead of one per group sharing ncu's options
    kernel_aliases: Mapping[str, str] = NO_ENTRIES  # glob pattern -> name, to pair renamed kernels
    # glob pattern -> {metric: threshold}: the thresholds of the kernels matching it, over the metric's
    kernel_thresholds: Mapping[str, Mapping[str, Threshold]] = NO_ENTRIES
    accept_unpaired_kernels: bool = False  # missing + new kernels of one region pass (else: not measured)
    code_identity: bool = False  # read each kernel's machine code from .ncu-rep files: the same-code rule
    # ncu sections collected besides the metrics (--section ID): only their rules give findings ("Uncoalesced
    # Global Accesses") that explain a regression, at the cost of more replay passes per kernel.
    sections: tuple[str, ...] = ()
    # What measures perf tests: "ncu", "timeline" (a CUPTI trace), "both", or "auto" (ncu; the timeline where
    # counters are refused). See docs/timeline.md.
    source: str = "ncu"
    # The history (docs/history.md): a URL that records every session ("" = off), the base branch whose runs
    # size learned thresholds, and whether to learn them.
    history: str = ""
    history_branch: str = "main"
    history_thresholds: bool = False
    history_fallback: bool = False  # the history judges only the tests without a committed baseline
    # Seconds the plugin and ``perfgate baseline --history`` wait on the history database (connecting, another
    # writer's lock, one statement) before they give up.
    history_max_time: float = HISTORY_WAIT_SECONDS
    # A folder of jinja2 templates overriding perfgate's by file name (docs/reports.md); "" = perfgate's own.
    templates: str = ""

    def replace(self, **changes: Any) -> "Settings":
        return self._replace(**{k: v for k, v in changes.items() if v is not None})


_KEYS = set(Settings._fields)
SOURCES = ("ncu", "timeline", "both", "auto")


def find_pyproject(start: Path | None = None) -> Path | None:
    here = (start or Path.cwd()).resolve()
    for folder in (here, *here.parents):
        candidate = folder / "pyproject.toml"
        if candidate.is_file():
            return candidate
    return None


CLOCK_CONTROLS = ("base", "none")  # ncu --clock-control's values that profile ("reset" only resets the clocks)
CACHE_CONTROLS = ("all", "none")  # ncu --cache-control's values


def check_clock_control(value: str, where: str) -> str:
    if value not in CLOCK_CONTROLS:
        extra = " ('reset' only resets the clocks and profiles nothing)" if value == "reset" else ""
        raise ConfigError(f"{where} must be 'base' (locked base clocks: repeatable numbers) or 'none' (clocks left "
                          f"free), got {value!r}{extra}")
    return value


SECTION_ID = re.compile(r"[A-Za-z][A-Za-z0-9_]{0,99}")


def check_sections(names: Any, where: str) -> tuple[str, ...]:
    """ncu section identifiers (``ncu --list-sections``: SpeedOfLight, MemoryWorkloadAnalysis_Tables ...)."""
    if not isinstance(names, (list, tuple)) or not all(isinstance(n, str) for n in names):
        raise ConfigError(f"{where} must be a list of ncu section identifiers, e.g. [\"SpeedOfLight\"]")
    bad = [n for n in names if not SECTION_ID.fullmatch(n)]
    if bad:
        raise ConfigError(f"{where}: {bad[0]!r} is not an ncu section identifier (letters, digits and '_', as "
                          "`ncu --list-sections` prints them, e.g. SpeedOfLight)")
    return tuple(dict.fromkeys(names))


def check_timeout(value: float, where: str) -> float:
    if not math.isfinite(value) or value <= 0:
        raise ConfigError(f"{where} must be a positive, finite number of seconds (ncu is killed after it), got "
                          f"{value!r}")
    return value


def check_significance(value: float, where: str) -> float:
    if not 0 < value < 1:  # also false for NaN
        raise ConfigError(f"{where} must be a p-value between 0 and 1 (exclusive), e.g. 0.01, got {value!r}")
    return value


def _threshold_entry(metric: object, value: object, source: str) -> Threshold:
    if not isinstance(value, str):
        # A bare TOML number is ambiguous: 0.05 could mean 5% or 0.05 of the metric's base unit (ns, bytes).
        number = value if isinstance(value, (int, float)) and not isinstance(value, bool) else None
        hint = ""
        if number is not None and math.isfinite(number) and number >= 0:
            relative = f'"{number * 100:g}%" for {number * 100:g}%, or ' if number < 1 else ""
            hint = f': write {relative}"{number:g}" for an absolute limit of {number:g} in its base unit'
        raise ConfigError(f'{source}: thresholds."{metric}" = {value!r} must be a string such as "5%", "1000", '
                          f'"5%+1000" or "off"{hint}')
    try:
        return parse_threshold(value)
    except ConfigError as exc:
        raise ConfigError(f"{source}: {exc}") from None


def _kernel_thresholds(value: object, source: str) -> dict[str, dict[str, Threshold]]:
    """``{"sgemm*" = {"derived.roofline_pct" = ">=60"}}``: per glob pattern, the thresholds of its kernels."""
    shape = ('kernel_thresholds must be a table of glob pattern = a table of thresholds, like {"sgemm*" = '
             '{"derived.roofline_pct" = ">=60"}}')
    if not isinstance(value, Mapping) or not all(isinstance(v, Mapping) and v for v in value.values()):
        raise ConfigError(f"{source}: {shape}")
    return {str(pattern): {str(k): _threshold_entry(k, v, f'{source}: kernel_thresholds."{pattern}"')
                           for k, v in table.items()} for pattern, table in value.items()}


def settings_from_table(table: Mapping[str, Any], source: str = "[tool.perfgate]") -> Settings:
    unknown = sorted(set(table) - _KEYS)
    if unknown:
        raise ConfigError(f"{source}: unknown key(s) {', '.join(unknown)}; known keys: {', '.join(sorted(_KEYS))}")
    values: dict[str, Any] = {}
    for key, value in table.items():
        if key == "thresholds":
            if not isinstance(value, Mapping):
                raise ConfigError(f'{source}: thresholds must be a table like {{"gpu__time_duration.sum" = "5%"}}')
            values[key] = {str(k): _threshold_entry(k, v, source) for k, v in value.items()}
        elif key == "kernel_thresholds":
            values[key] = _kernel_thresholds(value, source)
        elif key == "kernel_aliases":
            if not isinstance(value, Mapping) or not all(isinstance(v, str) for v in value.values()):
                raise ConfigError(f'{source}: kernel_aliases must be a table like {{"triton_red_fused_sum_*" = '
                                  '"triton_red_fused_sum"}} (a glob pattern = the name it pairs kernels under)')
            values[key] = {str(k): v for k, v in value.items()}
        elif key == "sections":
            values[key] = check_sections(value, f"{source}: sections")
        elif key == "metrics":
            if not isinstance(value, list) or not all(isinstance(m, str) for m in value):
                raise ConfigError(f"{source}: metrics must be a list of metric names")
            names = [m.strip() for m in value]
            if not names or not all(names):
                raise ConfigError(f"{source}: metrics must name at least one metric, and no empty name (leave the "
                                  "key out for the curated set)")
            if all(name.startswith("+") for name in names):  # additions to the curated set: ["+roofline"]
                names = list(dict.fromkeys([*DEFAULT_KERNEL_METRICS, *DEFAULT_BENCHMARK_METRICS,
                                            *(name[1:] for name in names)]))
            values[key] = tuple(names)
        else:
            expected = type(getattr(Settings(), key))
            if expected is float and isinstance(value, int) and not isinstance(value, bool):
                value = float(value)
            if not isinstance(value, expected):
                raise ConfigError(f"{source}: {key} must be a {expected.__name__}, got {value!r}")
            values[key] = value
    _check_values(values, source)
    return Settings(**values)


def _check_values(values: Mapping[str, Any], source: str) -> None:
    """Refuse settings that parse but make no sense: they would disable a guard or gate nothing, silently."""
    if "source" in values and values["source"] not in SOURCES:
        raise ConfigError(f"{source}: source must be one of {', '.join(SOURCES)}, got {values['source']!r}")
    if "clock_control" in values:
        check_clock_control(values["clock_control"], f"{source}: clock_control")
    if "cache_control" in values and values["cache_control"] not in CACHE_CONTROLS:
        raise ConfigError(f"{source}: cache_control must be 'all' (flush caches before each pass) or 'none', got "
                          f"{values['cache_control']!r}")
    if "timeout" in values:
        check_timeout(values["timeout"], f"{source}: timeout")
    if "significance" in values:
        check_significance(values["significance"], f"{source}: significance")
    if "history_max_time" in values and not 0 <= values["history_max_time"] < math.inf:  # also false for NaN
        raise ConfigError(f"{source}: history_max_time must be 0 or more seconds (how long to wait on the history "
                          f"database), got {values['history_max_time']!r}")
    for key in ("baselines", "report", "ncu"):
        if key in values and not values[key].strip():
            raise ConfigError(f"{source}: {key} must not be empty (leave the key out for the default "
                              f"{getattr(Settings(), key)!r})")
    for key in ("baselines", "report", "ncu", "templates"):
        if key in values and "\0" in values[key]:
            raise ConfigError(f"{source}: {key} holds a NUL character (\\u0000), which no path can hold (remove it)")


def load_settings(pyproject: Path | None = None) -> Settings:
    """Settings from the nearest pyproject.toml (or defaults when there is none)."""
    path = pyproject if pyproject is not None else find_pyproject()
    if path is None:
        return Settings()
    try:
        document = tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:  # --config naming a file that is not there, a folder, an unreadable file
        raise ConfigError(f"{path}: cannot read [tool.perfgate] ({exc.strerror or exc}) (give --config the path "
                          "of a pyproject.toml file, or leave it out to use the nearest one)") from None
    except UnicodeDecodeError:
        raise ConfigError(f"{path}: cannot read [tool.perfgate] (not UTF-8 text) (save it as UTF-8)") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: cannot read [tool.perfgate] ({exc}) (fix the TOML at that line)") from None
    except RecursionError:  # tomllib parses nested arrays by recursion
        raise ConfigError(f"{path}: cannot read [tool.perfgate] (nested too deeply: no setting nests more than two "
                          "levels)") from None
    tool = document.get("tool", {})
    if not isinstance(tool, Mapping):
        raise ConfigError(f"{path}: tool must be a table (write the settings under [tool.perfgate])")
    table = tool.get("perfgate", {})
    if not isinstance(table, Mapping):
        raise ConfigError(f"{path}: [tool.perfgate] must be a table")
    return settings_from_table(table, f"{os.path.relpath(path)} [tool.perfgate]")
