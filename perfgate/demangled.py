"""A kernel's name, parsed: the one home of it for every reader and stage.

- ``demangled_name``: the full signature of a mangled (Itanium C++ ABI) name, as CUPTI and Nsight Systems report
  C++ kernels, for the ``demangled`` column (the kernel's identity), by the C++ runtime's own
  ``abi::__cxa_demangle`` through ctypes: the reference Itanium demangler, present wherever a CUDA program runs,
  and no new dependency to carry onto GPU machines (``cxxfilt`` wraps this same call; the pure-Python
  ``itanium_demangler`` is unmaintained since 2022). The raw name where demangling fails.
- ``kernel_function_name``: the bare function name of a demangled signature, as ncu's ``function`` name base
  prints it.
- ``bare_name``: the same of any name, mangled, demangled or already bare, for the ``kernel`` column (which ncu's
  "function" name base and a Kineto trace's demangled name give too), hand-written for mangled names because it
  needs no full demangling: ``_ZN2at6native29vectorized_elementwise_kernelILi4E...`` ->
  ``vectorized_elementwise_kernel``.
- ``short_name``: the function name with its template arguments, as a reader is shown a kernel.

Labels that tell apart kernels of one name by their template arguments are the renderers' job
(``perfgate.render.kernel_names``).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import itertools
from functools import lru_cache
from typing import Any

_RUNTIMES = ("libstdc++.so.6", "libc++.1.dylib", "libc++.so.1")  # tried by file name before a library search


@lru_cache(maxsize=1)
def _runtime() -> tuple[Any, Any] | None:
    """(``__cxa_demangle``, libc's ``free``) of the C++ runtime, or None where there is none."""
    searched = (ctypes.util.find_library(n) for n in ("stdc++", "c++"))  # lazily: a search starts a process
    for name in itertools.chain(_RUNTIMES, filter(None, searched)):
        try:
            demangle = ctypes.CDLL(name).__cxa_demangle
            free = ctypes.CDLL(None).free
        except (OSError, AttributeError):
            continue
        demangle.restype = ctypes.c_void_p  # the pointer itself: its text is copied, then it is freed
        demangle.argtypes = [ctypes.c_char_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.POINTER(ctypes.c_int)]
        free.argtypes = [ctypes.c_void_p]
        return demangle, free
    return None


@lru_cache(maxsize=8192)  # a trace repeats a few hundred names thousands of times
def demangled_name(name: str) -> str:
    """The demangled signature of a mangled name (``_Z...``); any other name, or one that does not demangle
    (invalid, non-ASCII, no C++ runtime), as it is."""
    runtime = _runtime() if name.startswith("_Z") and name.isascii() else None
    if runtime is None:
        return name
    demangle, free = runtime
    status = ctypes.c_int(-1)
    pointer = demangle(name.encode("ascii"), None, None, ctypes.byref(status))
    if not pointer:
        return name
    try:
        text = ctypes.string_at(pointer)
    finally:
        free(pointer)
    return text.decode("utf-8", "replace") if status.value == 0 and text else name


def _matching_open(text: str, opener: str, closer: str) -> int:
    """Index of the bracket that opens the one closing ``text`` (which ends with ``closer``); -1 if none."""
    depth = 0
    for i in range(len(text) - 1, -1, -1):
        if text[i] == closer:
            depth += 1
        elif text[i] == opener:
            depth -= 1
            if depth == 0:
                return i
    return -1


def _without_trailing(name: str, opener: str, closer: str) -> str:
    """``name`` without the balanced ``opener ... closer`` it ends with (none there, or unbalanced: as it is)."""
    if name.endswith(closer):
        start = _matching_open(name, opener, closer)
        if start > 0:
            return name[:start].rstrip()
    return name


def kernel_function_name(demangled: str) -> str:
    """The bare function name of a kernel signature, as ncu's ``function`` name base prints it.

    Drops, in this order: the parameter list (the last balanced ``(...)`` at the end), trailing
    template arguments (the last balanced ``<...>``), the return type and qualifiers (everything up
    to the last top-level space) and the enclosing namespaces/classes (everything up to the last
    top-level ``::``). ``void at::native::vectorized_elementwise_kernel<4, F>(int, F)`` ->
    ``vectorized_elementwise_kernel``; ``<unnamed>::transposeNaive(const float *)`` ->
    ``transposeNaive``; a name that is already bare (or mangled) is returned unchanged.
    Unbalanced brackets leave the name as it is after the last step that parsed.
    """
    name = _without_trailing(_without_trailing(demangled.strip(), "(", ")"), "<", ">")
    # Split at top level only: template arguments and "(anonymous namespace)" hold spaces and "::".
    depth = 0
    cut = 0
    i = 0
    while i < len(name):
        char = name[i]
        if char in "<([{":
            depth += 1
        elif char in ">)]}":
            depth = max(depth - 1, 0)
        elif depth == 0 and char == " ":
            cut = i + 1
        elif depth == 0 and name.startswith("::", i):
            cut = i + 2
            i += 1
        i += 1
    bare = name[cut:]
    return bare or demangled.strip()


def short_name(demangled: str) -> str:
    """``gemm_tiled<128, 64, 8>`` of ``void ns::gemm_tiled<128, 64, 8>(float *, int)``: the function name with its
    template arguments, without return type, namespaces or parameters."""
    bare = kernel_function_name(demangled)
    name = _without_trailing(demangled.strip(), "(", ")")
    at = name.rfind(bare + "<") if bare else -1
    return name[at:] if at >= 0 and name.endswith(">") else bare


def _source_names(text: str, at: int) -> tuple[list[str], int]:
    """The ``<length><identifier>`` components from ``at`` on, and where they stop."""
    found = []
    while at < len(text) and text[at].isdigit():
        end = at
        while end < len(text) and text[end].isdigit():
            end += 1
        length = int(text[at:end])
        if length <= 0 or end + length > len(text):
            break
        found.append(text[end:end + length])
        at = end + length
        while text.startswith(("L", "K"), at):  # internal linkage, const: no name of their own
            at += 1
    return found, at


@lru_cache(maxsize=8192)  # a trace repeats a few hundred names thousands of times
def bare_name(name: str) -> str:
    """The function name of a kernel name: mangled (``_Z...``), demangled, or already bare."""
    if not name.startswith("_Z"):
        return kernel_function_name(name) if ("(" in name or "::" in name or " " in name) else name
    at = 2
    if name.startswith("N", at):
        at += 1
        while name.startswith(("K", "V", "r"), at):
            at += 1
        if name.startswith("St", at):
            at += 2
    elif name.startswith("L", at):
        at += 1
    parts, _ = _source_names(name, at)
    return parts[-1] if parts else name
