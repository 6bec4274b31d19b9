"""``perfgate``'s process: arguments parsed, the command run, every error one line and its exit status."""

from __future__ import annotations

import os
import sys
from typing import NoReturn, Sequence

from perfgate.cli.parser import build_parser
from perfgate.errors import EXIT_OK, EXIT_USAGE, PerfgateError
from perfgate.process import Terminated, stdout_gone, terminating_unwinds
from perfgate.text import inert


def _tolerant_output() -> None:
    """Never die on a console that cannot print '→' or 'µ' (cp1252 on Windows, LANG=C)."""
    for stream in (sys.stdout, sys.stderr):
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None:
            try:
                reconfigure(errors="replace")
            except (ValueError, OSError):  # pragma: no cover - a detached or closed stream
                pass


# glibc's mallopt parameters (malloc.h).
_M_TRIM_THRESHOLD, _M_MMAP_MAX = -1, -4


def _keep_freed_memory() -> None:
    """Have glibc's malloc keep the memory a freed large array held, for the next one: a compare of 500k launches
    makes hundreds of arrays of 4 to 90 MB, each of which malloc would map anew and the kernel zero page by page at
    its first touch (2.3-2.6M page faults and 5.1-6.6 s of system time with ``--metrics +roofline``, against 0.88M
    and 2.3-3.8 s kept; docs/performance.md). The process ends after one command, so nothing is kept for long; elsewhere
    (macOS, musl) nothing changes."""
    if not sys.platform.startswith("linux"):
        return
    import ctypes

    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):  # pragma: no cover - a C library without mallopt
        return
    mallopt(_M_MMAP_MAX, 0)  # large blocks from the heap, which keeps what is freed...
    mallopt(_M_TRIM_THRESHOLD, -1)  # ...and is never given back to the system before the process ends


def entry() -> NoReturn:
    """The ``perfgate`` console script and ``python -m perfgate``: a process of perfgate's own, whose malloc it may
    set (``main`` may run inside another program, the tests' for one)."""
    _keep_freed_memory()
    sys.exit(main())


def main(argv: Sequence[str] | None = None) -> int:
    # perfgate does no linear algebra, and numpy's OpenBLAS would start a thread per core for it. Only for this
    # process: the plugin leaves the user's alone.
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    # numpy asks Linux for transparent huge pages for each array of 4 MB or more; where THP is "madvise" (common on
    # CI VMs) each such page is zeroed whole when first touched, and a compare of 500k launches makes hundreds of
    # large short-lived arrays: 2.2 → 1.3 s of system time, same user time (docs/performance.md). Read by numpy at
    # import, which the commands do later; a user's own setting wins.
    os.environ.setdefault("NUMPY_MADVISE_HUGEPAGE", "0")
    _tolerant_output()
    args = build_parser().parse_args(sys.argv[1:] if argv is None else argv)
    try:
        with terminating_unwinds():
            return int(args.func(args))
    except Terminated as exc:
        sys.stderr.write("perfgate: terminated\n")
        return 128 + exc.signum
    except PerfgateError as exc:
        # inert: the line can quote a file or kernel name, which must not act on the terminal.
        sys.stderr.write(f"perfgate: error: {inert(exc)}\n")
        return exc.exit_status
    except BrokenPipeError:  # the reader of a listing went away (| head); verdicts are printed by print_out
        stdout_gone()
        return EXIT_OK
    except KeyboardInterrupt:
        sys.stderr.write("perfgate: interrupted\n")
        return 130
    except Exception as exc:  # the last line of defence for CI, see below
        # An input perfgate did not foresee (a RecursionError, an AttributeError on a shape nobody expected):
        # still one line and exit 2, never a traceback and exit 1, which CI would read as "regression".
        # PERFGATE_DEBUG=1 re-raises so a bug report can carry the traceback.
        if os.environ.get("PERFGATE_DEBUG"):
            raise
        sys.stderr.write(_unforeseen_line(exc))
        return EXIT_USAGE


def _unforeseen_line(exc: Exception) -> str:
    """The error line of an exception no command turned into a PerfgateError."""
    if isinstance(exc, OSError) and exc.filename is not None:
        # A path the system refused where perfgate only asked about it (Path.is_dir() raises "File name too
        # long"): the path and the system's reason say all there is.
        return (f"perfgate: error: {inert(exc.filename, max_chars=300)}: cannot use this path "
                f"({inert(exc.strerror or exc)}) (check the path and its permissions)\n")
    return (f"perfgate: error: {type(exc).__name__}: {inert(exc, max_chars=300)} (rerun with PERFGATE_DEBUG=1 for "
            "details and please report it)\n")
