"""The figures ``tests/gpu/device_session.sh`` measures, read out of what its steps wrote: one JSON file a step.

    python tests/gpu/device_checks.py nvml OUT.json [--load SECONDS]     NVML: clocks, throttle reasons, idle and busy
    python tests/gpu/device_checks.py passes OUT.json DIR...             ncu's replay passes, from the ncu.log files
    python tests/gpu/device_checks.py code-ids OUT.json REPORT...         each kernel's code_id per .ncu-rep
    python tests/gpu/device_checks.py dram OUT.json REPORT...             derived.dram_bytes_per_s against ncu's own rate
    python tests/gpu/device_checks.py tensor OUT.json QUERY [REPORT]      which tensor counter names the device has
    python tests/gpu/device_checks.py session OUT.json REPORT...          a session report's verdict and its regressions
    python tests/gpu/device_checks.py overhead OUT.json FOLDER            capture_timeline.py's medians, per tracer
    python tests/gpu/device_checks.py tensor-names CC [--listed QUERY]    perfgate's tensor counters for CC (9.0)
    python tests/gpu/device_checks.py summary WORK OUT.json               every step's figures and exits in one file

Each figure is read with perfgate's own readers where perfgate computes it (``read_table``, ``with_derived``), and
from ncu's report as ncu wrote it where the figure is ncu's. No check here passes or fails a step: the session's
lead reads the figures (``tests/gpu/README.md`` says what each step expects). Needs the repository on sys.path.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import lzma
import re
import statistics
import sys
import threading
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

PASSES = re.compile(r'==PROF== Profiling "(?P<kernel>[^"]+)".* - (?P<passes>\d+) pass')
DRAM_RATE = "dram__bytes.sum.per_second"


def _write(path: str, document: Any) -> None:
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(json.dumps(document, indent=1, sort_keys=True, default=str) + "\n", encoding="utf-8")
    print(json.dumps(document, sort_keys=True, default=str)[:2000])


def _launch_rows(report: str, code: bool = False, derived: tuple[str, ...] = ()) -> tuple[list[dict[str, Any]], Any]:
    """Per launch of a report: kernel, region, grid, block and its metrics' values, read by perfgate."""
    from perfgate.collect import read_table
    from perfgate.prepare import with_derived

    measurement = read_table(report, code=code)
    if derived:
        measurement = with_derived(measurement, derived)
    table = measurement.table
    launches: dict[int, dict[str, Any]] = {}
    for at in range(len(table)):
        launch = int(table["launch"][at])
        row = launches.setdefault(launch, {"launch": launch, "kind": table["kind"][at], "kernel": table["kernel"][at],
                                           "region": table["region"][at], "grid": table["grid"][at],
                                           "block": table["block"][at], "metrics": {}})
        row["metrics"][table["metric"][at]] = float(table["value"][at])
    return [launches[k] for k in sorted(launches) if launches[k]["kind"] == "kernel"], measurement


