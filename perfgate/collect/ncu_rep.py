"""Read Nsight Compute ``.ncu-rep`` files through NVIDIA's ``ncu_report`` module.

``ncu_report`` happily "loads" an empty, random or truncated file and returns zero or only the
first few launches, so before trusting it the file's framing is walked (``ncu_rep_framing``).
"""

from __future__ import annotations

import contextlib
import importlib
import math
import os
import re
import shutil
import sys
from collections.abc import Collection, Iterable, Iterator, Sequence
from pathlib import Path
from types import ModuleType
from typing import Any, Protocol


from perfgate.limits import check_name_length
from perfgate.collect.screen import (
    no_value_reason,
    not_a_number_reason,
    screen_values,
    shown,
)
from perfgate.collect.ncu_rep_framing import check_framing
from perfgate.collect.rules import action_findings
from perfgate.collect.sass import CodeReader
from perfgate.errors import InputError
from perfgate.table import (
    Measurement,
    Unusable,
    assign_ordinals,
    format_dim,
    make_table,
    no_data_row,
)
from perfgate.vocabulary import (
    DEVICE_METRICS,
    DIM_METRICS,
    KIND_KERNEL,
    NVTX_DOMAIN,
    REGION_SEPARATOR,
    REPLAY_PASSES,
)

# The part of ncu_report's API read here. ncu_report is a SWIG module without stubs: these
# protocols say what perfgate relies on (names and shapes as in its 2025-2026 releases).
class _Metric(Protocol):
    def value(self) -> object: ...
    def metric_type(self) -> int: ...
    def unit(self) -> str: ...


class _NvtxRange(Protocol):
    def name(self) -> str: ...


class _NvtxDomain(Protocol):
    def name(self) -> str: ...
    def push_pop_ranges(self) -> Iterable[str | _NvtxRange] | None: ...


class _NvtxState(Protocol):
    def domains(self) -> Iterable[int]: ...
    def domain_by_id(self, domain_id: int) -> _NvtxDomain: ...


class _Action(Protocol):
    NameBase_DEMANGLED: int

    def name(self, base: int = ...) -> str: ...
    def metric_by_name(self, name: str) -> _Metric | None: ...
    def metric_names(self) -> Iterable[str]: ...
    def nvtx_state(self) -> _NvtxState | None: ...


class _Range(Protocol):
    def num_actions(self) -> int: ...
    def action_by_idx(self, index: int) -> _Action: ...
    def actions_by_nvtx(self, includes: list[str], excludes: list[str]) -> Iterable[int]: ...


class _Context(Protocol):
    def num_ranges(self) -> int: ...
    def range_by_idx(self, index: int) -> _Range: ...


def find_ncu_report_module() -> ModuleType:
    """Import ``ncu_report``: ``PERFGATE_NCU_PYTHON`` if set, else the ``ncu-report`` wheel perfgate
    depends on, else the copy in the user's Nsight Compute install.

    The wheel comes first because it is the version perfgate is tested with, and newer readers read
    older reports. On a real H100 machine the install's copy (2025.3.1, ``extras/python``) crashed the
    process (SIGSEGV in ``IMetric.unit()``) on reports the 2026.3.1 wheel reads correctly.
    """
    override = os.environ.get("PERFGATE_NCU_PYTHON")
    if override and str(override) not in sys.path:
        sys.path.insert(0, str(override))
    try:
        return importlib.import_module("ncu_report")
    except ImportError:
        pass
    for folder in _nsight_python_dirs():
        if (folder / "ncu_report.py").is_file() and str(folder) not in sys.path:
            sys.path.insert(0, str(folder))
            break
    try:
        return importlib.import_module("ncu_report")
    except ImportError as exc:
        raise InputError("ncu_report", f"cannot import NVIDIA's report reader ({exc})",
                         "pip install ncu-report, or install Nsight Compute") from exc


