"""The HTML report's region timelines: baseline above current, kernels on their streams, idle gaps shaded.

Inline SVG drawn here, not a charting library: the page's Content-Security-Policy forbids scripts (names in a
report are untrusted, and the page must stay inert when opened from a CI artifact), so a JavaScript chart
could not run in it; the picture needs only rectangles on a shared time axis. The data is the measurements'
``timeline_sketch`` setting (``perfgate.collect.timeline.sketch``), read defensively: it comes from files.
"""

from __future__ import annotations

import math
from typing import Any

from perfgate.limits import parse_json_or_none
from perfgate.render.formatting import html_escape
from perfgate.report import Report

SKETCH_SETTING = "timeline_sketch"
WIDTH, LABEL, LANE, GAP, AXIS = 960, 120, 16, 4, 22
COLOURS = {"own": "#0969da", "other": "#8c959f", "memcpy": "#bf8700", "memset": "#8250df"}
MAX_SKETCH_CHARS = 2_000_000
TIMELINES_BYTES = 500_000  # the figures drawn, for the page's bound; each sketch is in the JSON report's settings


def _regions(settings: Any) -> dict[str, dict[str, Any]]:
    """The sketch's regions, each checked: a wall time and lanes of [start, duration, kind, name, own]."""
    text = settings.get(SKETCH_SETTING) if isinstance(settings, dict) else None
    if not isinstance(text, str) or not text or len(text) > MAX_SKETCH_CHARS:
        return {}
    document = parse_json_or_none(text)
    regions = document.get("regions") if isinstance(document, dict) else None
    found = {}
    for name, region in (regions.items() if isinstance(regions, dict) else ()):
        if not isinstance(region, dict):
            continue
        wall, lanes = region.get("wall"), region.get("lanes")
        if not isinstance(name, str) or not isinstance(wall, (int, float)) or not _number(wall) or wall <= 0 \
                or not isinstance(lanes, dict):
            continue
        kept = {str(lane): [op for op in ops if _op(op)] for lane, ops in lanes.items() if isinstance(ops, list)}
        lead = region.get("lead")
        found[name] = {"wall": float(wall), "lanes": kept, "idle_pct": region.get("idle_pct"),
                       "entries": region.get("entries"),
                       "lead": float(lead) if isinstance(lead, (int, float)) and _number(lead) and 0 < lead <= wall
                       else 0.0}
    return found


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _op(op: Any) -> bool:
    return isinstance(op, list) and len(op) == 5 and _number(op[0]) and _number(op[1]) and op[1] >= 0


def _time(ns: float) -> str:
    return f"{ns / 1e6:.3g} ms" if ns >= 1e6 else f"{ns / 1e3:.3g} µs"


def _idle_gaps(lanes: dict[str, list[list[Any]]], wall: float) -> list[tuple[float, float]]:
    spans = sorted((float(op[0]), float(op[0]) + float(op[1])) for ops in lanes.values() for op in ops)
    gaps, reach = [], 0.0
    for start, end in spans:
        if start > reach:
            gaps.append((reach, start))
        reach = max(reach, end)
    if reach < wall:
        gaps.append((reach, wall))
    return gaps


