"""perfgate beside Apache Otava on the second blind change-point set (issue 35)::

    PYTHONPATH=. python tests/blind_history2/run.py [--otava-python /tmp/otava-venv/bin/python] [--json]

Regenerates the series (refusing, exit 2, when they no longer match truth.json), writes them into a throwaway
SQLite history, runs ``perfgate history changes --format json`` at its default p-value and at 0.001, and Otava's
``compute_change_points(values, window_len=50, max_pvalue=P)`` at 0.001 (its default) and 0.0001.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any, NoReturn, Sequence

from tests.blind_history2.families import FAMILIES, REVERTED_FAMILIES, MAX_COMMITS
from tests.blind_history2.generate import TRUTH, generate, truth_document
from tests.blind_history2.model import TIME, Series
from tests.blind_history2.score import Detections, Score, score

REPO = Path(__file__).resolve().parents[2]
UNITS = {TIME: "ns", "smsp__inst_executed.sum": "inst", "dram__bytes_read.sum": "byte"}
OTAVA_P = (0.001, 0.0001)
PERFGATE_P = (None, 0.001)  # None: perfgate's default


def fail(message: str) -> NoReturn:
    """One line on stderr and exit status 2."""
    print(f"run.py: error: {message}", file=sys.stderr)
    raise SystemExit(2)


def checked_series() -> tuple[list[Series], dict[str, Any]]:
    series = generate()
    truth = json.loads(TRUTH.read_text(encoding="utf-8"))
    if truth_document(series) != truth:
        fail(f"the generator no longer reproduces {TRUTH} (values or planted changes "
                         "differ): the set was committed before the first run; restore generate.py, model.py and "
                         "families.py")
    return series, truth


def write_history(url: str, series: list[Series]) -> None:
    sys.path.insert(0, str(REPO))
    from perfgate.history.db import open_history

    with open_history(url) as history, history.transaction():
        history.executemany(
            "INSERT INTO perfgate_runs (id, run_key, commit_sha, branch, recorded_at, source, generator, settings) "
            "VALUES (?, ?, ?, 'main', ?, 'blind.json', 'perfgate blind set', '{}')",
            [(c + 1, f"key{c}", f"{c:040x}", f"2026-01-01T{c // 3600:02d}:{c // 60 % 60:02d}:{c % 60:02d}.000000Z")
             for c in range(MAX_COMMITS)])
        history.executemany(
            "INSERT INTO perfgate_series (id, gpu, test, kind, kernel, region, metric, unit, direction) "
            "VALUES (?, 'NVIDIA H100', ?, 'kernel', ?, '', ?, ?, 'lower')",
            [(i + 1, f"tests/test_blind.py::test_{s.family}", s.name, s.metric, UNITS[s.metric])
             for i, s in enumerate(series)])
        history.executemany(
            "INSERT INTO perfgate_points (series_id, run_id, n, value, low, high, samples) VALUES (?, ?, 1, ?, ?, ?, "
            "NULL)", [(i + 1, c + 1, v, v, v) for i, s in enumerate(series)
                      for c, v in zip(s.commits, s.values.tolist())])


def child_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run_perfgate(url: str, p: float | None, series: list[Series]) -> tuple[Detections, list[str], float]:
    """perfgate's change points as positions per series, the bad outputs seen, and the CPU seconds it took."""
    command = [sys.executable, "-m", "perfgate", "history", "changes", "--db", url, "--format", "json"]
    command += [] if p is None else ["--p-value", str(p)]
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    before = child_cpu()
    done = subprocess.run(command, capture_output=True, text=True, env=env, cwd=tempfile.gettempdir())
    cpu = child_cpu() - before
    if done.returncode != 0:
        fail(f"perfgate exited {done.returncode}: {done.stderr.strip()[-2000:]}")
    by_name = {s.name: s for s in series}
    found: Detections = {}
    bad: list[str] = []
    for change in json.loads(done.stdout):
        s = by_name.get(change["kernel"])
        commit = int(change["commit"], 16)
        if s is None or commit not in s.commits:
            bad.append(f"{change['kernel']}: a change at commit {commit}, where the series has no value")
            continue
        position = s.commits.index(commit)
        bad += output_problems(s, position, change, found.get(s.name, []))
        found.setdefault(s.name, []).append(position)
    return found, bad, cpu


def output_problems(s: Series, position: int, change: dict[str, Any], earlier: list[int]) -> list[str]:
    where = f"{s.name} at {position}"
    problems = []
    if position == 0 or position in earlier:
        problems.append(f"{where}: {'at the first value' if position == 0 else 'twice'}")
    numbers = [change.get(key) for key in ("before", "after", "change")]
    if not all(isinstance(x, (int, float)) and abs(x) < float("inf") for x in numbers):
        problems.append(f"{where}: before/after/change not finite numbers: {numbers}")
    elif (change["change"] > 0) != (change["direction"] == "regression") or (
            (change["after"] > change["before"]) != (change["change"] > 0)):
        problems.append(f"{where}: direction {change['direction']}, change {change['change']:+.4f}, "
                        f"{change['before']} -> {change['after']}")
    if change.get("exact") and not s.exact:
        problems.append(f"{where}: called exact on a timing")
    return problems


