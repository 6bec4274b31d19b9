"""A synthetic Nsight Systems SQLite export of any size, in the real schema: the tables perfgate reads, with the
columns and types ``nsys export --type sqlite`` writes (copied from an nsys 2024 export of the shared corpus,
``nvfuser-h200``), so the reader takes the path it takes on a real one. For sizes no real export in the corpus
reaches: kernel-dense traces (hundreds of thousands of launches), for memory bounds.

Run as a script to write one: ``python tests/helpers/nsys_export.py OUT.sqlite KERNELS [--overlap]``.
"""

from __future__ import annotations

import sqlite3
import sys
from pathlib import Path

SCHEMA = """
CREATE TABLE StringIds (id INTEGER NOT NULL PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE CUPTI_ACTIVITY_KIND_RUNTIME (start INTEGER NOT NULL, end INTEGER NOT NULL, eventClass INTEGER NOT NULL,
    globalTid INTEGER, correlationId INTEGER, nameId INTEGER NOT NULL, returnValue INTEGER NOT NULL,
    callchainId INTEGER);
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
CREATE TABLE TARGET_INFO_GPU (vmId INTEGER NOT NULL, id INTEGER NOT NULL, name TEXT, busLocation TEXT,
    computeMajor INTEGER, computeMinor INTEGER);
CREATE TABLE META_DATA_EXPORT (name TEXT NOT NULL, value TEXT);
"""

_THREAD, _PID = 281987873011563, 281987872980992
_KERNELS = [("_ZN7cutlass6KernelI" + "S" * i + "EEvT_", f"cutlass_kernel_{i}") for i in range(8)] + [
    ("_Z10vector_addPKfS0_Pfi", "vector_add"), ("_Z6reducePfS_i", "reduce")]


def write_nsys_export(path: Path, kernels: int, per_step: int = 100, overlap: bool = False) -> Path:
    """An export of ``kernels`` kernel launches on one GPU, each with its runtime launch call, ``per_step`` of
    them inside each NVTX range (alternately ``forward`` and ``backward``). The ranges follow one another; with
    ``overlap``, each ends half a range after the next one starts (start/end ranges that overlap without nesting:
    A starts, B starts, A ends, C starts, B ends...), so the launches of each range's second half are in two."""
    path.unlink(missing_ok=True)
    with sqlite3.connect(path) as connection:
        connection.executescript(SCHEMA)
        strings = [name for pair in _KERNELS for name in pair] + ["cudaLaunchKernel_v7000"]
        connection.executemany("INSERT INTO StringIds VALUES (?, ?)", enumerate(strings))
        launch_name = len(strings) - 1
        connection.execute("INSERT INTO TARGET_INFO_GPU VALUES (0, 0, 'NVIDIA H200', '0000:45:00.0', 9, 0)")
        connection.executemany("INSERT INTO META_DATA_EXPORT VALUES (?, ?)",
                               [("EXPORT_PRODUCT_VERSION", "2024.5.1"), ("EXPORT_SCHEMA_VERSION", "3.11.0")])
        kernel_rows, launch_rows, range_rows = [], [], []
        clock = 1_000_000
        for index in range(kernels):
            if index % per_step == 0:
                name = "forward" if (index // per_step) % 2 == 0 else "backward"
                last = min(index + per_step, kernels) - 1
                length = (last - index + 1) * 5_000 - 100
                if overlap:
                    length += per_step // 2 * 5_000
                range_rows.append((clock, clock + length, 60 if overlap else 59, name, _THREAD))
            correlation = index + 1
            which = index % len(_KERNELS)
            launch_rows.append((clock + 100, clock + 2_100, 0, _THREAD, correlation, launch_name, 0, None))
            start = clock + 3_000
            kernel_rows.append((start, start + 1_500 + (index * 37) % 900, 0, 1, None, 7, correlation, _PID,
                                2 * which, 2 * which + 1, 2 * which, None, 0, 40, 1 + which, 1, 1, 256, 1, 1,
                                0, 1024 * (which % 3), 0, 0, correlation, 32768, None, 0))
            clock += 5_000
        connection.executemany(f"INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES ({', '.join('?' * 28)})", kernel_rows)
        connection.executemany(f"INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES ({', '.join('?' * 8)})", launch_rows)
        connection.executemany("INSERT INTO NVTX_EVENTS (start, end, eventType, text, globalTid, domainId) "
                               "VALUES (?, ?, ?, ?, ?, 0)", range_rows)
    connection.close()
    return path


if __name__ == "__main__":
    write_nsys_export(Path(sys.argv[1]), int(sys.argv[2]), overlap="--overlap" in sys.argv[3:])
