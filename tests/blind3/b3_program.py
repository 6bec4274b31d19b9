"""Blind set 3: a case's program (what the test launches, where) made into the true launches of each side.

A spec holds `base` (and, where the code changed the launch sequence, `cur`): a list of blocks
`{"r": REGION, "ops": [KEY, ...], "n": ITERATIONS}` (REGION "" is outside every NVTX range; "a > b" nests b in a).
`kdefs` adds the case's own kernels: `KEY: {"from": CATALOG_KEY, field: value, ...}`. `mods` plant code changes on
one side (`"side": "cur"` unless said): `{"k": KEY, "r": REGION, "it": [ITERATIONS], "occ": OCCURRENCE, "t": F,
"rd": F, "wr": F, "inst": F, "occ_f": F, "regs": +N}`; `interfere` plants another process's disturbance on
single launches, `{"k", "r", "it", "occ", "f", "side"}`. A selector left out matches every launch.
"""
from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any

from b3_model import CATALOG, Kernel


@dataclass(frozen=True)
class TrueLaunch:
    key: str
    region: str
    kernel: Kernel
    change: dict[str, float]
    interference: float
    it: int
    occ: int


def kernels_of(spec: dict[str, Any]) -> dict[str, Kernel]:
    table = dict(CATALOG)
    names = {f.name for f in fields(Kernel)}
    for key, over in spec.get("kdefs", {}).items():
        over = dict(over)
        src = table[over.pop("from", key)]
        values = {f: (tuple(v) if isinstance(v, list) else v) for f, v in over.items() if f in names}
        table[key] = Kernel(**{**src.__dict__, **values})
    return table


def _match(sel: dict[str, Any], key: str, region: str, it: int, occ: int) -> bool:
    return ((sel.get("k") in (None, key)) and (sel.get("r") in (None, region))
            and (sel.get("it") is None or it in sel["it"]) and (sel.get("occ") is None or occ == sel["occ"]))


def side_launches(spec: dict[str, Any], side: str) -> list[TrueLaunch]:
    """The true launches of one side (`base` or `cur`), planted changes applied, in launch order."""
    table = kernels_of(spec)
    blocks = spec["cur"] if side == "cur" and "cur" in spec else spec["base"]
    mods = [m for m in spec.get("mods", []) if m.get("side", "cur") == side]
    hits = [m for m in spec.get("interfere", []) if m.get("side", "cur") == side]
    out = []
    for block in blocks:
        region = block.get("r", "")
        for it in range(block.get("n", 1)):
            seen: dict[str, int] = {}
            for key in block["ops"]:
                occ = seen.get(key, 0)
                seen[key] = occ + 1
                change: dict[str, float] = {}
                for m in mods:
                    if _match(m, key, region, it, occ):
                        for f in ("t", "rd", "wr", "inst", "occ_f"):
                            if f in m:
                                change[f if f != "occ_f" else "occ"] = change.get(f, 1.0) * m[f]
                        if "regs" in m:
                            change["regs"] = change.get("regs", 0) + m["regs"]
                f_int = 1.0
                for h in hits:
                    if _match(h, key, region, it, occ):
                        f_int *= h["f"]
                out.append(TrueLaunch(key, region, table[key], change, f_int, it, occ))
    return out
