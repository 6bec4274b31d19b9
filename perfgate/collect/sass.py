"""A kernel's code identity from the machine code a ``.ncu-rep`` holds.

Every report keeps the SASS of each profiled function: ``IAction.sass_by_pc(pc)`` gives one instruction per call
from the function's entry address (metric ``launch__function_pcs``) until it returns an empty string. The
``code_id`` is a hash of that text, never of the kernel's name (a name can change what ptxas emits, and a rename
must not read as new code), with every address made relative to the function's start: the same code loaded at
another address (another process, another module load order) hashes the same.

Reading costs: ncu_report disassembles the whole function on an action's first ``sass_by_pc`` call, then each call
is a lookup; so the code is read once per distinct function address in a report (``CodeReader`` caches it).
"""

from __future__ import annotations

import hashlib
import re
from collections import Counter
from collections.abc import Iterable, Mapping
from typing import Any

from perfgate.table import KernelCode

# An instruction word is 16 bytes from Volta (CC 7.0) on: every GPU ncu 2019+ profiles with this API.
INSTRUCTION_BYTES = 16
# A report is untrusted: a crafted one must not keep the reader in a loop. The largest function seen (a cuBLAS
# GEMM on our H100 captures) has 7,816 instructions.
MAX_INSTRUCTIONS = 500_000
ID_CHARS = 16  # 64 bits of sha256: a collision between two versions of one kernel is not a worry
# Addresses within this distance of the function's start are code addresses (branch, call and convergence-barrier
# targets); a 32-bit immediate or a double constant is never that close to a 47-bit code address.
_NEAR = 1 << 32
_HEX = re.compile(r"0x[0-9a-fA-F]+")
_SPACES = re.compile(r"\s+")
_PREDICATE = re.compile(r"^@!?U?P[0-9T]+$")
_BANK4 = re.compile(r"c\[0x4\]\[0x[0-9a-fA-F]+\]")  # the module's constant bank: its globals' and callees' addresses
_IMMEDIATE = re.compile(r"(?<![\[.+-])\b0x[0-9a-fA-F]+")  # not a bank number or offset, not a code offset (.+0x40)
_CONTROL = {"BRA", "BRX", "JMP", "JMX", "CALL", "RET", "EXIT", "BSYNC", "BSSY", "BREAK", "BPT", "KILL"}


def relative_addresses(line: str, start: int) -> str:
    """One SASS line with every code address written as its offset from the function's start (``.+0x40``) and its
    runs of spaces made one."""
    def relative(match: re.Match[str]) -> str:
        value = int(match.group(0), 16)
        if start and abs(value - start) < _NEAR:
            offset = value - start
            return f".{'+' if offset >= 0 else '-'}{abs(offset):#x}"
        return match.group(0)

    return _SPACES.sub(" ", _HEX.sub(relative, line)).strip()


def opcode(line: str) -> str:
    """The instruction's mnemonic without its modifiers (``@!P0 LDG.E.SYS R4, [R4]`` → ``LDG``); "" for none."""
    words = line.split()
    if words and _PREDICATE.match(words[0]):
        words = words[1:]
    return words[0].split(".")[0] if words else ""


def external_call_arguments(texts: list[str]) -> list[str]:
    """``texts`` with the operands of each call to a function outside the kernel (``CALL.ABS``: the device
    runtime's ``__assertfail``, ``vprintf``, reached through the module's constant bank 4) made constant: every
    line from the previous control transfer up to that call gets its bank-4 offsets written ``c[0x4][.]`` and its
    immediates ``#``. Those operands are where the module placed the assert's strings and the runtime function
    (which moves when another kernel of the same file changes) and the assert's source line; the kernel's own
    work does not depend on them. ESMM-Research's one_blocktiling and two_blocktiling at 5c6231e and b644635 differ
    only there (11 and 6 of 248 and 1040 lines)."""
    normalized = list(texts)
    block_start = 0
    for at, text in enumerate(texts):
        name = opcode(text)
        if name == "CALL" and ".ABS" in text.split()[1 if _PREDICATE.match(text.split()[0]) else 0]:
            for inside in range(block_start, at):
                normalized[inside] = _IMMEDIATE.sub("#", _BANK4.sub("c[0x4][.]", texts[inside]))
        if name in _CONTROL:
            block_start = at + 1
    return normalized


def kernel_code(lines: Iterable[str], start: int) -> KernelCode:
    """The code identity and instruction mix of a function's SASS lines (in address order, from ``start``)."""
    digest = hashlib.sha256()
    mix: Counter[str] = Counter()
    for text in external_call_arguments([relative_addresses(line, start) for line in lines]):
        digest.update(text.encode("utf-8", "surrogateescape"))
        digest.update(b"\n")
        mix[opcode(text)] += 1
    mix.pop("", None)
    return KernelCode(digest.hexdigest()[:ID_CHARS], dict(sorted(mix.items())))


def function_sass(action: Any, start: int) -> list[str] | None:
    """The function's SASS lines from ``start``, None when the report holds none or more than any kernel has."""
    lines: list[str] = []
    while len(lines) < MAX_INSTRUCTIONS:
        text = action.sass_by_pc(start + INSTRUCTION_BYTES * len(lines))
        if not text or text == "N/A":  # the end of the function ("N/A": an address the report holds no code for)
            return lines or None
        lines.append(str(text))
    return None


def function_start(action: Any) -> int | None:
    """The function's entry address (``launch__function_pcs``; its first instance), None where not recorded."""
    metric = action.metric_by_name("launch__function_pcs")
    if metric is None:
        return None
    try:
        value = metric.as_uint64(0) if metric.num_instances() else metric.as_uint64()
    except Exception:  # an ncu_report of another shape: no code identity rather than no report
        return None
    return int(value) if isinstance(value, int) and value > 0 else None


class CodeReader:
    """The code of a report's launches, read once per distinct function address."""

    def __init__(self) -> None:
        self._by_function: dict[tuple[int, str], KernelCode | None] = {}
        self.codes: dict[int, KernelCode] = {}  # launch -> its code

    def read(self, action: Any, launch: int) -> None:
        """Read ``action``'s code as launch ``launch``'s; a report whose code cannot be read gives none for it (the
        same-code rule then does not apply), never a failed read of its measurements."""
        start = function_start(action)
        if start is None:
            return
        # By address and name: a module unloaded and another loaded at its address must not share its code.
        key = (start, str(action.name()))
        if key not in self._by_function:
            try:
                lines = function_sass(action, start)
            except Exception:  # an ncu_report without SASS access, or a damaged record of it
                lines = None
            self._by_function[key] = None if lines is None else kernel_code(lines, start)
        found = self._by_function[key]
        if found is not None:
            self.codes[launch] = found

    def known(self) -> Mapping[int, KernelCode] | None:
        """Launch -> code; None when the report gave none (no SASS recorded)."""
        return self.codes or None
