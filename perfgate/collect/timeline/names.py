"""A kernel's bare function name from a mangled (Itanium C++ ABI) name, as CUPTI reports C++ kernels.

Hand-written because no maintained pure-Python demangler exists and only the last name component is needed
(the table's ``kernel`` column, which ncu's "function" name base and a Kineto trace's demangled name give too):
``_ZN2at6native29vectorized_elementwise_kernelILi4E...`` -> ``vectorized_elementwise_kernel``.
"""

from __future__ import annotations

from functools import lru_cache

from perfgate.collect.ncu_csv.names import kernel_function_name


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
