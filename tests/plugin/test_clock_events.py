"""What NVML saw hold the GPU's clocks down during a perf test (``perfgate.plugin.clock_events``): the bits and
policies named as nvidia-ml-py defines them, the note from two real readings' worth of numbers, and nothing at all
(no note, no error, the run's own exceptions untouched) on a machine without NVIDIA's driver, like this one. What
a GPU reports under load is ``tests/gpu/device_checks.py nvml --load``'s (the device session's ``load`` step)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from perfgate.plugin.clock_events import POLICIES, REASONS, ClockState, reason_names, throttled_note, watched_clocks

pynvml = pytest.importorskip("pynvml", reason="nvidia-ml-py is in the test extra")


def test_the_reason_bits_and_policies_are_nvmls() -> None:
    # Every throttling bit the installed nvidia-ml-py defines is named; idle, an application's clocks and the
    # display's are not throttling (newer releases add bits: 0x200 board limit, 0x400 reliability).
    not_throttling = ("GpuIdle", "ApplicationsClocksSetting", "UserDefinedClocks", "DisplayClockSetting", "None",
                      "All")
    throttle = {value: name for name, value in vars(pynvml).items()
                if name.startswith("nvmlClocksThrottleReason") and isinstance(value, int)}
    assert {bit for bit, name in throttle.items() if not name.endswith(not_throttling)} <= set(REASONS)
    assert {0x1, 0x2, 0x100}.isdisjoint(REASONS) and {0x4, 0x8, 0x20, 0x40, 0x80} <= set(REASONS)
    policies = {value: name for name, value in vars(pynvml).items() if name.startswith("NVML_PERF_POLICY_")}
    assert {policies[p] for p in POLICIES} == {"NVML_PERF_POLICY_POWER", "NVML_PERF_POLICY_THERMAL",
                                               "NVML_PERF_POLICY_SYNC_BOOST", "NVML_PERF_POLICY_BOARD_LIMIT",
                                               "NVML_PERF_POLICY_RELIABILITY"}


def test_the_note_names_the_time_each_policy_held_the_clocks_and_the_reasons_at_the_end() -> None:
    before = ClockState({0: 5_000_000_000, 1: 7_000, 3: 0}, 0x1)
    after = ClockState({0: 5_012_300_000, 1: 7_000, 3: 0}, pynvml.nvmlClocksThrottleReasonSwPowerCap | 0x1)
    note = throttled_note(before, after, "the profiled run")
    assert note is not None and note.startswith(
        "GPU clocks: NVML saw the clocks held down during the profiled run: power cap 12.3 ms; at its end: software "
        "power cap; ")
    assert reason_names(0x48) == ["hardware slowdown", "hardware thermal slowdown"]


def test_no_note_where_nothing_held_the_clocks_or_a_counter_went_back() -> None:
    idle = ClockState({0: 10, 1: 10}, pynvml.nvmlClocksThrottleReasonGpuIdle)
    assert throttled_note(idle, idle, "the run") is None
    assert throttled_note(idle, ClockState({0: 3, 1: 10}, 0), "the run") is None  # the driver reloaded
    assert throttled_note(ClockState({}, 0), ClockState({0: 99}, 0), "the run") is None  # no first reading


def test_without_nvidias_driver_the_watch_says_nothing_and_lets_the_runs_errors_through() -> None:
    with pytest.raises(pynvml.NVMLError):
        pynvml.nvmlInit()  # this machine has no driver: the case the test is about
    ran = []
    with watched_clocks(None, "the run") as watch:
        ran.append(True)
    assert ran == [True] and watch.notes() == []
    with pytest.raises(TimeoutError, match="the child") as raised, watched_clocks("GPU-0000", "the run"):
        raise TimeoutError("the child")
    assert raised.value.__context__ is None  # no NVML error chained to it in a traceback


def test_without_nvidia_ml_py_the_watch_says_nothing() -> None:
    program = ("import sys; sys.modules['pynvml'] = None\n"  # as if nvidia-ml-py were not installed
               "from perfgate.plugin.clock_events import watched_clocks\n"
               "with watched_clocks('0', 'the run') as watch: pass\n"
               "print(watch.notes())")
    done = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, check=True)
    assert done.stdout == "[]\n" and done.stderr == ""
