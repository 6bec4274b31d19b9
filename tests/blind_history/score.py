"""Scoring detected change points against the blind set's planted truth (the rule, fixed before the first run, is
in README.md): a detected point matches a planted change within ``TOLERANCE`` commits, one to one, the closest
pairs first."""

from __future__ import annotations

from typing import Any, Sequence

TOLERANCE = 2
QUIET_TIMING = ("flat_gauss", "flat_t3", "bimodal_flat", "outliers_flat")
FLAT = ("flat_gauss", "flat_t3")


def match(detected: Sequence[int], planted: Sequence[int], tolerance: int = TOLERANCE) -> list[tuple[int, int]]:
    """(detected, planted) pairs: each point in at most one pair, the closest pairs taken first."""
    pairs = sorted((abs(d - p), d, p) for d in set(detected) for p in planted if abs(d - p) <= tolerance)
    used_d: set[int] = set()
    used_p: set[int] = set()
    matched = []
    for _, d, p in pairs:
        if d not in used_d and p not in used_p:
            used_d.add(d)
            used_p.add(p)
            matched.append((d, p))
    return matched


def outcome(truth: dict[str, Any], detected: Sequence[int]) -> dict[str, Any]:
    """One series: its planted changes missed, its false points and, for a drift, the points in its ramp."""
    points = sorted(set(detected))
    pairs = match(points, truth["changes"])
    matched = {d for d, _ in pairs}
    result = {"name": truth["name"], "family": truth["family"], "length": truth["length"],
              "planted": truth["changes"], "detected": points, "found": sorted(p for _, p in pairs),
              "missed": sorted(set(truth["changes"]) - {p for _, p in pairs}),
              "false": [d for d in points if d not in matched]}
    if truth["ramp"]:
        start, end = truth["ramp"]
        result["in_ramp"] = [d for d in points if start - TOLERANCE <= d <= end + TOLERANCE]
        result["false"] = [d for d in points if d not in result["in_ramp"]]
    return result


def summary(truths: Sequence[dict[str, Any]], found: dict[str, list[int]]) -> dict[str, Any]:
    """The issue-35 figures of one detector on the whole set."""
    results = [outcome(t, found.get(t["name"], [])) for t in truths]
    scored = [r for r in results if r["family"] != "drift"]
    planted = sum(len(r["planted"]) for r in scored)
    detected = sum(len(r["detected"]) for r in scored)
    true_points = sum(len(r["found"]) for r in scored)

    def family(*names: str) -> list[dict[str, Any]]:
        return [r for r in results if r["family"] in names]

    def false_points(*names: str) -> int:
        return sum(len(r["false"]) for r in family(*names))

    reverted, drifts = family("reverted"), family("drift")
    by_family = {}
    for name in dict.fromkeys(r["family"] for r in results):
        rows = family(name)
        by_family[name] = {"series": len(rows), "planted": sum(len(r["planted"]) for r in rows),
                           "found": sum(len(r["found"]) for r in rows), "false": false_points(name)}
    return {
        "planted": planted, "detected": detected, "true_points": true_points,
        "recall": true_points / planted, "precision": true_points / detected if detected else 1.0,
        "flat_series": len(family(*FLAT)), "false_per_100_flat": 100 * false_points(*FLAT) / len(family(*FLAT)),
        "quiet_series": len(family(*QUIET_TIMING)),
        "false_per_100_quiet": 100 * false_points(*QUIET_TIMING) / len(family(*QUIET_TIMING)),
        "flicker_false": false_points("counter_flicker"),
        "flicker_series_with_false": sum(bool(r["false"]) for r in family("counter_flicker")),
        "constant_false": false_points("counter_constant"),
        "reverted_edges": sum(len(r["found"]) for r in reverted), "reverted_planted": 2 * len(reverted),
        "reverted_both": sum(len(r["found"]) == 2 for r in reverted),
        "drift_flagged": sum(bool(r["in_ramp"]) for r in drifts), "drift_series": len(drifts),
        "drift_points_in_ramp": sum(len(r["in_ramp"]) for r in drifts), "drift_false": false_points("drift"),
        "by_family": by_family,
        "errors": [r for r in results if r["missed"] or r["false"]],
    }


ROWS = (
    ("recall (planted changes found)", lambda s: f"{s['recall']:.3f} ({s['true_points']}/{s['planted']})"),
    ("precision", lambda s: f"{s['precision']:.3f} ({s['true_points']}/{s['detected']})"),
    ("false points per 100 flat series", lambda s: f"{s['false_per_100_flat']:.1f} (of {s['flat_series']})"),
    ("  incl. bimodal and outlier flats", lambda s: f"{s['false_per_100_quiet']:.1f} (of {s['quiet_series']})"),
    ("false points, flickering counters", lambda s: f"{s['flicker_false']} ({s['flicker_series_with_false']} series)"),
    ("false points, constant counters", lambda s: str(s["constant_false"])),
    ("reverted edges found", lambda s: f"{s['reverted_edges']}/{s['reverted_planted']} (both: {s['reverted_both']})"),
    ("drift: ramps flagged", lambda s: f"{s['drift_flagged']}/{s['drift_series']} ({s['drift_points_in_ramp']} pts)"),
    ("drift: points outside the ramp", lambda s: str(s["drift_false"])),
)


def table(summaries: dict[str, dict[str, Any]]) -> str:
    """A Markdown table: one column per detector."""
    names = list(summaries)
    lines = ["| | " + " | ".join(names) + " |", "|---|" + "---|" * len(names)]
    lines += [f"| {label} | " + " | ".join(cell(summaries[n]) for n in names) + " |" for label, cell in ROWS]
    families = list(next(iter(summaries.values()))["by_family"])
    lines += ["", "found/planted (false points) per family:", "",
              "| family | series | " + " | ".join(names) + " |", "|---|---|" + "---|" * len(names)]
    for fam in families:
        cells = [summaries[n]["by_family"][fam] for n in names]
        lines.append(f"| {fam} | {cells[0]['series']} | "
                     + " | ".join(f"{c['found']}/{c['planted']} ({c['false']})" for c in cells) + " |")
    return "\n".join(lines)
