"""Blind set 5: expected verdicts from the documented rules and the real measurements' spread.

Written from docs/matching.md ("How a kernel launched many times is judged", "Thresholds", "Floors come from
measured noise") and docs/configuration.md (default thresholds), not from perfgate's code. See README.md,
"Expected verdicts".
"""
from __future__ import annotations

import math
from typing import Any

import numpy as np
from scipy.stats import mannwhitneyu

from b5_pools import INST, RD, T, WR, grid_of, launch_pool, pool_values, session

REL = {T: 0.05, RD: 0.02, WR: 0.10, INST: 0.01}
ABS = {T: 2000.0, RD: 4096.0, WR: 262144.0, INST: 0.0}
MARGIN = 0.01          # log-change margin beyond the spread seen in the real sessions
Z = 3.0                # standard errors of margin for resampled launches


def _limit_abs(m: int, n: int, traffic: float) -> float:
    if m == T:
        return ABS[T] / math.sqrt(n)
    if m in (RD, WR):
        return max(ABS[m], 0.01 * traffic)     # DRAM floors stand whole and grow with the traffic
    return 0.0


def _change(b: np.ndarray, c: np.ndarray) -> tuple[float, float]:
    """(relative, absolute) change of one thing: a launch, a total, or a group of 2-5 by its HL estimate."""
    if len(b) == 1:
        d0 = float(c[0] - b[0])
        return (c[0] / b[0] - 1.0 if b[0] > 0 else (math.inf if d0 > 0 else 0.0)), d0
    diffs = (c[:, None] - b[None, :]).ravel()
    if (b > 0).all() and (c > 0).all():
        est = float(np.median(np.log(c[:, None] / b[None, :])))
        return math.expm1(est), float(np.median(b)) * math.expm1(est)
    d = float(np.median(diffs))
    return (d / float(np.median(b)) if np.median(b) > 0 else (math.inf if d > 0 else 0.0)), d


def _judge(changes: list[tuple[float, float]], m: int, n: int, traffic: float) -> str:
    """One metric of one thing over every real pair: fail, pass, not_silent (floor hides it) or any."""
    r, a = REL[m], _limit_abs(m, n, traffic)
    margin = min(MARGIN, 0.3 * math.log1p(r))
    logs = [math.log1p(x) if x > -1 else -math.inf for x, _ in changes]
    past_rel = all(x > math.log1p(r) + margin for x in logs)
    under_rel = all(x < math.log1p(r) - margin for x in logs)
    past_abs = all(d > a * 1.1 for _, d in changes)
    under_abs = all(d < a * 0.9 for _, d in changes)
    if past_rel and past_abs:
        return "fail"
    if under_rel or under_abs:
        return "not_silent" if (m == T and past_rel and under_abs) else "pass"
    return "any"


def combine(things: dict[str, str]) -> str:
    v = set(things.values())
    for word in ("fail", "any", "not_silent"):
        if word in v:
            return word
    return "pass"


def _session_values(case: dict[str, Any], i: int, j: int) -> list[tuple[str, bool, np.ndarray, np.ndarray]]:
    """(thing, touched by the plant, base values n x 4, current values n x 4) of every judged thing, i -> j."""
    ds = case["ds"]
    plant = {p["launch"]: p for p in case.get("plant", [])}
    touched_all = case.get("all_t", 1.0) != 1.0
    groups: dict[tuple[str, str, int], list[tuple[list[float], list[float], bool]]] = {}
    for k, la in enumerate(session(ds)["launches"]):
        if case.get("tests") and la["test"] not in case["tests"]:
            continue
        b, c = list(la["values"][i]), list(la["values"][j])
        if case.get("regressed") == k:
            c = list(session(ds)["regressed_vector_add"])
        c[T] *= case.get("all_t", 1.0)
        for m, key in ((T, "t"), (RD, "rd"), (WR, "wr"), (INST, "inst")):
            c[m] *= plant.get(k, {}).get(key, 1.0)
        touched = touched_all or k in plant or case.get("regressed") == k
        groups.setdefault((la["region"], la["kernel"], grid_of(ds, k)[0]), []).append((b, c, touched))
    out = []
    regions: dict[str, list[Any]] = {}
    for (region, kernel, grid), rows in groups.items():
        b = np.array([r[0] for r in rows])
        c = np.array([r[1] for r in rows])
        touched = any(r[2] for r in rows)
        out.append((f"K:{kernel}@{region}#{grid}", touched, b, c))
        acc = regions.setdefault(region, [np.zeros(4), np.zeros(4), False])
        acc[0] = acc[0] + b.sum(axis=0)
        acc[1] = acc[1] + c.sum(axis=0)
        acc[2] = acc[2] or touched
    for region, (b, c, touched) in regions.items():
        out.append((f"R:{region}", touched, b[None, :], c[None, :]))
    if len(regions) >= 2:
        tb = sum(v[0] for v in regions.values())
        tc = sum(v[1] for v in regions.values())
        out.append(("R:total", any(v[2] for v in regions.values()), tb[None, :], tc[None, :]))
    return out


def _settle(things: dict[str, str], touched: set[str]) -> tuple[str, str]:
    """The case's word, and why it is ambiguous: unchanged things are expected to pass (the code did not change);
    where the rule over the real noise leaves one of them open, a pass or not_silent case is marked ambiguous."""
    open_ = sorted(k for k, w in things.items() if k not in touched and w != "pass")
    word = combine({k: (w if k in touched else "pass") for k, w in things.items()})
    why = ""
    if open_ and word in ("pass", "not_silent"):
        why = ("unchanged, yet the rule over the real same-code spread leaves it open: "
               + ", ".join(x.split("@")[0][:40] for x in open_[:4]))
    return word, why


