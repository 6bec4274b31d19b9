"""Extracts the measured residual pools of the twelfth blind set into ``residuals.json`` (README.md: "The noise
model"). Run once by the set's author; the generator reads only ``residuals.json``, never the sources::

    PYTHONPATH=. python tests/blind_history12/extract.py [--corpus ../shared/corpus]

Sources: perfgate's own H100/H200 session reports (repeated gate runs of unchanged code against one baseline) and
two third-party traces of ``../shared/corpus/timeline`` (many launches of the same kernel and many repeats of the
same host range in one process). Every residual is relative: a value over the median of its own group, less 1.
"""

from __future__ import annotations

import argparse
import gzip
import json
import lzma
import re
import sqlite3
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any, Iterator

import numpy as np

HERE = Path(__file__).resolve().parent
DATA = HERE.parents[1] / "tests" / "data"
POOLS = HERE / "residuals.json"

# gate runs of unchanged code, each against the baseline its update session wrote: the baseline and the gates
# are 6 (H100) or 4 (H200) runs of the same code, an even count, so no residual is the group's median itself
SESSIONS = {
    "h100": "h100/sessions/gate*.json.xz",
    "h100-default-metrics": "h100/default-metrics/sessions/gate*.json.xz",
    "h200": "h200/sessions/gate*.json.xz",
    "h200-both": "h200/timeline-live/sessions/both-gate*.json.xz",
    "h200-timeline": "h200/timeline-live/sessions/tl-gate*.json.xz",
}
Key = tuple[str, str, str, str, int, str]  # test, kind, kernel, region, ordinal, metric


def session_rows(path: Path) -> Iterator[tuple[Key, float | None, float | None]]:
    """(key, baseline, current) per compared value of a session report, in either report layout."""
    report = json.load(lzma.open(path))
    results = report["results"]
    if isinstance(results, list):
        for r in results:
            yield (r["test"], r["kind"], r["kernel"], r["region"], r["ordinal"], r["metric"]), r["baseline"], \
                r["current"]
        return
    launches, metrics = report["launches"], report["metrics"]["metric"]
    for i, launch in enumerate(results["launch"]):
        key = (launches["test"][launch], launches["kind"][launch], launches["kernel"][launch],
               launches["region"][launch], launches["ordinal"][launch], metrics[results["metric"][i]])
        yield key, results["baseline"][i], results["current"][i]


def repeated_values(pattern: str) -> dict[Key, list[float]]:
    """Each compared value's baseline and its value in every gate run of the pattern's sessions."""
    runs: dict[Key, list[float]] = defaultdict(list)
    baseline: dict[Key, float | None] = {}
    for path in sorted(DATA.glob(pattern)):
        for key, base, current in session_rows(path):
            baseline[key] = base
            if current is not None:
                runs[key].append(float(current))
    return {key: [float(b)] + runs[key] for key, b in baseline.items() if b is not None}


def run_to_run(metric: str, kind: str, groups: tuple[str, ...]) -> tuple[list[float], list[str]]:
    """Residuals of one metric over repeated runs: each value over its key's median, less 1."""
    pool: list[float] = []
    used = []
    for group in groups:
        for key, values in repeated_values(SESSIONS[group]).items():
            if key[5] != metric or key[1] != kind or len(values) % 2 or np.median(values) <= 0:
                continue
            pool += (np.asarray(values) / np.median(values) - 1).tolist()
            used.append(group)
    return pool, sorted(set(used))


def flicker_bytes() -> list[float]:
    """The DRAM bytes written by the MLP's five small ``reduce_kernel`` launches, as measured (bytes): every
    baseline and gate value of the default-metric sessions."""
    values: list[float] = []
    for group in ("h100-default-metrics", "h200", "h200-both"):
        for key, runs in repeated_values(SESSIONS[group]).items():
            if key[2] == "reduce_kernel" and key[5] == "dram__bytes_write.sum" and key[1] == "kernel":
                values += runs
    return values


def ordered(durations: list[float]) -> list[float]:
    return (np.asarray(durations, dtype=float) / np.median(durations) - 1).tolist()


def launch_sequences(corpus: Path) -> dict[str, list[float]]:
    """Launch-to-launch residuals, in launch order, of kernels launched hundreds of times with one configuration."""
    found: dict[str, list[float]] = {}
    nsys = corpus / "timeline/llama3-sim-rtx4060ti/real_inference_simulation.sqlite"
    with sqlite3.connect(nsys) as db:
        rows = db.execute("SELECT s.value, k.end - k.start FROM CUPTI_ACTIVITY_KIND_KERNEL k JOIN StringIds s "
                          "ON s.id = k.shortName ORDER BY k.start").fetchall()
    by_name: dict[str, list[float]] = defaultdict(list)
    for name, duration in rows:
        by_name[name].append(float(duration))
    for name in ("ampere_sgemm_128x64_nn", "distribution_elementwise_grid_stride_kernel"):
        found[f"llama3-sim-rtx4060ti:{name}"] = ordered(by_name[name])
    trace = json.load(gzip.open(corpus / "timeline/param-rtx2080ti/resnet_kineto.json.gz"))
    kernels = sorted((e for e in trace["traceEvents"] if e.get("cat") == "kernel" and e.get("ph") == "X"),
                     key=lambda e: e["ts"])
    for short in ("winogradForwardData4x4", "winogradForwardOutput4x4"):
        # one launch configuration: the same kernel name runs the network's other layer shapes too
        launches = [e for e in kernels if f"winograd_nonfused::{short}<" in e["name"]]
        shapes = Counter(str((e["args"].get("grid"), e["args"].get("block"))) for e in launches)
        shape = shapes.most_common(1)[0][0]
        durations = [float(e["dur"]) for e in launches if str((e["args"].get("grid"), e["args"].get("block"))) == shape]
        found[f"param-rtx2080ti:{short}{shape}"] = ordered(durations)
    return found


