"""One profiled test per GPU at a time, across pytest-xdist workers and concurrent sessions: an exclusive file
lock per GPU, held while ncu (or the tracer) runs the test."""

from __future__ import annotations

import contextlib
import tempfile
import time
from pathlib import Path
from typing import Iterator, Sequence

from perfgate.errors import PerfgateError

LOCK_WAIT = 600.0  # seconds a perf test waits at least for its GPU's lock


class GpuBusy(PerfgateError):
    pass


@contextlib.contextmanager
def gpu_locks(gpu_ids: Sequence[str], timeout: float, folder: Path | None = None) -> Iterator[None]:
    """Hold an exclusive lock per GPU while profiling: one profiled test per GPU at a time, across
    xdist workers and concurrent sessions. Locks are taken in sorted order (no deadlock)."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover - ncu profiling is Linux-only here
        yield
        return
    folder = folder or Path(tempfile.gettempdir())
    deadline = time.monotonic() + timeout
    handles = []
    try:
        for gpu in sorted(set(gpu_ids)):
            handle = open(folder / f"perfgate-gpu-{''.join(c if c.isalnum() else '_' for c in gpu)}.lock", "a+")
            handles.append(handle)
            while True:
                try:
                    fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    if time.monotonic() > deadline:
                        raise GpuBusy(f"GPU {gpu} stayed busy for {timeout:g} s (another perfgate run holds "
                                      f"{handle.name})") from None
                    time.sleep(0.05)
        yield
    finally:
        for handle in handles:
            handle.close()  # closing releases the flock