def session_expect(case: dict[str, Any]) -> tuple[str, dict[str, str], str]:
    """Judge every thing on every ordered pair of the dataset's real sessions, with the case's plant."""
    from b5_pools import ordered_pairs
    per: dict[tuple[str, int], list[tuple[float, float]]] = {}
    sizes: dict[str, tuple[int, float]] = {}
    touched: set[str] = set()
    for i, j in ordered_pairs(case["ds"]):
        for thing, hit, b, c in _session_values(case, i, j):
            for m in (T, RD, WR, INST):
                per.setdefault((thing, m), []).append(_change(b[:, m], c[:, m]))
            sizes[thing] = (len(b), float(np.median(b[:, RD] + b[:, WR])))
            if hit:
                touched.add(thing)
    things: dict[str, str] = {}
    for (thing, m), changes in per.items():
        n, traffic = sizes[thing]
        things[thing] = combine({"a": things.get(thing, "pass"), "b": _judge(changes, m, n, traffic)})
    word, why = _settle(things, touched)
    return word, things, why


def _robust_log_sd(values: np.ndarray) -> float:
    lv = np.log(values)
    return float(1.4826 * np.median(np.abs(lv - np.median(lv))))


def pool_expect(case: dict[str, Any]) -> tuple[str, dict[str, str], str]:
    """Resampled launches: each kernel by its interval (6+ a side) or its launch envelope (1 a side)."""
    things: dict[str, str] = {}
    touched: set[str] = set()
    tot_b, tot_c_lo, tot_c_hi, tot_var = 0.0, 0.0, 0.0, 0.0
    for k in case["kernels"]:
        pairs = [tuple(p) for p in case["pool_pairs"]]
        allv = pool_values(k["pool"])
        sd = max(_robust_log_sd(launch_pool(k["pool"], s, p)) for p in pairs for s in (0, 1))
        shifts = [math.log(float(np.median(launch_pool(k["pool"], 1, p))) /
                       float(np.median(launch_pool(k["pool"], 0, p)))) for p in pairs]
        f, n, t0 = k.get("f", 1.0), k["n"], float(np.median(allv))
        if n == 1:
            lo = min(math.log(np.quantile(launch_pool(k["pool"], 1, p), 0.005) /
                              np.quantile(launch_pool(k["pool"], 0, p), 0.995)) for p in pairs) + math.log(f)
            hi = max(math.log(np.quantile(launch_pool(k["pool"], 1, p), 0.995) /
                              np.quantile(launch_pool(k["pool"], 0, p), 0.005)) for p in pairs) + math.log(f)
            floor = ABS[T]
        else:
            se = sd * math.sqrt(2.0 / n) * 1.25
            lo = min(shifts) + math.log(f) - 1.96 * se - Z * se
            hi = max(shifts) + math.log(f) + 1.96 * se + Z * se
            floor = min(ABS[T], sd * t0) / math.sqrt(n)
        if k.get("outlier"):
            word = "pass"              # one launch that moved alone, seen once: at most inconclusive
        elif lo > math.log1p(REL[T]) and t0 * math.expm1(lo) > floor:
            word = "fail"
        elif hi < math.log1p(REL[T]) or t0 * math.expm1(hi) < floor:
            word = "not_silent" if (lo > math.log1p(REL[T]) and n == 1) else "pass"
        else:
            word = "any"
        things[f"K:{k['name']}"] = word
        if k.get("f", 1.0) != 1.0 or k.get("outlier"):
            touched.update({f"K:{k['name']}", "R:step"})
        extra = (k["outlier"][1] - 1.0) * t0 if k.get("outlier") else 0.0
        tot_b += n * t0
        tot_c_lo += n * t0 * f * math.exp(min(shifts)) + extra
        tot_c_hi += n * t0 * f * math.exp(max(shifts)) + extra
        tot_var += 2.0 * n * (sd * t0) ** 2
    se_tot = math.sqrt(tot_var) / tot_b
    lo_t, hi_t = tot_c_lo / tot_b - 1.0 - Z * se_tot, tot_c_hi / tot_b - 1.0 + Z * se_tot
    if lo_t > REL[T] and tot_b * lo_t > ABS[T]:
        things["R:step"] = "fail"
    elif hi_t < REL[T] or tot_b * hi_t < ABS[T]:
        things["R:step"] = "pass"
    else:
        things["R:step"] = "any"
    word, why = _settle(things, touched)
    return word, things, why


def bench_expect(case: dict[str, Any], bench: dict[str, list[float]]) -> tuple[str, dict[str, str], str]:
    """min time 20% and significance (Mann-Whitney U, p < 0.01) over every pair of real runs the case uses."""
    words = []
    for b, c in case["runs"]:
        base = np.array(bench[b])
        cur = np.array(bench[c]) * case.get("f", 1.0)
        for x in case.get("burst", []):
            cur[x] *= case["burst_factor"]
        ch = cur.min() / base.min() - 1.0
        med = np.median(cur) / np.median(base) - 1.0
        p = float(mannwhitneyu(cur, base, alternative="greater").pvalue)
        if ch > 0.22 and p < 0.005:
            words.append("fail")
        elif ch < 0.18 and med < 0.18:
            words.append("pass")
        else:
            words.append("any")
    word = "fail" if set(words) == {"fail"} else "pass" if set(words) == {"pass"} else "any"
    return word, {"B:test_mlp_step": word}, ""
