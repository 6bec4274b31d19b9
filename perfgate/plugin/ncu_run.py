"""Build the Nsight Compute command that profiles one pytest test, run it, and read what ncu said.

The command is *built* by one pure function (``build_ncu_command``) and *run* by another
(``run_ncu``), as pyperf does, so the exact command line is testable on a machine with no GPU
and no ncu. ``diagnose_ncu_run`` turns ncu's log into one of a few outcomes with a readable
message.

Flags checked against NVIDIA's ``ncu --help`` text (2025.x, as quoted in public notes) and against
how NVIDIA's own nsight-python drives ncu (``nsight/collection/ncu.py``: ``--nvtx --nvtx-include
"regex:<domain>@.+/"``, explicit ``--cache-control``/``--clock-control``, ``--log-file``, ``-f -o``):

- ``--config-file arg (=1)``: on by default, reads ``config.ncu-cfg`` from the working directory;
  ``off`` so a stray file cannot change what CI measures.
- ``--target-processes all``: profile the application and its child processes.
- ``--nvtx`` enables NVTX support; ``--nvtx-include EXPR`` keeps launches inside matching ranges;
  ``domain@name/`` is a push/pop range ``name`` in ``domain``; ``regex:`` applies to the whole
  expression; several includes are OR-ed.
- ``--nvtx-push-pop-scope process`` (default ``thread``): autograd launches backward kernels on
  another thread, where a thread-scoped range would not be seen.
- ``--kernel-name NAME|regex:EXPR`` with ``--kernel-name-base function`` (the default, pinned).
- ``-o/--export FILE`` writes the report, ``-f/--force-overwrite`` replaces an old one,
  ``--log-file FILE`` keeps ncu's ``==PROF==``/``==ERROR==`` lines out of the test's own output.
"""

from __future__ import annotations

import math
import os
import re
import signal
import subprocess
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from perfgate.collect.group_watchdog import GroupWatchdog
from perfgate.derived import READ_ONLY_INPUTS, is_derived
from perfgate.errors import ConfigError
from perfgate.process import terminating_unwinds
from perfgate.vocabulary import (
    IDENTITY_METRICS,
    NVTX_DOMAIN,
    PERMISSION_FIX,
    NcuOutcome,
    is_benchmark_metric,
)

PERMISSION_MESSAGE = ("no permission to read GPU performance counters (ERR_NVGPUCTRPERM): the driver restricts them "
                      "to admin users; " + PERMISSION_FIX)


def profiling_metrics(requested: Iterable[str]) -> list[str]:
    """The ``--metrics`` list: what is compared, plus identity facts; sorted, without host timings.

    ``time.*``, ``rounds`` and ``ops`` are pytest-benchmark statistics, not ncu metrics.
    """
    names = {m.strip() for m in requested if m and m.strip()}
    # Derived metrics are computed, never collected; their inputs' other forms are read where a report has them.
    names = {m for m in names if not is_benchmark_metric(m) and not is_derived(m) and m not in READ_ONLY_INPUTS}
    return sorted(names | set(IDENTITY_METRICS))


def nvtx_includes(regions: Sequence[str] = (), domain: str = NVTX_DOMAIN) -> list[str]:
    """NVTX include expressions: any push/pop range of our domain, or only the named ones."""
    if not regions:
        return [f"regex:{domain}@.+/"]
    return [f"{domain}@{name}/" for name in regions]


def build_ncu_command(*, ncu: str, program: Sequence[str], export: Path, metrics: Iterable[str],
                      clock_control: str, cache_control: str, log_file: Path | None = None,
                      kernels: str | None = None, regions: Sequence[str] = (),
                      sections: Sequence[str] = ()) -> list[str]:
    """The full ncu command line that profiles ``program`` (pure: runs nothing)."""
    if not program:
        raise ConfigError("nothing to profile: empty program")
    if clock_control not in ("base", "none"):
        raise ConfigError(f"clock control {clock_control!r} is not one that profiles; use base (repeatable) or none")
    if cache_control not in ("all", "none"):
        raise ConfigError(f"cache control must be all or none, got {cache_control!r}")
    metric_list = sorted(dict.fromkeys(metrics))
    if not metric_list:
        raise ConfigError("no metric to collect")
    command = [
        ncu,
        "--config-file", "off",
        "--target-processes", "all",
        "--clock-control", clock_control,
        "--cache-control", cache_control,
        "--nvtx",
        "--nvtx-push-pop-scope", "process",
    ]
    for expression in nvtx_includes(regions):
        command += ["--nvtx-include", expression]
    for section in sections:  # their rules run too: findings for the report's "why"
        command += ["--section", section]
    command += ["--metrics", ",".join(metric_list)]
    if kernels:
        command += ["--kernel-name-base", "function", "--kernel-name", kernels]
    command += ["--export", str(export), "--force-overwrite"]
    if log_file is not None:
        command += ["--log-file", str(log_file)]
    return [*command, *program]