def _nsight_python_dirs() -> list[Path]:
    """Where an Nsight Compute install keeps ``ncu_report.py``, most specific first.

    Seen on a real machine (CUDA 13.0 toolkit, ncu 2025.3.1): ``ncu`` on PATH is the toolkit's
    ``/usr/local/cuda-13.0/bin/ncu``, a launcher beside ``nsight-compute-2025.3.1/``; the module is
    in that folder's ``extras/python``, not beside the launcher. Standalone installs go to
    ``/opt/nvidia/nsight-compute/<version>``.
    """
    roots: list[Path] = []
    ncu = shutil.which("ncu")
    installs: list[Path] = []
    if ncu:
        launcher = Path(ncu).resolve()
        installs.append(launcher.parent)
        installs.extend(_newest_first(launcher.parent.parent.glob("nsight-compute*")))
    installs.extend(_newest_first(Path("/opt/nvidia/nsight-compute").glob("*")))
    roots.extend(install / "extras" / "python" for install in installs)
    return roots


def _newest_first(folders: Iterable[Path]) -> list[Path]:
    def version(path: Path) -> tuple[int, ...]:
        return tuple(int(part) for part in re.findall(r"\d+", path.name))

    return sorted((p for p in folders if p.is_dir()), key=version, reverse=True)


_NUMERIC_TYPES = (1, 2, 3)  # ncu_report's MetricType: counter, ratio, throughput


def _number(metric: _Metric) -> tuple[float | None, str | None]:
    """(the metric's value as float, or NaN when it has none, or None for a string-valued metric;
    why a NaN is no value, or None)."""
    value = metric.value()
    if isinstance(value, bool):
        return float(value), None
    if isinstance(value, (int, float)):
        try:
            number = float(value)
        except OverflowError:  # an integer beyond float range
            return math.nan, f"{shown(str(value))} is beyond float range"
        return number, (no_value_reason("nan") if math.isnan(number) else None)
    if metric.metric_type() not in _NUMERIC_TYPES:
        return None, None
    if value is None:
        return math.nan, no_value_reason("n/a")
    return math.nan, not_a_number_reason(value)


def _push_pop_names(domain: _NvtxDomain) -> list[str]:
    """The domain's push/pop range stack, outermost first.

    ``push_pop_ranges()`` returns the names, in stack order (checked on our own H100 captures with
    nested regions); entries are read as range objects too, in case an ncu_report returns those.
    """
    return [entry if isinstance(entry, str) else str(entry.name()) for entry in domain.push_pop_ranges() or ()]


def _nvtx_stacks(action: _Action) -> tuple[list[str] | None, str]:
    """(perfgate's push/pop stack on the launching thread, or None when the state has no perfgate
    domain; the stacks of the other domains, joined, for reports perfgate did not capture)."""
    state = action.nvtx_state()
    if state is None:
        return None, ""
    own: list[str] | None = None
    others: list[str] = []
    for domain_id in state.domains():
        domain = state.domain_by_id(domain_id)
        names = _push_pop_names(domain)
        if str(domain.name()) == NVTX_DOMAIN:
            own = names
        else:
            others.extend(names)
    return own, REGION_SEPARATOR.join(others)


def _place_other_threads(profiled_range: _Range, stacks: list[list[str] | None],
                         region_names: Sequence[str]) -> dict[int, list[str]]:
    """Regions of launches made on threads other than the one that entered the region.

    ncu's ``--nvtx-push-pop-scope process`` profiles them (autograd runs the backward pass on its own
    thread), but each launch's NVTX state holds only its *own* thread's stack, which is empty there:
    seen on our H100 captures, where 16 of the 18 backward launches carried no range. The report still
    answers the process-wide question through ``IRange.actions_by_nvtx``, so ask it, region name by
    region name: the names on other launches' stacks plus ``region_names`` (what the test entered).
    """
    unplaced = [index for index, stack in enumerate(stacks) if stack == []]
    if not unplaced:
        return {}
    seen = [stack for stack in stacks if stack]
    names = list(dict.fromkeys([*(name for stack in seen for name in stack), *region_names]))
    members: dict[str, set[int]] = {}
    for name in names:
        try:
            members[name] = {int(i) for i in profiled_range.actions_by_nvtx([f"{NVTX_DOMAIN}@{name}/"], [])}
        except Exception:  # an ncu_report without NVTX queries, or a name it cannot parse
            members[name] = set()
    placed: dict[int, list[str]] = {}
    for index in unplaced:
        inside = [name for name in names if index in members[name]]
        if inside:
            same = [stack for stack in seen if sorted(stack) == sorted(inside)]
            # Nested regions are entered outer first, so first-seen order is the stack order.
            placed[index] = same[0] if same else inside
    return placed


