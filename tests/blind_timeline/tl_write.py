"""Serialise a Timeline as torch.profiler writes it (recent or older Kineto schema) or as `nsys export --type sqlite`.

Layouts follow ../shared/reference/timeline-and-history.md and the corpus traces' structure (amp-lab-t4 for the
recent schema; sevit-a4000/hta for the older one; nvfuser-h100 for the SQLite tables).
"""
from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

from tl_model import Timeline

PID = 4242
TIDS = {"main": 4242, "bwd": 4301}
BASE_US = 1_765_000_000_000.0   # an epoch-like µs origin, as Kineto writes
GPU = {"id": 0, "name": "NVIDIA A100-SXM4-80GB", "totalGlobalMem": 85_100_000_000, "computeMajor": 8,
       "computeMinor": 0, "maxThreadsPerBlock": 1024, "maxThreadsPerMultiprocessor": 2048, "regsPerBlock": 65536,
       "warpSize": 32, "sharedMemPerBlock": 49152, "numSms": 108, "regsPerMultiprocessor": 65536,
       "sharedMemPerBlockOptin": 166912, "sharedMemPerMultiprocessor": 167936}


def _ts(ns: float, whole: bool) -> float | int:
    us = BASE_US + ns / 1000.0
    return int(round(us)) if whole else round(us, 3)


def _x(cat: str, name: str, pid: Any, tid: Any, start: float, end: float, whole: bool,
       args: dict[str, Any]) -> dict[str, Any]:
    ts = _ts(start, whole)
    te = _ts(end, whole)
    dur = te - ts if whole else round(te - ts, 3)
    return {"ph": "X", "cat": cat, "name": name, "pid": pid, "tid": tid, "ts": ts, "dur": dur, "args": args}


def _range_events(tl: Timeline, old: bool, whole: bool) -> list[dict[str, Any]]:
    out = []
    ext = 0
    for r in tl.ranges:
        ext += 1
        tid = TIDS[r["tid"]]
        args: dict[str, Any] = {"External id": ext, "Ev Idx": ext}
        if r["kind"] in ("step", "range"):
            cat = "Operator" if old else "user_annotation"
            out.append(_x(cat, r["name"], PID, tid, r["start"], r["end"], whole, args))
        elif r["kind"] == "op":
            args.update({"Sequence number": 100 + ext, "Fwd thread id": 0, "Input Dims": [[512, 1024], [1024]],
                         "Input type": ["float", "float"]})
            out.append(_x("Operator" if old else "cpu_op", r["name"], PID, tid, r["start"], r["end"], whole, args))
        elif r["kind"] == "autograd":
            name = r["name"].rstrip("0") if old else r["name"]
            cat = "Operator" if old else "cpu_op"
            out.append(_x(cat, f"autograd::engine::evaluate_function: {name}", PID, tid, r["start"], r["end"],
                          whole, dict(args)))
            inner = dict(args, **{"Sequence number": 50 + ext, "Fwd thread id": 1})
            out.append(_x(cat, name, PID, tid, r["start"] + 500.0, r["end"] - 500.0, whole, inner))
    return out