def build_child_command(*, python: str, nodeid: str | Sequence[str], rootdir: Path, basetemp: Path, cache_dir: Path,
                        inifile: Path | None = None, import_mode: str | None = None,
                        xdist_loaded: bool = False, load_plugin: bool = False) -> list[str]:
    """``python -m pytest NODEID...`` as the profiled child runs it (pure): one test, or a group of them.

    The child runs with the parent's rootdir and ini file; its cache and temporary directories
    are private so it neither rewrites the user's ``--lf`` state nor rotates the parent's
    ``tmp_path`` folders. ``--runxfail``: the child reports the real outcome and the parent's own
    xfail handling decides. ``-n 0``: an ``addopts = "-n auto"`` must not fan the child out.
    """
    nodeids = [nodeid] if isinstance(nodeid, str) else list(nodeid)
    command = [python, "-m", "pytest", *nodeids, "--rootdir", str(rootdir)]
    if inifile is not None:
        command += ["-c", str(inifile)]
    command += ["-o", f"cache_dir={cache_dir}", "--basetemp", str(basetemp), "--runxfail",
                "-q", "--no-header", "-p", "no:randomly"]
    if import_mode:
        command += [f"--import-mode={import_mode}"]
    if xdist_loaded:
        command += ["-n", "0"]
    if load_plugin:  # PYTEST_DISABLE_PLUGIN_AUTOLOAD is set: entry points are not loaded
        command += ["-p", "perfgate.plugin"]
    return command


@dataclass(frozen=True)
class NcuRun:
    """What one ncu run left behind."""

    command: tuple[str, ...]
    returncode: int | None  # None when it was killed for running too long
    timed_out: bool
    seconds: float
    output: str  # the tail of the profiled program's stdout+stderr
    log: str  # ncu's own lines (--log-file), or "" when it wrote none


def _tail(text: str, lines: int = 40, chars: int = 6000) -> str:
    kept = "\n".join(text.rstrip().splitlines()[-lines:])
    return kept[-chars:]


TAIL_BYTES = 256 * 1024  # what is read of a test's output for its last lines: a test may print gigabytes


def read_tail(path: Path, lines: int = 40, chars: int = 6000) -> str:
    """The last ``lines`` lines (at most ``chars`` characters) of a file, reading only its last ``TAIL_BYTES``:
    memory and time do not grow with the output (reading 1.5 GB to keep 40 lines once peaked at 4.55 GB)."""
    try:
        with path.open("rb") as handle:
            size = handle.seek(0, os.SEEK_END)
            handle.seek(max(size - TAIL_BYTES, 0))
            data = handle.read(TAIL_BYTES)
    except OSError:
        return ""
    text = data.decode("utf-8", errors="replace")
    if size > TAIL_BYTES:
        text = text.split("\n", 1)[-1]  # the first line read is likely cut
    # rsplit with a limit: the last lines without a string for every line of the window.
    return "\n".join(text.rstrip().rsplit("\n", lines)[-lines:])[-chars:]


def _read(path: Path | None) -> str:
    if path is None:
        return ""
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""


