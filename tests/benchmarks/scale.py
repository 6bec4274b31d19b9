"""perfgate against its floors, interleaved, in CPU time and peak memory: the figures of
docs/performance.md's tables, and the harness the speed tests and benchmarks use.

Each measured command runs in its own process; its CPU time (user + system) and peak resident memory
come from ``os.wait4``, so other processes on a shared machine do not count, and the two commands of a
pair run alternately so that load falls on both alike. A ratio is the median over the rounds of
(perfgate / floor) of the same round.

Floors:

* ``csv``: a bare pandas script that only reads both ncu CSV files (``==PROF==`` lines dropped) and
  joins them (``BARE_PANDAS``). perfgate runs ``perfgate compare BASE CUR --format F -o FILE``.
* ``ncu-rep``: loading both reports with ``ncu_report`` and reading every metric of every launch
  (``NCU_REPORT_FLOOR``); perfgate runs ``perfgate compare A B`` on them.

Reproduce docs/performance.md's figures (about 10 minutes on 2 cores; the 50k files take 1.3 GB in the folder)::

    .venv/bin/python tests/benchmarks/scale.py --launches 10000 50000 --repeat 5 --data /tmp/perfgate-scale

``--before CHECKOUT`` also runs the perfgate of another checkout (``PYTHONPATH=CHECKOUT``, e.g. a
``git worktree`` of the previous commit) in the same rounds, floor, before and after alternating, so that
a before → after figure is measured under the same load. Without it the measured perfgate is the one
the interpreter imports: set ``PYTHONPATH`` to a checkout to measure that one.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import textwrap
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Sequence

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
sys.path.insert(0, str(HERE.parent))
from helpers.csvgen import write_details_csv, write_raw_csv  # noqa: E402

METRICS = 20
FORMATS = ("json", "text", "md", "html")

BARE_PANDAS = textwrap.dedent("""
    import io, sys
    import pandas as pd

    def read(path):
        with open(path, encoding="utf-8") as fh:
            text = "".join(line for line in fh if not line.startswith("=="))
        return pd.read_csv(io.StringIO(text), thousands=",")

    base, cur = read(sys.argv[1]), read(sys.argv[2])
    keys = ["ID", "Kernel Name", "Metric Name"] if "Metric Name" in base.columns else ["ID", "Kernel Name"]
    joined = base.merge(cur, on=keys, how="outer", suffixes=("_b", "_c"))
    print(len(joined))
""")

NCU_REPORT_FLOOR = textwrap.dedent("""
    import sys
    import ncu_report

    values = 0
    for path in sys.argv[1:]:
        context = ncu_report.load_report(path)
        for r in range(context.num_ranges()):
            profiled = context.range_by_idx(r)
            for a in range(profiled.num_actions()):
                action = profiled.action_by_idx(a)
                for name in action.metric_names():
                    values += action.metric_by_name(name).value() is not None
    print(values)
""")


@dataclass(frozen=True)
class Run:
    cpu: float  # seconds, user + system
    peak: float  # MiB, maximum resident set


def environment(**extra: str) -> dict[str, str]:
    """The environment of a measured process: Python may cache compiled modules, as an installed perfgate
    (or pandas) has them; with PYTHONDONTWRITEBYTECODE every run would compile perfgate's modules again."""
    env = {**os.environ, **extra}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


def measure(command: Sequence[str], cwd: Path = REPO, ok: Sequence[int] = (0, 1),
            env: dict[str, str] | None = None) -> Run:
    """Run ``command`` to completion; its own CPU time and peak memory (not its siblings')."""
    process = subprocess.Popen(list(command), cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                               env=environment() if env is None else env)
    assert process.stderr is not None
    error = process.stderr.read()
    _, status, usage = os.wait4(process.pid, 0)
    process.stderr.close()
    code = os.waitstatus_to_exitcode(status)
    process.returncode = code
    if code not in ok:
        raise RuntimeError(f"{' '.join(map(str, command))} exited {code}: {error.decode(errors='replace')[-2000:]}")
    return Run(cpu=usage.ru_utime + usage.ru_stime, peak=usage.ru_maxrss / 1024)


@dataclass
class Pair:
    """Interleaved rounds of a floor and perfgate."""

    floor: list[Run] = field(default_factory=list)
    ours: list[Run] = field(default_factory=list)

    @property
    def cpu_ratio(self) -> float:
        return statistics.median(o.cpu / f.cpu for f, o in zip(self.floor, self.ours))

    @property
    def peak_ratio(self) -> float:
        return statistics.median(o.peak / f.peak for f, o in zip(self.floor, self.ours))

    def median(self, which: str, what: str) -> float:
        return statistics.median(getattr(run, what) for run in getattr(self, which))


def interleaved(floor: Sequence[str], ours: Sequence[str], repeat: int,
                measure_one: Callable[[Sequence[str]], Run] = measure) -> Pair:
    pair = Pair()
    for _ in range(repeat):
        pair.floor.append(measure_one(floor))
        pair.ours.append(measure_one(ours))
    return pair


def interleaved_with_before(floor: Sequence[str], ours: Sequence[str], repeat: int,
                            measure_one: Callable[[Sequence[str]], Run],
                            before: Callable[[], Run] | None) -> tuple[Pair, Pair]:
    """``interleaved``, and when ``before`` is given (another perfgate) it runs in each round too, between the
    floor and ours: (ours against the floor, before against the same floor runs)."""
    pair, other = Pair(), Pair()
    for _ in range(repeat):
        pair.floor.append(measure_one(floor))
        if before is not None:
            other.floor.append(pair.floor[-1])
            other.ours.append(before())
        pair.ours.append(measure_one(ours))
    return pair, other


