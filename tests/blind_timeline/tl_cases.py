"""The blind timeline set's families: each case is two programs (tl_model), a trace format and its expectation.

Expectations come from `expect_of` (the documented metrics and default thresholds applied to the noise-free
timelines, tl_measure) unless a case states an override with its reason (counted as ambiguous when `any`).
"""
from __future__ import annotations

import copy
from typing import Any

from tl_measure import KERNEL_LIMIT, REGION_LIMITS, judge, kernel_medians, region_medians
from tl_model import default_program, kernel, layer, op, simulate, variant

FORMATS = ("kineto", "kineto-us", "kineto-old", "nsys", "nsys-start")


def measured_timeline(prog: dict[str, Any], fmt: str) -> Any:
    """The noise-free timeline as the docs say it is measured: first launch calls' lazy loading left out where
    the capture is from the process start (Kineto: shown by the kernels; nsys: START_TRIGGER Immediate)."""
    if fmt != "nsys" and prog["cold_us"] > 0:
        prog = variant(prog, cold_us=0.0)
    tl = simulate(prog, None)
    if fmt.startswith("nsys"):
        for r in tl.ranges:
            if r["kind"] == "step":
                r["kind"], r["name"] = "range", "train_step"
    return tl


def expect_of(base: dict[str, Any], cur: dict[str, Any], fmt: str) -> tuple[str, list[str], dict[str, Any]]:
    tb, tc = measured_timeline(base, fmt), measured_timeline(cur, fmt)
    whole = not base.get("ranges", True)
    rb, rc = region_medians(tb, whole), region_medians(tc, whole)
    kb, kc = kernel_medians(tb), kernel_medians(tc)
    verdicts: dict[str, str] = {}
    for path in sorted(set(rb) & set(rc)):
        for metric, (rel, absolute) in REGION_LIMITS.items():
            verdicts[f"R:{path}|{metric}"] = judge(rb[path][metric], rc[path][metric], rel, absolute)
    for name in sorted(set(kb) & set(kc)):
        verdicts[f"K:{name}"] = judge(kb[name], kc[name], *KERNEL_LIMIT)
    bad = {k: v for k, v in verdicts.items() if v != "pass"}
    expect = "fail" if "fail" in bad.values() else ("any" if bad else "pass")
    blame = sorted({k.split("|")[0] for k in bad})
    facts = {"moved": bad}
    return expect, blame, facts


def case(cid: str, family: str, fmt: str, base: dict[str, Any], cur: dict[str, Any], why: str,
         override: tuple[str, list[str], str] | None = None, forbid: tuple[str, ...] = ()) -> dict[str, Any]:
    expect, blame, facts = expect_of(base, cur, fmt)
    ambiguous = ""
    if override is not None:
        expect, blame, ambiguous = override[0], override[1] or blame, override[2]
    # a regression may be named on any region or kernel that moved; a kernel slower may also move regions
    return {"id": cid, "family": family, "format": fmt, "base": base, "cur": cur, "why": why, "expect": expect,
            "blame": blame, "ambiguous": ambiguous if expect == "any" or override else "", "forbid": list(forbid),
            "facts": facts}


def _nsys(prog: dict[str, Any]) -> dict[str, Any]:
    return variant(prog, input_copy_us=0.0)


def multistream_program() -> dict[str, Any]:
    p = default_program()
    for i in range(4):
        p["layers"][i]["ops"].append(op("aten::add", [kernel("side_stream_gemv", 160.0, (80, 1, 1), stream=20)]))
    return p


def tiny_program() -> dict[str, Any]:
    """Whole-µs territory: a step of 30 tiny kernels (2-5 µs) launched from Python, host-bound."""
    ops = [op("aten::add", [kernel(f"tiny_kernel_{i % 6}", 2.4 + (i % 6) * 0.5, (1, 1, 1), (64, 1, 1))],
              host_us=9.0) for i in range(30)]
    return variant(default_program(), layers=[layer("small_ops", ops)], loader_us=150.0, input_copy_us=0.0,
                   steps=10)


def with_layers(prog: dict[str, Any], fn: Any) -> dict[str, Any]:
    p = copy.deepcopy(prog)
    fn(p["layers"])
    return p


def scale_kernel(prog: dict[str, Any], name: str, factor: float) -> dict[str, Any]:
    p = copy.deepcopy(prog)
    for ly in p["layers"]:
        for o in ly["ops"]:
            for k in o["kernels"]:
                if k["name"] == name:
                    k["dur_us"] *= factor
    return p