def nvml(options: argparse.Namespace) -> None:
    """Clocks, temperature, power and the clock-event (throttle) reasons NVML gives, idle and under a matmul load."""
    import pynvml

    pynvml.nvmlInit()
    handle = pynvml.nvmlDeviceGetHandleByIndex(0)
    prefixes = ("nvmlClocksEventReason", "nvmlClocksThrottleReason")
    bits = {name: getattr(pynvml, name) for name in dir(pynvml) if name.startswith(prefixes)
            and isinstance(getattr(pynvml, name), int) and not name.endswith(("All", "None"))}
    reasons_of = getattr(pynvml, "nvmlDeviceGetCurrentClocksEventReasons", None) or \
        pynvml.nvmlDeviceGetCurrentClocksThrottleReasons
    supported_of = getattr(pynvml, "nvmlDeviceGetSupportedClocksEventReasons", None) or \
        pynvml.nvmlDeviceGetSupportedClocksThrottleReasons

    def sample() -> dict[str, Any]:
        mask = int(reasons_of(handle))
        found: dict[str, Any] = {"reasons_mask": mask, "reasons": sorted({n.split("Reason", 1)[1] for n, bit in bits.items()
                                                                          if bit and mask & bit})}
        for name, read in (("sm_mhz", lambda: pynvml.nvmlDeviceGetClockInfo(handle, pynvml.NVML_CLOCK_SM)),
                           ("mem_mhz", lambda: pynvml.nvmlDeviceGetClockInfo(handle, pynvml.NVML_CLOCK_MEM)),
                           ("temp_c", lambda: pynvml.nvmlDeviceGetTemperature(handle, pynvml.NVML_TEMPERATURE_GPU)),
                           ("power_w", lambda: pynvml.nvmlDeviceGetPowerUsage(handle) / 1000)):
            try:
                found[name] = read()
            except pynvml.NVMLError as error:
                found[name] = f"<{error}>"
        return found

    document: dict[str, Any] = {"name": pynvml.nvmlDeviceGetName(handle), "driver": pynvml.nvmlSystemGetDriverVersion(),
                                "nvml_functions": [f.__name__ for f in (reasons_of, supported_of)],
                                "supported_mask": int(supported_of(handle)), "idle": sample()}
    document["supported"] = sorted({n.split("Reason", 1)[1] for n, bit in bits.items()
                                    if bit and document["supported_mask"] & bit})
    if options.load > 0:
        import torch

        from perfgate.plugin.clock_events import watched_clocks

        busy: list[dict[str, Any]] = []
        done = threading.Event()

        def watch() -> None:
            while not done.wait(0.25):
                busy.append(sample())

        a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
        watcher = threading.Thread(target=watch)
        watcher.start()
        end = time.monotonic() + options.load
        with watched_clocks(None, "the load") as clocks:  # what the plugin's note would say of this run
            while time.monotonic() < end:
                for _ in range(20):
                    a @ a
                torch.cuda.synchronize()
        done.set()
        watcher.join()
        document["perfgate_note"] = clocks.note
        document["busy"] = busy
        document["busy_reasons"] = sorted({r for s in busy for r in s["reasons"]})
    _write(options.out, document)


def passes(options: argparse.Namespace) -> None:
    """Replay passes per profiled launch, from each distinct ncu.log under the folders (a log copied per test of a
    shared child counts once)."""
    seen: set[str] = set()
    per_kernel: dict[str, list[int]] = defaultdict(list)
    for folder in options.paths:
        for log in sorted(Path(folder).rglob("ncu.log")):
            text = log.read_text(encoding="utf-8", errors="replace")
            digest = hashlib.sha256(text.encode()).hexdigest()
            if digest in seen:
                continue
            seen.add(digest)
            for match in PASSES.finditer(text):
                per_kernel[match["kernel"]].append(int(match["passes"]))
    counts = [n for values in per_kernel.values() for n in values]
    _write(options.out, {"logs": len(seen), "launches": len(counts), "passes": sum(counts),
                         "passes_per_launch": sorted(set(counts)),
                         "per_kernel": {k: {"launches": len(v), "passes": sorted(set(v))} for k, v in per_kernel.items()}})


def code_ids(options: argparse.Namespace) -> None:
    """Each kernel's code_id in each report, and whether every report gives a kernel one code_id."""
    per_report: dict[str, dict[str, list[str]]] = {}
    for report in options.paths:
        rows, measurement = _launch_rows(report, code=True)
        known = measurement.code or {}
        ids: dict[str, set[str]] = defaultdict(set)
        for row in rows:
            code = known.get(row["launch"])
            ids[row["kernel"]].add(code.code_id if code is not None else "<none>")
        per_report[report] = {kernel: sorted(found) for kernel, found in ids.items()}
    kernels = sorted({k for ids in per_report.values() for k in ids})
    across = {k: sorted({i for ids in per_report.values() for i in ids.get(k, [])}) for k in kernels}
    kernels_of: dict[str, set[str]] = defaultdict(set)  # a rename shows as two kernels under one code_id
    for kernel, found in across.items():
        for code_id in found:
            kernels_of[code_id].add(kernel)
    _write(options.out, {"reports": per_report, "code_ids_per_kernel": across,
                         "same_in_every_report": {k: len(v) == 1 for k, v in across.items()},
                         "kernels_per_code_id": {i: sorted(k) for i, k in kernels_of.items()}})