def _svg(side: str, region: dict[str, Any], scale: float) -> str:
    lanes = region["lanes"]
    plot = WIDTH - LABEL
    height = AXIS + max(len(lanes), 1) * (LANE + GAP)

    def x(ns: float) -> float:
        return LABEL + plot * min(max(ns, 0.0), scale) / scale

    idle = region["idle_pct"]
    lead = region["lead"]
    title = (f"{side}: wall {_time(region['wall'])}" + (f", GPU idle {idle:.1f}%" if _number(idle) else "")
             + (f", host lead {_time(lead)}" if lead >= 0.01 * region["wall"] else ""))
    parts = [f'<svg class="timeline" role="img" width="{WIDTH}" height="{height}" viewBox="0 0 {WIDTH} {height}">',
             f"<title>{html_escape(title)}</title>",
             f'<text x="0" y="14">{html_escape(side)}</text>',
             f'<text x="{LABEL}" y="14">{html_escape(title.split(": ", 1)[1])}</text>']
    top = AXIS
    bottom = height
    for start, end in _idle_gaps(lanes, region["wall"]):
        parts.append(f'<rect class="idle" x="{x(start):.1f}" y="{top - 4}" width="{max(x(end) - x(start), 0.5):.1f}" '
                     f'height="{bottom - top + 4}" fill="#ffd7d5"><title>GPU idle {_time(end - start)}</title></rect>')
    parts.append(f'<line x1="{x(region["wall"]):.1f}" y1="{top - 6}" x2="{x(region["wall"]):.1f}" y2="{bottom}" '
                 'stroke="#cf222e" stroke-dasharray="3,2"/>')
    if lead >= 0.01 * region["wall"]:  # the host's time before the region's first GPU work, marked over the gap
        parts.append(f'<rect class="lead" x="{x(0.0):.1f}" y="{top - 6}" width="{max(x(lead) - x(0.0), 0.5):.1f}" '
                     f'height="3" fill="#8250df"><title>host lead {_time(lead)}</title></rect>')
    for row, (lane, ops) in enumerate(sorted(lanes.items())):
        y = top + row * (LANE + GAP)
        parts.append(f'<text x="4" y="{y + LANE - 4}">{html_escape(lane[:20])}</text>')
        for start, duration, kind, name, own in ops:
            colour = COLOURS.get(str(kind), COLOURS["other"]) if kind != "kernel" else (
                COLOURS["own"] if own else COLOURS["other"])
            parts.append(f'<rect x="{x(start):.1f}" y="{y}" width="{max(x(start + duration) - x(start), 0.6):.1f}" '
                         f'height="{LANE}" fill="{colour}"><title>{html_escape(str(name))} '
                         f'{_time(float(duration))}</title></rect>')
    parts.append("</svg>")
    return "".join(parts)


def timeline_sections(report: Report) -> str:
    """One figure per region with a sketch on either side: baseline above current on one time scale; those that
    fit :data:`TIMELINES_BYTES`, then a line that counts the others."""
    out: list[str] = []
    room, left_out = TIMELINES_BYTES, 0
    for comparison in report["comparisons"]:
        settings = comparison.get("settings") or {}
        base, cur = _regions(settings.get("baseline")), _regions(settings.get("current"))
        names = sorted(dict.fromkeys([*cur, *base]), key=lambda name: (name != "step",))
        for name in names:
            sides = [(side, regions[name]) for side, regions in (("baseline", base), ("current", cur))
                     if name in regions]
            scale = max(region["wall"] for _, region in sides)
            test = comparison.get("test")
            where = f" ({html_escape(str(test))})" if test else ""
            figure = (f'<figure class="region-timeline"><figcaption>region <code>{html_escape(name)}</code>{where}'
                      "</figcaption>" + "<br>".join(_svg(side, region, scale) for side, region in sides)
                      + "</figure>")
            room -= len(figure.encode("utf-8"))
            if room < 0:
                left_out += 1
                continue
            out.append(figure)
    if left_out:
        out.append(f'<p class="meta" id="timelines-left-out">{left_out:,} more region timeline'
                   f'{"s" * (left_out != 1)} not drawn, to keep the page small; the JSON report holds each '
                   "region's sketch.</p>")
    if not out:
        return ""
    legend = ('<p class="meta">Each region\'s median entry, baseline above current on one time scale: its own '
              'kernels <span style="color:#0969da">■</span>, other GPU work in its window '
              '<span style="color:#8c959f">■</span>, copies <span style="color:#bf8700">■</span>, sets '
              '<span style="color:#8250df">■</span>, GPU idle shaded <span style="color:#ffd7d5">■</span>, the host '
              'lead (before its first GPU work) marked <span style="color:#8250df">▬</span>; the dashed line is '
              'the region\'s end.</p>')
    return '<h2 id="timelines">Region timelines</h2>\n' + legend + "\n" + "\n".join(out) + "\n"