# Known quirk of ncu_report (seen on the corpus): the units of ``derived__*`` metrics, which
# section scripts compute, depend on which reports the process loaded before (section definitions
# are process-wide). Measured metrics (time, bytes, instructions) are not affected; gate on those.


def _api_error(path: Path, module: ModuleType, launch: int, exc: Exception) -> InputError:
    return InputError(path, f"ncu_report {getattr(module, '__version__', '')} could not read launch {launch} "
                            f"({type(exc).__name__}: {exc})",
                      "report it to perfgate with the ncu version, or export the report with "
                      "ncu -i FILE --csv --page raw and compare the CSV")


def read_ncu_rep(path: str | os.PathLike[str], metrics: Collection[str] | None = None,
                 region_names: Sequence[str] = (), code: bool = False) -> Measurement:
    """Read every profiled launch of a report into the normalized table, with its unusable values and rule findings.

    ``metrics`` limits which metrics are kept (launch facts and device are always read); None keeps
    every numeric metric. ``region_names`` are perfgate regions the profiled program entered (the
    plugin knows them), so launches made on other threads inside a region that no launch of the
    test's own thread names are placed too. ``code``: read each kernel's machine code too (``Measurement.code``;
    seconds for a report of large library kernels, see ``perfgate.collect.sass``).
    """
    report_path = Path(path)
    check_framing(report_path)
    ncu_report = find_ncu_report_module()
    with _native_stderr_silenced():
        return _read_report(report_path, ncu_report, metrics, region_names, CodeReader() if code else None)


@contextlib.contextmanager
def _native_stderr_silenced() -> Iterator[None]:
    """File descriptor 2 sent to the null device while ncu_report reads: its C++ (protobuf, absl) writes parse
    failures of a damaged report straight to it ("Can't parse message of type ..."), lines around perfgate's one
    error line that say nothing more. Python's own warnings in that window are lost with them."""
    sys.stderr.flush()
    saved = os.dup(2)
    null = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(null, 2)
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)
        os.close(null)


def _read_report(report_path: Path, ncu_report: ModuleType, metrics: Collection[str] | None,
                 region_names: Sequence[str], code: CodeReader | None) -> Measurement:
    try:
        context: _Context = ncu_report.load_report(str(report_path))
    except Exception as exc:  # ncu_report raises plain exceptions with its own text
        raise InputError(report_path, f"ncu_report could not load it: {exc}", "re-run ncu or copy the file again") \
            from exc
    wanted = None if metrics is None else set(metrics)
    rows: list[dict[str, object]] = []
    unusable: list[Unusable] = []
    findings: dict[int, list[str]] = {}
    passes: list[int] = []
    launch = 0
    for range_index in range(context.num_ranges()):
        profiled_range = context.range_by_idx(range_index)
        try:
            actions = [profiled_range.action_by_idx(i) for i in range(profiled_range.num_actions())]
            states = [_nvtx_stacks(action) for action in actions]
            placed = _place_other_threads(profiled_range, [own for own, _ in states], region_names)
        except Exception as exc:  # ncu_report's API differs between versions: say which call broke
            raise _api_error(report_path, ncu_report, launch, exc) from exc
        for index, (action, (own, others)) in enumerate(zip(actions, states, strict=True)):
            stack = placed.get(index) or own
            region = REGION_SEPARATOR.join(stack) if stack else others
            try:
                rows.extend(_action_rows(action, launch, region, wanted, unusable))
                if code is not None:
                    code.read(action, launch)
            except _Damaged as exc:
                raise InputError(report_path, f"damaged Nsight Compute report (launch {launch} {exc})",
                                 "copy or download it again, or re-run ncu") from None
            except Exception as exc:
                raise _api_error(report_path, ncu_report, launch, exc) from exc
            found = action_findings(action)
            if found is not None:
                findings[launch] = found
            took = _replay_passes(action)
            if took is not None:
                passes.append(took)
            launch += 1
    if launch == 0:
        raise InputError(report_path, "the report holds no profiled launch",
                         "check ncu's --kernel-name / --nvtx-include filters matched something")
    check_name_length({str(row[column]) for row in rows for column in ("kernel", "demangled")}, report_path)
    check_name_length({str(row["region"]) for row in rows}, report_path, "NVTX region")
    frame = assign_ordinals(make_table(rows))
    # A report profiled with --metrics only has no findings: "not known", not "no finding".
    known = {at: tuple(found) for at, found in findings.items()} if any(findings.values()) else None
    # How ncu replayed the kernels: DRAM writes are judged only against a run replayed alike (compare/replay).
    settings = {REPLAY_PASSES: max(passes)} if passes else {}
    return screen_values(Measurement(frame, source=str(report_path), findings=known, settings=settings,
                                     code=None if code is None else code.known()), unusable)


