"""Blind set 3: a case's expected verdict, from the documented rules applied to this set's noise model.

Every judged thing (a kernel's launches in a region, a region's total, the overall total, the total of launches
outside every region where a replacement needs it) and every gated metric of it gets its true change `s`, its
documented limit (relative part L, absolute part A; docs/configuration.md, docs/matching.md) and the standard
error `se` of its measured change under b3_model. Then, with z past the limit in standard errors:

* fail: past both parts by 3 se (a group of 6+ launches: by 3 se beyond its interval's half-width, since the whole
  95% interval must lie past the limit);
* pass: under either part by 3 se;
* not_silent: a duration past the relative part by 3 se but under the absolute floor by 3 se (a note must say the
  floor hid it);
* any: in between (not counted).

The case is `fail` when any metric is, else `any` when any is, else `not_silent` when any is, else `pass`. A
kernel clearly faster (duration past its limit the better way) is not judged on its work counters. Totals
holding a replacement judge their time only. Where a planted interference (not a code change) decides the
expectation, the case is marked ambiguous.
"""
from __future__ import annotations

import math
from collections import defaultdict
from statistics import median
from typing import Any

from b3_model import RUN_SD, sd_ns
from b3_program import TrueLaunch, side_launches

Z = 3.0
LIMITS = {"t": (0.05, 2000.0), "rd": (0.02, 4096.0), "wr": (0.10, 262144.0), "inst": (0.01, 0.0)}
T_QUANTILE = {6: 12.28, 7: 9.84, 8: 8.47, 10: 7.0, 12: 6.24, 20: 5.1}


def k_of(n: int) -> float:
    """Student-t quantile at the normal 4-sd tail, n values (docs/history.md)."""
    if n >= 100:
        return 4.2
    below = max(m for m in T_QUANTILE if m <= n) if n >= 6 else 6
    return T_QUANTILE[below] if n < 20 else 5.1 - (n - 20) * 0.01


def blame_token(name: str) -> str:
    return name.removeprefix("void ")[:48]


def _rel_sd(metric: str, la: TrueLaunch) -> float:
    k = la.kernel
    if metric == "t":
        bim = k.bimodal_p * (1 - k.bimodal_p) * (k.bimodal_f - 1) ** 2
        return math.sqrt((sd_ns(k.t) / k.t) ** 2 + bim)
    if metric == "rd":
        return 0.001 + 512 / max(k.rd, 1.0)
    if metric == "wr":
        return k.wr_sd + 2048 / max(k.wr, 1.0)
    return 0.0


def _value(metric: str, la: TrueLaunch, measured: bool) -> float:
    base = {"t": la.kernel.t, "rd": la.kernel.rd, "wr": la.kernel.wr, "inst": la.kernel.inst}[metric]
    v = base * la.change.get(metric, 1.0)
    return v * la.interference if metric == "t" and measured else v


def judge(metric: str, s: float, se: float, v: float, traffic: float, n: int, half: float = 0.0) -> str:
    """One metric of one judged thing: pass, fail, not_silent or any (see the module's docstring)."""
    rel, ab = LIMITS[metric]
    if metric in ("rd", "wr"):
        ab = max(ab, 0.01 * traffic)
    if metric == "t" and n > 1:
        ab = min(ab, sd_ns(v)) / math.sqrt(n) if n >= 6 else ab / math.sqrt(n)
    if v <= 0:
        return "pass"
    se = max(se, 1e-9)
    z_rel = (s - rel - half) / se
    z_abs = (v * s - ab - v * half) / (v * se)
    if metric in ("inst",) and se <= 1e-9:
        return "fail" if s > rel + 1e-6 else "pass"
    if z_rel >= Z and z_abs >= Z:
        return "fail"
    if z_rel <= -Z or z_abs <= -Z:
        return "not_silent" if metric == "t" and z_rel >= Z else "pass"
    return "any"


def _groups(launches: list[TrueLaunch], pair: dict[str, str]) -> dict[tuple[str, str], list[TrueLaunch]]:
    out: dict[tuple[str, str], list[TrueLaunch]] = defaultdict(list)
    for la in launches:
        out[(la.region, pair.get(la.key, la.key))].append(la)
    return out


