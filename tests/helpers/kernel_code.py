"""Real kernel codes for tests that need one without nvdisasm: nvdisasm's committed raw-mode text of our own cubins
(tests/data/cubin/README.md), read into a code as perfgate.collect.cubin reads nvdisasm's output; and our recorded
torch.profiler traces with Triton kernels' names, for the codes Triton's cache gives them."""

from __future__ import annotations

import gzip
import json
from collections.abc import Callable
from pathlib import Path

from helpers.common import REPO

from perfgate.collect.cubin import BASE_ADDRESS, disassembly_codes
from perfgate.collect.timeline.codes_file import codes_file, codes_json
from perfgate.table import KernelCode

CUBINS = REPO / "tests" / "data" / "cubin"
VECTOR_ADD_BYTES = 72 * 16  # the section .text.vector_add of both cubins: 72 instructions


def vector_add_code(cubin: str = "vector_add") -> KernelCode:
    """vector_add's code in ``<cubin>.sm_90.cubin`` (``vector_add``: ncu's code_id of our H100 run;
    ``vector_add_noftz``: the same source built without -ftz=true, other code)."""
    text = (CUBINS / f"{cubin}.sm_90.nvdisasm.txt").read_text(encoding="utf-8")
    return disassembly_codes(text, {"vector_add": (BASE_ADDRESS, VECTOR_ADD_BYTES)})["vector_add"]


def write_codes_beside(trace: Path, codes: dict[str, KernelCode], problems: list[str] | None = None) -> Path:
    """The codes file the timeline source's child writes beside ``trace``, with perfgate's own writer."""
    target = codes_file(trace)
    target.write_text(codes_json(codes, problems or []), encoding="utf-8")
    return target


def kineto_trace(recorded: Path, target: Path, renamed: Callable[[int, str], str]) -> Path:
    """Our torch.profiler trace ``recorded`` (tests/data/h200/timeline), written to ``target`` as torch.profiler
    exports it (uncompressed), its ``index``-th kernel event named ``renamed(index, name)``: the kernels a test of
    Triton kernels would have launched."""
    with gzip.open(recorded, "rt", encoding="utf-8") as stream:
        document = json.load(stream)
    kernels = [event for event in document["traceEvents"] if event.get("cat") == "kernel"]
    for index, event in enumerate(kernels):
        event["name"] = renamed(index, event["name"])
    target.write_text(json.dumps(document), encoding="utf-8")
    return target
