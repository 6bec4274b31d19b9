"""Errors a user can meet. Each carries one actionable line; the CLI prints it and exits 2.

Tracebacks are reserved for perfgate's own bugs.
"""

from __future__ import annotations

EXIT_OK = 0
EXIT_REGRESSION = 1
EXIT_USAGE = 2


class PerfgateError(Exception):
    """An input or environment problem the user can fix. ``str(err)`` is the one line to print."""

    exit_status = EXIT_USAGE


class InputError(PerfgateError):
    """A file given to perfgate is missing, unreadable, truncated or of the wrong shape."""

    def __init__(self, path: object, problem: str, fix: str = "") -> None:
        self.path = str(path)
        self.problem = problem
        self.fix = fix
        line = f"{self.path}: {problem}"
        if fix:
            line += f" ({fix})"
        super().__init__(line)


class DeviceMismatchError(PerfgateError):
    """Baseline and current were measured on different GPUs (or machines)."""


class NcuError(PerfgateError):
    """Nsight Compute itself reported an error (no permission, bad arguments, crashed app...)."""


class ConfigError(PerfgateError):
    """A bad threshold spec, option or ``[tool.perfgate]`` entry."""
