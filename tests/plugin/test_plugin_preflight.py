"""Preflight: is there an ncu, a GPU, and permission to read GPU counters? Driven by real files in
a fake /proc and /dev tree; the check itself is a pure function of the facts."""

from __future__ import annotations

from pathlib import Path

import pytest

from perfgate.plugin.preflight import (
    ENV_ASSUME_GPU,
    PreflightFacts,
    check_preflight,
    gather_facts,
)


def _machine(tmp_path: Path, gpus: int = 1, admin_only: int | None = 0, cap_eff: str = "0000000000000000",
             dev_nodes: int | None = None) -> tuple[Path, Path]:
    proc, dev = tmp_path / "proc", tmp_path / "dev"
    (proc / "self").mkdir(parents=True)
    dev.mkdir()
    (proc / "self" / "status").write_text(f"Name:\tpython\nCapEff:\t{cap_eff}\n")
    if gpus or admin_only is not None:
        (proc / "driver" / "nvidia").mkdir(parents=True)
    if gpus:
        for index in range(gpus):
            (proc / "driver" / "nvidia" / "gpus" / f"0000:0{index}:00.0").mkdir(parents=True)
    if admin_only is not None:
        (proc / "driver" / "nvidia" / "params").write_text(
            f"ResmanDebugLevel: 4294967295\nRmProfilingAdminOnly: {admin_only}\nEnableMSI: 1\n")
    for index in range(dev_nodes or 0):
        (dev / f"nvidia{index}").write_text("")
    (dev / "nvidiactl").write_text("")
    return proc, dev


def _which(found: dict[str, str]) -> object:
    return lambda name: found.get(name)


def facts(tmp_path: Path, env: dict[str, str] | None = None, uid: int = 1000, ncu: str = "ncu",
          **machine: object) -> PreflightFacts:
    proc, dev = _machine(tmp_path, **machine)  # type: ignore[arg-type]
    return gather_facts(ncu, environ=env or {}, proc=proc, dev=dev, which=_which({"ncu": "/usr/local/bin/ncu"}),
                        uid=uid)


def test_a_profiling_machine_passes(tmp_path: Path) -> None:
    found = facts(tmp_path, gpus=2)
    assert found.ncu_path == "/usr/local/bin/ncu" and found.gpu_ids == ("0", "1")
    assert check_preflight(found) is None


def test_no_ncu(tmp_path: Path) -> None:
    problem = check_preflight(facts(tmp_path, ncu="ncu-2031"))
    assert problem is not None
    assert problem.startswith("ncu not found") and "install Nsight Compute or pass --perfgate-ncu PATH" in problem


def test_ncu_given_as_a_path(tmp_path: Path) -> None:
    tool = tmp_path / "bin" / "ncu"
    tool.parent.mkdir()
    tool.write_text("#!/bin/sh\n")
    assert facts(tmp_path / "a", ncu=str(tool)).ncu_path is None  # not executable
    tool.chmod(0o755)
    assert facts(tmp_path / "b", ncu=str(tool)).ncu_path == str(tool)


def test_no_gpu(tmp_path: Path) -> None:
    found = facts(tmp_path, gpus=0, admin_only=None)
    problem = check_preflight(found)
    assert found.gpu_ids == ()
    assert problem is not None and problem.startswith("no NVIDIA GPU visible")
    assert "/dev/nvidia0" in problem and "--gpus all" in problem and ENV_ASSUME_GPU in problem


def test_device_nodes_count_when_proc_hides_the_driver(tmp_path: Path) -> None:
    found = facts(tmp_path, gpus=0, admin_only=None, dev_nodes=2)
    assert found.gpu_ids == ("0", "1") and check_preflight(found) is None


@pytest.mark.parametrize("mask, ids", [("", ()), ("-1", ()), ("1", ("1",)), ("1,0", ("1", "0")),
                                       ("0,-1,1", ("0",)), ("GPU-8f5e", ("GPU-8f5e",))])
def test_cuda_visible_devices_narrows_the_gpus(tmp_path: Path, mask: str, ids: tuple[str, ...]) -> None:
    found = facts(tmp_path, env={"CUDA_VISIBLE_DEVICES": mask}, gpus=2)
    assert found.gpu_ids == ids
    if not ids:
        assert "CUDA_VISIBLE_DEVICES" in (check_preflight(found) or "")


def test_assumed_gpus_skip_detection(tmp_path: Path) -> None:
    found = facts(tmp_path, env={ENV_ASSUME_GPU: "3"}, gpus=0, admin_only=None)
    assert found.gpu_ids == ("0", "1", "2") and check_preflight(found) is None
    assert ENV_ASSUME_GPU in found.gpu_evidence


def test_counters_restricted_to_admins(tmp_path: Path) -> None:
    problem = check_preflight(facts(tmp_path, admin_only=1))
    assert problem is not None and problem.startswith("no permission to read GPU performance counters")
    for fix in ("root", "CAP_SYS_ADMIN", "CAP_PERFMON", "--cap-add=SYS_ADMIN", "NVreg_RestrictProfilingToAdminUsers=0"):
        assert fix in problem


@pytest.mark.parametrize("uid, cap_eff", [(0, "0000000000000000"),  # root
                                          (1000, "0000000000200000"),  # CAP_SYS_ADMIN (bit 21)
                                          (1000, "0000004000000000")])  # CAP_PERFMON (bit 38)
def test_admins_may_profile_when_counters_are_restricted(tmp_path: Path, uid: int, cap_eff: str) -> None:
    found = facts(tmp_path, uid=uid, admin_only=1, cap_eff=cap_eff)
    assert found.is_admin and check_preflight(found) is None


def test_unrestricted_counters_need_no_admin(tmp_path: Path) -> None:
    found = facts(tmp_path, admin_only=0)
    assert found.profiling_admin_only is False and not found.is_admin and check_preflight(found) is None


def test_auto_traces_where_the_driver_refuses_counters(tmp_path: Path) -> None:
    """``--perfgate-source=auto`` on a machine whose driver has RmProfilingAdminOnly=1: ncu is not tried, the
    test is traced (which needs no counter permission) and the note says why; root there runs ncu."""
    from perfgate.plugin.sources import chosen_sources, preflight_for, why_traced_instead

    refused = facts(tmp_path / "user", admin_only=1)
    problem = check_preflight(refused)
    assert problem is not None and "RmProfilingAdminOnly=1" in problem
    assert chosen_sources("auto", refused) == (False, True)
    assert why_traced_instead("auto", refused) == problem
    assert preflight_for("auto", problem, refused) is None  # nothing stops the traced run
    assert chosen_sources("ncu", refused) == (True, False) and preflight_for("ncu", problem, refused) == problem
    assert why_traced_instead("both", refused) == ""
    root = facts(tmp_path / "root", admin_only=1, uid=0)
    assert chosen_sources("auto", root) == (True, False) and why_traced_instead("auto", root) == ""
    no_gpu = facts(tmp_path / "none", gpus=0, admin_only=1)
    assert preflight_for("auto", check_preflight(no_gpu), no_gpu) is not None  # a trace needs a GPU too