def chrome(tl: Timeline, path: Path, schema: str = "recent", whole_us: bool = False) -> None:
    """schema 'recent' (lower-case categories, float µs) or 'old' (capitalised, `Operator` ranges, int µs)."""
    old = schema == "old"
    whole = whole_us or old
    ev = _range_events(tl, old, whole)
    gpu_by_corr = {g["corr"]: g for g in tl.gpu}
    flow_cat, flow_name = ("async_cpu_to_gpu", "async_gpu") if old else ("ac2g", "ac2g")
    for c in tl.calls:
        cbid = {"cudaLaunchKernel": 211, "cudaMemcpyAsync": 41, "cudaStreamSynchronize": 131}[c["name"]]
        args = {"External id": c["corr"], "cbid": cbid, "correlation": c["corr"]}
        ev.append(_x("Runtime" if old else "cuda_runtime", c["name"], PID, TIDS[c["tid"]], c["start"], c["end"],
                     whole, args))
        if c["corr"] in gpu_by_corr:
            ev.append({"ph": "s", "id": c["corr"], "pid": PID, "tid": TIDS[c["tid"]], "ts": _ts(c["start"], whole),
                       "cat": flow_cat, "name": flow_name})
    for g in tl.gpu:
        args = {"External id": g["corr"], "queued": 0, "device": 0, "context": 1, "stream": g["stream"],
                "correlation": g["corr"]}
        if g["kind"] == "kernel":
            args.update({"registers per thread": 64, "shared memory": 0, "blocks per SM": 1.2, "warps per SM": 9.5,
                         "grid": g["grid"], "block": g["block"], "est. achieved occupancy %": 15})
            cat = "Kernel" if old else "kernel"
        else:
            args.update({"bytes": 2_097_152, "memory bandwidth (GB/s)": 20.5})
            cat = "Memcpy" if old else "gpu_memcpy"
        ev.append(_x(cat, g["name"], 0, g["stream"], g["start"], g["end"], whole, args))
        ev.append({"ph": "f", "id": g["corr"], "pid": 0, "tid": g["stream"], "ts": _ts(g["start"], whole),
                   "cat": flow_cat, "name": flow_name, "bp": "e"})
    if not old:
        for r in tl.ranges:
            if r["kind"] == "step":
                own = [g for g in tl.gpu if any(c["corr"] == g["corr"] and r["start"] <= c["start"] <= r["end"]
                                                for c in tl.calls)]
                if own:
                    ev.append(_x("gpu_user_annotation", r["name"], 0, 7, min(g["start"] for g in own),
                                 max(g["end"] for g in own), whole, {"External id": 0}))
    ev += [{"name": "process_name", "ph": "M", "ts": _ts(0, whole), "pid": PID, "tid": 0, "args": {"name": "python"}},
           {"name": "thread_name", "ph": "M", "ts": _ts(0, whole), "pid": PID, "tid": TIDS["bwd"],
            "args": {"name": "thread 4301 (pt_autograd_0)"}},
           {"ph": "X", "cat": "Trace", "ts": _ts(0, whole), "dur": 1, "pid": "Spans", "tid": "PyTorch Profiler",
            "name": "PyTorch Profiler (0)", "args": {"Op count": 0}}]
    doc: dict[str, Any] = {"schemaVersion": 1, "deviceProperties": [GPU]}
    if not old:
        doc.update({"cupti_version": 24, "cuda_runtime_version": 12060, "cuda_driver_version": 12080,
                    "record_shapes": 1, "profile_memory": 0, "displayTimeUnit": "ms",
                    "baseTimeNanoseconds": 1_765_000_000_000_000_000})
    doc["traceEvents"] = ev
    doc["traceName"] = str(path.name)
    path.write_text(json.dumps(doc))


_TABLES = """
CREATE TABLE StringIds (id INTEGER NOT NULL PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE CUPTI_ACTIVITY_KIND_RUNTIME (start INTEGER NOT NULL, end INTEGER NOT NULL, eventClass INTEGER NOT NULL,
  globalTid INTEGER, correlationId INTEGER, nameId INTEGER NOT NULL, returnValue INTEGER NOT NULL, callchainId INTEGER);
CREATE TABLE NVTX_EVENTS (start INTEGER NOT NULL, end INTEGER, eventType INTEGER NOT NULL, rangeId INTEGER,
  category INTEGER, color INTEGER, text TEXT, globalTid INTEGER, endGlobalTid INTEGER, textId INTEGER,
  domainId INTEGER, uint64Value INTEGER, int64Value INTEGER, doubleValue REAL, uint32Value INTEGER,
  int32Value INTEGER, floatValue REAL, jsonTextId INTEGER, jsonText TEXT, binaryData TEXT);
CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INTEGER NOT NULL, end INTEGER NOT NULL, deviceId INTEGER NOT NULL,
  contextId INTEGER NOT NULL, greenContextId INTEGER, streamId INTEGER NOT NULL, correlationId INTEGER,
  globalPid INTEGER, demangledName INTEGER NOT NULL, shortName INTEGER NOT NULL, mangledName INTEGER,
  launchType INTEGER, cacheConfig INTEGER, registersPerThread INTEGER NOT NULL, gridX INTEGER NOT NULL,
  gridY INTEGER NOT NULL, gridZ INTEGER NOT NULL, blockX INTEGER NOT NULL, blockY INTEGER NOT NULL,
  blockZ INTEGER NOT NULL, staticSharedMemory INTEGER NOT NULL, dynamicSharedMemory INTEGER NOT NULL,
  localMemoryPerThread INTEGER NOT NULL, localMemoryTotal INTEGER NOT NULL, gridId INTEGER NOT NULL,
  sharedMemoryExecuted INTEGER, graphNodeId INTEGER, sharedMemoryLimitConfig INTEGER);
CREATE TABLE ThreadNames (nameId INTEGER NOT NULL, priority INTEGER, globalTid INTEGER);
CREATE TABLE TARGET_INFO_GPU (vmId INTEGER NOT NULL, id INTEGER NOT NULL, name TEXT, busLocation TEXT,
  isDiscrete INTEGER, l2CacheSize INTEGER, totalMemory INTEGER, memoryBandwidth INTEGER, clockRate INTEGER,
  smCount INTEGER, pwGpuId INTEGER, uuid TEXT, luid INTEGER, chipName TEXT, cuDevice INTEGER,
  computeMajor INTEGER, computeMinor INTEGER, smMajor INTEGER, smMinor INTEGER);
CREATE TABLE META_DATA_CAPTURE (name TEXT NOT NULL, value TEXT);
CREATE TABLE META_DATA_EXPORT (name TEXT NOT NULL, value TEXT);
"""


