"""Blind set 2: a case's ncu spec (blocks of launches, planted changes) made into the launches of each side.

A block is `{"r": REGION, "ops": [KEY, ...], "n": ITERATIONS}`, or with `"streams": [[KEY, ...], [KEY, ...]]`
instead of `ops`: per iteration, the streams' launches are merged in a random order (each stream's own order
kept), as two host threads launching on two streams are seen by ncu. A mod multiplies a launch's true values:
`{"k": KEY, "r": REGION, "it": [ITERATIONS], "occ": OCCURRENCE, "t": F, "rd": F, "wr": F, "inst": F,
"side": "cur"|"base"}`; a selector left out matches every launch.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from b2_model import Kernel, Launch, kernel


def kernels_of(spec: dict[str, Any]) -> dict[str, Kernel]:
    """The catalog, plus the case's own kernels (`kdefs`: KEY: {"from": CATALOG_KEY, field: value})."""
    from b2_model import CATALOG
    table = dict(CATALOG)
    for key, over in spec.get("kdefs", {}).items():
        over = dict(over)
        base_key = over.pop("from", key)
        table[key] = kernel(base_key, over)
    return table


def _block_sequence(block: dict[str, Any], rng: np.random.Generator) -> list[list[str]]:
    """The keys each iteration of a block launches, in launch order."""
    iterations = []
    for _ in range(block.get("n", 1)):
        if "streams" in block:
            queues = [list(s) for s in block["streams"]]
            order: list[str] = []
            while any(queues):
                live = [q for q in queues if q]
                order.append(live[int(rng.integers(len(live)))].pop(0))
            iterations.append(order)
        else:
            iterations.append(list(block["ops"]))
    return iterations


def _applies(mod: dict[str, Any], key: str, region: str, it: int, occ: int) -> bool:
    return ((mod.get("k") in (None, key)) and (mod.get("r") in (None, region))
            and (mod.get("it") is None or it in mod["it"]) and (mod.get("occ") is None or occ == mod["occ"]))


def side_launches(spec: dict[str, Any], side: str, rng: np.random.Generator) -> list[Launch]:
    """The true launches of one side (`base` or `cur`), planted changes applied."""
    table = kernels_of(spec)
    blocks = spec["base"] if side == "base" or "cur" not in spec else spec["cur"]
    mods = [m for m in spec.get("mods", []) if m.get("side", "cur") == side]
    streams = spec.get("stream_of", {})
    out = []
    for block in blocks:
        region = block.get("r", "")
        for it, keys in enumerate(_block_sequence(block, rng)):
            seen: dict[str, int] = {}
            for key in keys:
                occ = seen.get(key, 0)
                seen[key] = occ + 1
                k = table[key]
                if key in streams:
                    k = Kernel(**{**k.__dict__, "stream": streams[key]})
                la = Launch(k, region, 1.0)
                for m in mods:
                    if _applies(m, key, region, it, occ):
                        la = Launch(k, region, la.factor * m.get("t", 1.0), la.rd * m.get("rd", 1.0),
                                    la.wr * m.get("wr", 1.0), la.inst * m.get("inst", 1.0))
                out.append(la)
    return out