def _judge_group(b: list[TrueLaunch], c: list[TrueLaunch], measured: bool, hist: dict[str, Any] | None) -> dict[str, str]:
    n = min(len(b), len(c))
    out = {}
    faster = False
    for metric in ("t", "inst", "rd", "wr"):
        ratios = [_value(metric, y, measured) / _value(metric, x, measured) if _value(metric, x, measured) else 1.0
                  for x, y in zip(b[:n], c[:n])]
        if max(ratios) - min(ratios) > 1e-9 and metric == "t":
            if not measured or not _moved_alone_by_chance(b[:n], c[:n]):
                out[metric] = "mixed"
                continue
            ratios = [_value(metric, y, False) / _value(metric, x, False) for x, y in zip(b[:n], c[:n])]
        s = median(ratios) - 1
        r = _rel_sd(metric, b[0])
        run = RUN_SD if metric == "t" else 0.0
        v = _value(metric, b[0], False)
        traffic = b[0].kernel.rd + b[0].kernel.wr
        if hist:
            out[metric] = _judge_hist(metric, s, r, run, v, traffic, n, hist)
        elif n == 1:
            out[metric] = judge(metric, s, math.sqrt(2 * run ** 2 + 2 * r ** 2), v, traffic, 1)
        else:
            spread = math.sqrt(2.2 / n) * r
            half = 1.96 * spread if n >= 6 else 0.0
            out[metric] = judge(metric, s, math.sqrt(2 * run ** 2 + spread ** 2), v, traffic, n, half)
        if metric == "t" and s < 0 and judge("t", -s, math.sqrt(2 * run ** 2 + 2 * r ** 2 / n), v, traffic, n) == "fail":
            faster = True
            break
    return out if not faster else {"t": "pass"}


def _moved_alone_by_chance(b: list[TrueLaunch], c: list[TrueLaunch]) -> bool:
    """Interference hit one launch of a small group, or at most 2 of 6+: the documented outcome is at worst
    inconclusive (a launch that moved alone without its call site moving), so it is judged as the code."""
    hit = sum(1 for x, y in zip(b, c) if x.interference != 1.0 or y.interference != 1.0)
    return hit <= (2 if len(b) >= 6 else 1) and len(b) >= 2


def _judge_hist(metric: str, s: float, r: float, run: float, v: float, traffic: float, n: int,
                hist: dict[str, Any]) -> str:
    """Judged against the median of `runs` base-branch runs, at a threshold learned from their spread
    (docs/history.md): a fail must clear the learned threshold at the top of its estimate's uncertainty; a pass
    is judged at the learned threshold itself, whose t quantile k(n) already pays for that uncertainty."""
    runs = hist["runs"]
    spread = math.sqrt(run ** 2 + r ** 2)
    values = runs * n if n > 1 else runs
    learned = min(LIMITS[metric][0], max(k_of(values) * spread, 0.005))
    u = 1.2 / math.sqrt(values) if spread > 0 else 0.0
    hi = min(LIMITS[metric][0], learned * (1 + 2 * u))
    se = math.sqrt(run ** 2 * (1 + 1.57 / runs) + r ** 2 / n + 1.57 * r ** 2 / (runs * n))
    saved = LIMITS[metric]
    try:
        LIMITS[metric] = (hi, saved[1])
        at_hi = judge(metric, s, se, v, traffic, n)
        LIMITS[metric] = (learned, saved[1])
        at_learned = judge(metric, s, se, v, traffic, n)
    finally:
        LIMITS[metric] = saved
    if at_hi == "fail":
        return "fail"
    return "pass" if at_learned == "pass" else "any"


