"""Blind set 4's rule: a case's expected verdict from the documented limits, applied to this set's noise model.

Every judged thing (a kernel's launches in a region; each region's total; the overall total over 2+ regions) and
each gated metric of it gets S draws of its measured change under b4_model's noise (the same model that writes the
files). A condition of a regression (`change > relative part`, `delta > absolute part`, `current < floor`) is
clearly met when its mean lies beyond the limit by 3 standard deviations of the draws, clearly not met when it lies
within by 3. A thing fails when every condition of a metric is clearly met; passes when, for every metric, some
condition is clearly not met; else `any`. Limits (docs/configuration.md, docs/matching.md, docs/roofline.md):
duration 5%+2000 ns, DRAM read 2%+4096 B and DRAM write 10%+262144 B (both at least 1% of the baseline's DRAM
traffic), instructions 1%, derived.roofline_pct a fall of 5 points (`+roofline` only); a floor `>=X` fails a
current value below X. A kernel clearly faster (duration an improvement) is not failed on a work counter that grew.
"""
from __future__ import annotations

import fnmatch
from typing import Any

import numpy as np

from b4_generate import measured, rng_for
from b4_model import DEVICES, FLOP_PER_INST, OPS

S = 400
DEFAULTS = {"t": "5%+2000", "rd": "2%+4096", "wr": "10%+262144", "inst": "1%", "pct": "5"}
NAMES = {"gpu__time_duration.sum": "t", "dram__bytes_read.sum": "rd", "dram__bytes_write.sum": "wr",
         "smsp__inst_executed.sum": "inst", "derived.roofline_pct": "pct"}
PCT_INPUTS = {"roofline", "tensor", "fp32_only"}


def parse(spec: str) -> dict[str, float] | None:
    """'5%+2000' -> rel .05, abs 2000; '5+>=60' -> abs 5, floor 60; '>=60' -> floor 60; 'off' -> None."""
    if spec == "off":
        return None
    out: dict[str, float] = {}
    for part in spec.split("+"):
        if part.startswith(">="):
            out["floor"] = float(part[2:])
        elif part.endswith("%"):
            out["rel"] = float(part[:-1]) / 100.0
        elif part:
            out["abs"] = float(part)
    return out


def _limits(spec: dict[str, Any], name: str) -> dict[str, dict[str, float] | None]:
    th = {m: parse(s) for m, s in DEFAULTS.items()}
    for metric, s in spec.get("thresholds", {}).items():
        th[NAMES[metric]] = parse(s)
    for pattern, table in spec.get("kernel_thresholds", []):
        if fnmatch.fnmatchcase(name, pattern):
            for metric, s in table.items():
                if th[NAMES[metric]] is not None:          # never gates a metric that is off
                    th[NAMES[metric]] = parse(s)
            break
    return th


def _pct(rows: list[dict[str, Any]]) -> np.ndarray:
    """Roofline % of a launch (one row) or of a total (docs: sum FLOP / sum(duration x roof))."""
    flop_sum, allowed = 0.0, 0.0
    for r in rows:
        d = DEVICES[r["dev"]]
        flop = sum(FLOP_PER_INST[op] * r[op] for op in OPS)
        nbytes = r["rd"] + r["wr"]
        with np.errstate(divide="ignore", invalid="ignore"):
            ai = np.where(nbytes > 0, flop / np.where(nbytes > 0, nbytes, 1), np.inf)
        roof = np.minimum(2.0 * d["ffma_peak"] * r["sm_clk"], ai * d["dram_peak"] * r["dram_clk"])
        flop_sum = flop_sum + flop
        allowed = allowed + r["t"] * 1e-9 * roof
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(np.asarray(allowed) > 0, flop_sum / np.where(np.asarray(allowed) > 0, allowed, 1) * 100.0,
                        np.nan)


