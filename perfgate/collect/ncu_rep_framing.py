"""The framing of an Nsight Compute report, checked before ``ncu_report`` is trusted with the file.

``ncu_report`` happily "loads" an empty, random or truncated file and returns zero or only the first few
launches. A report is the magic ``NVR\\0``, a u32 version, a u16 tag and a u32-length header, then
u32-length-prefixed blocks that end exactly at end of file (checked on every report in the corpus, ncu
2019-2025), so a file cut anywhere fails this walk and a truncated upload never turns into "kernels missing".
"""

from __future__ import annotations

import struct
from pathlib import Path
from typing import BinaryIO

from perfgate.errors import InputError

MAGIC = b"NVR\x00"

# Every block of a version-2 report (and its header) is a protobuf message whose first byte is the key
# of field 1 as a varint (0x08): seen on all 437 blocks of the corpus and the H100 fixtures. A file with
# a valid header and zeros after it would walk as blocks of length 0, and ncu_report would then spend about
# 0.9 s and 32 MB per MiB on it: checking each block's first byte refuses it at once.
_BLOCK_KEY = 0x08
_HEADER_SIZE = 14  # magic, u32 version, u16 tag, u32 header length


def check_framing(path: Path) -> None:
    """Raise InputError unless ``path`` is a complete Nsight Compute report.

    Walks the blocks with seeks (a few bytes read per block, never the whole file), so the check costs
    the same for a 30 MB report as for a 3 GB one.
    """
    try:
        size = path.stat().st_size
        with path.open("rb") as fh:
            _walk_blocks(path, fh, size)
    except OSError as exc:
        raise InputError(path, f"cannot read ({exc.strerror})") from exc


def _walk_blocks(path: Path, fh: BinaryIO, size: int) -> None:
    head = fh.read(_HEADER_SIZE + 1)
    if size == 0:
        raise InputError(path, "empty file, not an Nsight Compute report", "re-run ncu with -o/--export")
    if head[:4] != MAGIC:
        raise InputError(path, "not an Nsight Compute report (no NVR header)",
                         "pass a .ncu-rep written by ncu -o, an ncu --csv output, a pytest-benchmark JSON "
                         "or a perfgate baseline")
    if len(head) < _HEADER_SIZE:
        raise InputError(path, "truncated Nsight Compute report (header cut short)", "copy or download it again")
    version = struct.unpack_from("<I", head, 4)[0]
    if version != 2:
        return  # an unknown layout: let ncu_report judge it rather than refuse a valid newer file
    damaged = InputError(path, "damaged Nsight Compute report (a block that is not one of ncu's records)",
                         "the file was overwritten or corrupted; copy or download it again, or re-run ncu")
    header_length = struct.unpack_from("<I", head, 10)[0]
    if header_length == 0 or (len(head) > _HEADER_SIZE and head[_HEADER_SIZE] != _BLOCK_KEY):
        raise damaged
    offset = _HEADER_SIZE + header_length
    while offset + 4 <= size:
        fh.seek(offset)
        frame = fh.read(5)
        if len(frame) < 4:
            break  # the file shrank while being read
        length = struct.unpack_from("<I", frame, 0)[0]
        if length == 0 or (len(frame) == 5 and frame[4] != _BLOCK_KEY):
            raise damaged
        offset += 4 + length
    if offset != size:
        raise InputError(path, f"truncated Nsight Compute report ({size:,} bytes, the last block is cut short)",
                         "the file was not fully written or copied; copy or download it again, or re-run ncu")