def _kill_group(process: subprocess.Popen[bytes], grace: float) -> None:
    """Stop ncu and everything it started (the test, its children): they share our new session."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(process.pid, sig)
        except (ProcessLookupError, PermissionError):
            return
        try:
            process.wait(timeout=grace)
            return
        except subprocess.TimeoutExpired:
            continue


# While ncu runs, SIGTERM/SIGHUP raise ``Terminated`` (a KeyboardInterrupt) in the waiting thread. ncu runs in a
# session of its own (so that a timeout can kill everything it started), hence a signal sent to pytest's process
# group never reaches it: with the default action (die at once) SIGTERM, which is what CI sends to cancel a job,
# left ncu and the profiled test running on the GPU. Raised as an exception, it goes through ``run_ncu``'s cleanup
# as Ctrl-C does. A handler someone else installed (or SIG_IGN) is left alone; off the main thread nothing can be
# installed.
_terminating_like_interrupt = terminating_unwinds


def run_ncu(command: Sequence[str], *, timeout: float, output_file: Path, log_file: Path | None = None,
            env: Mapping[str, str] | None = None, cwd: Path | None = None, grace: float = 5.0) -> NcuRun:
    """Run ``command``; never hangs: after ``timeout`` seconds the whole process group is killed.

    Output goes to a file rather than a pipe so a chatty test cannot block on a full pipe. Ctrl-C, SIGTERM
    and SIGHUP stop the whole process group too (``Terminated``), then propagate.
    """
    if not math.isfinite(timeout) or timeout <= 0:
        raise ConfigError(f"the ncu timeout must be a positive, finite number of seconds, got {timeout!r}")
    started = time.monotonic()
    with output_file.open("wb") as out:
        try:
            process = subprocess.Popen(list(command), stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                       env=dict(env) if env is not None else None, cwd=cwd, start_new_session=True)
        except OSError as exc:
            return NcuRun(tuple(command), returncode=127, timed_out=False, seconds=0.0,
                          output=f"cannot start {command[0]}: {exc.strerror or exc}", log="")
        timed_out = False
        try:
            # The watchdog ends the group should this process die in the wait, SIGKILL included.
            with _terminating_like_interrupt(), GroupWatchdog(process.pid):
                returncode: int | None = process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            timed_out = True
            _kill_group(process, grace)
            returncode = None
        except BaseException:  # Ctrl-C, SIGTERM, SIGHUP: do not leave ncu and the GPU job running
            _kill_group(process, grace)
            raise
    return NcuRun(tuple(command), returncode=returncode, timed_out=timed_out, seconds=time.monotonic() - started,
                  output=_tail(_read(output_file)), log=_read(log_file))


# ---------------------------------------------------------------- reading ncu's log

OK, TIMEOUT, NO_PERMISSION = NcuOutcome.OK, NcuOutcome.TIMEOUT, NcuOutcome.NO_PERMISSION
NO_KERNELS, ERROR, APP_ERROR = NcuOutcome.NO_KERNELS, NcuOutcome.ERROR, NcuOutcome.APP_ERROR

_NO_KERNELS = re.compile(r"==WARNING==\s+No kernels were profiled", re.IGNORECASE)
_APP_ERROR = re.compile(r"==ERROR==\s+The application returned an error code", re.IGNORECASE)


@dataclass(frozen=True)
class NcuDiagnosis:
    outcome: NcuOutcome
    message: str  # ncu's own words, trimmed, or "" when OK


def ncu_lines(text: str, kinds: tuple[str, ...] = ("==ERROR==", "==WARNING==", "==PROF==")) -> list[str]:
    return [line.strip() for line in text.splitlines() if line.strip().startswith(kinds)]


def diagnose_ncu_run(run: NcuRun, timeout: float | None = None) -> NcuDiagnosis:
    """Classify an ncu run from its exit and its log (ncu documents no exit-code table)."""
    said = run.log + "\n" + run.output  # with --log-file, ncu's lines are in the log; without, in output
    errors = ncu_lines(said, ("==ERROR==",))
    if run.timed_out:
        limit = f" after {timeout:g} s" if timeout is not None else ""
        last = "\n".join(ncu_lines(said)[-8:]) or _tail(run.output, 12)
        return NcuDiagnosis(TIMEOUT, f"ncu did not finish{limit} and was killed (raise --perfgate-timeout or the "
                                     f"marker's timeout=); its last words:\n{last or '(nothing)'}")
    if "ERR_NVGPUCTRPERM" in said:
        return NcuDiagnosis(NO_PERMISSION, PERMISSION_MESSAGE)
    if errors and not all(_APP_ERROR.search(e) for e in errors):
        return NcuDiagnosis(ERROR, "ncu failed:\n" + "\n".join(errors[-12:]))
    if run.returncode not in (0, None) and not errors:
        return NcuDiagnosis(ERROR, f"ncu exited with status {run.returncode}:\n" + (_tail(said, 20) or "(no output)"))
    if errors:  # only "the application returned an error code": the caller explains with the test's own failure
        return NcuDiagnosis(APP_ERROR, "\n".join(errors[-4:]) + ("\n" + _tail(run.output, 20) if run.output else ""))
    if _NO_KERNELS.search(said):
        return NcuDiagnosis(NO_KERNELS, "ncu: No kernels were profiled.")
    return NcuDiagnosis(OK, "")


_VERSION = re.compile(r"Version\s+(\d+(?:\.\d+)+)")


def parse_ncu_version(text: str) -> str | None:
    """``ncu --version`` prints '... Version 2025.3.1.0 (build ...)'."""
    match = _VERSION.search(text)
    return match.group(1) if match else None


def ncu_version(ncu: str, timeout: float = 60.0) -> tuple[str | None, str]:
    """(version, problem): problem is "" when ``ncu --version`` worked."""
    try:
        done = subprocess.run([ncu, "--version"], capture_output=True, text=True, encoding="utf-8",
                              errors="replace", timeout=timeout, stdin=subprocess.DEVNULL, check=False)
    except subprocess.TimeoutExpired:
        return None, f"'{ncu} --version' did not answer within {timeout:g} s"
    except OSError as exc:
        return None, f"cannot run '{ncu} --version': {exc.strerror or exc}"
    if done.returncode != 0:
        said = _tail((done.stdout or "") + (done.stderr or ""), 6)
        return None, f"'{ncu} --version' failed with status {done.returncode}: {said or '(no output)'}"
    return parse_ncu_version(done.stdout + done.stderr), ""