def run_otava(python: str, series: list[Series]) -> tuple[dict[float, Detections], float]:
    request = {"p_values": list(OTAVA_P), "series": {s.name: s.values.tolist() for s in series}}
    before = child_cpu()
    done = subprocess.run([python, str(Path(__file__).with_name("otava_side.py"))], input=json.dumps(request),
                          capture_output=True, text=True)
    if done.returncode != 0:
        fail(f"Otava ({python}) exited {done.returncode}: {done.stderr.strip()[-2000:]}")
    answer = json.loads(done.stdout)
    return {p: answer[str(p)] for p in OTAVA_P}, child_cpu() - before


def summary_table(scores: dict[str, Score], cpu: dict[str, float]) -> list[str]:
    first = next(iter(scores.values()))
    reverted = first.sum(REVERTED_FAMILIES, "changes")
    lines = ["| detector | recall | precision | false per 100 flat | flickering-counter false | "
             f"reverted edges (of {reverted}) | detections | CPU s |", "|---|---|---|---|---|---|---|---|"]
    for name, s in scores.items():
        lines.append(f"| {name} | {s.recall:.3f} | {s.precision:.3f} | {s.flat_per_100():.1f} | {s.flicker_false()} "
                     f"| {s.reverted_found()} | {s.total.detections} | {cpu[name]:.1f} |")
    return lines


def family_table(scores: dict[str, Score]) -> list[str]:
    names = list(scores)
    lines = ["| family | series | changes | " + " | ".join(f"{n}: found / false" for n in names) + " |",
             "|---|---|---|" + "---|" * len(names)]
    for family, _, _ in FAMILIES:
        tallies = [scores[n].families[family] for n in names]
        lines.append(f"| {family} | {tallies[0].series} | {tallies[0].changes} | "
                     + " | ".join(f"{t.found} / {t.false}" for t in tallies) + " |")
    return lines


def goals(scores: dict[str, Score], perfgate: str, otava: str) -> list[str]:
    ours, theirs = scores[perfgate], scores[otava]
    checks = [(f"recall >= 0.93 at precision >= 0.95: {ours.recall:.3f} at {ours.precision:.3f}",
               ours.recall >= 0.93 and ours.precision >= 0.95),
              (f"flickering-counter false points <= Otava's: {ours.flicker_false()} vs {theirs.flicker_false()}",
               ours.flicker_false() <= theirs.flicker_false()),
              (f"reverted edges >= Otava's: {ours.reverted_found()} vs {theirs.reverted_found()}",
               ours.reverted_found() >= theirs.reverted_found()),
              (f"<= 1 false point per 100 flat series: {ours.flat_per_100():.1f}", ours.flat_per_100() <= 1)]
    return [f"- {'met' if ok else 'NOT met'}: {text} ({perfgate} against {otava})" for text, ok in checks]


def error_lines(s: Score, limit: int = 3) -> list[str]:
    kinds: dict[str, list[dict[str, Any]]] = {}
    for error in s.errors:
        kinds.setdefault(error["kind"], []).append(error)
    lines = []
    for kind, errors in sorted(kinds.items(), key=lambda item: -len(item[1])):
        lines.append(f"- {kind}: {len(errors)}")
        for e in errors[:limit]:
            lines.append(f"  - {e['series']} at {e['position']}: planted {e['planted']}, found {e['detected']}")
    return lines


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--otava-python", default="/tmp/otava-venv/bin/python", help="a Python with apache-otava")
    parser.add_argument("--json", action="store_true", help="print the raw results as JSON instead of the tables")
    args = parser.parse_args(argv)
    series, truth = checked_series()
    found: dict[str, Detections] = {}
    cpu: dict[str, float] = {}
    bad: dict[str, list[str]] = {}
    with tempfile.TemporaryDirectory(prefix="blind-history2-") as folder:
        url = f"sqlite:///{folder}/history.sqlite"
        write_history(url, series)
        for p in PERFGATE_P:
            name = "perfgate (default p)" if p is None else f"perfgate p {p}"
            found[name], bad[name], cpu[name] = run_perfgate(url, p, series)
    otava, otava_cpu = run_otava(args.otava_python, series)
    for p in OTAVA_P:
        name = f"Otava p {p}" + (" (default)" if p == 0.001 else "")
        found[name], cpu[name] = otava[p], otava_cpu / len(OTAVA_P)
    scores = {name: score(truth, detections) for name, detections in found.items()}
    if args.json:
        json.dump({name: {"found": found[name], "errors": scores[name].errors, "bad_outputs": bad.get(name, [])}
                   for name in found}, sys.stdout, indent=1)
        return 0
    print("\n".join(summary_table(scores, cpu) + [""] + goals(scores, "perfgate (default p)", "Otava p 0.001 (default)")
                    + [""] + family_table(scores)))
    for name in found:
        if name.startswith("perfgate"):
            print(f"\n{name}: errors by kind\n" + "\n".join(error_lines(scores[name])))
            print(f"{name}: bad outputs: {len(bad[name])}" + "".join(f"\n  - {b}" for b in bad[name][:10]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
