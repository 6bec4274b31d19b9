"""Kernel names from a mangled (Itanium C++ ABI) name, as CUPTI and Nsight Systems report C++ kernels.

- ``demangled_name``: the full signature for the ``demangled`` column (the kernel's identity), by the C++
  runtime's own ``abi::__cxa_demangle`` through ctypes: the reference Itanium demangler, present wherever a
  CUDA program runs, and no new dependency to carry onto GPU machines (``cxxfilt`` wraps this same call;
  the pure-Python ``itanium_demangler`` is unmaintained since 2022). The raw name where demangling fails.
- ``bare_name``: only the last name component, for the ``kernel`` column (which ncu's "function" name base and
  a Kineto trace's demangled name give too), hand-written because it needs no full demangling:
  ``_ZN2at6native29vectorized_elementwise_kernelILi4E...`` -> ``vectorized_elementwise_kernel``.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import itertools
from functools import lru_cache
from typing import Any

from perfgate.collect.ncu_csv.names import kernel_function_name

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
