"""Blind set 2: expected verdicts sized from this set's own noise model and the documented default thresholds.

Duration: 5%+2000 ns, the change must exceed both (docs/configuration.md, docs/matching.md "Thresholds"). A
kernel launched 6 or more times a side is judged on its group's shift and interval; its floor is its measured
jitter over sqrt(n) (docs/matching.md "Floors come from measured noise"), negligible here. A single launch past
the relative part but within the 2 us floor is not failed but must say so in a note (same page).

Rules (z: distance from the 5% limit in standard errors of the measured change under b2_model's noise):
  group (n >= 6): fail when z >= 3.5, not_silent when z >= 1.5, pass when z <= -3, else any;
  small group (2-5): fail when z >= 3 and the shift clears 2000/sqrt(n) ns by 3 standard errors;
  single launch: fail when it clears both parts by 3 standard errors; not_silent when it clears the relative
  part by 2.5 and stays 3 below the floor (a floor note is documented).
  A real shift is expected to pass only when it lies 3 standard errors under the 5%; unchanged code always.
"""
from __future__ import annotations

import math

from b2_model import RUN_CLOCK_SD, launch_sd

LIMIT = 0.05
FLOOR_NS = 2000.0


def change_se(t_ns: float, n: int) -> float:
    """Standard error of the measured relative change of a kernel of t ns launched n times a side."""
    per = 2.0 * launch_sd(t_ns) ** 2 * (math.pi / 3.0 if n > 1 else 1.0) / n
    return math.sqrt(per + 2.0 * RUN_CLOCK_SD ** 2)


def duration_expect(t_ns: float, n: int, factor: float) -> str:
    """The expected verdict for one kernel of t ns launched n times a side whose duration changed x factor."""
    shift = factor - 1.0
    se = change_se(t_ns, n)
    z = (shift - LIMIT) / se
    if shift <= 0.0 or z <= -3.0:
        return "pass"
    if n >= 6:
        return "fail" if z >= 3.5 else "not_silent" if z >= 1.5 else "any"
    floor = FLOOR_NS / math.sqrt(n)
    z_abs = (shift * t_ns - floor) / (se * t_ns)
    if z_abs <= -3.0:
        return "not_silent" if n == 1 and z >= 2.5 else "any"
    if z >= 3.0 and z_abs >= 3.0:
        return "fail"
    return "any"