def dram(options: argparse.Namespace) -> None:
    """Per kernel launch: perfgate's derived.dram_bytes_per_s (read and written bytes over the duration) and
    ncu's own dram__bytes.sum.per_second where the report holds it, and their ratio."""
    found = []
    for report in options.paths:
        rows, _ = _launch_rows(report, derived=("derived.dram_bytes_per_s",))
        for row in rows:
            metrics = row["metrics"]
            derived, ncu = metrics.get("derived.dram_bytes_per_s"), metrics.get(DRAM_RATE)
            found.append({"report": report, "kernel": row["kernel"], "derived_bytes_per_s": derived,
                          "ncu_bytes_per_s": ncu, "ratio": derived / ncu if derived and ncu else None,
                          "read": metrics.get("dram__bytes_read.sum"), "write": metrics.get("dram__bytes_write.sum"),
                          "duration_ns": metrics.get("gpu__time_duration.sum"),
                          "ncu_pct_of_peak": metrics.get("dram__throughput.avg.pct_of_peak_sustained_elapsed")})
    per_kernel: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for launch in found:
        for side in ("derived_bytes_per_s", "ncu_bytes_per_s"):
            if launch[side]:
                per_kernel[launch["kernel"]][side].append(launch[side])
    # Across reports: perfgate's rate from one run's counts (the plugin's, +roofline) against ncu's own from another.
    across = {kernel: {"derived_median": statistics.median(sides["derived_bytes_per_s"]),
                       "ncu_median": statistics.median(sides["ncu_bytes_per_s"]),
                       "ratio": statistics.median(sides["derived_bytes_per_s"]) / statistics.median(sides["ncu_bytes_per_s"])}
              for kernel, sides in per_kernel.items() if sides["derived_bytes_per_s"] and sides["ncu_bytes_per_s"]}
    _write(options.out, {"launches": found, "per_kernel": across})


def tensor(options: argparse.Namespace) -> None:
    """Which of perfgate's tensor aggregate names (``perfgate.tensor_counters``) the device's ncu lists
    (``ncu --query-metrics``), every ``sm__ops_path_tensor_src_*`` name it lists, and the values a report of a
    tensor-core kernel holds for them."""
    from perfgate.tensor_counters import TENSOR_AGGREGATES, tensor_counter

    text = Path(options.query).read_text(encoding="utf-8", errors="replace")
    listed = sorted(set(re.findall(r"\bsm__ops_path_tensor_src_\w+", text)))
    document: dict[str, Any] = {"listed": listed, "by_capability": {}}
    for capability, names in TENSOR_AGGREGATES.items():
        bases = [tensor_counter(name, "") for name in names]
        document["by_capability"][capability] = {"present": [b for b in bases if b in listed],
                                                 "missing": [b for b in bases if b not in listed]}
    if options.report:
        from perfgate.collect import read_table

        table = read_table(options.report).table
        values: dict[str, list[float]] = defaultdict(list)
        for at in range(len(table)):
            if table["metric"][at].startswith("sm__ops_path_tensor_"):
                values[table["metric"][at]].append(float(table["value"][at]))
        document["report_values"] = {k: v for k, v in sorted(values.items())}
    _write(options.out, document)


def session(options: argparse.Namespace) -> None:
    """A session report's verdict, summary and the rows that regressed or improved."""
    from perfgate.report import result_rows

    found = {}
    for path in options.paths:
        raw = Path(path).read_bytes()
        report = json.loads(lzma.decompress(raw) if path.endswith(".xz") else raw)
        moved = [{k: r[k] for k in ("status", "kind", "kernel", "metric", "baseline", "current")}
                 for r in result_rows(report) if r["status"] in ("regression", "improvement", "inconclusive")]
        found[path] = {"verdict": report.get("verdict"), "summary": report.get("summary"), "moved": moved[:40],
                       "notes": [n for n in report.get("notes", []) if "region" in n][:20]}
    _write(options.out, found)


