"""The families of the tenth blind set (README.md: "Families"): how many series, what they measure, on which
pools, and the changes planted in them (each as the commit from which the level is multiplied by a ratio)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tests.blind_history10.model import DRIVER_POOL, NOISIER_POOL, POOLS

Changes = list[tuple[int, float]]  # (commit of the first run at the new level, new level / old level)

METRIC = {"ncu": "gpu__time_duration.sum", "event": "timeline.kernel_duration", "host": "time.min",
          "idle": "timeline.gpu_idle_pct", "dram": "dram__bytes_read.sum", "counter": "smsp__inst_executed.sum",
          "flicker": "smsp__inst_executed.sum"}
SIGMA = {"ncu": (0.003, 0.008), "event": (0.008, 0.02), "host": (0.02, 0.045), "idle": (0.06, 0.14),
         "dram": (0.0005, 0.004), "counter": (0.0, 0.0), "flicker": (0.0, 0.0)}
# the smallest relative step a person sees at once on the plot of each kind (README.md: "What counts as a change")
SMALLEST = {"ncu": 0.025, "event": 0.05, "host": 0.12, "idle": 0.35, "dram": 0.015, "counter": 0.003,
            "flicker": 0.04}
EDGE = 15  # a planted change has at least this many values of the series before it and from it on
OTHER_POOLS = tuple(i for i in range(len(POOLS)) if i not in (DRIVER_POOL, NOISIER_POOL))
QUIET_POOLS = tuple(i for i in range(len(POOLS)) if i != DRIVER_POOL)


@dataclass(frozen=True)
class Family:
    name: str
    count: int
    kinds: tuple[str, ...]
    pools: tuple[int, ...]
    plant: str = ""  # "", "up", "down", "two", "revert_short", "revert_long", "driver"
    nightly: bool = False  # one run a night: a point every few commits
    creep: bool = False  # a slow drift over many commits (unscored)


FAMILIES = (
    Family("flat_ncu", 40, ("ncu",), QUIET_POOLS),
    Family("flat_event", 40, ("event",), OTHER_POOLS),
    Family("flat_host", 35, ("host",), OTHER_POOLS),
    Family("flat_counter", 25, ("counter",), QUIET_POOLS),
    Family("flat_flicker", 25, ("flicker",), QUIET_POOLS),
    Family("flat_dram", 25, ("dram",), QUIET_POOLS),
    Family("flat_idle", 25, ("idle",), QUIET_POOLS),
    Family("flat_nightly", 20, ("ncu", "event"), OTHER_POOLS, nightly=True),
    Family("flat_noisier", 30, ("event", "host"), (NOISIER_POOL,)),
    Family("step_ncu", 30, ("ncu",), QUIET_POOLS, "up"),
    Family("step_event", 30, ("event",), OTHER_POOLS, "up"),
    Family("step_host", 20, ("host",), OTHER_POOLS, "up"),
    Family("step_counter", 20, ("counter",), QUIET_POOLS, "up"),
    Family("step_flicker", 20, ("flicker",), QUIET_POOLS, "up"),
    Family("step_dram", 15, ("dram",), QUIET_POOLS, "up"),
    Family("step_idle", 15, ("idle",), QUIET_POOLS, "up"),
    Family("improvement", 20, ("ncu", "event", "host", "dram"), OTHER_POOLS, "down"),
    Family("two_steps", 20, ("ncu", "event", "counter"), OTHER_POOLS, "two"),
    Family("reverted_short", 20, ("ncu", "event", "counter", "dram"), OTHER_POOLS, "revert_short"),
    Family("reverted_long", 15, ("ncu", "event", "host", "counter"), OTHER_POOLS, "revert_long"),
    Family("infra_update", 20, ("ncu", "event"), (DRIVER_POOL,), "driver"),
    Family("step_nightly", 10, ("ncu", "event"), OTHER_POOLS, "up", nightly=True),
    Family("creep", 15, ("ncu", "event"), OTHER_POOLS, creep=True),
)
RULES = {"flicker_families": ["flat_flicker", "step_flicker"], "reverted_families": ["reverted_short", "reverted_long"],
         "unscored_families": ["creep"]}


def step(r: np.random.Generator, kind: str, sigma: float) -> float:
    """A relative step from the smallest a person sees at once on the plot (and six noise units) to eight times
    that, log-uniform (real regressions come in every size; most are small), at most a doubling."""
    return min(max(SMALLEST[kind], 6 * sigma) * float(np.exp(r.uniform(0.0, np.log(8.0)))), 1.0)


def pick(r: np.random.Generator, commits: np.ndarray, low: int, high: int) -> tuple[int, int]:
    """An index of the series' values with ``low`` values before it and ``high`` from it on, and its commit."""
    i = int(r.integers(low, len(commits) - high + 1))
    return i, int(commits[i])


def plant(family: Family, kind: str, pool: int, r: np.random.Generator, commits: np.ndarray,
          sigma: float) -> Changes:
    """The changes planted in one series of ``family``."""
    if family.plant in ("up", "down"):
        up = family.plant == "up"
        big = step(r, kind, sigma)
        return [(pick(r, commits, EDGE, EDGE)[1], 1 + big if up else 1 / (1 + big))]
    if family.plant == "two":
        i, first = pick(r, commits, EDGE, EDGE + 30)
        second = int(commits[int(r.integers(i + 30, len(commits) - EDGE + 1))])
        back = r.random() < 0.4  # the second change partly undoes the first, or adds to it
        later = 1 + step(r, kind, sigma)
        return [(first, 1 + step(r, kind, sigma)), (second, 1 / later if back else later)]
    if family.plant in ("revert_short", "revert_long"):
        hold = int(r.integers(8, 21)) if family.plant == "revert_short" else int(r.integers(40, 101))
        i, first = pick(r, commits, EDGE, EDGE + hold)
        ratio = 1 + step(r, kind, sigma)
        return [(first, ratio), (int(commits[i + hold]), 1 / ratio)]
    if family.plant == "driver":
        update = POOLS[pool].driver_update
        return [(int(commits[commits >= update][0]), 1 + POOLS[pool].driver_factor)]
    return []
