"""A generated git repository for ``perfgate bisect``: each commit's pytest-benchmark result is a function of the
commit (a planted slowdown from commit ``slow_from`` on, seeded noise, commits that fail to build).

The test is a tiny script (``bench.py``) that writes a pytest-benchmark JSON with raw timings to
``$PERFGATE_BISECT_OUTPUT``: a search of 16 commits then costs milliseconds a run, not a pytest start. ``test_bench.py``
is the same benchmark as a real pytest-benchmark test on perfgate's virtual clock, for the end-to-end run.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import NamedTuple, Sequence

from tests.helpers.benchmark_suite import BENCH_OPTIONS, VIRTUAL_CLOCK

BENCH_SCRIPT = """
import json, os, random
state = json.load(open("state.json"))
run = int(open("runs.txt").read()) if os.path.exists("runs.txt") else 0  # --repeat: each run its own noise
open("runs.txt", "w").write(str(run + 1))
rng = random.Random(state["seed"] + run)
data = [state["mean"] * (1.0 + abs(rng.gauss(0.0, state["noise"]))) for _ in range(25)]
stats = {"min": min(data), "max": max(data), "mean": sum(data) / len(data), "median": sorted(data)[12],
         "stddev": 0.0, "rounds": len(data), "ops": 1.0 / min(data), "data": data}
document = {"machine_info": {"cpu": {"brand_raw": "bisect test CPU"}}, "version": "4.0.0",
            "benchmarks": [{"name": "test_step", "fullname": "test_bench.py::test_step", "group": None,
                            "stats": stats}]}
json.dump(document, open(os.environ["PERFGATE_BISECT_OUTPUT"], "w"))
"""

# A GPU perf test's counters as a perfgate baseline (what pytest --perfgate --perfgate-update writes): a kernel's
# instructions, deterministic for the same code, and its time; one run a commit is enough to judge them.
COUNTER_SCRIPT = """
import json, os
state = json.load(open("state.json"))
metrics = {"smsp__inst_executed.sum": {"unit": "", "value": round(4096 * state["mean"] / 1e-3)},
           "gpu__time_duration.sum": {"unit": "ns", "value": 1e6 * state["mean"]}}
document = {"format": "perfgate-baseline", "version": 1, "device": {"name": "NVIDIA H100", "cc": "9.0"},
            "entries": [{"kind": "kernel", "name": "gemm", "ordinal": 0, "metrics": metrics}]}
json.dump(document, open(os.environ["PERFGATE_BISECT_OUTPUT"], "w"))
"""

BUILD_SCRIPT = """
import json, sys
sys.exit(1 if json.load(open("state.json"))["broken"] else 0)
"""

PYTEST_BENCH = """
import json
import virtual_clock

def test_step(benchmark):
    mean = json.load(open("state.json"))["mean"]
    benchmark(virtual_clock.spend, mean)
"""

TEST = "test_bench.py::test_step"
COMMAND = f"{sys.executable} -S bench.py"  # -S: no site packages to import, a third of each run's time
BUILD = f"{sys.executable} -S build.py"
COUNTERS = f"{sys.executable} -S counters.py"
PYTEST_COMMAND = (f"{sys.executable} -m pytest {TEST} -q -p no:cacheprovider -p no:randomly "
                  f"--benchmark-json=\"$PERFGATE_BISECT_OUTPUT\" --benchmark-save-data {' '.join(BENCH_OPTIONS)}")


class Repo(NamedTuple):
    path: Path
    commits: list[str]  # oldest first


def git(path: Path, *args: str) -> str:
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@example.com", "GIT_CONFIG_NOSYSTEM": "1"}
    return subprocess.run(["git", *args], cwd=path, env=env, capture_output=True, text=True, check=True).stdout.strip()


def make_repo(path: Path, count: int, slow_from: int | None, noise: float = 0.01, broken: Sequence[int] = (),
              slowdown: float = 1.5, mean: float = 1e-3, seed: int = 0) -> Repo:
    """``count`` commits; from ``slow_from`` on (None: never) the benchmark is ``slowdown`` times slower. Made by one
    ``git fast-import`` (a few git processes, not three a commit), then checked out."""
    path.mkdir(parents=True)
    git(path, "init", "-q", "-b", "main")
    stream = bytearray()

    def blob(name: str, text: str) -> None:
        data = text.encode()
        stream.extend(b"M 100644 inline %s\ndata %d\n%s\n" % (name.encode(), len(data), data))

    for at in range(count):
        slow = slow_from is not None and at >= slow_from
        state = {"index": at, "seed": seed + at * 1000, "noise": noise, "broken": at in broken,
                 "mean": mean * (slowdown if slow else 1.0)}
        message = f"commit {at}".encode()
        stream.extend(b"commit refs/heads/main\nmark :%d\n" % (at + 1))
        for who in (b"author", b"committer"):
            stream.extend(b"%s t <t@example.com> %d +0000\n" % (who, 1700000000 + at))
        stream.extend(b"data %d\n%s\n" % (len(message), message))
        if at:
            stream.extend(b"from :%d\n" % at)
        else:
            for name, text in (("bench.py", BENCH_SCRIPT), ("build.py", BUILD_SCRIPT), ("test_bench.py", PYTEST_BENCH),
                               ("virtual_clock.py", VIRTUAL_CLOCK), ("counters.py", COUNTER_SCRIPT)):
                blob(name, text)
        blob("state.json", json.dumps(state))
        stream.extend(b"\n")
    marks = path / ".git" / "marks"
    subprocess.run(["git", "fast-import", "--quiet", f"--export-marks={marks}"], cwd=path, input=bytes(stream),
                   capture_output=True, check=True)
    by_mark = dict(line.split() for line in marks.read_text(encoding="utf-8").splitlines())
    marks.unlink()
    git(path, "reset", "-q", "--hard")
    return Repo(path, [by_mark[f":{at + 1}"] for at in range(count)])


def benchmark_json(path: Path, mean: float, noise: float = 0.01, seed: int = 0) -> Path:
    """A pytest-benchmark JSON like ``bench.py``'s (25 raw rounds about ``mean``): what CI measured and recorded."""
    import random

    rng = random.Random(seed)
    data = [mean * (1.0 + abs(rng.gauss(0.0, noise))) for _ in range(25)]
    stats = {"min": min(data), "max": max(data), "mean": sum(data) / len(data), "median": sorted(data)[12],
             "stddev": 0.0, "rounds": len(data), "ops": 1.0 / min(data), "data": data}
    document = {"machine_info": {"cpu": {"brand_raw": "bisect test CPU"}}, "version": "4.0.0",
                "benchmarks": [{"name": "test_step", "fullname": TEST, "group": None, "stats": stats}]}
    path.write_text(json.dumps(document), encoding="utf-8")
    return path


def clone(repo: Repo, path: Path) -> Repo:
    """A copy a test may change (git bisect's refs, a worktree's state)."""
    subprocess.run(["git", "clone", "-q", "--local", str(repo.path), str(path)], check=True, capture_output=True)
    return Repo(path, repo.commits)
