"""Run the verdict scenarios and count what a gate would have told its users.

``python tests/verdicts/runner.py [--reruns N] [--seed S]`` prints each family's figures and the totals: false
alarms (a run with nothing past its limit that did not pass: fail or not measured), misses (a run holding a
regression of at least 1.5x its threshold that passed, an ambiguous rename that passed, or a ``flagged`` change
that passed with no note saying what hid it), unchanged runs called inconclusive (exit 0), misattributions (a
caught regression that fails a launch other than the slow ones, by kernel, region and occurrence) and slow launches
left unnamed (a caught regression that does not fail every slow launch: one measured within its own limit).
The normal suite runs a reduced, seeded version (tests/engine/test_verdicts.py); this is the full one.
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
from collections import defaultdict
from pathlib import Path
from typing import NamedTuple

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent.parent))
sys.path.insert(0, str(HERE))

import numpy as np  # noqa: E402

from perfgate.collect import read_table  # noqa: E402
from perfgate.compare import Comparison, compare_tables  # noqa: E402
from perfgate.errors import InputError  # noqa: E402
from perfgate.table import Measurement  # noqa: E402
from perfgate.vocabulary import KIND_KERNEL, Status  # noqa: E402
from scenarios import BenchScenario, Scenario, benchmarks, generated, write_benchmark, write_run  # noqa: E402

REPO = HERE.parent.parent
CORPUS = REPO.parent / "shared" / "corpus" / "ncu-rep"
H100 = REPO / "tests" / "data" / "h100"
# Real reports at consecutive commits or reruns: (family, name, expect, baseline, current).
REAL = [
    ("real reports", "H100 MLP rerun", "unchanged", H100 / "mlp.ncu-rep.xz", H100 / "mlp.rerun.ncu-rep.xz"),
    ("real reports", "H100 softmax rerun", "unchanged", H100 / "softmax.ncu-rep.xz", H100 / "softmax.rerun.ncu-rep.xz"),
    ("real reports", "H100 vector_add rerun", "unchanged", H100 / "vector_add.ncu-rep",
     H100 / "vector_add.rerun.ncu-rep"),
    ("real reports", "H100 MLP rerun (default metrics)", "unchanged", H100 / "default-metrics" / "mlp.ncu-rep.xz",
     H100 / "default-metrics" / "mlp.rerun.ncu-rep.xz"),
    ("real reports", "H100 vector_add regressed", "regression", H100 / "default-metrics" / "vector_add.ncu-rep",
     H100 / "default-metrics" / "vector_add.regressed.ncu-rep"),
    ("real reports", "T4 v2 -> v3 (same work)", "unchanged", CORPUS / "mlp-t4" / "report_v2.ncu-rep",
     CORPUS / "mlp-t4" / "report_v3_loop_unroll.ncu-rep"),
    ("real reports", "T4 v3 -> v4 (+123%)", "regression", CORPUS / "mlp-t4" / "report_v3_loop_unroll.ncu-rep",
     CORPUS / "mlp-t4" / "report_v4_8_per_thread.ncu-rep"),
    ("real reports", "T4 v6 -> v7 (same work)", "unchanged", CORPUS / "mlp-t4" / "report_v6_1d_1_per_thread.ncu-rep",
     CORPUS / "mlp-t4" / "report_v7_1d_1_per_thread_blocked.ncu-rep"),
    ("real reports", "A10G b644635 -> a62323b (same kernels)", "unchanged", CORPUS / "esmm-a10g" / "b644635.ncu-rep",
     CORPUS / "esmm-a10g" / "a62323b_output.ncu-rep"),
]


class Outcome(NamedTuple):
    family: str
    name: str
    expect: str
    verdict: str
    false_alarm: bool
    miss: bool
    misattributed: bool
    unnamed: bool
    failing: frozenset[tuple[str, str, int]]
    inconclusive: bool = False  # an unchanged run the gate called inconclusive (exit 0; not a false alarm)


def failing_launches(comparison: Comparison) -> frozenset[tuple[str, str, int]]:
    """(demangled, region, occurrence among its name and region in the current run) of each failing kernel launch."""
    launches = comparison.launches
    kernel = launches["kind"] == KIND_KERNEL
    regressed = kernel & (launches["status"] == Status.REGRESSION.value)
    seen: dict[tuple[str, str], list[int]] = defaultdict(list)
    order = sorted(range(len(launches)), key=lambda i: int(launches["ordinal"][i]))
    for i in order:  # a name's launches by their ordinal in the current run: the occurrence among them
        if kernel[i] and launches["status"][i] != Status.MISSING.value:
            seen[(str(launches["demangled"][i]), str(launches["region"][i]))].append(i)
    found = set()
    for (name, region), rows in seen.items():
        for occurrence, i in enumerate(rows):
            if regressed[i]:
                found.add((name, region, occurrence))
    return frozenset(found)


def compared(base: Path, cur: Path, table: Measurement | None = None) -> Comparison | None:
    """The comparison of two inputs (``table``: the current run, changed), None where compare refuses (exit 2)."""
    try:
        return compare_tables(read_table(base), table or read_table(cur))
    except InputError:
        return None


_SAYS_HIDDEN = "floor"  # a note that says a floor hid a change (notes.floor_notes and its kin)


def judge(family: str, name: str, expect: str, comparison: Comparison | None,
          slow: frozenset[tuple[str, str, int]] = frozenset()) -> Outcome:
    verdict = comparison.verdict if comparison is not None else "not measured"
    failing = failing_launches(comparison) if comparison is not None else frozenset()
    alarm = verdict in ("fail", "not measured")
    said = comparison is not None and any(_SAYS_HIDDEN in note for note in comparison.notes)
    miss = ((expect == "regression" and verdict != "fail") or (expect == "unpaired" and verdict == "pass")
            or (expect == "flagged" and verdict == "pass" and not said))
    caught = expect == "regression" and verdict == "fail" and bool(slow)
    return Outcome(family, name, expect, verdict, expect == "unchanged" and alarm, miss,
                   caught and bool(failing - slow), caught and bool(slow - failing), failing,
                   expect == "unchanged" and verdict == "inconclusive")


def run_generated(scenario: Scenario, seed: int, folder: Path) -> Outcome:
    rng = random.Random(f"{scenario.family}/{scenario.name}/{seed}")
    base, cur = folder / "base.csv", folder / "cur.csv"
    write_run(base, scenario.baseline, rng)
    write_run(cur, scenario.current, rng)
    return judge(scenario.family, scenario.name, scenario.expect, compared(base, cur), scenario.slow)


def run_benchmark(scenario: BenchScenario, seed: int, folder: Path) -> Outcome:
    rng = random.Random(f"{scenario.family}/{scenario.name}/{seed}")
    base, cur = folder / "base.json", folder / "cur.json"
    write_benchmark(base, scenario.rounds, 1.0, rng)
    write_benchmark(cur, scenario.rounds, scenario.factor, rng)
    return judge(scenario.family, scenario.name, scenario.expect, compared(base, cur))


def run_all(reruns: int, seed: int, real: bool = True, scale: int = 1) -> list[Outcome]:
    """Every generated scenario ``reruns`` times (each its own seed; ``scale`` > 1 keeps one in ``scale`` of the
    large ones and of the tiny-kernel family), then the real report pairs found."""
    outcomes = []
    with tempfile.TemporaryDirectory() as folder:
        for rerun in range(reruns):
            for scenario in generated(random.Random(f"{seed}/{rerun}")):
                large = len(scenario.baseline) > 100 or scenario.family == "tiny kernels"  # 27 cases a rerun
                if large and rerun % scale:
                    continue
                outcomes.append(run_generated(scenario, seed * 1000 + rerun, Path(folder)))
            for bench in benchmarks():
                outcomes.append(run_benchmark(bench, seed * 1000 + rerun, Path(folder)))
    if real:
        for family, name, expect, base, cur in REAL:
            if base.exists() and cur.exists():
                outcomes.append(judge(family, name, expect, compared(base, cur)))
        outcomes.append(one_slow_cublas_launch())
        outcomes += session_outcomes()
    return outcomes


# Sessions of ``pytest examples --perfgate`` recorded on the GPUs: unchanged code, and the deliberate regression
# (``PERFGATE_EXAMPLE_REGRESSION=1``: vector_add's indexing uncoalesced).
H200 = REPO / "tests" / "data" / "h200"
SESSIONS = [(H100 / "sessions", "gate"), (H100 / "default-metrics" / "sessions", "gate"),
            (H100 / "default-metrics" / "sessions", "regression"), (H200 / "sessions", "gate"),
            (H200 / "sessions", "regression")]


def session_outcomes() -> list[Outcome]:
    """Each test of each recorded session, re-judged from the values it recorded (with the default thresholds)."""
    import json
    import lzma

    from perfgate.report import result_rows, validate_report

    outcomes = []
    for folder, prefix in SESSIONS:
        for path in sorted(folder.glob(f"{prefix}*.json.xz")):
            rows = result_rows(validate_report(json.loads(lzma.decompress(path.read_bytes())), str(path)))
            for test in sorted({str(r["test"]) for r in rows}):
                regressed = prefix == "regression" and "vector_add" in test
                base, cur = _recorded(r for r in rows if r["test"] == test)
                name = f"{path.relative_to(REPO / 'tests' / 'data')}: {test}"
                outcomes.append(judge("recorded sessions", name, "regression" if regressed else "unchanged",
                                      compare_tables(base, cur)))
    return outcomes


def _recorded(rows: object) -> tuple[Measurement, Measurement]:
    """The two tables a session's results were computed from (values as recorded; one launch number per launch)."""
    from perfgate.table import make_table

    keys: dict[tuple[object, ...], int] = {}
    sides: tuple[list[dict[str, object]], list[dict[str, object]]] = ([], [])
    for row in rows:  # type: ignore[attr-defined]
        key = (row["kind"], row["kernel"], row["region"], row["ordinal"])
        launch = keys.setdefault(key, len(keys))
        for side, column in zip(sides, ("baseline", "current")):
            if row[column] is not None:
                side.append({"kind": row["kind"], "kernel": row["kernel"], "demangled": row["demangled"] or "",
                             "region": row["region"], "ordinal": row["ordinal"], "launch": launch,
                             "device": row["device"] or "", "cc": "9.0", "grid": "", "block": "",
                             "metric": row["metric"], "unit": row["unit"], "value": row[column]})
    return Measurement(make_table(sides[0]), source="baseline"), Measurement(make_table(sides[1]), source="current")


