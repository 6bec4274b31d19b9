"""Verdict families for ``perfgate compare --history`` on ncu CSV details pages that do not name their GPU (issue 35,
item 5): the base branch records runs of a program, then runs of unchanged code and of a regression are compared
against its history alone (the reference and the learned thresholds).

Expectations, written before the first run: an unchanged run ``pass`` (an inconclusive or failing one is a false
alarm), a run with one kernel +8% (1.6x the hand-set 5% threshold) ``fail`` (anything else is a miss). Each family
also says whether thresholds were learned at all (a note ``history: ... gated at``).

Noise model: as ``scenarios`` (a run factor N(1, 0.3%) shared by a run's launches, a jitter N(0, 0.25 us) per
launch), with each family's own per-launch spread (log-normal): 0.4% for a steady GEMM, 1.5% for a kernel whose
launches meet interference (other streams, memory contention).

``python tests/verdicts/history_thresholds.py [--seeds N]`` prints the figures.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import random
import sys
import tempfile
from collections import Counter
from pathlib import Path
from typing import NamedTuple

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent.parent))
sys.path.insert(0, str(HERE))

from perfgate.cli import main as perfgate  # noqa: E402
from scenarios import HEADER, INST, TIME, _cell, _q  # noqa: E402

HISTORY_RUNS = 8


class Program(NamedTuple):
    """Kernels of a program: (demangled name, time in us, launches a run, per-launch spread, region)."""

    family: str
    kernels: tuple[tuple[str, float, int, float, str], ...]


PROGRAMS = (
    Program("once per run, 100 us", (("void gemm_kernel<float, 128, 8>(float *)", 100.0, 1, 0.004, "step"),)),
    Program("x40, 100 us, steady launches", (("void gemm_kernel<float, 128, 8>(float *)", 100.0, 40, 0.004, "step"),)),
    Program("x40, 400 us, launches meeting interference",
            (("void reduce_kernel<float>(const float *, float *, int)", 400.0, 40, 0.015, "step"),)),
    Program("x20 two kernels, 200 us and 30 us", (("void gemm_kernel<float, 128, 8>(float *)", 200.0, 20, 0.01, "step"),
                                                   ("void add_kernel(float *, int)", 30.0, 20, 0.02, "step"))),
)


def write_details(path: Path, program: Program, rng: random.Random, slower: float = 1.0) -> None:
    """One run as ``ncu --csv --page details --nvtx --metrics gpu__time_duration.sum,smsp__inst_executed.sum``
    writes it: no ``device__attribute_display_name``, so the GPU is known by its index only. ``slower``: the first
    kernel's time factor."""
    run_factor = 1.0 + rng.gauss(0.0, 0.003)
    lines = [_q(HEADER)]
    number = 0
    for index, (name, time_us, count, spread, region) in enumerate(program.kernels):
        for _ in range(count):
            factor = run_factor * rng.lognormvariate(0.0, spread) * (slower if index == 0 else 1.0)
            time = max(1.0, time_us * 1000.0 * factor + rng.gauss(0.0, 250.0))
            prefix = [str(number), "4242", "python3", "127.0.0.1", _cell(region), name, "1", "7", "(256, 1, 1)",
                      "(1024, 1, 1)", "0", "9.0", "Command line profiler metrics"]
            lines += [_q([*prefix, INST, "inst", f"{time_us * 2e4:,.0f}"]), _q([*prefix, TIME, "ns", f"{time:,.0f}"])]
            number += 1
    path.write_text("".join(lines), encoding="utf-8")


def _quiet(*args: str) -> int:
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        return perfgate(list(args))


def record_history(folder: Path, url: str, program: Program, rng: random.Random, runs: int = HISTORY_RUNS) -> None:
    """``runs`` runs of the base branch, each compared with the first and its report recorded."""
    first = folder / "run0.csv"
    write_details(first, program, rng)
    for index in range(runs):
        run = folder / f"run{index}.csv"
        if index:
            write_details(run, program, rng)
        report = folder / f"run{index}.json"
        _quiet("compare", str(first), str(run), "--format", "json", "-o", str(report))
        assert _quiet("history", "record", str(report), "--db", url, "--commit", f"{index:040x}", "--branch", "main",
                      "--when", f"2026-11-01T{index // 60:02d}:{index % 60:02d}:00Z") == 0


class Outcome(NamedTuple):
    family: str
    expect: str
    verdict: str
    learned: bool  # a "gated at" note: thresholds were learned
    notes: tuple[str, ...]


def judged(folder: Path, url: str, program: Program, rng: random.Random, slower: float) -> Outcome:
    current, out = folder / "current.csv", folder / "current.json"
    write_details(current, program, rng, slower)
    _quiet("compare", str(current), "--history", url, "--format", "json", "-o", str(out))
    report = json.loads(out.read_text(encoding="utf-8"))
    notes = tuple(str(note) for note in report["notes"] if str(note).startswith("history:"))
    return Outcome(program.family, "pass" if slower == 1.0 else "fail", str(report["verdict"]),
                   any(" gated at " in note for note in notes), notes)


def run(seeds: int, unchanged: int = 3, regressed: int = 2, runs: int = HISTORY_RUNS) -> list[Outcome]:
    outcomes = []
    for seed in range(1, seeds + 1):
        for program in PROGRAMS:
            rng = random.Random(seed * 1000 + PROGRAMS.index(program))
            with tempfile.TemporaryDirectory() as name:
                folder = Path(name)
                url = f"sqlite:///{folder / 'history.sqlite'}"
                record_history(folder, url, program, rng, runs)
                for slower in [1.0] * unchanged + [1.08] * regressed:
                    outcomes.append(judged(folder, url, program, rng, slower))
    return outcomes


def summary(outcomes: list[Outcome]) -> str:
    lines = []
    for family in dict.fromkeys(o.family for o in outcomes):
        for expect in ("pass", "fail"):
            mine = [o for o in outcomes if o.family == family and o.expect == expect]
            verdicts = Counter(o.verdict for o in mine)
            lines.append(f"{family:42} expect {expect}: " + ", ".join(f"{n} {v}" for v, n in sorted(verdicts.items()))
                         + f"; thresholds learned in {sum(o.learned for o in mine)} of {len(mine)}")
    unchanged = [o for o in outcomes if o.expect == "pass"]
    slow = [o for o in outcomes if o.expect == "fail"]
    lines.append(f"unchanged {len(unchanged)}: false alarms (not a pass) {sum(o.verdict != 'pass' for o in unchanged)}"
                 f"; regressed {len(slow)}: misses {sum(o.verdict != 'fail' for o in slow)}; thresholds learned in "
                 f"{sum(o.learned for o in outcomes)} of {len(outcomes)}")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--history-runs", type=int, default=HISTORY_RUNS, help="base-branch runs recorded")
    args = parser.parse_args()
    outcomes = run(args.seeds, runs=args.history_runs)
    print(summary(outcomes))
    print("example notes:", *dict.fromkeys(n for o in outcomes[:6] for n in o.notes), sep="\n  ")


if __name__ == "__main__":
    main()
