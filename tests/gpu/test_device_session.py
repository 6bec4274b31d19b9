"""``tests/gpu/device_session.sh`` without a GPU, so that the script a device session runs once in a while cannot rot:
its dry run (the steps, their needs, what a budget fits), its refusal of an unknown step, a real run of steps whose
sessions skip here (the bash around them: the sessions' log, summary.json, the archive), and the figures its
helper ``device_checks.py`` reads from real ncu reports and logs of tests/data.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[2]
SCRIPT = "tests/gpu/device_session.sh"
STEPS = ("setup", "loader", "overhead", "code", "dram", "tensor", "load", "timeline", "roofline", "both", "triton")
H100 = REPO / "tests" / "data" / "h100"


def _script(*args: str, budget: int = 530, **env: str) -> subprocess.CompletedProcess[str]:
    environ = {**os.environ, "CHECK_BUDGET": str(budget), **env}
    return subprocess.run(["bash", SCRIPT, *args], cwd=REPO, env=environ, capture_output=True, text=True,
                          timeout=240, check=False)


def _checks(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "tests/gpu/device_checks.py", *args], cwd=REPO, capture_output=True,
                          text=True, timeout=240, check=False)


def test_the_dry_run_lists_every_step_in_priority_order_with_what_the_budget_fits() -> None:
    done = _script("--dry-run")
    assert done.returncode == 0, done.stderr
    listed = re.findall(r"^(\w+)\s+needs\s+(\d+) s\s+(runs|skipped)", done.stdout, re.MULTILINE)
    assert tuple(name for name, _, _ in listed) == STEPS
    # One call of 530 s: everything but the `both` runs and the Triton check after them, which a second call does.
    assert [name for name, _, fits in listed if fits == "skipped"] == ["both", "triton"]
    assert sum(int(need) for name, need, _ in listed if name not in ("both", "triton")) <= 530


def test_a_small_budget_keeps_the_steps_that_fit_in_the_order_given() -> None:
    done = _script("--dry-run", "setup", "both", "load", budget=200)
    assert done.returncode == 0
    assert re.findall(r"^(\w+)\s+needs\s+\d+ s\s+(runs|skipped)", done.stdout, re.MULTILINE) == [
        ("setup", "runs"), ("both", "skipped"), ("load", "runs")]


def test_an_unknown_step_is_refused_in_one_line() -> None:
    done = _script("--dry-run", "setup", "warmup")
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        f"device_session.sh: unknown step 'warmup'; steps: {' '.join(STEPS)}"]


@pytest.mark.skipif(importlib.util.find_spec("torch") is not None or importlib.util.find_spec("cupy") is not None
                    or shutil.which("nvidia-smi") is not None,
                    reason="a GPU machine, or one with torch or CuPy, runs the steps for real (setup installs)")
def test_a_run_without_a_gpu_writes_its_log_summary_and_archive(tmp_path: Path) -> None:
    out, work = tmp_path / "out", tmp_path / "work"
    done = _script("setup", "timeline", "both", budget=140, OUT=str(out), CHECK_WORK=str(work), PYTHON=sys.executable)
    assert done.returncode == 0, done.stdout + done.stderr
    assert sorted(p.name for p in out.iterdir()) == ["device-session.tar.gz", "log.txt", "summary.json"]
    summary = json.loads((out / "summary.json").read_text(encoding="utf-8"))
    # The examples skip here (no torch, no CuPy): every session exits 5, "no tests ran" as pytest says it.
    assert [(s["session"], s["exit"]) for s in summary["sessions"]] == [
        ("tl-update", "5"), ("tl-gate1", "5"), ("tl-gate2", "5")]
    assert [(s["step"], s["status"]) for s in summary["steps"]] == [
        ("setup", "done"), ("timeline", "done"), ("both", "skipped")]
    log = (out / "log.txt").read_text(encoding="utf-8")
    assert "setup: no nvidia-smi or no .device/wheels/*.whl: nothing installed" in log  # not into this Python
    assert "skip both: needs 170 s" in log
    assert "skipped: both; the next call: bash tests/gpu/device_session.sh setup both" in log
    with tarfile.open(out / "device-session.tar.gz") as archive:
        assert "./tl-gate1/pytest.txt" in archive.getnames()


def test_the_passes_of_each_distinct_ncu_log_are_counted_once(tmp_path: Path) -> None:
    for copy in ("a", "b"):  # a log copied beside each test of a shared child
        (tmp_path / copy).mkdir()
        (tmp_path / copy / "ncu.log").write_bytes((H100 / "vector_add.rerun.ncu.log").read_bytes())
    done = _checks("passes", str(tmp_path / "passes.json"), str(tmp_path))
    assert done.returncode == 0, done.stderr
    found = json.loads((tmp_path / "passes.json").read_text(encoding="utf-8"))
    assert (found["logs"], found["launches"], found["passes_per_launch"]) == (1, 1, [10])


def test_two_captures_of_the_same_kernel_give_one_code_id_and_its_dram_rate(tmp_path: Path) -> None:
    pytest.importorskip("ncu_report")
    reports = [str(H100 / "vector_add.ncu-rep"), str(H100 / "vector_add.rerun.ncu-rep")]
    assert _checks("code-ids", str(tmp_path / "code.json"), *reports).returncode == 0
    code = json.loads((tmp_path / "code.json").read_text(encoding="utf-8"))
    assert code["same_in_every_report"] == {"vector_add": True}
    assert _checks("dram", str(tmp_path / "dram.json"), reports[0]).returncode == 0
    (launch,) = json.loads((tmp_path / "dram.json").read_text(encoding="utf-8"))["launches"]
    assert launch["derived_bytes_per_s"] == pytest.approx((launch["read"] + launch["write"]) / launch["duration_ns"] * 1e9)
    assert launch["ncu_bytes_per_s"] is None  # perfgate's default set does not ask ncu for its own rate


def test_the_tensor_names_are_perfgates_and_each_is_found_or_missing_in_ncus_list(tmp_path: Path) -> None:
    from perfgate.tensor_counters import TENSOR_AGGREGATES, tensor_counter

    names = _checks("tensor-names", "9.0").stdout.strip().split(",")
    assert names == [tensor_counter(name) for name in TENSOR_AGGREGATES["9.0"]]
    query = tmp_path / "query.txt"  # two lines as ncu --query-metrics prints them
    query.write_text("sm__ops_path_tensor_src_fp16                Counter  # of ops ...\n"
                     "sm__ops_path_tensor_src_fp8_sparsity_on     Counter  # of ops ...\n", encoding="utf-8")
    assert _checks("tensor", str(tmp_path / "tensor.json"), str(query)).returncode == 0
    on_h100 = json.loads((tmp_path / "tensor.json").read_text(encoding="utf-8"))["by_capability"]["9.0"]
    assert on_h100["present"] == ["sm__ops_path_tensor_src_fp16", "sm__ops_path_tensor_src_fp8_sparsity_on"]
    assert len(on_h100["missing"]) == len(names) - 2


def test_a_timeline_baseline_rebuilt_from_a_live_trace_holds_what_the_plugin_wrote_and_passes(tmp_path: Path) -> None:
    """The H200 MLP trace of the live source (its planted-sync run, the one trace kept): the rebuilt baseline has
    the entries the plugin wrote from another run of the same test (no launch outside the regions), with today's
    metrics, and the trace gated against it passes with every row unchanged."""
    import lzma

    live = REPO / "tests" / "data" / "h200" / "timeline-live"
    trace = tmp_path / "mlp.cupti.json"
    trace.write_bytes(lzma.decompress((live / "sessions" / "tl-sync.trace.cupti.json.xz").read_bytes()))
    nodeid = "examples/test_torch_mlp_layers.py::test_mlp_layer_by_layer"
    done = subprocess.run([sys.executable, "tests/gpu/timeline_baselines.py", str(tmp_path / "baselines"),
                           f"{nodeid}={trace}"], cwd=REPO, capture_output=True, text=True, timeout=240, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.strip().endswith("the trace against it: pass {'unchanged': 31}")
    name = "examples.test_torch_mlp_layers__test_mlp_layer_by_layer.timeline.json"
    rebuilt = json.loads((tmp_path / "baselines" / "nvidia-h200-sm90" / name).read_text(encoding="utf-8"))
    written = json.loads((live / "baselines" / name).read_text(encoding="utf-8"))

    def entries(document: dict[str, Any]) -> list[tuple[str, ...]]:
        return sorted((e["kind"], e["name"], e["region"], e["grid"], e["block"]) for e in document["entries"])

    assert entries(rebuilt) == entries(written)
    assert all("timeline.host_lead" in e["metrics"] for e in rebuilt["entries"] if e["kind"] == "region")
