"""Write one rerun of one case: each side's corpus trace, edited in a scratch folder (never in the project)."""
from __future__ import annotations

import os
import random
import shutil
import sqlite3
from pathlib import Path
from typing import Any

import t2_chrome as chrome
import t2_nsys as nsys

ROOT = Path(__file__).resolve().parents[2]


def corpus_dir() -> Path:
    """../shared/corpus/timeline beside the repository (PERFGATE_CORPUS names ../shared/corpus elsewhere)."""
    base = Path(os.environ.get("PERFGATE_CORPUS") or ROOT.parent / "shared" / "corpus")
    return base / "timeline"


def _rng(seed: int, cid: str, rerun: int, name: str, k: int) -> random.Random:
    return random.Random(f"{seed}:{cid}:{rerun}:{name}:{k}")


def _edit_chrome(events: list[dict[str, Any]], edit: dict[str, Any], rng: random.Random) -> None:
    op = edit["op"]
    if op == "jitter":
        chrome.jitter(events, rng, edit["sigma"])
    elif op == "stall":
        chrome.stall(events, edit["range"], edit["entries"], edit["at"], edit["us"])
    elif op == "stall_before_launch":
        chrome.stall_before_launch(events, edit["index"], edit["us"])
    elif op == "stretch":
        chrome.stretch(events, edit["name"], edit["factor"], edit["add_us"], edit["range"], edit["only"])
    elif op == "insert":
        chrome.insert_launches(events, edit["name"], edit["range"], edit["total_us"])
    elif op == "remove_launch":
        chrome.remove_launch(events, edit["name"], edit["index"])
    elif op == "drop_range":
        chrome.drop_range(events, edit["name"])
    elif op == "rename_range":
        chrome.rename_range(events, edit["name"], edit["new"])
    elif op == "strip_ranges":
        chrome.strip_ranges(events)
    elif op == "old_schema":
        chrome.old_schema(events)
    elif op == "interfere":
        chrome.interfere(events, edit["range"], edit["entry"], edit["us"])
    else:
        raise ValueError(f"edit {op} does not apply to a Chrome trace")


def _edit_nsys(con: sqlite3.Connection, edit: dict[str, Any], rng: random.Random) -> None:
    op = edit["op"]
    if op == "jitter":
        nsys.jitter(con, rng, edit["sigma"])
    elif op == "stall":
        nsys.stall(con, edit["range"], edit["entries"], edit["at"], round(edit["us"] * 1000))
    elif op == "stall_before_launch":
        nsys.stall_before_launch(con, edit["index"], round(edit["us"] * 1000))
    elif op == "stretch":
        assert edit["add_us"] == 0.0 and edit["only"] is None
        nsys.stretch(con, edit["name"], edit["factor"], edit["range"])
    elif op == "insert":
        nsys.insert_launches(con, edit["name"], edit["range"], round(edit["total_us"] * 1000))
    elif op == "rename_range":
        nsys.rename_range(con, edit["name"], edit["new"])
    elif op == "strip_ranges":
        nsys.strip_ranges(con)
    elif op == "wrap_launches":
        nsys.wrap_launches(con, edit["name"])
    elif op == "interfere":
        nsys.interfere(con, edit["range"], edit["entry"], round(edit["us"] * 1000))
    else:
        raise ValueError(f"edit {op} does not apply to an Nsight Systems export")


def write_side(case: dict[str, Any], name: str, seed: int, rerun: int, folder: Path) -> Path:
    spec = case[name]
    src = corpus_dir() / spec["src"]
    if not spec["edits"]:
        return src
    suffix = "".join(src.suffixes[-2:]) if src.suffix == ".gz" else src.suffix
    out = folder / f"{name}{suffix}"
    if src.suffix == ".sqlite":
        shutil.copyfile(src, out)
        con = sqlite3.connect(out)
        for k, edit in enumerate(spec["edits"]):
            _edit_nsys(con, edit, _rng(seed, case["id"], rerun, name, k))
        con.commit()
        con.close()
        return out
    doc = chrome.load(src)
    for k, edit in enumerate(spec["edits"]):
        _edit_chrome(doc["traceEvents"], edit, _rng(seed, case["id"], rerun, name, k))
    chrome.write(doc, out)
    return out


def write_rerun(case: dict[str, Any], seed: int, rerun: int, folder: Path) -> dict[str, Path]:
    folder.mkdir(parents=True, exist_ok=True)
    return {name: write_side(case, name, seed, rerun, folder) for name in ("base", "cur")}
