"""A reader that goes away (``| head``) does not change ``compare``'s verdict: exit 1 on a regression, through a
real pipe, never 0, 120 or a traceback."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
BENCHMARKS = 1500  # a JSON report far larger than a pipe's 64 KiB buffer: the writes meet the closed pipe


def _bench(path: Path, factor: float) -> Path:
    benchmarks = []
    for index in range(BENCHMARKS):
        base = 0.001 * (1 + index % 7)
        data = [factor * base * (1 + i / 100) for i in range(20)]
        benchmarks.append({"name": f"test_{index}", "fullname": f"t.py::test_{index}", "group": None,
                           "params": None, "stats": {"min": min(data), "max": max(data), "mean": sum(data) / 20,
                                                     "median": data[10], "stddev": base * 0.05, "rounds": 20,
                                                     "data": data}})
    path.write_text(json.dumps({"machine_info": {"cpu": {"brand_raw": "Test CPU"}}, "benchmarks": benchmarks}))
    return path


@pytest.fixture(scope="module")
def pair(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    folder = tmp_path_factory.mktemp("pipe")
    return _bench(folder / "base.json", 1.0), _bench(folder / "slow.json", 1.5)


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(REPO)}


@pytest.mark.parametrize("fmt", ["json", "text"])
def test_a_closed_pipe_keeps_the_regression_status(pair: tuple[Path, Path], fmt: str) -> None:
    base, slow = pair
    process = subprocess.Popen([sys.executable, "-m", "perfgate", "compare", str(base), str(slow), "--format", fmt],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=_env(), cwd=REPO)
    assert process.stdout is not None and process.stderr is not None
    head = process.stdout.read(100)
    process.stdout.close()  # as `head -c 100` does
    err = process.stderr.read().decode()
    assert process.wait(timeout=120) == 1, err
    assert len(head) == 100 and "Traceback" not in err and "Exception ignored" not in err


@pytest.mark.skipif(shutil.which("bash") is None or shutil.which("head") is None, reason="needs bash and head")
def test_pipefail_sees_the_regression(pair: tuple[Path, Path]) -> None:
    base, slow = pair
    command = (f"{sys.executable} -m perfgate compare {base} {slow} --format json | head -c 100 >/dev/null; "
               f"echo \"${{PIPESTATUS[0]}}\"")
    done = subprocess.run(["bash", "-o", "pipefail", "-c", command], capture_output=True, text=True, env=_env(),
                          cwd=REPO, timeout=120)
    assert done.stdout.strip() == "1", done.stderr
    same = subprocess.run(["bash", "-o", "pipefail", "-c", f"{sys.executable} -m perfgate compare {base} {base} "
                           "--format json | head -c 100 >/dev/null"], capture_output=True, text=True, env=_env(),
                          cwd=REPO, timeout=120)
    assert same.returncode == 0, same.stderr
