"""Issue 38's GPU check of the code identity from a cubin (perfgate.collect.cubin, perfgate.plugin.kernel_codes).

On a machine with an NVIDIA GPU, CuPy, Nsight Compute and the wheels of tests/gpu/README.md ("The code identity
check"), from the repository root:

    python tests/gpu/code_id_check.py --out "$OUT"

runs CuPy's vector_add (examples/test_cupy_raw_kernel.py's source) in three processes under CUPTI's module-loaded
callback, the third with the kernel renamed, and once under ncu, then checks:

- ``cupti_equals_ncu``: the code_id from the loaded module's cubin equals the one from ncu's report's SASS;
- ``two_processes_same``: the first two processes give the same code_id;
- ``rename_keeps_code``: the renamed kernel has the same code_id, under its new name;
- ``plugin_equals_ncu``: ``pytest examples/test_cupy_raw_kernel.py --perfgate --perfgate-source=timeline
  --perfgate-code-identity --perfgate-update`` keeps that code_id in its baseline (the CUPTI tracer's activity
  trace and the module callback together, as the timeline source runs them);
- ``torch_triton_equals_ncu``: a Triton kernel's code_id in the baseline of a timeline run under torch.profiler
  (cupti-python hidden from the traced process, so the torch tracer and Triton's compile cache give the code)
  equals the one ncu's report gives the same test (``pytest --perfgate --perfgate-code-identity``).

Written under ``--out``: ``results.json`` (each process's codes and problems, the checks, the tools' versions),
``vector_add.ncu-rep``, ``plugin/`` (the pytest run's output and baseline). Exit status 0 when every check holds, 1 when one fails, 2 when a step could not run.
About a minute and a half on an H100 (CuPy's first compile, one ncu run of one kernel).

``--dry-run`` runs the same flow without a GPU: each "process" reads our committed cubins (tests/data/cubin) in
place of the modules CUDA loads, ncu's side is our H100 report (tests/data/h100/vector_add.ncu-rep), and the
pytest runs are left out (``plugin_equals_ncu`` and ``torch_triton_equals_ncu`` are null). It needs
nvdisasm and pyelftools; tests/timeline/test_code_id_check.py runs it.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from perfgate.collect import read_table  # noqa: E402  (the repository's perfgate, not an installed one)
from perfgate.collect.cubin import find_nvdisasm  # noqa: E402
from perfgate.collect.module_codes import kernel_codes  # noqa: E402

SOURCE = r"""
extern "C" __global__ void NAME(const float* a, const float* b, float* out, int n, int stride) {
    int t = blockDim.x * blockIdx.x + threadIdx.x;
    if (t >= n) return;
    int i = (t % stride) * (n / stride) + t / stride;
    out[i] = a[i] + b[i];
}
"""
FIXTURES = {"vector_add": REPO / "tests" / "data" / "cubin" / "vector_add.sm_90.cubin",
            "vector_add_renamed": REPO / "tests" / "data" / "cubin" / "vector_add_renamed.sm_90.cubin"}
NCU_FIXTURE = REPO / "tests" / "data" / "h100" / "vector_add.ncu-rep"


def launch(name: str) -> None:
    """CuPy's vector_add under the name ``name``, launched once."""
    import cupy

    kernel = cupy.RawKernel(SOURCE.replace("NAME", name), name)
    n = 1 << 20
    a, b = cupy.random.rand(n, dtype=cupy.float32), cupy.random.rand(n, dtype=cupy.float32)
    out = cupy.empty_like(a)
    kernel(((n + 255) // 256,), (256,), (a, b, out, cupy.int32(n), cupy.int32(1)))
    cupy.cuda.Device().synchronize()


def child(name: str, result: Path, traced: bool) -> None:
    """One process: the kernel launched, its code from the cubins CUPTI saw loaded (``traced``), written to
    ``result``; untraced under ncu, which holds CUPTI itself."""
    if not traced:
        launch(name)
        return
    from cupti import cupti

    from perfgate.plugin.kernel_codes import ModuleCubins

    modules = ModuleCubins(cupti)
    modules.start()
    launch(name)
    modules.stop()
    codes, problems = kernel_codes({name}, modules.cubins)
    _write(result, {"name": name, "codes": {k: v.code_id for k, v in codes.items()}, "cubins": len(modules.cubins),
                    "problems": [*modules.problems, *problems]})


def _write(path: Path, document: dict[str, Any]) -> None:
    path.write_text(json.dumps(document, indent=1, sort_keys=True) + "\n", encoding="utf-8")


def _process(index: int, name: str, out: Path, dry_run: bool) -> dict[str, Any]:
    result = out / f"process-{index}.json"
    if dry_run:
        codes, problems = kernel_codes({name}, [FIXTURES[name].read_bytes()])
        _write(result, {"name": name, "codes": {k: v.code_id for k, v in codes.items()}, "cubins": 1,
                        "problems": problems})
    else:
        subprocess.run([sys.executable, __file__, "--child", name, "--result", str(result)], check=True, timeout=120)
    return dict(json.loads(result.read_text(encoding="utf-8")))


def _ncu_code(out: Path, dry_run: bool) -> tuple[str | None, str]:
    """vector_add's code_id from ncu's report, and the report read."""
    report = NCU_FIXTURE if dry_run else out / "vector_add.ncu-rep"
    if not dry_run:
        ncu = shutil.which("ncu") or "/usr/local/cuda/bin/ncu"
        subprocess.run([ncu, "--metrics", "gpu__time_duration.sum", "--export", str(report.with_suffix("")), "-f",
                        sys.executable, __file__, "--child", "vector_add", "--untraced"], check=True, timeout=150)
    codes = read_table(report, code=True).code or {}
    ids = {code.code_id for code in codes.values()}
    return (ids.pop() if len(ids) == 1 else None), str(report)


def _plugin_code(out: Path) -> str | None:
    """vector_add's code_id in the baseline the timeline source writes with --perfgate-code-identity."""
    folder = out / "plugin"
    folder.mkdir(exist_ok=True)
    with (folder / "pytest.txt").open("w", encoding="utf-8") as log:
        subprocess.run([sys.executable, "-m", "pytest", "examples/test_cupy_raw_kernel.py", "-p", "no:cacheprovider",
                        "--perfgate", "--perfgate-source=timeline", "--perfgate-code-identity", "--perfgate-update",
                        f"--perfgate-baselines={folder / 'baselines'}", f"--perfgate-report={folder / 'report.json'}"],
                       cwd=REPO, stdout=log, stderr=subprocess.STDOUT, timeout=150, check=False)
    return _baseline_code(folder / "baselines", "*/*.timeline.json", lambda name: name == "vector_add")


TRITON_TEST = """
import pytest

torch = pytest.importorskip("torch")
triton = pytest.importorskip("triton")
import triton.language as tl


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(out_ptr + offsets, tl.load(x_ptr + offsets, mask=mask) + tl.load(y_ptr + offsets, mask=mask), mask=mask)


@pytest.mark.perfgate
def test_triton_add(perfgate):
    n = 1 << 20
    x, y = torch.rand(n, device="cuda"), torch.rand(n, device="cuda")
    out = torch.empty_like(x)
    grid = (triton.cdiv(n, 1024),)
    add_kernel[grid](x, y, out, n, BLOCK=1024)  # compiled, and its module loaded, outside the region
    torch.cuda.synchronize()
    with perfgate.region("add"):
        add_kernel[grid](x, y, out, n, BLOCK=1024)
    torch.cuda.synchronize()
"""
NO_CUPTI = 'raise ImportError("cupti-python hidden by code_id_check.py: the torch.profiler tracer is checked")\n'


def _baseline_code(folder: Path, pattern: str, named: Callable[[str], bool]) -> str | None:
    """The one code_id the baselines ``folder/pattern`` keep for the kernels ``named`` picks; None for none or two."""
    ids = {entry["code"]["id"] for baseline in folder.glob(pattern)
           for entry in json.loads(baseline.read_text(encoding="utf-8"))["entries"]
           if named(str(entry.get("name", ""))) and "code" in entry}
    return ids.pop() if len(ids) == 1 else None


def _torch_triton_codes(out: Path) -> tuple[str | None, str | None]:
    """add_kernel's code_id from a timeline run under torch.profiler, and from an ncu run, of one Triton test."""
    folder = out / "triton"
    (folder / "no-cupti" / "cupti").mkdir(parents=True, exist_ok=True)
    (folder / "no-cupti" / "cupti" / "__init__.py").write_text(NO_CUPTI, encoding="utf-8")
    (folder / "test_triton_add.py").write_text(TRITON_TEST, encoding="utf-8")
    environ = {**os.environ, "TRITON_CACHE_DIR": str(folder / "triton-cache")}
    runs = {"timeline": ["--perfgate-source=timeline"], "ncu": []}
    for name, extra in runs.items():
        env = {**environ, "PYTHONPATH": os.pathsep.join([str(folder / "no-cupti"), str(REPO)])} \
            if name == "timeline" else {**environ, "PYTHONPATH": str(REPO)}
        with (folder / f"pytest-{name}.txt").open("w", encoding="utf-8") as log:
            subprocess.run([sys.executable, "-m", "pytest", "test_triton_add.py", "-p", "no:cacheprovider",
                            "--perfgate", *extra, "--perfgate-code-identity", "--perfgate-update",
                            "--perfgate-keep-artifacts", f"--perfgate-baselines={folder / name}",
                            f"--perfgate-report={folder / f'report-{name}.json'}"],
                           cwd=folder, env=env, stdout=log, stderr=subprocess.STDOUT, timeout=150, check=False)
    def triton(name: str) -> bool:  # the name as Kineto and ncu give a Triton kernel (no C++ mangling to drop)
        return "add_kernel" in name

    return (_baseline_code(folder / "timeline", "*/*.timeline.json", triton),
            _baseline_code(folder / "ncu", "*/*.json", triton))


def _versions() -> dict[str, str]:
    tool = find_nvdisasm()
    found: dict[str, str] = {"nvdisasm": tool or "none"}
    if tool:
        done = subprocess.run([tool, "--version"], capture_output=True, text=True, check=False)
        found["nvdisasm_version"] = next((line for line in done.stdout.splitlines() if "release" in line), "")
    return found


def _cubin_checks(out: Path, dry_run: bool) -> tuple[dict[str, bool | None], dict[str, Any]]:
    """The checks of CuPy's vector_add (CUPTI's cubin, ncu, a rename, the plugin), and what they found."""
    first, second = _process(1, "vector_add", out, dry_run), _process(2, "vector_add", out, dry_run)
    renamed = _process(3, "vector_add_renamed", out, dry_run)
    ncu_id, report = _ncu_code(out, dry_run)
    plugin_id = None if dry_run else _plugin_code(out)
    cupti_id = first["codes"].get("vector_add")
    checks = {
        "cupti_equals_ncu": cupti_id is not None and cupti_id == ncu_id,
        "two_processes_same": cupti_id is not None and cupti_id == second["codes"].get("vector_add"),
        "rename_keeps_code": (cupti_id is not None and set(renamed["codes"]) == {"vector_add_renamed"}
                              and renamed["codes"]["vector_add_renamed"] == cupti_id),
        "plugin_equals_ncu": None if dry_run else (plugin_id is not None and plugin_id == ncu_id),
    }
    return checks, {"cupti_code_id": cupti_id, "ncu_code_id": ncu_id, "ncu_report": report,
                    "plugin_code_id": plugin_id, "processes": [first, second, renamed]}


def check(out: Path, dry_run: bool, which: str = "all") -> int:
    out.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    checks: dict[str, bool | None] = {}
    found: dict[str, Any] = {}
    if which in ("cubin", "all"):
        checks, found = _cubin_checks(out, dry_run)
    if which in ("triton", "all"):
        torch_id, triton_ncu_id = (None, None) if dry_run else _torch_triton_codes(out)
        checks["torch_triton_equals_ncu"] = None if dry_run else (torch_id is not None and torch_id == triton_ncu_id)
        found.update(torch_triton_code_id=torch_id, triton_ncu_code_id=triton_ncu_id)
    _write(out / "results.json", {"dry_run": dry_run, "checks": checks, **found,
                                  "seconds": round(time.monotonic() - started, 1), **_versions()})
    for name, held in checks.items():
        print(f"{'skip' if held is None else 'ok  ' if held else 'FAIL'} {name}")
    print(f"code_ids: {', '.join(f'{k} {v}' for k, v in found.items() if k.endswith('code_id'))}; "
          f"results in {out / 'results.json'}")
    return 0 if all(held is not False for held in checks.values()) else 1


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=Path(os.environ.get("OUT") or "code-id-check"))
    parser.add_argument("--dry-run", action="store_true", help="our committed cubins and H100 report, no GPU")
    parser.add_argument("--checks", choices=("cubin", "triton", "all"), default="all",
                        help="CuPy's vector_add checks, the torch.profiler Triton check, or both (default)")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--result", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--untraced", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        child(args.child, args.result, traced=not args.untraced)
        return 0
    try:
        return check(args.out, args.dry_run, args.checks)
    except (subprocess.SubprocessError, OSError) as exc:
        print(f"code_id_check: a step could not run: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