def _total(b: list[TrueLaunch], c: list[TrueLaunch], measured: bool, time_only: bool,
           hist: dict[str, Any] | None) -> dict[str, str]:
    out: dict[str, str] = {}
    for metric in ("t",) if time_only else ("t", "inst", "rd", "wr"):
        if out.get("t") == "faster":
            out["t"] = "pass"
            break
        vb = sum(_value(metric, x, measured) for x in b)
        vc = sum(_value(metric, y, measured) for y in c)
        if vb <= 0:
            continue
        var = sum((_rel_sd(metric, x) * _value(metric, x, False)) ** 2 for x in b) / vb ** 2
        run = RUN_SD if metric == "t" else 0.0
        traffic = sum(x.kernel.rd + x.kernel.wr for x in b)
        se = math.sqrt(2 * run ** 2 + 2 * var)
        if hist:
            out[metric] = _judge_hist(metric, vc / vb - 1, math.sqrt(var), run, vb, traffic, 1, hist)
        else:
            out[metric] = judge(metric, vc / vb - 1, se, vb, traffic, 1)
        if metric == "t" and vc < vb and judge("t", vb / vc - 1, se, vb, traffic, 1) == "fail":
            out["t"] = "faster"
    out["t"] = "pass" if out.get("t") == "faster" else out.get("t", "pass")
    return out


def entities(spec: dict[str, Any], measured: bool) -> dict[str, dict[str, str]]:
    """Every judged thing of the case and each metric's expectation: {"K:token@region": {...}, "R:region": {...}}."""
    base, cur = side_launches(spec, "base"), side_launches(spec, "cur")
    pair, hist = spec.get("pair", {}), spec.get("history")
    gb, gc = _groups(base, pair), _groups(cur, pair)
    out: dict[str, dict[str, str]] = {}
    replaced: set[str] = set()
    for region in {r for r, _ in gb} | {r for r, _ in gc}:
        only_b = [k for (r, k) in gb if r == region and (r, k) not in gc]
        only_c = [k for (r, k) in gc if r == region and (r, k) not in gb]
        if only_b and only_c:
            replaced.add(region)
    for key in sorted(set(gb) & set(gc)):
        token = blame_token(gc[key][0].kernel.name)
        out[f"K:{token}@{key[0]}"] = _judge_group(gb[key], gc[key], measured, hist)
    regions_b = {la.region for la in base if la.region}
    regions_c = {la.region for la in cur if la.region}
    for region in sorted(regions_b & regions_c):
        out[f"R:{region}"] = _total([x for x in base if x.region == region], [y for y in cur if y.region == region],
                                    measured, region in replaced, hist)
    shared = regions_b & regions_c
    if len(regions_b) >= 2 and len(regions_c) >= 2:
        out["R:*total"] = _total([x for x in base if x.region in shared], [y for y in cur if y.region in shared],
                                 measured, bool(replaced & shared), hist)
    if "" in replaced:
        if not regions_b and not regions_c:
            out["R:*total"] = _total(base, cur, measured, True, hist)
        elif regions_b == regions_c:
            out["R:*outside"] = _total([x for x in base if not x.region], [y for y in cur if not y.region],
                                       measured, True, hist)
        else:
            out["X:unpaired"] = {"t": "not_silent"}
    return out


def _combine(ents: dict[str, dict[str, str]]) -> tuple[str, list[str]]:
    worst = {"fail": 4, "mixed": 3, "any": 3, "not_silent": 2, "pass": 1}
    verdict, blame = "pass", []
    for name, metrics in ents.items():
        for m in metrics.values():
            if worst[m] > worst[verdict]:
                verdict = m
            if m in ("fail", "any", "mixed"):
                blame.append(name.split("@")[0] if name.startswith("K:") else "R:*")
    verdict = "any" if verdict == "mixed" else verdict
    return verdict, sorted(set(blame))


def expect(spec: dict[str, Any]) -> dict[str, Any]:
    """The case's expected verdict, what it may blame, and whether a planted interference decides it."""
    code_v, blame = _combine(entities(spec, measured=False))
    seen_v, blame_seen = _combine(entities(spec, measured=True))
    out: dict[str, Any] = {"expect": code_v, "blame": sorted(set(blame) | set(blame_seen)), "ambiguous": ""}
    if seen_v != code_v and not (code_v == "pass" and seen_v == "not_silent"):
        out["ambiguous"] = (f"interference (not a code change) moves what it hits: by the documented rules "
                            f"'{seen_v}', by the code '{code_v}'")
    return out