def _things(rows: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    """Judged things: each kernel in its region (launches of a group summarised by their median) and totals."""
    out: dict[str, list[dict[str, Any]]] = {}
    for r in rows:
        out.setdefault(f"K:{r['name']}|{r['region']}", []).append(r)
    regions = sorted({r["region"] for r in rows if r["region"]})
    for reg in regions:
        out[f"R:{reg}"] = [r for r in rows if r["region"] == reg]
    if len({reg.split(" > ")[0] for reg in regions}) >= 2:
        out["R:total"] = [r for r in rows if r["region"]]
    return out


def _values(key: str, rows: list[dict[str, Any]], has_pct: bool) -> dict[str, np.ndarray]:
    if key.startswith("K:") and len(rows) > 1:              # a group: the median launch of each draw
        v = {m: np.median(np.stack([r[m] for r in rows]), axis=0) for m in ("t", "rd", "wr", "inst")}
        pct = np.median(np.stack([_pct([r]) for r in rows]), axis=0)
    else:
        v = {m: sum(r[m] for r in rows) for m in ("t", "rd", "wr", "inst")}
        pct = _pct(rows)
    v = {m: np.asarray(x, dtype=float) for m, x in v.items()}
    v["pct"] = pct if has_pct else np.full_like(v["t"], np.nan)
    return v


def _clear(x: np.ndarray, limit: float) -> str:
    """'yes' when x > limit clearly (3 sd), 'no' when clearly not, else 'maybe'."""
    mean, sd = float(np.mean(x)), float(np.std(x))
    if mean - 3 * sd > limit or (sd == 0 and mean > limit):
        return "yes"
    if mean + 3 * sd < limit or (sd == 0 and mean <= limit):
        return "no"
    return "maybe"


def _judge(metric: str, b: np.ndarray, c: np.ndarray, lim: dict[str, float], traffic: np.ndarray) -> str:
    """'yes' / 'no' / 'maybe': did this metric regress (the worse direction: higher, for pct lower)."""
    conds: list[str] = []
    if metric == "pct":
        if "abs" in lim:
            conds_fall = [_clear(b - c, lim["abs"])]
        else:
            conds_fall = ["no"]
        fall = "yes" if conds_fall == ["yes"] else ("no" if "no" in conds_fall else "maybe")
        floor = _clear(lim["floor"] - c, 0.0) if "floor" in lim else "no"
        return "yes" if "yes" in (fall, floor) else ("no" if (fall, floor) == ("no", "no") else "maybe")
    delta = c - b
    if "rel" in lim:
        conds.append(_clear(delta / b, lim["rel"]) if np.all(b > 0) else _clear(delta, 0.0))
    if "abs" in lim or metric in ("rd", "wr"):
        floor = lim.get("abs", 0.0)
        conds.append(_clear(delta - np.maximum(floor, 0.01 * traffic), 0.0) if metric in ("rd", "wr")
                     else _clear(delta, floor))
    if "no" in conds:
        return "no"
    return "yes" if all(x == "yes" for x in conds) else "maybe"


def judge(spec: dict[str, Any], case_id: str, seed: int) -> dict[str, dict[str, str]]:
    """Each judged thing's gated metrics: 'yes' (regressed), 'maybe', 'no'; '1side': a value on one side only."""
    rng = rng_for(seed, case_id, 10_000)
    base, cur = measured(spec, "base", rng, S), measured(spec, "cur", rng, S)
    cols = spec.get("cols", {})
    asked = spec.get("metrics", "+roofline") is not None and "+roofline" in (spec.get("metrics") or "+roofline")
    has = {s: asked and cols.get(s, "roofline") in PCT_INPUTS for s in ("base", "cur")}
    tb, tc = _things(base), _things(cur)
    out: dict[str, dict[str, str]] = {}
    for key in sorted(set(tb) & set(tc)):
        name = key[2:].split("|")[0]
        lims = _limits(spec, name)
        vb, vc = _values(key, tb[key], has["base"]), _values(key, tc[key], has["cur"])
        traffic = vb["rd"] + vb["wr"]
        res: dict[str, str] = {}
        for m, lim in lims.items():
            if lim is None:
                continue
            nb, nc = bool(np.all(np.isnan(vb[m]))), bool(np.all(np.isnan(vc[m])))
            if nb and nc:
                continue
            res[m] = "1side" if nb != nc else _judge(m, vb[m], vc[m], lim, traffic)
        t_lim = lims["t"]
        faster = t_lim is not None and _clear(vb["t"] - vc["t"], max(t_lim.get("abs", 0.0), 0.0)) == "yes" and \
            _clear((vb["t"] - vc["t"]) / vb["t"], t_lim.get("rel", 0.0)) == "yes"
        if faster:
            res = {m: ("no" if m in ("rd", "wr", "inst") else v) for m, v in res.items()}
        out[key] = res
    return out


LABEL = {"t": "gpu__time_duration.sum", "rd": "dram__bytes_read.sum", "wr": "dram__bytes_write.sum",
         "inst": "smsp__inst_executed.sum", "pct": "derived.roofline_pct"}


def expect(spec: dict[str, Any], case_id: str, seed: int) -> tuple[str, list[str], list[str], str]:
    """(expect, blame, blame_metrics, why) by the rule."""
    j = judge(spec, case_id, seed)
    verdicts = [v for res in j.values() for v in res.values()]
    blame = sorted({("K:" + k[2:].split("|")[0]) if k.startswith("K:") else ("R:*" if k == "R:total" else k)
                    for k, res in j.items() if any(v in ("yes", "maybe") for v in res.values())})
    metrics = sorted({LABEL[m] for res in j.values() for m, v in res.items() if v in ("yes", "maybe")})
    why = "; ".join(f"{k[2:].replace('|', ' in ').rstrip(' in ')} {LABEL[m]} {v}" for k, res in j.items()
                    for m, v in res.items() if v != "no") or "every judged kernel and total within its limit"
    if "yes" in verdicts:
        return "fail", blame, metrics, why
    if "maybe" in verdicts:
        return "any", blame, metrics, why
    if "1side" in verdicts:
        return "not_silent", [], [], why
    return "pass", [], [], why
