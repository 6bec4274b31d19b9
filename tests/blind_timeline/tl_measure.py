"""The documented metrics (docs/timeline.md "What is measured"), written from the docs alone, on a Timeline.

Used only to derive expected verdicts from the noise-free timelines; never perfgate's code.
"""
from __future__ import annotations

from collections import defaultdict
from typing import Any

import numpy as np

from tl_model import Timeline

# docs/timeline.md: a change must exceed both parts
REGION_LIMITS = {"wall_time": (0.08, 200_000.0), "gpu_idle": (0.50, 300_000.0), "host_lead": (0.50, 500_000.0)}
KERNEL_LIMIT = (0.10, 2_000.0)


def _union(iv: list[tuple[float, float]], lo: float, hi: float) -> float:
    total, cur_s, cur_e = 0.0, None, None
    for s, e in sorted((max(s, lo), min(e, hi)) for s, e in iv if e > lo and s < hi):
        if cur_e is None or s > cur_e:
            if cur_e is not None:
                total += cur_e - cur_s
            cur_s, cur_e = s, e
        else:
            cur_e = max(cur_e, e)
    if cur_e is not None:
        total += cur_e - cur_s
    return total


def region_paths(tl: Timeline) -> list[tuple[str, dict[str, Any]]]:
    """(path, range) of every user range: steps are `step`; a path is made of the ranges enclosing it whole."""
    user = [r for r in tl.ranges if r["kind"] in ("range", "step")]
    out = []
    for r in user:
        if r["kind"] == "step":
            out.append(("step", r))
            continue
        outer = sorted((o for o in user if o is not r and o["kind"] == "range" and o["tid"] == r["tid"]
                        and o["start"] <= r["start"] and o["end"] >= r["end"]), key=lambda o: o["start"])
        out.append((" > ".join([o["name"] for o in outer] + [r["name"]]), r))
    return out


def _owned(tl: Timeline, r: dict[str, Any]) -> list[dict[str, Any]]:
    by_corr = {g["corr"]: g for g in tl.gpu}
    user_tids = {x["tid"] for x in tl.ranges if x["kind"] in ("range", "step")}
    owned = []
    for c in tl.calls:
        if c["corr"] not in by_corr:
            continue
        if not r["start"] <= c["start"] <= r["end"]:
            continue
        if c["tid"] == r["tid"] or c["tid"] not in user_tids:
            owned.append(by_corr[c["corr"]])
    return owned


def entry_metrics(tl: Timeline, r: dict[str, Any], left_out: float = 0.0) -> dict[str, float] | None:
    own = _owned(tl, r)
    if not own:
        return None
    call_start = {c["corr"]: c["start"] for c in tl.calls}
    earlier = [g["end"] for g in tl.gpu if call_start.get(g["corr"], 0.0) < r["start"] < g["end"]]
    start = max([r["start"]] + earlier)
    end = max([r["end"]] + [g["end"] for g in own])
    busy_all = _union([(g["start"], g["end"]) for g in tl.gpu], start, end)
    first = min(g["start"] for g in own)
    return {"wall_time": end - start - left_out, "gpu_idle": end - start - busy_all - left_out,
            "host_lead": max(first - start, 0.0)}


def region_medians(tl: Timeline, whole_trace: bool) -> dict[str, dict[str, float]]:
    per: dict[str, list[dict[str, float]]] = defaultdict(list)
    if whole_trace:
        launches = [c for c in tl.calls if c["name"] != "cudaStreamSynchronize"]
        start = min(c["start"] for c in launches)
        end = max(g["end"] for g in tl.gpu)
        by_corr = {g["corr"]: g for g in tl.gpu}
        own = [by_corr[c["corr"]] for c in launches if c["corr"] in by_corr]
        busy = _union([(g["start"], g["end"]) for g in tl.gpu], start, end)
        first = min(g["start"] for g in own)
        per["whole trace"].append({"wall_time": end - start, "gpu_idle": end - start - busy,
                                   "host_lead": first - start})
    for path, r in region_paths(tl):
        m = entry_metrics(tl, r)
        if m is not None:
            per[path].append(m)
    return {p: {k: float(np.median([e[k] for e in es])) for k in es[0]} for p, es in per.items()}


def kernel_medians(tl: Timeline) -> dict[str, float]:
    per: dict[str, list[float]] = defaultdict(list)
    for g in tl.gpu:
        if g["kind"] == "kernel":
            per[g["name"]].append(g["end"] - g["start"])
    return {k: float(np.median(v)) for k, v in per.items()}


def judge(base: float, cur: float, rel: float, absolute: float) -> str:
    """fail / pass / any for a true change: fail past 1.5x the limit, pass under half of it."""
    limit = max(rel * base, absolute)
    delta = cur - base
    if delta > 1.5 * limit:
        return "fail"
    if delta < 0.5 * limit:
        return "pass"
    return "any"