def host_sequences(corpus: Path) -> dict[str, list[float]]:
    """Host-side wall-time residuals in time order: NVTX ranges repeated hundreds of times in one process (the
    first token's ranges left out: a process's warm-up) and the H200 timeline captures' measured steps, untraced
    or under torch.profiler (under a CUPTI tracer the first measured step carries the tracer's start-up)."""
    found: dict[str, list[float]] = {}
    nsys = corpus / "timeline/llama3-sim-rtx4060ti/real_inference_simulation.sqlite"
    with sqlite3.connect(nsys) as db:
        rows = db.execute("SELECT coalesce(e.text, s.value), e.end - e.start FROM NVTX_EVENTS e LEFT JOIN StringIds "
                          "s ON s.id = e.textId WHERE e.end IS NOT NULL ORDER BY e.start").fetchall()
    ranges: dict[str, list[float]] = defaultdict(list)
    for label, duration in rows:
        shape = re.fullmatch(r"(layer_\d+_token_|ensure_layer_\d+_weights)(\d*)", label or "")
        if shape and not (shape.group(1).startswith("layer_") and shape.group(2) == "0"):
            ranges[re.sub(r"\d+", "N", shape.group(1))].append(float(duration))
    for label, durations in sorted(ranges.items()):
        found[f"llama3-sim-rtx4060ti:{label}"] = ordered(durations)
    for path in sorted((DATA / "h200").glob("timeline*/**/*.summary.json")):
        if json.loads(path.read_text(encoding="utf-8"))["tracer"] not in ("none", "torch"):
            continue
        steps = json.loads(path.read_text(encoding="utf-8"))["wall_s"]
        found[f"h200:{path.relative_to(DATA / 'h200')}"] = ordered(steps)
    return found


def noise_scale(logs: list[float]) -> float:
    """The spread of a pool of log residuals as the normal sigma its 5th and 95th percentiles would give: unlike
    the MAD it is not zero where most values tie (exact counters) and it sees one tail in twenty."""
    low, high = np.quantile(np.asarray(logs), [0.05, 0.95])
    return float((high - low) / 3.29)


def log_scale(relative: list[float]) -> float:
    return noise_scale(np.log1p(np.asarray(relative)).tolist())


def rounded(values: list[float]) -> list[float]:
    return [float(f"{v:.6g}") for v in values]


def pools(corpus: Path) -> dict[str, Any]:
    ncu, ncu_from = run_to_run("gpu__time_duration.sum", "kernel", ("h100", "h100-default-metrics", "h200",
                                                                     "h200-both"))
    cupti, cupti_from = run_to_run("timeline.kernel_duration", "kernel", ("h200-timeline", "h200-both"))
    dram, dram_from = run_to_run("dram__bytes_read.sum", "kernel", ("h100", "h100-default-metrics", "h200",
                                                                   "h200-both"))
    inst, inst_from = run_to_run("smsp__inst_executed.sum", "kernel", ("h100", "h100-default-metrics", "h200",
                                                                      "h200-both"))
    idle, idle_from = run_to_run("timeline.gpu_idle", "region", ("h200-timeline", "h200-both"))
    iid = {"ncu_run": (ncu, ncu_from), "cupti_run": (cupti, cupti_from), "dram_read_run": (dram, dram_from),
           "inst_run": (inst, inst_from), "gpu_idle_run": (idle, idle_from)}
    document: dict[str, Any] = {"iid": {}, "sequences": {}}
    for name, (pool, groups) in iid.items():
        document["iid"][name] = {"sessions": groups, "scale": log_scale(pool), "values": rounded(pool)}
    flicker = flicker_bytes()
    document["iid"]["flicker_bytes"] = {"sessions": ["h100-default-metrics", "h200", "h200-both"],
                                        "scale": noise_scale(np.log(flicker).tolist()), "values": flicker}
    for name, sequences in (("launch_seq", launch_sequences(corpus)), ("host_seq", host_sequences(corpus))):
        joined = [v for s in sequences.values() for v in s]
        document["sequences"][name] = {"scale": log_scale(joined),
                                       "runs": {k: rounded(v) for k, v in sequences.items()}}
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