def _replay_passes(action: Any) -> int | None:
    """The replay passes ncu took for this launch (``profiler__replayer_passes``, in every report seen, ncu
    2019-2025); None when the report does not say."""
    try:
        metric = action.metric_by_name("profiler__replayer_passes")
        value = None if metric is None else metric.as_uint64()
    except Exception:  # an older ncu_report, or another type: the number is only a guard
        return None
    return int(value) if isinstance(value, int) and value > 0 else None


class _Damaged(Exception):
    """What ncu_report read cannot be a launch ncu recorded (it parses damaged records leniently)."""


def _action_rows(action: _Action, launch: int, region: str, wanted: set[str] | None,
                 unusable: list[Unusable]) -> list[dict[str, object]]:
    """The launch's rows; a value that is no number is NaN, and why is appended to ``unusable``."""
    def metric_value(name: str) -> object:
        metric = action.metric_by_name(name)
        return None if metric is None else metric.value()

    device_name, cc_major, cc_minor = (metric_value(n) for n in DEVICE_METRICS)
    dims = [metric_value(n) for n in DIM_METRICS]
    kernel, demangled = action.name(), action.name(action.NameBase_DEMANGLED)
    if not kernel:
        raise _Damaged("has no kernel name")
    base: dict[str, object] = {
        "kind": KIND_KERNEL,
        "kernel": str(kernel),
        "demangled": str(demangled or kernel),
        "region": region,
        "ordinal": 0,
        "launch": launch,
        "device": "" if device_name is None else str(device_name),
        "cc": f"{cc_major}.{cc_minor}" if cc_major is not None and cc_minor is not None else "",
        "grid": _dim(dims[:3]),
        "block": _dim(dims[3:]),
    }
    names = action.metric_names() if wanted is None else [n for n in wanted if action.metric_by_name(n) is not None]
    rows: list[dict[str, object]] = []
    for name in names:
        metric = action.metric_by_name(name)
        if metric is None:  # read_ncu_rep reports it as an ncu_report it cannot read
            raise LookupError(f"metric_names() lists {name} but metric_by_name() does not find it")
        value, reason = _number(metric)
        if value is None:
            continue
        rows.append({**base, "metric": str(name), "unit": str(metric.unit()), "value": value})
        if reason is not None:
            unusable.append({"launch": launch, "metric": str(name), "reason": reason})
    if not rows:
        # Keep the launch visible as "no data" even when none of the asked-for metrics exist.
        rows.append(no_data_row(base))
    return rows


def _dim(xyz: Sequence[object]) -> str:
    """``(x, y, z)`` from the three launch dimension metrics; "" unless all three are numbers."""
    x, y, z = xyz
    if isinstance(x, (int, float)) and isinstance(y, (int, float)) and isinstance(z, (int, float)):
        return format_dim(x, y, z)
    return ""