def sqlite(tl: Timeline, path: Path, capture: str = "delayed", emit_nvtx: bool = True) -> None:
    """An Nsight Systems export (schema 3.16 tables). capture 'immediate' = from the process start."""
    con = sqlite3.connect(path)
    con.executescript(_TABLES)
    strings: dict[str, int] = {}

    def sid(s: str) -> int:
        if s not in strings:
            strings[s] = len(strings) + 1
        return strings[s]

    gtid = {k: (PID << 24) + v for k, v in TIDS.items()}
    runtime_name = {"cudaLaunchKernel": "cudaLaunchKernel_v7000", "cudaStreamSynchronize":
                    "cudaStreamSynchronize_v3020", "cudaMemcpyAsync": "cudaMemcpyAsync_v3020"}
    con.executemany("INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES (?,?,1,?,?,?,0,NULL)",
                    [(int(c["start"]), int(c["end"]), gtid[c["tid"]], c["corr"], sid(runtime_name[c["name"]]))
                     for c in tl.calls])
    rows = []
    for i, g in enumerate(x for x in tl.gpu if x["kind"] == "kernel"):
        rows.append((int(g["start"]), int(g["end"]), g["stream"], g["corr"], PID << 24, sid(f"void {g['name']}()"),
                     sid(g["name"]), sid(f"_Z{len(g['name'])}{g['name']}v"), *g["grid"], *g["block"], i + 1))
    con.executemany("INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (?,?,0,1,NULL,?,?,?,?,?,?,1,0,64,?,?,?,?,?,?,"
                    "0,0,0,0,?,0,NULL,0)", rows)
    nvtx = []
    seq = 0
    for r in tl.ranges:
        seq += 1
        if r["kind"] in ("step", "range"):
            text = "train_step" if r["kind"] == "step" else r["name"]
        elif emit_nvtx and r["kind"] == "op":
            text = f"{r['name']}, seq = {seq}, op_id = {seq + 7}, sizes = [[512, 1024], [1024]]"
        elif emit_nvtx and r["kind"] == "autograd":
            text = f"{r['name']}, op_id = {seq + 7}"
        else:
            continue
        nvtx.append((int(r["start"]), int(r["end"]), text, gtid[r["tid"]]))
    con.executemany("INSERT INTO NVTX_EVENTS (start, end, eventType, text, globalTid, domainId) "
                    "VALUES (?,?,59,?,?,0)", nvtx)
    con.execute("INSERT INTO TARGET_INFO_GPU VALUES (?,0,?,'0000:07:00.0',1,41943040,85100000000,2039000000000,"
                "1410000000,108,0,'GPU-5c1f0e3a',0,'GA100',0,8,0,8,0)", (1 << 48, GPU["name"]))
    cap = [("START_TRIGGER", "Immediate"), ("START_DELAY_MS", "0")] if capture == "immediate" else \
        [("START_TRIGGER", "Delayed"), ("START_DELAY_MS", "5000")]
    con.executemany("INSERT INTO META_DATA_CAPTURE VALUES (?,?)",
                    [("DEVICE_ID", "Local (CLI)"), ("CAPTURE_EVENT_TYPE", "NvtxEvents"),
                     ("CAPTURE_EVENT_TYPE", "Cuda")] + cap)
    con.executemany("INSERT INTO META_DATA_EXPORT VALUES (?,?)",
                    [("EXPORT_PRODUCT_NAME", "NVIDIA Nsight Systems"), ("EXPORT_PRODUCT_VERSION", "2024.6.2.25"),
                     ("EXPORT_SCHEMA_VERSION", "3.16.1"), ("EXPORT_SCHEMA_VERSION_MAJOR", "3"),
                     ("EXPORT_SCHEMA_VERSION_MINOR", "16"), ("EXPORT_SCHEMA_VERSION_MICRO", "1")])
    con.executemany("INSERT INTO ThreadNames VALUES (?,20,?)",
                    [(sid("python"), gtid["main"]), (sid("pt_autograd_0"), gtid["bwd"])])
    con.executemany("INSERT INTO StringIds VALUES (?,?)", [(v, k) for k, v in strings.items()])
    con.commit()
    con.close()
