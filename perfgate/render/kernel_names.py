"""Telling apart, in a row per kernel, kernels that share a name: ``reduce_kernel<512, 1, …>`` and
``reduce_kernel<128, 4, …>`` are two kernels (compare judges each on its own), so their rows say in which template
arguments they differ. Hand-written: no library splits a demangled C++ name's template arguments, and the
demangled text is all a report holds (mangled names are not kept)."""

from __future__ import annotations

import re

_OPEN, _CLOSE = "<([{", ">)]}"
_CAST = re.compile(r"\((?:unsigned |signed )?(?:int|long|long long|short|char|bool)\)")  # "(int)512": 512
SHOWN_ARGUMENTS = 2  # differing template arguments a label shows
ARGUMENT_CHARS = 40  # of each


def template_arguments(demangled: str, kernel: str) -> list[str] | None:
    """The top-level template arguments of ``kernel`` in its demangled name, casts of literals dropped; None
    when the name holds no template argument list right after the kernel's name."""
    at = demangled.find(kernel + "<") if kernel else -1
    if at < 0:
        return None
    start = at + len(kernel) + 1
    depth, parts, begin = 0, [], start
    for index in range(start, len(demangled)):
        char = demangled[index]
        if char in _OPEN:
            depth += 1
        elif char in _CLOSE:
            if depth == 0:  # the list's closing ">"
                parts.append(demangled[begin:index])
                return [_CAST.sub("", part).strip() for part in parts]
            depth -= 1
        elif char == "," and depth == 0:
            parts.append(demangled[begin:index])
            begin = index + 1
    return None  # unbalanced: a name cut short


def _short(argument: str) -> str:
    return argument if len(argument) <= ARGUMENT_CHARS else argument[:ARGUMENT_CHARS - 1] + "…"


def variant_labels(demangled: list[str], kernel: str) -> list[str]:
    """For kernels named ``kernel`` whose full names are ``demangled`` (one each, in order), labels that tell them
    apart: the template arguments in which they differ (``<128, 4, …>``), else their order (`` (2)``)."""
    arguments = [template_arguments(name, kernel) for name in demangled]
    if all(found is not None for found in arguments):
        lists = [found or [] for found in arguments]
        width = max(len(found) for found in lists)
        differ = [i for i in range(width) if len({found[i] if i < len(found) else None for found in lists}) > 1]
        shown = differ[:SHOWN_ARGUMENTS]
        labels = []
        for found in lists:
            parts, previous = [], -1
            for i in shown:
                parts += ["…"] if i > previous + 1 else []  # the arguments they share, left out
                parts.append(_short(found[i]) if i < len(found) else "")
                previous = i
            parts += ["…"] if previous < len(found) - 1 else []
            labels.append("<" + ", ".join(parts) + ">")
        if shown and len(set(labels)) == len(labels):
            return labels
    return [f" ({number})" for number in range(1, len(demangled) + 1)]


def compact_name(name: str, kernel: str) -> str:
    """``name`` (a kernel's name with its template arguments, ``kernel<...>``, and whatever follows) with each
    template argument cut to ``ARGUMENT_CHARS`` where one is longer (a PyTorch kernel's lambda types run to 1,500
    characters); as it is otherwise."""
    arguments = template_arguments(name, kernel)
    if not arguments or not name.startswith(kernel + "<") or all(len(a) <= ARGUMENT_CHARS for a in arguments):
        return name
    depth, end = 0, len(kernel)
    for end in range(len(kernel), len(name)):  # the argument list's closing ">"
        depth += (name[end] in _OPEN) - (name[end] in _CLOSE)
        if depth == 0:
            break
    return f"{kernel}<{', '.join(map(_short, arguments))}>{name[end + 1:]}"
