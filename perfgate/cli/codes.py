"""``perfgate codes TRACE``: the machine code of a saved trace's kernels, written beside it (``TRACE.codes.json``).

The timeline source's traced child writes that file from the cubins CUPTI saw loaded. A trace recorded otherwise
(torch.profiler, Nsight Systems) gets it here, from the cubins and the Triton compile cache its user names, right
after the run that recorded it: the cache then holds the kernels that ran. ``perfgate compare --code-identity``
reads it beside the trace (``perfgate.collect.timeline.codes_file``).
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from perfgate.errors import EXIT_OK, InputError
from perfgate.files import write_file
from perfgate.process import print_out
from perfgate.text import inert

if TYPE_CHECKING:
    from perfgate.cli.common import SubParsers

_CUBIN_FIX = "give a cubin the traced process loaded (cuobjdump -xelf all extracts them from a fatbin or a library)"


def add_parser(sub: SubParsers) -> None:
    codes = sub.add_parser("codes", help="write a trace's kernel codes beside it, from cubins and Triton's cache",
                           description="Write TRACE.codes.json: the machine code (code_id) of each kernel TRACE "
                                       "launched, from the cubins given with --cubin and from the Triton compile "
                                       "cache, for the same-code rule of 'perfgate compare --code-identity'. Run it "
                                       "where the trace was recorded, right after: the cache must hold the kernels "
                                       "that ran. A name with two codes gets none. Needs nvdisasm and pyelftools. "
                                       "Exit 0: written, 2: unusable input.")
    codes.add_argument("trace", type=Path, metavar="TRACE",
                       help="a trace: PyTorch profiler, Nsight Systems SQLite export or perfgate's CUPTI trace")
    codes.add_argument("--cubin", type=Path, action="append", default=[], metavar="FILE",
                       help="a cubin the traced process loaded (repeat for more)")
    codes.add_argument("--triton-cache", type=Path, metavar="DIR",
                       help="Triton's compile cache (default: TRITON_CACHE_DIR, else ~/.triton/cache)")
    codes.set_defaults(func=cmd_codes)


def _cubin_bytes(path: Path) -> bytes:
    """A cubin file's bytes: a regular file within the input limit (a device such as /dev/zero never ends)."""
    from perfgate.limits import check_regular_file

    check_regular_file(path, "the cubin", _CUBIN_FIX)
    return path.read_bytes()


def _cubins(paths: list[Path], kernels: set[str]) -> tuple[list[bytes], set[str]]:
    """The cubins' bytes, and their functions' symbols whose demangled names are among ``kernels``."""
    from perfgate.collect.cubin import CubinError, cubin_functions
    from perfgate.demangled import demangled_name

    found: list[bytes] = []
    symbols: set[str] = set()
    for path in paths:
        try:
            data = _cubin_bytes(path)
            _, functions = cubin_functions(data)
        except OSError as exc:
            raise InputError(path, f"cannot read ({exc.strerror or exc})") from None
        except CubinError as exc:
            raise InputError(path, str(exc), _CUBIN_FIX) from None
        found.append(data)
        symbols |= {symbol for symbol in functions if demangled_name(symbol) in kernels}
    return found, symbols


def cmd_codes(args: argparse.Namespace) -> int:
    from perfgate.collect.cubin import ENV_NVDISASM, find_nvdisasm
    from perfgate.collect.module_codes import kernel_codes, known_kernels, trace_kernels
    from perfgate.collect.timeline.codes_file import codes_file, codes_json

    trace: Path = args.trace
    kernels, ccs = trace_kernels(trace)
    cubins, symbols = _cubins(args.cubin, kernels)
    if find_nvdisasm() is None:
        raise InputError("nvdisasm", "not found", "install the CUDA toolkit or nvidia-cuda-nvdisasm, or name it in "
                                                  f"{ENV_NVDISASM}")
    codes, problems = kernel_codes(symbols | kernels, cubins, args.triton_cache, ccs)
    if problems:
        raise InputError(", ".join(map(str, args.cubin)), problems[0], _CUBIN_FIX)
    target = codes_file(trace)
    try:
        write_file(target, codes_json(codes, []))  # atomic: compare reads it, and never half of one
    except OSError as exc:
        raise InputError(target, f"cannot write ({exc.strerror or exc})", "check the folder is writable") from None
    known = known_kernels(codes, kernels)
    print_out(inert(f"perfgate: {target}: the code of {len(known)} of the trace's {len(kernels)} kernel"
                    f"{'s' if len(kernels) != 1 else ''}") + "\n")
    return EXIT_OK