def one_slow_cublas_launch() -> Outcome:
    """perfgate's H100 MLP rerun with one of backward's four launches of its cuBLAS GEMM made 30% slower."""
    base, rerun = read_table(H100 / "mlp.ncu-rep.xz"), read_table(H100 / "mlp.rerun.ncu-rep.xz")
    table = rerun.table
    gemm = (table["region"] == "backward") & np.char.startswith(table["kernel"].astype(str), "sm80_xmma_gemm")
    launches = sorted(set(table["launch"][gemm].tolist()))
    slow = launches[1]
    value = table["value"].copy()
    value[(table["launch"] == slow) & (table["metric"] == "gpu__time_duration.sum")] *= 1.3
    name = str(table["demangled"][table["launch"] == slow][0])
    same = [at for at in launches if str(table["demangled"][table["launch"] == at][0]) == name]
    comparison = compare_tables(base, rerun.with_table(table.assign(value=value)))
    # One launch slower once: nothing tells it from interference (scenarios.py, ``flagged``).
    return judge("real reports", f"H100 MLP, 1 of {len(same)} cuBLAS launches +30%", "flagged", comparison,
                 frozenset({(name, "backward", same.index(slow))}))


def figures(outcomes: list[Outcome]) -> dict[str, float]:
    unchanged = [o for o in outcomes if o.expect == "unchanged"]
    regressed = [o for o in outcomes if o.expect in ("regression", "unpaired", "flagged")]
    caught = [o for o in regressed if not o.miss and o.expect == "regression"]
    return {
        "unchanged runs": len(unchanged), "false alarms": sum(o.false_alarm for o in unchanged),
        "false alarm rate": sum(o.false_alarm for o in unchanged) / max(len(unchanged), 1),
        "inconclusive": sum(o.inconclusive for o in unchanged),
        "regression runs": len(regressed), "misses": sum(o.miss for o in regressed),
        "miss rate": sum(o.miss for o in regressed) / max(len(regressed), 1),
        "misattributed": sum(o.misattributed for o in caught), "unnamed": sum(o.unnamed for o in caught),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reruns", type=int, default=10, help="reruns of each generated scenario (default 10)")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args(argv)
    outcomes = run_all(args.reruns, args.seed)
    by_family: dict[str, list[Outcome]] = defaultdict(list)
    for outcome in outcomes:
        by_family[outcome.family].append(outcome)
    print(f"{'family':<22} {'runs':>5} {'unchanged':>9} {'false alarms':>12} {'inconclusive':>12} {'regressed':>9} "
          f"{'misses':>6} {'misattributed':>13} {'unnamed':>7}")
    for family, found in [*by_family.items(), ("all", outcomes)]:
        f = figures(found)
        print(f"{family:<22} {len(found):>5} {f['unchanged runs']:>9} {f['false alarms']:>12} "
              f"{f['inconclusive']:>12} {f['regression runs']:>9} {f['misses']:>6} {f['misattributed']:>13} "
              f"{f['unnamed']:>7}")
    total = figures(outcomes)
    print(f"false alarms {total['false alarm rate']:.1%} of unchanged runs (goal <= 2%), misses "
          f"{total['miss rate']:.1%} of runs with a regression (goal <= 5%)")
    for outcome in outcomes:
        if outcome.false_alarm or outcome.miss or outcome.misattributed or outcome.unnamed:
            print(f"  {outcome.family}: {outcome.name}: expected {outcome.expect}, got {outcome.verdict}"
                  + (f" (failing: {sorted(outcome.failing)[:3]})" if outcome.misattributed or outcome.unnamed
                     else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
