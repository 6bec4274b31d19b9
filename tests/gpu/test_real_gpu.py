"""``pytest --perfgate`` on the examples with real Nsight Compute: marked ``gpu``, skipped where there
is no NVIDIA GPU, ncu, torch or CuPy (perfgate's own preflight decides about the first two).

They reproduce on any GPU machine what perfgate's own fixtures under ``tests/data/h100`` were
captured from (``tests/gpu/capture.sh``): the examples gated with real ncu, a deliberate regression,
and NVTX filtering checked against an independent count of launches (torch.profiler).

``PERFGATE_TEST_CLOCK_CONTROL`` picks ncu's clock control for these runs (default: perfgate's
default, ``base``); on machines where ncu may not lock clocks (some VMs) set it to ``none``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from perfgate.plugin.preflight import check_preflight, gather_facts
from perfgate.report import launch_rows, result_rows

_UNAVAILABLE = check_preflight(gather_facts("ncu"))
pytestmark = [pytest.mark.gpu,
              pytest.mark.skipif(_UNAVAILABLE is not None, reason=f"needs a GPU and ncu: {_UNAVAILABLE}")]

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples"
CUPY_TEST = "examples/test_cupy_raw_kernel.py::test_vector_add"
MLP_TEST = "examples/test_torch_mlp_layers.py::test_mlp_layer_by_layer"
SOFTMAX_TEST = "examples/test_torch_softmax.py::test_softmax"


def perfgate_pytest(tmp: Path, *args: str, env: dict[str, str] | None = None,
                    name: str = "run") -> tuple[subprocess.CompletedProcess[str], dict[str, Any]]:
    report = tmp / f"{name}.json"
    clock = os.environ.get("PERFGATE_TEST_CLOCK_CONTROL")
    command = [sys.executable, "-m", "pytest", *args, "--ignore=examples/cpu", "-p", "no:cacheprovider", "-rA",
               f"--perfgate-baselines={tmp / 'baselines'}", f"--perfgate-report={report}"]
    if clock:
        command.append(f"--perfgate-clock-control={clock}")
    done = subprocess.run(command, cwd=REPO, capture_output=True, text=True, timeout=900,
                          env={**os.environ, **(env or {})}, check=False)
    document = json.loads(report.read_text(encoding="utf-8")) if report.is_file() else {}
    return done, document


@pytest.fixture(scope="module")
def baselines(tmp_path_factory: pytest.TempPathFactory) -> Path:
    pytest.importorskip("torch")
    pytest.importorskip("cupy")
    tmp = tmp_path_factory.mktemp("gpu")
    done, report = perfgate_pytest(tmp, "examples", "--perfgate-update", name="update")
    assert done.returncode == 0, done.stdout + done.stderr
    written = sorted(p.name for p in (tmp / "baselines").rglob("*.json"))
    assert len(written) == 3, written
    return tmp


def test_unchanged_code_passes(baselines: Path) -> None:
    done, report = perfgate_pytest(baselines, "examples", "--perfgate", name="gate")
    assert done.returncode == 0, done.stdout + done.stderr
    assert report["verdict"] == "pass"
    assert report["summary"]["regression"] == 0
    statuses = Counter(launch["status"] for launch in launch_rows(report))
    assert statuses["unchanged"] + statuses["improvement"] == len(launch_rows(report)), statuses


def test_deliberate_regression_fails_and_names_kernel_and_metrics(baselines: Path) -> None:
    done, report = perfgate_pytest(baselines, CUPY_TEST, "--perfgate", name="regression",
                                   env={"PERFGATE_EXAMPLE_REGRESSION": "1"})
    out = done.stdout + done.stderr
    assert done.returncode == 1, out
    assert "perfgate: performance regression" in out and "vector_add" in out
    moved = {r["metric"] for r in result_rows(report) if r["status"] == "regression"}
    assert {"gpu__time_duration.sum", "lts__t_sectors.sum"} <= moved, moved


def _kernels_by_region(report: dict[str, Any], test: str) -> Counter[str]:
    return Counter(launch["region"] for launch in launch_rows(report)
                   if launch["kind"] == "kernel" and launch["test"] == test)


def test_sections_let_ncus_rules_name_the_cause_of_the_regression(tmp_path: Path) -> None:
    """``--perfgate-sections``: the uncoalesced variant fails, and the failure says which ncu finding appeared."""
    pytest.importorskip("cupy")
    sections = "--perfgate-sections=SpeedOfLight,SourceCounters"
    done, _ = perfgate_pytest(tmp_path, CUPY_TEST, "--perfgate-update", sections, name="sections-update")
    assert done.returncode == 0, done.stdout + done.stderr
    done, report = perfgate_pytest(tmp_path, CUPY_TEST, "--perfgate", sections, name="sections",
                                   env={"PERFGATE_EXAMPLE_REGRESSION": "1"})
    out = done.stdout + done.stderr
    assert done.returncode == 1, out
    assert "ncu findings appeared: " in out and "Uncoalesced Global Accesses" in out, out


def test_nvtx_keeps_exactly_the_kernels_launched_in_regions(baselines: Path) -> None:
    """Counted independently with torch.profiler: backward kernels (autograd's thread) included,
    warm-up and setup kernels outside the regions excluded."""
    _, report = perfgate_pytest(baselines, "examples", "--perfgate", name="nvtx")
    counted = subprocess.run([sys.executable, str(Path(__file__).with_name("mlp_kernel_counts.py"))],
                             cwd=REPO, capture_output=True, text=True, timeout=600, check=True)
    expected = {region: len(names) for region, names in json.loads(counted.stdout).items()}
    assert expected["backward"] > 0
    assert dict(_kernels_by_region(report, MLP_TEST)) == expected
    assert dict(_kernels_by_region(report, CUPY_TEST)) == {"vector_add": 1}
    assert dict(_kernels_by_region(report, SOFTMAX_TEST)) == {"softmax": 1}
    totals = {launch["kernel"] for launch in launch_rows(report)
              if launch["kind"] == "region" and launch["test"] == MLP_TEST}
    assert totals == {*expected, "total"}


GROUPED = '''
import cupy
import pytest

KERNEL = cupy.RawKernel(r"""
extern "C" __global__ void scale(float* x, float a, int n) {
    int i = blockDim.x * blockIdx.x + threadIdx.x;
    if (i < n) x[i] *= a;
}
""", "scale")


@pytest.mark.perfgate(kernels="scale")
@pytest.mark.parametrize("launches", [1, 2, 3])
def test_scale(perfgate, launches):
    x = cupy.ones(1 << 20, dtype=cupy.float32)
    KERNEL(((1 << 20) // 256,), (256,), (x, cupy.float32(2.0), cupy.int32(1 << 20)))  # warm-up, not profiled
    with perfgate.region("scale"):
        for _ in range(launches):
            KERNEL(((1 << 20) // 256,), (256,), (x, cupy.float32(2.0), cupy.int32(1 << 20)))
    cupy.cuda.Device().synchronize()
'''


def test_tests_sharing_ncu_options_share_one_child_on_real_ncu(tmp_path: Path) -> None:
    """Three perf tests, one ncu run: each test gets exactly its own launches (1, 2 and 3), as when each
    runs in a child of its own."""
    pytest.importorskip("cupy")
    (tmp_path / "test_grouped.py").write_text(GROUPED, encoding="utf-8")
    clock = os.environ.get("PERFGATE_TEST_CLOCK_CONTROL")
    reports = {}
    for mode in ("grouped", "isolated"):
        command = [sys.executable, "-m", "pytest", "test_grouped.py", "-p", "no:cacheprovider", "-rA", "--perfgate-update",
                   f"--perfgate-report={tmp_path / mode}.json", f"--perfgate-baselines={tmp_path / mode}"]
        command += [f"--perfgate-clock-control={clock}"] if clock else []
        command += ["--perfgate-isolate"] if mode == "isolated" else []
        done = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, timeout=900, check=False)
        assert done.returncode == 0, done.stdout + done.stderr
        assert ("perfgate: profiling 3 perf tests in one child" in done.stdout) == (mode == "grouped")
        reports[mode] = json.loads((tmp_path / f"{mode}.json").read_text(encoding="utf-8"))
    for report in reports.values():
        counts = Counter(launch["test"] for launch in launch_rows(report) if launch["kind"] == "kernel")
        assert counts == {f"test_grouped.py::test_scale[{n}]": n for n in (1, 2, 3)}
