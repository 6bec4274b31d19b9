"""Where the CSV table sits in ncu's output, and what the lines around it say.

ncu's own ``==PROF==``, ``==WARNING==`` and ``==ERROR==`` lines and the application's output are
mixed into stdout around the table (a progress line can even be split by a warning). The header
line (``"ID",...``) is found in the first chunk(s) without splitting the file into lines; the lines
before it are sorted into ncu's own, the application's and ncu's text report, so a file without a
table gets a precise error. Lines after the header that are not launches come back from the parser
as rows whose "ID" is not a number (``launch_mask`` leaves them out); an ``==ERROR==`` anywhere raises
:class:`NcuError` with a fix.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import IO

import numpy as np

from perfgate.collect.ncu_csv.arrays import BoolArray
from perfgate.text import inert
from perfgate.errors import InputError, NcuError
from perfgate.vocabulary import PERMISSION_FIX

HEADER_PREFIX = b'"ID",'
TOOL_TAGS = ("==PROF==", "==WARNING==", "==ERROR==")
_CHUNK = 1 << 16

FIX_CSV = "pass the stdout or --log-file of 'ncu --csv --page details|raw ...', or 'ncu -i REPORT --csv --page raw'"
FIX_NO_KERNELS = ("check ncu's --kernel-name/--nvtx-include filters match a launch and that the application "
                  "launches CUDA kernels")
FIX_REEXPORT = "the file is truncated or was edited: export it again with 'ncu -i REPORT --csv --page raw'"


def looks_like_ncu_csv(head: str) -> bool:
    """Say whether ``head`` (the first ~8 KiB of a file, decoded) is ncu CSV output.

    True for a file whose lines include ncu's CSV header (``"ID","Process ID",...``, possibly after
    ncu's ``==`` lines and application output) and for ncu logs with ``==PROF==``/``==WARNING==``/
    ``==ERROR==`` lines only, so the CSV reader can explain what went wrong with them.
    """
    if "\x00" in head:
        # UTF-16 (PowerShell's '>' redirect) decoded byte-wise: NULs between the characters.
        if head.count("\x00") < len(head) // 3:
            return False
        head = head.replace("\x00", "")
    for line in head.lstrip("\ufeff\ufffe\ufffd\xff\xfe").splitlines():  # BOMs, however decoded
        if line.startswith('"ID",') and '"Kernel Name"' in line:
            return True
        if line.startswith(TOOL_TAGS):
            return True
    return False


@dataclass
class Found:
    """What precedes the CSV table: its offset and the lines before it, sorted."""

    offset: int = -1  # byte offset of the header line, -1 when there is none
    tool_lines: list[str] = field(default_factory=list)  # ==PROF==/==WARNING==/==ERROR== lines before it
    other_lines: int = 0  # application (or non-CSV) lines before it
    text_report: bool = False  # ncu's human-readable output instead of CSV
    binary: bool = False
    report: bool = False  # a .ncu-rep handed to the CSV reader
    empty: bool = False


def find_header(handle: IO[bytes]) -> Found:
    """Locate the CSV header line and sort the lines before it (ncu's own, application output)."""
    found = Found()
    buffer = bytearray(handle.read(_CHUNK))  # grows in place: ncu's stdout may put a line per launch before the table
    if not buffer:
        found.empty = True
        return found
    bom = 3 if buffer.startswith(b"\xef\xbb\xbf") else 0
    if buffer.startswith(HEADER_PREFIX, bom):
        found.offset = bom
        return found
    searched = 0
    while True:
        at = buffer.find(b"\n" + HEADER_PREFIX, max(searched - len(HEADER_PREFIX), 0))
        if at >= 0:
            found.offset = at + 1
            break
        if searched == 0 and b"\x00" in buffer:
            break  # binary, and no header in the first chunk: do not read the whole file
        searched = len(buffer)
        chunk = handle.read(_CHUNK * 16)
        if not chunk:
            break
        buffer += chunk
    end = found.offset if found.offset >= 0 else len(buffer)  # the lines before the table: read in place (MBs)
    if buffer.find(b"\x00", bom, end) >= 0:
        found.binary = True
        found.report = buffer.startswith(b"NVR\x00", bom, end)
        return found
    profiled, others = _profiling_lines(buffer, bom, end)
    if profiled:
        found.tool_lines.append("==PROF==")  # one per launch: only their presence matters
    for line in others:
        _note_prefix_line(found, line.rstrip(b"\r").decode("utf-8", errors="replace"))
    return found


def _profiling_lines(text: bytes | bytearray, start: int = 0, end: int | None = None) -> tuple[bool, list[bytes]]:
    """Whether ``text[start:end]`` (the lines before the table) holds a ``==PROF==`` line (ncu's, one per launch),
    and its other lines.

    Counted first, in place: where every line but the last is one (ncu's stdout before the table), the lines are
    not split."""
    end = len(text) if end is None else end
    profiled = text.startswith(b"==PROF==", start, end) + text.count(b"\n==PROF==", start, end)
    last = text.rfind(b"\n", start, end) + 1 or start
    if profiled == text.count(b"\n", start, end) and not text.startswith(b"==PROF==", last, end):
        return profiled > 0, [bytes(text[last:end])]
    lines = bytes(text[start:end]).split(b"\n")
    others = [line for line in lines if not line.startswith(b"==PROF==")]
    return len(others) < len(lines), others


def _note_prefix_line(found: Found, line: str) -> None:
    if line.startswith(TOOL_TAGS):
        found.tool_lines.append(line)
    elif line.strip():
        found.other_lines += 1
        stripped = line.strip()
        if stripped.startswith(("Section: ", "Metric Name ")) or re.match(r"^\[\d+\] \S+@\S+$", stripped):
            found.text_report = True


def holds_nul(handle: IO[bytes], offset: int) -> bool:
    """Whether the file holds a NUL byte from ``offset`` on (binary junk inside the table)."""
    handle.seek(offset)
    while chunk := handle.read(1 << 20):
        if b"\x00" in chunk:
            return True
    return False


def raise_tool_errors(lines: Iterable[str], source: str) -> None:
    for line in lines:
        if line.startswith("==ERROR=="):
            raise ncu_error(line, source)


def ncu_error(line: str, source: str) -> NcuError:
    """The error for one of ncu's ``==ERROR==`` lines, with a fix that fits it."""
    message = line[len("==ERROR=="):].strip()
    if "ERR_NVGPUCTRPERM" in message:
        return NcuError(f"{source}: ncu may not read the GPU counters (ERR_NVGPUCTRPERM); fix: {PERMISSION_FIX}")
    short = message if len(message) <= 140 else message[:137] + "..."
    match = re.search(r"application returned an error code \((-?\d+)\)", message)
    if match:
        fix = "run the application without ncu to see why it fails, then profile again"
    elif re.search(r"unrecogni[sz]ed|unknown option|invalid (value|argument)", message, re.IGNORECASE):
        fix = "correct the ncu command line (see ncu --help)"
    else:
        fix = "fix what ncu reports and profile again"
    return NcuError(f"{source}: ncu reported an error: {short}; fix: {fix}")


def no_table_error(found: Found, source: str) -> InputError:
    """Why a file holds no CSV table, from the lines ``find_header`` sorted."""
    if found.empty:
        return InputError(source, "empty file, no ncu output in it", FIX_CSV)
    if found.report:
        return InputError(source, "an Nsight Compute report (.ncu-rep), not CSV",
                          "read it as a report (perfgate reads .ncu-rep files directly)")
    if found.binary:
        return InputError(source, "binary data, not ncu CSV output", FIX_CSV)
    if found.text_report:
        return InputError(source, "ncu's text report, not CSV",
                          "run ncu with --csv (add --page raw for one row per launch)")
    warning = next((line for line in found.tool_lines if "No kernels were profiled" in line), "")
    if (found.tool_lines and found.other_lines == 0) or warning:
        said = f" ({warning.strip()})" if warning else ""
        return InputError(source, f"only ncu log lines, no profiled kernel{said}", FIX_NO_KERNELS)
    return InputError(source, 'no ncu CSV header ("ID","Process ID",...) found', FIX_CSV)


def launch_mask(ids: Sequence[str], source: str, processes: Sequence[str] | None = None) -> BoolArray:
    """Which "ID" cells ("" where empty) are launches: a number. Raise when none is, or on lines that say ncu
    failed.

    Lines that are not CSV rows (ncu's ``==`` lines, application output) land in "ID" with the other
    cells empty: an ``==ERROR==`` line among them raises :class:`NcuError`, binary junk an InputError.
    ``processes`` (each row's "Process ID" cell) tells a launch row with a bad ID (refused: one of the file's
    profiled processes) from such a line.
    """
    mask = np.fromiter(map(str.isdecimal, ids), dtype=bool, count=len(ids))
    profiled: set[str] | None = None  # the launches' processes: made at the first row that needs them
    for index in np.flatnonzero(~mask).tolist():
        cell = ids[index]
        if cell.startswith("==ERROR=="):
            raise ncu_error(cell, source)
        if "\x00" in cell or "\ufffd" in cell:
            raise InputError(source, "binary data inside the CSV table", FIX_REEXPORT)
        if processes is not None and cell.strip() and profiled is None:
            profiled = {processes[i] for i in np.flatnonzero(mask).tolist()}
        if processes is not None and cell.strip() and processes[index] in (profiled or ()):
            raise InputError(source, f"a launch of process {inert(processes[index], 20)} has the ID "
                                     f"{inert(cell, 40)!r}, which is not a launch number", FIX_REEXPORT)
    if not mask.any():
        raise InputError(source, "the CSV table has a header but no launch", FIX_NO_KERNELS)
    return mask