def overhead(options: argparse.Namespace) -> None:
    """Per workload: each tracer's median step time (the median of its runs' medians; two runs: their mean) and its
    ratio to ``none``."""
    medians: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for path in sorted(Path(options.folder).glob("*.summary.json")):
        found = json.loads(path.read_text(encoding="utf-8"))
        tracer = found["tracer"] + ("-outside" if found.get("outside") else "")
        medians[found["workload"]][tracer].append(statistics.median(found["wall_s"]) * 1e6)
    document: dict[str, Any] = {}
    for workload, tracers in medians.items():
        middle = {t: statistics.median(v) for t, v in tracers.items()}
        base = middle.get("none")
        document[workload] = {"median_step_us": middle, "runs_us": {t: v for t, v in tracers.items()},
                              "ratio_to_none": {t: m / base for t, m in middle.items() if base and t != "none"}}
    _write(options.out, document)


def tensor_names(options: argparse.Namespace) -> None:
    """perfgate's tensor aggregate counters for one compute capability, as ncu's ``--metrics`` takes them."""
    from perfgate.tensor_counters import TENSOR_AGGREGATES, tensor_counter

    names = [tensor_counter(name) for name in TENSOR_AGGREGATES.get(options.capability, ())]
    if options.listed:  # only those ncu --query-metrics listed
        listed = set(re.findall(r"\bsm__ops_path_tensor_src_\w+", Path(options.listed).read_text(errors="replace")))
        names = [name for name in names if name.removesuffix(".sum") in listed]
    print(",".join(names))


def summary(options: argparse.Namespace) -> None:
    """Every figures/*.json, the steps (exits.txt: step, status, seconds) and the pytest sessions (sessions.txt:
    name, source, exit status) in one document."""
    work = Path(options.work)
    document: dict[str, Any] = {"steps": [], "figures": {}}
    exits = work / "exits.txt"
    if exits.exists():
        for line in exits.read_text(encoding="utf-8").splitlines():
            name, status, seconds = (line.split() + ["", "", ""])[:3]
            document["steps"].append({"step": name, "status": status, "seconds": seconds})
    sessions = work / "sessions.txt"
    if sessions.exists():
        document["sessions"] = [dict(zip(("session", "source", "exit"), line.split()))
                                for line in sessions.read_text(encoding="utf-8").splitlines()]
    for figure in sorted((work / "figures").glob("*.json")):
        try:
            document["figures"][figure.stem] = json.loads(figure.read_text(encoding="utf-8"))
        except ValueError as error:
            document["figures"][figure.stem] = f"<unreadable: {error}>"
    _write(options.out, document)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True)
    command = commands.add_parser("nvml")
    command.add_argument("out")
    command.add_argument("--load", type=float, default=0.0)
    for name in ("passes", "code-ids", "dram", "session"):
        command = commands.add_parser(name)
        command.add_argument("out")
        command.add_argument("paths", nargs="+")
    command = commands.add_parser("tensor")
    command.add_argument("out")
    command.add_argument("query")
    command.add_argument("report", nargs="?")
    command = commands.add_parser("overhead")
    command.add_argument("out")
    command.add_argument("folder")
    command = commands.add_parser("tensor-names")
    command.add_argument("capability")
    command.add_argument("--listed", metavar="QUERY", help="keep the names this ncu --query-metrics output lists")
    command = commands.add_parser("summary")
    command.add_argument("work")
    command.add_argument("out")
    options = parser.parse_args()
    handlers = {"nvml": nvml, "passes": passes, "code-ids": code_ids, "dram": dram, "tensor": tensor,
                "session": session, "overhead": overhead, "tensor-names": tensor_names, "summary": summary}
    handlers[options.command](options)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
