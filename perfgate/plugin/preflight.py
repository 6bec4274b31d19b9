"""Can this machine profile GPU kernels? Checked once per session, before any perf test runs.

``gather_facts`` reads the machine (PATH, /proc, /dev, the process's uid and capabilities);
``check_preflight`` is a pure function of those facts, so each case is testable anywhere.
Stdlib only.

``PERFGATE_ASSUME_GPU=N`` skips GPU detection and assumes N visible GPUs: for containers whose
/proc and /dev do not show the driver, and for perfgate's own tests, which drive the whole flow
with a stub ncu on machines with no GPU. It does not bypass the ncu or permission checks.
"""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path
from typing import Callable, Mapping, NamedTuple

from perfgate.vocabulary import PERMISSION_FIX

ENV_ASSUME_GPU = "PERFGATE_ASSUME_GPU"

_CAP_SYS_ADMIN = 21
_CAP_PERFMON = 38


class PreflightFacts(NamedTuple):
    ncu_requested: str  # what the user asked for (--perfgate-ncu, [tool.perfgate] ncu, or "ncu")
    ncu_path: str | None  # the executable it resolved to; None when not found
    gpu_ids: tuple[str, ...]  # visible GPUs (CUDA_VISIBLE_DEVICES entries or indices); () when none
    gpu_evidence: str  # how gpu_ids was found, for the message
    profiling_admin_only: bool | None  # RmProfilingAdminOnly from the driver; None when unknown
    is_admin: bool  # root, or CAP_SYS_ADMIN / CAP_PERFMON in the effective set
    notes: tuple[str, ...] = ()
    ncu_unusable: str = ""  # why ``ncu --version`` failed, once the session has asked it; "" when it answered


def check_preflight(facts: PreflightFacts) -> str | None:
    """The reason GPU perf tests cannot run here (cause and fix), or None when they can."""
    if facts.ncu_path is None:
        return (f"ncu not found ({facts.ncu_requested!r} is not an executable on PATH): install Nsight Compute "
                "or pass --perfgate-ncu PATH")
    if not facts.gpu_ids:
        return (f"no NVIDIA GPU visible ({facts.gpu_evidence}): run on a machine with an NVIDIA GPU and driver "
                f"(in a container: docker run --gpus all), or set {ENV_ASSUME_GPU}=1 if the GPU is there but "
                "/proc and /dev do not show it")
    if facts.profiling_admin_only and not facts.is_admin:
        return ("no permission to read GPU performance counters: the driver has RmProfilingAdminOnly=1 and this "
                f"process is not root: {PERMISSION_FIX}")
    return None


def _resolve_ncu(requested: str, which: Callable[[str], str | None]) -> str | None:
    if os.sep in requested or (os.altsep and os.altsep in requested):
        path = Path(requested).expanduser()
        return str(path) if path.is_file() and os.access(path, os.X_OK) else None
    return which(requested)


def _visible(ids: list[str], environ: Mapping[str, str]) -> tuple[list[str], str]:
    mask = environ.get("CUDA_VISIBLE_DEVICES")
    if mask is None:
        return ids, ""
    entries = [e.strip() for e in mask.split(",") if e.strip()]
    # CUDA stops at the first invalid entry; "-1" or "" hides every GPU.
    kept: list[str] = []
    for entry in entries:
        if entry.startswith("-") or entry.lower() in ("none", "void"):
            break
        kept.append(entry)
    if ids:
        kept = kept[: len(ids)]
    return kept, f"CUDA_VISIBLE_DEVICES={mask!r}"


def _gpus(environ: Mapping[str, str], proc: Path, dev: Path) -> tuple[tuple[str, ...], str]:
    assumed = environ.get(ENV_ASSUME_GPU, "").strip()
    if assumed:
        count = int(assumed) if assumed.isdigit() else 1
        ids, masked = _visible([str(i) for i in range(count)], environ)
        return tuple(ids), f"{ENV_ASSUME_GPU}={assumed}" + (f", {masked}" if masked else "")
    evidence: list[str] = []
    found: list[str] = []
    gpus_dir = proc / "driver" / "nvidia" / "gpus"
    try:
        found = [str(i) for i in range(len([p for p in gpus_dir.iterdir() if p.is_dir()]))]
        evidence.append(f"{len(found)} under {gpus_dir}")
    except OSError:
        evidence.append(f"no {gpus_dir}")
        try:
            nodes = sorted(int(m.group(1)) for p in dev.iterdir() if (m := re.fullmatch(r"nvidia(\d+)", p.name)))
        except OSError:
            nodes = []
        found = [str(i) for i in range(len(nodes))]
        evidence.append(f"{len(nodes)} {dev}/nvidiaN device nodes" if nodes else f"no {dev}/nvidia0")
    ids, masked = _visible(found, environ)
    if masked:
        evidence.append(masked)
    return tuple(ids), "; ".join(evidence)


def _admin_only(proc: Path) -> bool | None:
    try:
        text = (proc / "driver" / "nvidia" / "params").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    match = re.search(r"^RmProfilingAdminOnly:\s*(\d+)", text, re.MULTILINE)
    return None if match is None else match.group(1) != "0"


def _is_admin(proc: Path, uid: int) -> bool:
    if uid == 0:
        return True
    try:
        status = (proc / "self" / "status").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return False
    match = re.search(r"^CapEff:\s*([0-9a-fA-F]+)", status, re.MULTILINE)
    if not match:
        return False
    caps = int(match.group(1), 16)
    return bool(caps & (1 << _CAP_SYS_ADMIN) or caps & (1 << _CAP_PERFMON))


def gather_facts(ncu: str, *, environ: Mapping[str, str] | None = None, proc: Path = Path("/proc"),
                 dev: Path = Path("/dev"), which: Callable[[str], str | None] = shutil.which,
                 uid: int | None = None) -> PreflightFacts:
    env = os.environ if environ is None else environ
    gpu_ids, evidence = _gpus(env, proc, dev)
    return PreflightFacts(
        ncu_requested=ncu,
        ncu_path=_resolve_ncu(ncu, which),
        gpu_ids=gpu_ids,
        gpu_evidence=evidence,
        profiling_admin_only=_admin_only(proc),
        is_admin=_is_admin(proc, os.geteuid() if uid is None else uid),
    )
