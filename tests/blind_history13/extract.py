"""Extracts the measured pools of the thirteenth blind set into ``residuals.json`` (README.md: "The noise
model"). Run once by the set's author; the generator reads only ``residuals.json``, never the sources::

    PYTHONPATH=. python tests/blind_history13/extract.py [--corpus ../shared/corpus]

The sources and the per-value residuals are set 12's (its ``extract.py``, imported), with three differences:
the kernel-duration residuals are split into a **per-run offset** shared by every kernel of one session and what
is left of each launch; the launch and host-range sequences lose their **warm-up** values; and every pool keeps
its measured ``scale`` from the whole residual, as set 12 measured it.
"""

from __future__ import annotations

import argparse
import json
from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np

from tests.blind_history12 import extract as twelve

HERE = Path(__file__).resolve().parent
POOLS = HERE / "residuals.json"
WARM_UP = 32  # values dropped from the start of every launch or host-range sequence longer than 100
KERNEL_TIMES = {"ncu_run": ("gpu__time_duration.sum", ("h100", "h100-default-metrics", "h200", "h200-both")),
                "cupti_run": ("timeline.kernel_duration", ("h200-timeline", "h200-both"))}


def session_matrix(pattern: str, metric: str) -> list[list[float]]:
    """Per kernel launch of the pattern's sessions, its baseline and its value in every gate run (in session
    order), for launches every gate run measured."""
    paths = sorted(twelve.DATA.glob(pattern))
    baseline: dict[twelve.Key, float] = {}
    runs: dict[twelve.Key, dict[int, float]] = defaultdict(dict)
    for i, path in enumerate(paths):
        for key, base, current in twelve.session_rows(path):
            if key[5] != metric or key[1] != "kernel" or base is None or current is None:
                continue
            baseline[key] = float(base)
            runs[key][i] = float(current)
    return [[baseline[k]] + [runs[k][i] for i in range(len(paths))] for k in sorted(baseline)
            if len(runs[k]) == len(paths) and baseline[k] > 0]


def split_runs(metric: str, groups: tuple[str, ...]) -> tuple[list[float], list[float], float]:
    """(each launch's relative residual less its run's offset, the runs' offsets in log units, the whole
    residuals' scale). A launch's log residual is its value over its launch's median across runs; a run's offset
    is the median of its launches' log residuals (the baseline run counts as a run)."""
    own: list[float] = []
    offsets: list[float] = []
    whole: list[float] = []
    for group in groups:
        logs = np.log(np.asarray(session_matrix(twelve.SESSIONS[group], metric)))
        logs -= np.median(logs, axis=1, keepdims=True)
        offset = np.median(logs, axis=0)
        offsets += offset.tolist()
        whole += logs.ravel().tolist()
        own += np.expm1(logs - offset).ravel().tolist()
    return own, offsets, twelve.noise_scale(whole)


def without_warm_up(sequences: dict[str, list[float]]) -> dict[str, list[float]]:
    """A process's first launches or host ranges run at another level (lazy loading, clocks, caches): left out,
    and each sequence re-centred on the median of what is kept."""
    kept = {}
    for name, values in sequences.items():
        rest = np.log1p(np.asarray(values[WARM_UP:] if len(values) > 100 else values))
        kept[name] = np.expm1(rest - np.median(rest)).tolist()
    return kept


def pools(corpus: Path) -> dict[str, Any]:
    document: dict[str, Any] = {"iid": {}, "sequences": {}, "offsets": {}}
    run_offsets: list[float] = []
    for name, (metric, groups) in KERNEL_TIMES.items():
        own, offsets, scale = split_runs(metric, groups)
        document["iid"][name] = {"sessions": list(groups), "scale": scale, "values": twelve.rounded(own)}
        run_offsets += offsets
    document["offsets"]["kernel_run"] = {"sessions": sorted({g for _, gs in KERNEL_TIMES.values() for g in gs}),
                                         "values": twelve.rounded(run_offsets),
                                         "sd": float(np.std(run_offsets, ddof=1))}
    for name, metric, kind, groups in (
            ("dram_read_run", "dram__bytes_read.sum", "kernel", KERNEL_TIMES["ncu_run"][1]),
            ("inst_run", "smsp__inst_executed.sum", "kernel", KERNEL_TIMES["ncu_run"][1]),
            ("gpu_idle_run", "timeline.gpu_idle", "region", KERNEL_TIMES["cupti_run"][1])):
        pool, used = twelve.run_to_run(metric, kind, groups)
        document["iid"][name] = {"sessions": used, "scale": twelve.log_scale(pool), "values": twelve.rounded(pool)}
    flicker = twelve.flicker_bytes()
    document["iid"]["flicker_bytes"] = {"sessions": ["h100-default-metrics", "h200", "h200-both"],
                                        "scale": twelve.noise_scale(np.log(flicker).tolist()), "values": flicker}
    for name, sequences in (("launch_seq", twelve.launch_sequences(corpus)),
                            ("host_seq", twelve.host_sequences(corpus))):
        kept = without_warm_up(sequences)
        joined = [v for s in kept.values() for v in s]
        document["sequences"][name] = {"scale": twelve.log_scale(joined),
                                       "runs": {k: twelve.rounded(v) for k, v in kept.items()}}
    return document


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--corpus", type=Path, default=HERE.parents[1].parent / "shared" / "corpus")
    args = parser.parse_args()
    corpus = args.corpus if args.corpus.is_dir() else Path("/work/shared/corpus")
    POOLS.write_text(json.dumps(pools(corpus), separators=(",", ":")) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