# ---------------------------------------------------------------- inputs

def csv_pair(folder: Path, page: str, launches: int, changed: bool = True,
             roofline: bool = False) -> tuple[Path, Path]:
    """Two ncu CSV exports of ``launches`` x 20 metrics: a baseline and a current run in which every
    launch changed (``changed``, the worst case for reports) or the same code measured again; ``roofline``: 7 of
    the 20 are the roofline's counters (``csvgen.ROOFLINE``), so that ``--metrics +roofline`` derives its metrics."""
    writer = write_details_csv if page == "details" else write_raw_csv
    folder.mkdir(parents=True, exist_ok=True)
    kind = "-roofline" if roofline else ""
    base = folder / f"{page}-{launches}{kind}-base.csv"
    cur = folder / f"{page}-{launches}{kind}-{'changed' if changed else 'rerun'}.csv"
    if not base.is_file():
        writer(base, launches, METRICS, seed=1, run=1, roofline=roofline)
    if not cur.is_file():
        if changed:
            writer(cur, launches, METRICS, seed=2, scale=1.01, roofline=roofline)
        else:
            writer(cur, launches, METRICS, seed=1, run=2, roofline=roofline)
    return base, cur


def csv_commands(base: Path, cur: Path, fmt: str, out: Path, python: str = sys.executable,
                 floor_script: Path | None = None, extra: Sequence[str] = ()) -> tuple[list[str], list[str]]:
    if floor_script is None:
        floor_script = out.parent / "bare_pandas.py"
    if not floor_script.is_file():
        floor_script.write_text(BARE_PANDAS, encoding="utf-8")
    return ([python, str(floor_script), str(base), str(cur)],
            [python, "-m", "perfgate", "compare", str(base), str(cur), "--format", fmt, "-o", str(out), *extra])


def ncu_rep_commands(base: Path, cur: Path, folder: Path, python: str = sys.executable) -> tuple[list[str], list[str]]:
    script = folder / "ncu_report_floor.py"
    if not script.is_file():
        script.write_text(NCU_REPORT_FLOOR, encoding="utf-8")
    return [python, str(script), str(base), str(cur)], [python, "-m", "perfgate", "compare", str(base), str(cur)]


# ---------------------------------------------------------------- the table of docs/performance.md

def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--launches", type=int, nargs="*", default=[10_000])
    parser.add_argument("--pages", nargs="+", default=["details", "raw"], choices=("details", "raw"))
    parser.add_argument("--formats", nargs="+", default=list(FORMATS), choices=FORMATS)
    parser.add_argument("--rerun", action="store_true", help="the same code measured twice instead of every "
                                                             "launch changed")
    parser.add_argument("--roofline", action="store_true", help="7 of the 20 metrics the roofline's counters, compared "
                                                               "with --metrics +roofline (derived metrics on)")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--data", type=Path, default=Path("/tmp/perfgate-scale"))
    parser.add_argument("--python", default=sys.executable, help="the interpreter that has perfgate installed")
    parser.add_argument("--before", type=Path, metavar="CHECKOUT",
                        help="also measure the perfgate of this checkout (PYTHONPATH) in the same rounds")
    parser.add_argument("--ncu-rep", nargs="*", type=Path, default=[],
                        help="also compare each of these .ncu-rep files with itself against the ncu_report floor")
    args = parser.parse_args(argv)
    args.data.mkdir(parents=True, exist_ok=True)
    args.ncu_rep = [report.resolve() for report in args.ncu_rep]  # the commands run in --data

    def run(command: Sequence[str]) -> Run:  # outside the checkout: -m must find the installed perfgate
        return measure(command, cwd=args.data)

    def before_of(command: Sequence[str]) -> Callable[[], Run] | None:
        if args.before is None:
            return None
        env = environment(PYTHONPATH=str(args.before.resolve()))
        return lambda: measure(command, cwd=args.data, env=env)

    def row(name: str, fmt: str, pair: Pair, size: str) -> None:
        print(f"| {name} | {fmt} | {pair.median('floor', 'cpu'):.2f} s / {pair.median('floor', 'peak'):.0f} MiB | "
              f"{pair.median('ours', 'cpu'):.2f} s / {pair.median('ours', 'peak'):.0f} MiB | {pair.cpu_ratio:.2f}× | "
              f"{pair.peak_ratio:.2f}× | {size} |", flush=True)

    print("| input | format | floor CPU / peak | perfgate CPU / peak | CPU ratio | peak ratio | JSON size |")
    print("|---|---|---:|---:|---:|---:|---:|")
    for launches in args.launches:
        for page in args.pages:
            base, cur = csv_pair(args.data, page, launches, changed=not args.rerun, roofline=args.roofline)
            for fmt in args.formats:
                out = args.data / f"out.{fmt}"
                floor, ours = csv_commands(base, cur, fmt, out, args.python,
                                           extra=("--metrics", "+roofline") if args.roofline else ())
                pair, before = interleaved_with_before(floor, ours, args.repeat, run, before_of(ours))
                size = f"{out.stat().st_size / 1e6:.1f} MB" if fmt == "json" else ""
                if args.before is not None:
                    row(f"{page} {launches:,}, before", fmt, before, "")
                row(f"{page} {launches:,}", fmt, pair, size)
    for report in args.ncu_rep:
        floor, ours = ncu_rep_commands(report, report, args.data, args.python)
        pair, before = interleaved_with_before(floor, ours, args.repeat, run, before_of(ours))
        if args.before is not None:
            row(f"{report.name} with itself, before", "text", before, "")
        row(f"{report.name} with itself", "text", pair, "")
    return 0


if __name__ == "__main__":
    sys.exit(main())
