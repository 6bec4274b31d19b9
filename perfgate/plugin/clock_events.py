"""What NVML says slowed the GPU's clocks while a perf test ran: a note beside the test's verdict.

Runner drift (``compare.same_code.drift_judgement``: same-code kernels moving together) has causes only the driver
sees: a power cap, a thermal slowdown, another process's clocks. NVML keeps, per device, the time its clocks were
held down by each policy since the driver loaded (``nvmlDeviceGetViolationStatus``: power, thermal, board limit...),
and the reasons they are held now (``nvmlDeviceGetCurrentClocksEventReasons``). Read before and after the profiled
(or traced) child, their difference is the throttling during the test, which a note names. Without NVML
(``pip install nvidia-ml-py``, no driver, no GPU, a policy the device does not report) there is no note and no error:
it is a fact to add where known, never a condition of the gate.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from typing import Any, NamedTuple

# The NVML policies whose violation time is throttling (nvml.h, nvmlPerfPolicyType_t), as the note names them.
POLICIES = {0: "power cap", 1: "thermal limit", 2: "sync boost", 3: "board limit", 5: "reliability"}
# The clock-event reason bits (nvml.h, nvmlClocksEventReason*), as the note names them. GPU idle and the clocks an
# application or display set are not throttling: left out.
REASONS = {0x4: "software power cap", 0x8: "hardware slowdown", 0x10: "sync boost",
           0x20: "software thermal slowdown", 0x40: "hardware thermal slowdown", 0x80: "power brake",
           0x200: "board limit", 0x400: "reliability"}


class ClockState(NamedTuple):
    """One reading of a device: the violation time of each policy it reports (ns), the reason bits held now."""

    violation_ns: dict[int, int]
    reasons: int


def reason_names(mask: int) -> list[str]:
    """The throttling reasons a clock-event mask holds, by bit."""
    return [name for bit, name in REASONS.items() if mask & bit]


def throttled_note(before: ClockState, after: ClockState, what: str) -> str | None:
    """``GPU clocks: NVML saw the clocks held down during <what>: power cap 12.3 ms; at its end: software power
    cap``; None where nothing held them (or a counter went back: the driver reloaded)."""
    held = {POLICIES[policy]: (after.violation_ns[policy] - start) / 1e6
            for policy, start in before.violation_ns.items()
            if policy in after.violation_ns and after.violation_ns[policy] > start}
    now = reason_names(after.reasons)
    if not held and not now:
        return None
    parts = [", ".join(f"{name} {ms:.3g} ms" for name, ms in held.items())] if held else []
    parts += [f"at its end: {', '.join(now)}"] if now else []
    return (f"GPU clocks: NVML saw the clocks held down during {what}: {'; '.join(parts)}; its timings may read "
            "slower than the code is (a kernel whose code did not change and that moved says the same)")


def _handle(nvml: Any, gpu: str | None) -> Any:
    """The NVML device of the GPU the child uses: ``gpu`` (an xdist worker's), else CUDA_VISIBLE_DEVICES' first;
    a UUID is exact, an index is NVML's order (PCI bus order: set CUDA_DEVICE_ORDER=PCI_BUS_ID to agree)."""
    chosen = (gpu or os.environ.get("CUDA_VISIBLE_DEVICES", "") or "0").split(",")[0].strip()
    if chosen.startswith(("GPU-", "MIG-")):
        return nvml.nvmlDeviceGetHandleByUUID(chosen)
    return nvml.nvmlDeviceGetHandleByIndex(int(chosen) if chosen.isdigit() else 0)


def _read(nvml: Any, handle: Any) -> ClockState:
    violation: dict[int, int] = {}
    for policy in POLICIES:
        with contextlib.suppress(nvml.NVMLError):  # a policy this device does not report
            violation[policy] = int(nvml.nvmlDeviceGetViolationStatus(handle, policy).violationTime)
    reasons = 0
    with contextlib.suppress(nvml.NVMLError):  # in every nvidia-ml-py perfgate[nvml] allows (12.535.77 on)
        reasons = int(nvml.nvmlDeviceGetCurrentClocksEventReasons(handle))
    return ClockState(violation, reasons)


class ClockWatch:
    """The note of one watched run, once it ended (``watched_clocks``)."""

    def __init__(self) -> None:
        self.note: str | None = None

    def notes(self) -> list[str]:
        return [self.note] if self.note else []


@contextlib.contextmanager
def watched_clocks(gpu: str | None, what: str) -> Iterator[ClockWatch]:
    """Read the device's clock state before and after the block; the watch's note says what held the clocks down
    in between. Nothing (no note, no error) where NVML cannot be read."""
    watch = ClockWatch()
    nvml: Any = None
    try:
        import pynvml  # nvidia-ml-py; absent, or no driver: no note

        pynvml.nvmlInit()
        nvml = pynvml
    except Exception:  # ImportError, NVMLError_LibraryNotFound / DriverNotLoaded: NVML is not here
        pass
    if nvml is None:  # yielded outside the handler: the run's own errors carry no NVML error as their context
        yield watch
        return
    try:
        handle = _handle(nvml, gpu)
        before = _read(nvml, handle)
    except (nvml.NVMLError, ValueError):
        before = None
    try:
        yield watch
        if before is not None:
            with contextlib.suppress(nvml.NVMLError):
                watch.note = throttled_note(before, _read(nvml, handle), what)
    finally:
        with contextlib.suppress(nvml.NVMLError):
            nvml.nvmlShutdown()
